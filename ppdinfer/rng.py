"""Seeds in, numpy Generators out, and per-block streams: the random-number plumbing of every sampler.

Samplers draw proposals in fixed-size *blocks*, each with its own stream derived from the
user's seed and the block index. A batch is a run of whole blocks, so the draws a seed
produces do not depend on the batch size.
"""

from __future__ import annotations

import numpy as np

SeedLike = int | np.random.Generator | np.random.SeedSequence | None


def as_generator(random_seed: SeedLike) -> np.random.Generator:
    """Return a numpy Generator for ``random_seed`` (int, SeedSequence, Generator or None).

    Examples
    --------
    >>> rng = as_generator(7)
    >>> as_generator(rng) is rng, bool(as_generator(7).random() == as_generator(7).random())
    (True, True)
    """
    if isinstance(random_seed, np.random.Generator):
        return random_seed
    if isinstance(random_seed, bool | np.bool_):
        raise ValueError(
            f"random_seed must be None, a non-negative int, a SeedSequence or a Generator, not the bool {random_seed!r}"
        )
    if random_seed is None or isinstance(random_seed, (int, np.integer, np.random.SeedSequence)):
        if isinstance(random_seed, (int, np.integer)) and random_seed < 0:
            raise ValueError(f"random_seed must be a non-negative integer, got {random_seed}")
        return np.random.default_rng(random_seed)
    raise ValueError(
        f"random_seed must be None, a non-negative int, a SeedSequence or a numpy Generator, got {random_seed!r}"
    )


def root_seed(random_seed: SeedLike) -> np.random.SeedSequence:
    """A SeedSequence from which block streams are spawned deterministically.

    Examples
    --------
    >>> root_seed(5).entropy
    5
    """
    if isinstance(random_seed, np.random.SeedSequence):
        return random_seed
    if isinstance(random_seed, np.random.Generator):
        # Consume one draw so that repeated calls with the same Generator differ.
        return np.random.SeedSequence(int(random_seed.integers(2**63)))
    as_generator(random_seed)  # validation only
    return np.random.SeedSequence(random_seed)


def block_generator(root: np.random.SeedSequence, block: int) -> np.random.Generator:
    """The stream of block number ``block`` under ``root`` (independent of every other block).

    Examples
    --------
    >>> root = root_seed(5)
    >>> bool(block_generator(root, 0).random() == block_generator(root, 0).random())
    True
    >>> bool(block_generator(root, 0).random() == block_generator(root, 1).random())
    False
    """
    seq = np.random.SeedSequence(root.entropy, spawn_key=(*root.spawn_key, block))
    return np.random.Generator(np.random.PCG64(seq))
