r"""Figure 1: how far four privatizations land from the confidential table.

For each synthetic table s (with its own invariants), ``releases`` releases by each method:

1. ``raw_eps1``: the unconstrained double geometric mechanism, epsilon = 1 per cell;
2. ``nnl2_eps1``: its non-negative L2 projection onto the real relaxation of S*
   (:func:`ppdinfer.projection.project_l2`);
3. ``congenial_eps05``: the congenial mechanism at epsilon = 0.5 by the MIS (eps~ = 0.6);
4. ``raw_eps05``: the unconstrained mechanism at epsilon = 0.5;

and the mean over the releases of

.. math::

    L_1(s, \tilde s) = \sum_i |s_i - \tilde s_i|, \qquad
    L_2(s, \tilde s) = \Big(\sum_i (s_i - \tilde s_i)^2\Big)^{1/2}.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...mechanisms import DiscreteLaplace
from ...projection import project_l2
from ...rng import SeedLike, as_generator
from ...validation import positive_int
from .table1 import congenial_mechanism, mis_release

__all__ = ["METHODS", "distances", "method_distances"]

#: The four methods of Figure 1, in the order of its boxes: (key, label).
METHODS = (
    ("raw_eps1", "raw, eps = 1"),
    ("nnl2_eps1", "NNL2 of raw, eps = 1"),
    ("congenial_eps05", "congenial (MIS), eps = 0.5"),
    ("raw_eps05", "raw, eps = 0.5"),
)


def distances(releases, table) -> tuple[float, float]:
    """The mean L1 and mean L2 distance of a batch of releases (N, 2, 23) from the confidential table.

    Examples
    --------
    >>> table = np.zeros((2, 23))
    >>> releases = np.zeros((2, 2, 23)); releases[0, 0, :4] = 1
    >>> distances(releases, table)
    (2.0, 1.0)
    """
    gaps = np.asarray(releases, dtype=float) - np.asarray(table, dtype=float)
    gaps = gaps.reshape(len(gaps), -1)
    return float(np.abs(gaps).sum(axis=1).mean()), float(np.sqrt((gaps**2).sum(axis=1)).mean())


def method_distances(
    tables, releases: int, *, burn_in: int, random_seed: SeedLike = None, advance: Callable[[], None] = lambda: None
) -> np.ndarray:
    """Mean L1 and L2 distances per table and method, shape (n_tables, 4, 2) (methods as in ``METHODS``).

    Each MIS release is the state after ``burn_in`` iterations of its own chain; ``advance`` is
    called after each table.

    Examples
    --------
    >>> from ppdinfer.case_studies.congenial_2x23.data import synthetic_tables
    >>> out = method_distances(synthetic_tables(2, random_seed=0), 3, burn_in=500, random_seed=1)
    >>> out.shape, bool(np.all(out[:, 3] > out[:, 0]))        # raw eps = 0.5 lands farther than eps = 1
    ((2, 4, 2), True)
    """
    tables = np.asarray(tables)
    releases = positive_int(releases, "releases")
    rng = as_generator(random_seed)
    out = np.empty((len(tables), len(METHODS), 2))
    for t, table in enumerate(tables):
        congenial = congenial_mechanism(table)
        repeated = np.broadcast_to(table, (releases, *table.shape))
        raw_eps1 = DiscreteLaplace(1.0).release(repeated, random_seed=rng)
        by_method = {
            "raw_eps1": raw_eps1,
            "nnl2_eps1": np.array([project_l2(y, congenial.invariants) for y in raw_eps1]),
            "congenial_eps05": np.array([mis_release(congenial, table, rng, burn_in=burn_in) for _ in range(releases)]),
            "raw_eps05": DiscreteLaplace(0.5).release(repeated, random_seed=rng),
        }
        for m, (key, _) in enumerate(METHODS):
            out[t, m] = distances(by_method[key], table)
        advance()
    return out
