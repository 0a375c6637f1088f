r"""The experiments on Table 1: one congenial release, the MIS's acceptance rate against eps~,
its trace (Appendix C), and the exact rejection sampler with a bounded budget.

Everything runs the library's :class:`ppdinfer.mechanisms.Congenial` (double geometric noise,
epsilon = 0.5 per cell, conditioned on :func:`.data.invariants_for`); the MIS is Algorithm 1 with
the paper's free cells (:func:`.data.free_cells`) and a double-geometric proposal of parameter
eps~ centred at s*:

.. math::

    q(s_I) = \prod_{i \in I} \frac{1 - \tilde a}{1 + \tilde a} \, \tilde a^{|s_i - s_i^*|},
    \qquad \tilde a = e^{-\tilde\epsilon}.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ...mechanisms import Congenial, DiscreteLaplace
from ...rng import SeedLike, as_generator
from ...validation import positive_int
from .data import SHAPE, free_cells, invariants_for

__all__ = [
    "BATCHES_PER_CHAIN",
    "EPSILON",
    "PAPER_PROPOSAL_EPSILON",
    "PROPOSALS_PER_DRAW",
    "AcceptanceCurve",
    "RejectionEstimate",
    "acceptance_curve",
    "chain_moves",
    "congenial_mechanism",
    "mis_release",
    "mis_trace",
    "rejection_estimate",
]

#: The privacy loss budget per cell of the unconstrained double geometric mechanism.
EPSILON = 0.5
#: The proposal parameter the paper reports as best, used for every MIS release here.
PAPER_PROPOSAL_EPSILON = 0.6
#: The rejection budget of one exact release (about 500 / c(x) on Table 1). It must never run out: when
#: it does, the library's refusal message calls ``LinearInvariants.enumerate``, which does not finish
#: on these 46-cell invariants (see the README).
PROPOSALS_PER_DRAW = 50_000_000


def congenial_mechanism(table, epsilon: float = EPSILON) -> Congenial:
    """The congenial double geometric mechanism for a confidential 2 x 23 table (its own invariants).

    Examples
    --------
    >>> from ppdinfer.case_studies.congenial_2x23.data import CONFIDENTIAL
    >>> congenial_mechanism(CONFIDENTIAL).parameters()["n_equalities"]
    3
    """
    return Congenial(DiscreteLaplace(epsilon), invariants_for(table))


def mis_release(
    mechanism: Congenial,
    table,
    random_seed: SeedLike = None,
    *,
    burn_in: int,
    proposal_epsilon: float = PAPER_PROPOSAL_EPSILON,
    size: int | None = None,
) -> np.ndarray:
    """Algorithm 1 on the paper's free cells, started at ``table``: the state after ``burn_in`` iterations
    (``size`` None), or the ``size`` states after it (one chain, no thinning).

    Examples
    --------
    >>> from ppdinfer.case_studies.congenial_2x23.data import CONFIDENTIAL
    >>> mech = congenial_mechanism(CONFIDENTIAL)
    >>> y = mis_release(mech, CONFIDENTIAL, random_seed=3, burn_in=2_000)
    >>> y.shape, bool(mech.invariants.contains(y)), mech.last_method
    ((2, 23), True, 'mis')
    """
    return mechanism.release(
        table,
        random_seed=random_seed,
        method="mis",
        size=size,
        free_cells=free_cells(),
        proposal_epsilon=proposal_epsilon,
        burn_in=burn_in,
        thin=1,
    )


def mis_trace(
    table, iterations: int, random_seed: SeedLike = None, proposal_epsilon: float = PAPER_PROPOSAL_EPSILON
) -> tuple[np.ndarray, float]:
    """Every state of one MIS chain of ``iterations`` steps from ``table`` (shape (iterations, 2, 23)) and
    its acceptance rate: the chain of Figure 3.

    Examples
    --------
    >>> from ppdinfer.case_studies.congenial_2x23.data import CONFIDENTIAL
    >>> states, rate = mis_trace(CONFIDENTIAL, 1_000, random_seed=0)
    >>> states.shape, 0 < rate < 0.1
    ((1000, 2, 23), True)
    """
    mechanism = congenial_mechanism(table)
    states = mis_release(
        mechanism,
        table,
        random_seed,
        burn_in=0,
        proposal_epsilon=proposal_epsilon,
        size=positive_int(iterations, "iterations"),
    )
    return states, mechanism.last_acceptance_rate


def chain_moves(states, start) -> np.ndarray:
    """Whether each iteration of a chain moved: ``states`` (iterations, ...) are its states after ``start``.

    An independence sampler moves exactly when it accepts a proposal that differs from its state; an
    accepted proposal equal to the state (on Table 1 a chance below 1e-20 per iteration) counts as no move.

    Examples
    --------
    >>> chain_moves(np.array([[1, 2], [1, 2], [0, 3], [0, 3]]), start=[1, 2]).tolist()
    [False, False, True, False]
    """
    states = np.asarray(states)
    flat = states.reshape(len(states), -1)
    previous = np.vstack([np.asarray(start).reshape(1, -1), flat[:-1]])
    return np.any(flat != previous, axis=1)


#: Batches per chain for the batch-means standard error of an acceptance rate. A chain sticks at a heavy state
#: for up to tens of thousands of iterations, so the batches must be long: on Table 1 the error grows with the
#: batch length up to about a fifth of a 200,000-iteration chain, where it matches the spread between chains.
BATCHES_PER_CHAIN = 5


@dataclass(frozen=True)
class AcceptanceCurve:
    """The MIS's acceptance rate per eps~ from independent chains: ``moves[j, k, t]`` says whether chain k
    at ``grid[j]`` moved at its t-th counted iteration (each chain's first ``warm_up`` iterations uncounted).

    The standard error of a rate is the batch-means error: each chain's counted iterations are cut into
    ``batches_per_chain`` equal batches (a remainder at the end is dropped from the error, not from the
    rate), and the error is the standard deviation of the batch rates over all chains over the square root
    of their number. A chain sticks at a heavy state for thousands of iterations, so the binomial error of
    the iterations, and the error from their effective sample size (the autocorrelation estimated within a
    chain misses the rare long sticks), are about half the true one; the spread of two chains' rates is an
    unbiased but very noisy estimate (one degree of freedom).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> moves = rng.random((2, 4, 20_000)) < np.array([0.010, 0.016])[:, None, None]     # iid: no stickiness
    >>> curve = AcceptanceCurve(grid=(0.5, 0.6), moves=moves, batches_per_chain=20)
    >>> curve.best, curve.mean.round(3).tolist(), curve.rates.shape
    (0.6, [0.01, 0.016], (4, 2))
    >>> bool(abs(curve.standard_error[1] / np.sqrt(0.016 * 0.984 / 80_000) - 1) < 0.2)   # the binomial error
    True
    """

    grid: tuple[float, ...]
    moves: np.ndarray
    warm_up: int = 0
    batches_per_chain: int = BATCHES_PER_CHAIN

    @property
    def iterations(self) -> int:
        """Counted iterations per chain."""
        return self.moves.shape[2]

    @property
    def chains(self) -> int:
        """Chains per eps~."""
        return self.moves.shape[1]

    @property
    def rates(self) -> np.ndarray:
        """Each chain's acceptance rate, ``rates[k, j]`` for chain k at ``grid[j]``."""
        return self.moves.mean(axis=2).T

    @property
    def mean(self) -> np.ndarray:
        """The acceptance rate per eps~: moves over all counted iterations of its chains."""
        return self.moves.mean(axis=(1, 2))

    @property
    def batch_length(self) -> int:
        """Iterations per batch of the standard error."""
        return self.iterations // self.batches_per_chain

    @property
    def standard_error(self) -> np.ndarray:
        """The batch-means standard error of ``mean`` per eps~ (nan with fewer than 2 batches in all)."""
        batches, length = self.chains * self.batches_per_chain, self.batch_length
        if batches < 2 or length < 1:
            return np.full(len(self.grid), math.nan)
        used = self.moves[:, :, : self.batches_per_chain * length]
        rates = used.reshape(len(self.grid), batches, length).mean(axis=2)
        return rates.std(axis=1, ddof=1) / math.sqrt(batches)

    @property
    def best(self) -> float:
        """The eps~ of the grid with the largest acceptance rate."""
        return self.grid[int(np.argmax(self.mean))]

    def at(self, proposal_epsilon: float) -> tuple[float, float]:
        """(rate, standard error) at one eps~ of the grid."""
        j = int(np.argmin(np.abs(np.asarray(self.grid) - proposal_epsilon)))
        if not math.isclose(self.grid[j], proposal_epsilon):
            raise ValueError(f"proposal_epsilon {proposal_epsilon} is not on the grid {self.grid}")
        return float(self.mean[j]), float(self.standard_error[j])


def acceptance_curve(
    table,
    grid: Sequence[float],
    chains: int,
    iterations: int,
    random_seed: SeedLike = None,
    advance: Callable[[], None] = lambda: None,
    *,
    warm_up: int = 0,
) -> AcceptanceCurve:
    """The MIS's acceptance rate for each eps~ of ``grid``, from ``chains`` independent chains started at
    ``table``, each run for ``warm_up`` uncounted and then ``iterations`` counted steps; ``advance`` is
    called after each chain.

    Examples
    --------
    >>> from ppdinfer.case_studies.congenial_2x23.data import CONFIDENTIAL
    >>> curve = acceptance_curve(CONFIDENTIAL, [0.6, 0.8], chains=2, iterations=2_000, random_seed=0, warm_up=100)
    >>> curve.moves.shape, curve.rates.shape
    ((2, 2, 2000), (2, 2))
    """
    chains, iterations = positive_int(chains, "chains"), positive_int(iterations, "iterations")
    warm_up = int(warm_up)
    if warm_up < 0:
        raise ValueError(f"warm_up must be >= 0, got {warm_up}")
    mechanism = congenial_mechanism(table)
    rng = as_generator(random_seed)
    moves = np.empty((len(grid), chains, iterations), dtype=bool)
    for j, proposal_epsilon in enumerate(grid):
        for k in range(chains):
            states = mis_release(
                mechanism, table, rng, burn_in=0, proposal_epsilon=proposal_epsilon, size=warm_up + iterations
            )
            moves[j, k] = chain_moves(states, table)[warm_up:]
            advance()
    return AcceptanceCurve(tuple(float(e) for e in grid), moves, warm_up)


@dataclass(frozen=True)
class RejectionEstimate:
    """What the exact rejection sampler did on a table within a budget: its conforming draws
    (shape (n, 2, 23)), the proposals spent and the seconds taken.

    Examples
    --------
    >>> estimate = RejectionEstimate(draws=np.zeros((4, 2, 23), int), proposals=400_000, seconds=2.0)
    >>> estimate.rate, round(estimate.standard_error, 9), estimate.seconds_per_draw
    (1e-05, 5e-06, 0.5)
    """

    draws: np.ndarray
    proposals: int
    seconds: float

    @property
    def rate(self) -> float:
        """The estimate of c(x) = P(M(x) in S*): conforming draws over proposals."""
        return len(self.draws) / self.proposals

    @property
    def standard_error(self) -> float:
        """Its binomial standard error, sqrt(rate (1 - rate) / proposals)."""
        return math.sqrt(self.rate * (1 - self.rate) / self.proposals)

    @property
    def seconds_per_draw(self) -> float:
        """Seconds per exact release (inf when none was made)."""
        return self.seconds / len(self.draws) if len(self.draws) else math.inf


def rejection_estimate(
    table, budget: int, random_seed: SeedLike = None, advance: Callable[[int], None] = lambda proposals: None
) -> RejectionEstimate:
    """Exact congenial releases of ``table`` by the library's rejection sampler, one after the other,
    until ``budget`` proposals are spent (the last release may overrun it).

    Each release is ``Congenial.release(method="rejection")`` with at most ``PROPOSALS_PER_DRAW``
    proposals; the proposals it spent are 1 / ``last_acceptance_rate``. A release that ran out of
    proposals would raise (the library's ValueError); on Table 1 (c(x) near 1e-5) that has probability
    below exp(-400). ``advance`` gets the proposals spent by each release.

    Examples
    --------
    >>> from ppdinfer.case_studies.congenial_2x23.data import CONFIDENTIAL
    >>> estimate = rejection_estimate(CONFIDENTIAL, 1, random_seed=0)      # one exact release
    >>> estimate.draws.shape, estimate.proposals >= 1
    ((1, 2, 23), True)
    """
    budget = positive_int(budget, "budget")
    mechanism = congenial_mechanism(table)
    rng = as_generator(random_seed)
    draws, spent = [], 0
    start = time.perf_counter()
    while spent < budget:
        draws.append(mechanism.release(table, random_seed=rng, method="rejection", max_proposals=PROPOSALS_PER_DRAW))
        used = round(1 / mechanism.last_acceptance_rate)
        spent += used
        advance(used)
    return RejectionEstimate(
        np.array(draws, dtype=np.int64).reshape(len(draws), *SHAPE), spent, time.perf_counter() - start
    )
