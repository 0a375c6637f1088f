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

from ..._random import SeedLike, as_generator
from ..._validation import positive_int
from ...mechanisms import Congenial, DiscreteLaplace
from .data import SHAPE, free_cells, invariants_for

__all__ = ["EPSILON", "PAPER_PROPOSAL_EPSILON", "PROPOSALS_PER_DRAW", "AcceptanceCurve", "RejectionEstimate",
           "acceptance_curve", "congenial_mechanism", "mis_release", "mis_trace", "rejection_estimate"]

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


def mis_release(mechanism: Congenial, table, random_seed: SeedLike = None, *, burn_in: int,
                proposal_epsilon: float = PAPER_PROPOSAL_EPSILON, size: int | None = None) -> np.ndarray:
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
    return mechanism.release(table, random_seed=random_seed, method="mis", size=size, free_cells=free_cells(),
                             proposal_epsilon=proposal_epsilon, burn_in=burn_in, thin=1)


def mis_trace(table, iterations: int, random_seed: SeedLike = None,
              proposal_epsilon: float = PAPER_PROPOSAL_EPSILON) -> tuple[np.ndarray, float]:
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
    states = mis_release(mechanism, table, random_seed, burn_in=0, proposal_epsilon=proposal_epsilon,
                         size=positive_int(iterations, "iterations"))
    return states, mechanism.last_acceptance_rate


@dataclass(frozen=True)
class AcceptanceCurve:
    """The MIS's acceptance rate per eps~ (``rates[k, j]``: chain k at ``grid[j]``), chains of ``iterations``.

    Examples
    --------
    >>> curve = AcceptanceCurve(grid=(0.5, 0.6), rates=np.array([[0.01, 0.02], [0.01, 0.016]]), iterations=10)
    >>> curve.best, curve.mean.round(3).tolist()
    (0.6, [0.01, 0.018])
    """

    grid: tuple[float, ...]
    rates: np.ndarray
    iterations: int

    @property
    def mean(self) -> np.ndarray:
        """The mean acceptance rate over the chains, per eps~."""
        return self.rates.mean(axis=0)

    @property
    def standard_error(self) -> np.ndarray:
        """The standard error of ``mean`` from the spread between chains (nan for one chain)."""
        chains = self.rates.shape[0]
        return self.rates.std(axis=0, ddof=1) / math.sqrt(chains) if chains > 1 else np.full(len(self.grid), np.nan)

    @property
    def best(self) -> float:
        """The eps~ of the grid with the largest mean acceptance rate."""
        return self.grid[int(np.argmax(self.mean))]

    def at(self, proposal_epsilon: float) -> tuple[float, float]:
        """(mean, standard error) at one eps~ of the grid."""
        j = int(np.argmin(np.abs(np.asarray(self.grid) - proposal_epsilon)))
        if not math.isclose(self.grid[j], proposal_epsilon):
            raise ValueError(f"proposal_epsilon {proposal_epsilon} is not on the grid {self.grid}")
        return float(self.mean[j]), float(self.standard_error[j])


def acceptance_curve(table, grid: Sequence[float], chains: int, iterations: int, random_seed: SeedLike = None,
                     advance: Callable[[], None] = lambda: None) -> AcceptanceCurve:
    """The MIS's acceptance rate (accepted moves over iterations) for each eps~ of ``grid``, from ``chains``
    independent chains of ``iterations`` steps started at ``table``; ``advance`` is called after each chain.

    Examples
    --------
    >>> from ppdinfer.case_studies.congenial_2x23.data import CONFIDENTIAL
    >>> curve = acceptance_curve(CONFIDENTIAL, [0.6, 0.8], chains=2, iterations=2_000, random_seed=0)
    >>> curve.rates.shape
    (2, 2)
    """
    chains, iterations = positive_int(chains, "chains"), positive_int(iterations, "iterations")
    mechanism = congenial_mechanism(table)
    rng = as_generator(random_seed)
    rates = np.empty((chains, len(grid)))
    for j, proposal_epsilon in enumerate(grid):
        for k in range(chains):
            # The state after `iterations` steps: the library keeps only that one.
            mis_release(mechanism, table, rng, burn_in=iterations - 1, proposal_epsilon=proposal_epsilon)
            rates[k, j] = mechanism.last_acceptance_rate
            advance()
    return AcceptanceCurve(tuple(float(e) for e in grid), rates, iterations)


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


def rejection_estimate(table, budget: int, random_seed: SeedLike = None,
                       advance: Callable[[int], None] = lambda proposals: None) -> RejectionEstimate:
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
    return RejectionEstimate(np.array(draws, dtype=np.int64).reshape(len(draws), *SHAPE), spent,
                             time.perf_counter() - start)
