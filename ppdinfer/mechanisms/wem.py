r"""The Wasserstein exponential mechanism (Seeman, Reimherr & Slavkovic, Theorem 9) for count tables.

The release y of the confidential table x has the pmf

.. math::

    \pi(y \mid x, z) = \exp(-\epsilon L_x(y) / (2 \sigma)) \, \nu_z(y) / C(x), \qquad
    C(x) = \sum_y \exp(-\epsilon L_x(y) / (2 \sigma)) \, \nu_z(y),

on integer tables of shape (2, J): row 0 holds the case counts and row 1 the death counts of J
counties (the COVID-19 case study, section 4). sigma = sigma(Delta_z) is the loss's sensitivity
over a Delta_z ball; for the norm losses here (L1, L2) the triangle inequality gives
sigma(Delta_z) = Delta_z, so pass Delta_z. z holds ``total`` (this month's statewide case
total) and, for the prior-congenial measure, ``previous_cases`` (last month's J county counts).

Three base measures nu_z (the case study's):

- :class:`Naive`: the counting measure on Z^{2J}. C(x) is the same for every integer x, so
  :meth:`WassersteinExponential.logpdf` omits it (only ratios in x matter to the samplers), and
  the bound M = 1 of the unnormalized kernel exp(-eps L / (2 sigma)) <= 1 is valid.
- :class:`CongenialBase`: tables whose cases sum to z["total"] with cases >= deaths >= 0.
- :class:`PriorCongenial`: the congenial tables weighted by the Dirichlet-multinomial pmf of the
  cases with total z["total"] and concentration alpha * (previous_cases + pseudocount).

For the congenial measures C(x) depends on x and logpdf includes it, computed exactly by
enumerating the support: the tables are the compositions of the total into 2J parts (each
county's cases split into deaths and survivors), C(total + 2J - 1, 2J - 1) of them. Above
``ENUMERATION_LIMIT`` logpdf refuses and log_bound is +inf, so the samplers refuse too.

Releases are exact where an exact sampler is affordable (the naive measure up to 18 counties,
and always with the L1 loss; the congenial measures on enumerable supports) and otherwise come
from an MCMC chain of at least ``MIN_SWEEPS`` sweeps: see :class:`WassersteinExponential`.

Example (the case study's three mechanisms at Delta_z = 2, L2 loss)::

    naive = WassersteinExponential(eps, 2.0, base_measure="naive")
    congenial = WassersteinExponential(eps, 2.0, base_measure="congenial")
    prior = WassersteinExponential(eps, 2.0, base_measure=PriorCongenial(alpha=1.0))
"""

from __future__ import annotations

import functools
import math
import numbers
import warnings
from fractions import Fraction

import numpy as np

from ..generators import compositions
from ..kernels.wem import (
    CONGENIAL,
    NAIVE,
    PRIOR_CONGENIAL,
    congenial_proposals,
    dirichlet_multinomial_logpmf,
    lattice_l2_proposals,
    log_normalizer_and_peak,
    loss_rows,
    min_log_normalizer,
    wem_advance,
)
from ..rng import SeedLike, as_generator
from ..validation import integer_valued, nonnegative_counts, positive_finite, positive_int
from . import exact_integer
from .base import Mechanism
from .guarantee import Guarantee
from .laplace import DiscreteLaplace

#: The losses L_x(y) = ||y - x||_p, by name, with their power p.
LOSSES = {"l1": 1, "l2": 2}
#: Largest support (number of tables) enumerated for the normalizer C(x).
ENUMERATION_LIMIT = 200_000
#: Largest support for which log_bound scans every (x, y) pair (S^2 work) for the exact sup of
#: the pmf; between this and ENUMERATION_LIMIT it returns log 1 = 0, valid for any pmf.
BOUND_SCAN_LIMIT = 5_000
#: Default MCMC sweeps per release (a sweep proposes 2J moves): four times MIN_SWEEPS.
DEFAULT_SWEEPS = 2_000
#: Shortest chain released without a ChainLengthWarning: the length that mixed on the case study's
#: table (see WassersteinExponential, "MCMC release").
MIN_SWEEPS = 500
#: Largest expected number of proposals per release for which method="auto" samples exactly.
EXACT_PROPOSAL_LIMIT = 20_000
#: Chain steps per compiled call (about 0.1 s): Ctrl-C is honoured between calls.
CHUNK_STEPS = 2**19
#: Most proposals per batch of the exact samplers (a batch's size depends on the request, never on x).
BATCH = 4096
METHODS = ("auto", "exact", "mcmc")


class ChainLengthWarning(UserWarning):
    """A release by an MCMC chain shorter than ``MIN_SWEEPS`` sweeps."""


class BaseMeasure:
    """A base measure nu_z on tables of shape (2, J). Subclasses set ``name`` and ``kind``.

    ``kind`` tells the compiled chain (``ppdinfer.kernels.wem``) which moves and weights to
    use; it knows the three measures below, so a new measure needs a new kind there.

    Examples
    --------
    >>> tables = np.array([[[3, 2], [1, 0]], [[3, 3], [1, 0]]])
    >>> Naive().contains(tables, {"total": 5}), Naive().parameters()
    (array([ True,  True]), {'base_measure': 'naive'})
    """

    name: str
    kind: int
    #: nu_z is translation invariant on the lattice, so C(x) does not depend on x.
    translation_invariant = False

    def check_z(self, z, n_counties: int) -> None:
        """Raise ValueError when z lacks what this measure needs."""

    def contains(self, tables: np.ndarray, z) -> np.ndarray:
        """Whether each table (shape (B, 2, J)) is in the support."""
        return np.ones(tables.shape[0], dtype=bool)

    def log_weight(self, tables: np.ndarray, z) -> np.ndarray:
        """log nu_z of each table (shape (B, 2, J)) in the support."""
        return np.zeros(tables.shape[0])

    def concentration(self, z, n_counties: int) -> np.ndarray:
        """The Dirichlet-multinomial concentration for the kernel (unused unless PRIOR_CONGENIAL)."""
        return np.ones(n_counties)

    def parameters(self) -> dict[str, float | str]:
        """The measure's settings, recorded with the mechanism's."""
        return {"base_measure": self.name}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.parameters().items() if k != "base_measure")
        return f"{type(self).__name__}({args})"


class Naive(BaseMeasure):
    """(a) The counting measure on the whole lattice Z^{2J}.

    References
    ----------
    .. [1] J. Seeman, M. Reimherr and A. Slavkovic, "Formal privacy for partially private data,"
        arXiv:2204.01102, 2022. Section 4.

    Examples
    --------
    >>> Naive().contains(np.array([[[-3, 2], [1, 9]]]), None)  # every integer table
    array([ True])
    """

    name, kind = "naive", NAIVE
    translation_invariant = True


class CongenialBase(BaseMeasure):
    """(b) The counting measure on integer tables with sum_j cases_j = z["total"] and cases >= deaths >= 0.

    References
    ----------
    .. [1] J. Seeman, M. Reimherr and A. Slavkovic, "Formal privacy for partially private data,"
        arXiv:2204.01102, 2022. Section 4.

    Examples
    --------
    >>> CongenialBase().contains(np.array([[[3, 2], [1, 0]], [[3, 3], [1, 0]]]), {"total": 5})
    array([ True, False])
    >>> CongenialBase().support_size({"total": 5}, 2)  # compositions of 5 into 4 parts
    56
    """

    name, kind = "congenial", CONGENIAL

    def check_z(self, z, n_counties):
        public_total(z)

    def contains(self, tables, z):
        cases, deaths = tables[:, 0], tables[:, 1]
        return (cases.sum(axis=1) == public_total(z)) & np.all(cases >= deaths, axis=1) & np.all(deaths >= 0, axis=1)

    def support_size(self, z, n_counties: int) -> int:
        """Number of tables in the support: compositions of the total into 2J parts."""
        return math.comb(public_total(z) + 2 * n_counties - 1, 2 * n_counties - 1)

    def support(self, z, n_counties: int) -> np.ndarray:
        """Every table of the support, shape (S, 2, J) (read-only)."""
        return _congenial_tables(public_total(z), n_counties)


class PriorCongenial(CongenialBase):
    """(c) The congenial tables weighted by DirMult(cases; z["total"], alpha * (previous_cases + pseudocount)).

    The pmf is the standard one (ERRATUM 5 of the project notes). A county with no cases last
    month would get concentration 0, where Gamma(a_j) is infinite and the pmf's limit forbids
    any case in that county this month. The ``pseudocount`` (1 by default, as in
    :meth:`ppdinfer.priors.Dirichlet.centered`) keeps every county possible; against the case
    study's counts (hundreds to thousands per county) it shifts the other concentrations by a
    negligible 1 / previous_cases_j. ``pseudocount=0`` gives the paper's measure exactly and is
    refused when some previous count is 0. The paper does not give alpha; the default 1 makes the
    concentrations last month's counts, a prior as strong as last month's total.

    References
    ----------
    .. [1] J. Seeman, M. Reimherr and A. Slavkovic, "Formal privacy for partially private data,"
        arXiv:2204.01102, 2022. Section 4.

    Examples
    --------
    >>> PriorCongenial(alpha=1.0).concentration({"total": 5, "previous_cases": np.array([4, 0])}, 2)
    array([5., 1.])
    """

    name, kind = "prior_congenial", PRIOR_CONGENIAL

    def __init__(self, alpha: float = 1.0, pseudocount: float = 1.0):
        self.alpha = positive_finite(alpha, "alpha")
        exact = isinstance(pseudocount, numbers.Real) and not isinstance(pseudocount, bool) and pseudocount == 0
        self.pseudocount = 0.0 if exact else positive_finite(pseudocount, "pseudocount")

    def check_z(self, z, n_counties):
        public_total(z)
        self.concentration(z, n_counties)

    def concentration(self, z, n_counties):
        if z is None or "previous_cases" not in z:
            raise ValueError("z must contain 'previous_cases' (last month's case count of each county)")
        previous = nonnegative_counts(z["previous_cases"], "z['previous_cases']")
        if previous.shape != (n_counties,):
            raise ValueError(f"z['previous_cases'] must hold {n_counties} county counts, got shape {previous.shape}")
        if self.pseudocount == 0 and np.any(previous == 0):
            raise ValueError("z['previous_cases'] has zero counts, whose concentration would be 0: use pseudocount > 0")
        return self.alpha * (previous + self.pseudocount)

    def log_weight(self, tables, z):
        concentration = self.concentration(z, tables.shape[2])
        return dirichlet_multinomial_logpmf(np.ascontiguousarray(tables[:, 0]), concentration)

    def parameters(self):
        """The measure's settings, recorded with the mechanism's."""
        return {"base_measure": self.name, "alpha": self.alpha, "pseudocount": self.pseudocount}


BASE_MEASURES = {"naive": Naive, "congenial": CongenialBase, "prior_congenial": PriorCongenial}


def public_total(z) -> int:
    """The public case total z["total"], checked to be a whole number >= 0."""
    if z is None or "total" not in z:
        raise ValueError("z must contain 'total' (this month's statewide case total)")
    value = nonnegative_counts(z["total"], "z['total']")
    if value.ndim != 0:
        raise ValueError(f"z['total'] must be a single count, got {z['total']!r}")
    return int(value)


@functools.lru_cache(maxsize=8)
def _congenial_tables(case_total: int, n_counties: int) -> np.ndarray:
    # Each county's cases split into deaths (even parts) and survivors (odd parts).
    parts = compositions(case_total, 2 * n_counties, limit=ENUMERATION_LIMIT)
    deaths, survivors = parts[:, 0::2], parts[:, 1::2]
    tables = np.stack([deaths + survivors, deaths], axis=1)
    tables.flags.writeable = False
    return tables


class WassersteinExponential(Mechanism):
    """Theorem 9's mechanism on (2, J) tables of case and death counts; see the module docstring.

    Parameters
    ----------
    epsilon : float
        The privacy parameter (epsilon-TP).
    sigma : float
        sigma(Delta_z), the loss's sensitivity; Delta_z for the L1 and L2 losses.
    loss : {"l2", "l1"}
        L_x(y) = ||y - x||_2 (the case study's) or ||y - x||_1.
    base_measure : {"naive", "congenial", "prior_congenial"} or BaseMeasure
        A name (with default parameters) or an instance such as ``PriorCongenial(alpha=0.5)``.
    sweeps : int
        MCMC sweeps per release when the chain runs; each proposes 2J moves.
    method : {"auto", "exact", "mcmc"}
        How to release: an exact sampler where one is available within
        ``EXACT_PROPOSAL_LIMIT`` expected proposals and the chain otherwise (``"auto"``);
        the exact sampler or a ValueError (``"exact"``); always the chain (``"mcmc"``).

    See Also
    --------
    ppdinfer.mechanisms.KNormGradient : Theorem 10's mechanism.
    ppdinfer.mechanisms.PostProcessedRelease : The projection alternative.

    Notes
    -----
    **Exact release.** Whether it is available depends on epsilon, sigma, the loss, the base
    measure, z and J, never on x (:meth:`exact_proposals`).

    - Naive, L1: a product of discrete Laplace terms with rate eps / (2 sigma) (Canonne, Kamath
      & Steinke 2020).
    - Naive, L2: rejection from the product discrete Laplace with rate a <= rate / sqrt(2J), an
      envelope because ||v||_1 <= sqrt(2J) ||v||_2, accepting y = x + v with probability
      exp(-(rate ||v||_2 - a ||v||_1)). The expected number of proposals, whatever epsilon, is
      1.3 for one county, 11 for five, 171 for ten, 13 700 for 18 (the most counties within
      the limit) and 6e15 for the case study's 67.
    - Congenial and prior-congenial, supports up to ``ENUMERATION_LIMIT`` tables: uniform
      proposals over the enumerated support, each accepted with probability
      nu(y) / max nu * exp(-rate L_x(y)) * C_min / C(x). The last factor does not depend on y,
      so the release is exact whatever its value; it makes the acceptance rate C_min / (|S|
      max nu) for every x, so the number of proposals, hence the run time, has the same law
      whatever the private table. C_min is the least C over the support's 2J vertices (all
      cases in one county, deaths 0 or all of them): the least over the whole support in all
      210 settings scanned (1-4 counties, both losses and measures, eps 0.05-20); were it not,
      some x would only run slower.

    Exact means exact: every acceptance exp(-gamma), gamma irrational for the L2 norm, is a
    chain of Canonne-Kamath-Steinke trials Bernoulli(gamma / k), each comparing uniform random
    integers with gamma / k, in double precision where IEEE 754's correctly rounded sqrt, +, *
    and / leave a margin that decides it, and otherwise on more random bits from the numpy
    Generator, against interval enclosures of gamma / k at rising precision (the trials of the
    exact integer samplers, ``exact_integer``); the discrete Laplace proposals are drawn in
    integer arithmetic. The uniforms come from numba's Mersenne Twister, seeded from the numpy
    Generator for each batch, as the chain's do. The one float approximation left is the
    prior-congenial weight nu(y) / max nu, a log-gamma expression decided by a double-precision
    uniform: it is the same for every x, so the release is exactly Theorem 9's mechanism for the
    base measure actually used, which is epsilon-TP because Theorem 9 holds for any base
    measure. That measure differs from the nu of :meth:`logpdf` by float rounding (about 1e-12
    relative) and by rounding nu / max nu up to a multiple of 2^-53.

    **MCMC release** (large naive tables; congenial supports beyond enumeration, such as every
    measure on the case study's table): Metropolis chains (``ppdinfer.kernels.wem``) that
    start at x, which satisfies z and so lies in the support, and never leave it: single-entry
    steps (naive), case transfers between two counties and death steps within [0, cases]
    (congenial), step sizes log-uniform on 1..m with m about two standard deviations of one
    entry (capped at the total). A finite chain is not Theorem 9's mechanism: if its output is
    within total variation delta of the target for every x, the release is
    (epsilon, (1 + e^epsilon) delta)-TP, and no theory bounds delta here. The chain length
    rests on checks. Empirical privacy loss (one county, naive, L2, eps = 1, sigma = 2, x and
    x' two apart, 200 000 releases each; ``--audit``): 2.98 after 1 sweep, 1.76 after 2, 0.88
    after 5, 0.60 after 20 and 0.59 after 2000, 0.58 for the exact release, against the ideal
    mechanism's 0.5 (sampling noise lifts the maximum) and the claim 1.0. On tables of 1-3
    counties the total-variation distance from the enumerated pmf reaches its sampling floor by
    20 sweeps. On the case study's January 2021 table (67 counties, total 203 060) at eps = 1
    and 0.01, for all three measures, 200 releases are compared with 200 after 8000 sweeps
    (two-sample KS on the loss and on three counties' cases; ``benchmarks/wem_release.py
    --mixing``): they differ (smallest p < 0.01) after 50 sweeps in five settings of six and
    after 200 in one (prior-congenial, eps = 1), not after 500 (smallest p 0.016). Hence
    ``MIN_SWEEPS`` = 500, below which a ``ChainLengthWarning`` is raised, and the
    default ``DEFAULT_SWEEPS`` = 2000.

    Beyond ``ENUMERATION_LIMIT``, uniform proposals (stars and bars) would still be
    accepted often enough for small totals at small epsilon (measured: 0.4 for 2 counties with
    total 1000 at eps = 0.01, 3e-6 at eps = 1; 1e-20 or less on the case study's scale), but
    neither C(x), for data-independent run times, nor a data-independent limit on the proposals
    is then available, so the chain runs there.

    **Interruption and timing.** Chains run in compiled calls of ``CHUNK_STEPS`` steps and
    exact samplers in batches of at most ``BATCH`` proposals, so Ctrl-C (KeyboardInterrupt)
    stops a release within about 0.1 s. The run time does not depend on x by construction for
    the naive measure (the noise ignores x), for exact congenial releases (above), and for
    chains (a fixed number of steps, each doing the same work whether it leaves the support, is
    accepted or not; a chain at a corner of the support took 0.63-0.76 times as long as one
    inside before, 0.94-1.01 times now). What is left: the data-dependent latency of floating-point operations
    (sqrt, log-gamma), the number of Bernoulli trials an acceptance decision takes (it grows
    with rate * L_x(y)), and memory caches.

    **Likelihood.** See the module docstring: the naive pmf omits its constant normalizer; the
    congenial pmfs include C(x) for supports up to ``ENUMERATION_LIMIT`` tables and refuse
    beyond. For the congenial measures x must satisfy z, as the confidential table does.

    References
    ----------
    .. [1] J. Seeman, M. Reimherr and A. Slavkovic, "Formal privacy for partially private data,"
        arXiv:2204.01102, 2022. Theorem 9.
    .. [2] F. McSherry and K. Talwar, "Mechanism design via differential privacy," FOCS 2007.

    Examples
    --------
    >>> m = WassersteinExponential(1.0, 2.0, base_measure="congenial")
    >>> x = np.array([[3, 2], [1, 0]]); z = {"total": 5}
    >>> m.exact_proposals(z, 2) <= EXACT_PROPOSAL_LIMIT  # small support: the release is exact
    True
    >>> y = m.release(x, z, random_seed=0)
    >>> int(y[0].sum()), bool((y[0] >= y[1]).all() and (y[1] >= 0).all())
    (5, True)
    >>> bool(m.logpdf(y, x[None], z)[0] <= m.log_bound(z, size=4))
    True
    """

    discrete = True

    def __init__(
        self,
        epsilon: float,
        sigma: float,
        *,
        loss: str = "l2",
        base_measure: str | BaseMeasure = "naive",
        sweeps: int = DEFAULT_SWEEPS,
        method: str = "auto",
    ):
        self.epsilon = positive_finite(epsilon, "epsilon")
        self.sigma = positive_finite(sigma, "sigma")
        if loss not in LOSSES:
            raise ValueError(f"loss must be one of {sorted(LOSSES)}, got {loss!r}")
        self.loss = loss
        self.power = LOSSES[loss]
        if isinstance(base_measure, str):
            if base_measure not in BASE_MEASURES:
                raise ValueError(
                    f"base_measure must be one of {sorted(BASE_MEASURES)} or a BaseMeasure, got {base_measure!r}"
                )
            base_measure = BASE_MEASURES[base_measure]()
        elif not isinstance(base_measure, BaseMeasure):
            raise ValueError(
                f"base_measure must be one of {sorted(BASE_MEASURES)} or a BaseMeasure, got {base_measure!r}"
            )
        self.base_measure = base_measure
        self.sweeps = positive_int(sweeps, "sweeps")
        self.method = _check_method(method)
        self.rate = self.epsilon / (2 * self.sigma)

    def _guarantee(self) -> Guarantee:
        return Guarantee("pufferfish", epsilon=self.epsilon, note="Theorem 9 (Wasserstein exponential mechanism)")

    def parameters(self) -> dict[str, float | str]:
        return {
            "epsilon": self.epsilon,
            "sigma": self.sigma,
            "loss": self.loss,
            "sweeps": self.sweeps,
            "method": self.method,
            **self.base_measure.parameters(),
        }

    # -- release ---------------------------------------------------------------------------
    def release(
        self,
        x,
        z=None,
        random_seed: SeedLike = None,
        *,
        sweeps: int | None = None,
        replicates: int | None = None,
        method: str | None = None,
    ) -> np.ndarray:
        """A release for the table x (shape (2, J)), or ``replicates`` independent ones (shape (R, 2, J)).

        ``sweeps`` and ``method`` override the mechanism's settings for this call; ``sweeps``
        matters only when the chain runs.
        """
        x = nonnegative_counts(x, "x")
        if x.ndim != 2 or x.shape[0] != 2:
            raise ValueError(f"x must have shape (2, J): row 0 cases, row 1 deaths; got shape {x.shape}")
        n_counties = x.shape[1]
        self._check_x(x[None], z, n_counties)
        count = 1 if replicates is None else positive_int(replicates, "replicates")
        sweeps = self.sweeps if sweeps is None else positive_int(sweeps, "sweeps")
        method = self.method if method is None else _check_method(method)
        rng = as_generator(random_seed)
        proposals, sampler = self._exact_plan(z, n_counties) if method != "mcmc" else (math.inf, None)
        if method == "exact" and proposals > EXACT_PROPOSAL_LIMIT:
            raise ValueError(
                f"no exact release of the {self.base_measure.name} {self.loss} mechanism for {n_counties} "
                f"counties here: {self._exact_obstacle(z, n_counties, proposals)}; use method='mcmc'"
            )
        if proposals <= EXACT_PROPOSAL_LIMIT:
            y = sampler(x.reshape(-1), count, rng)
        else:
            y = self._chain(x.reshape(-1), z, count, sweeps, rng)
        y = y.reshape(count, 2, n_counties)
        return y[0] if replicates is None else y

    def exact_proposals(self, z, n_counties: int) -> float:
        """Expected proposals per exact release (inf: no exact sampler); the same for every x."""
        self.base_measure.check_z(z, n_counties)
        return self._exact_plan(z, n_counties)[0]

    def _exact_plan(self, z, n_counties: int):
        """(expected proposals per release, sampler(flat x, count, rng) -> (count, 2J) releases)."""
        if self.base_measure.translation_invariant:
            if self.power == 1:
                laplace = DiscreteLaplace(self.epsilon, 2 * self.sigma)
                return 1.0, lambda flat, count, rng: laplace.release(
                    np.broadcast_to(flat, (count, flat.size)), random_seed=rng
                )
            return lattice_l2_plan(self.rate, 2 * n_counties)
        if self.base_measure.support_size(z, n_counties) > ENUMERATION_LIMIT:
            return math.inf, None
        support, log_weight = self._enumerate(z, n_counties)
        vertices = np.zeros((2 * n_counties, 2, n_counties), dtype=np.int64)
        for j in range(n_counties):
            vertices[2 * j : 2 * j + 2, 0, j] = public_total(z)
            vertices[2 * j + 1, 1, j] = public_total(z)
        log_c_min = min_log_normalizer(support, log_weight, vertices.reshape(2 * n_counties, -1), self.rate, self.power)
        top = log_weight.max()
        weight = np.exp(log_weight - top)

        def sampler(flat, count, rng):
            log_c = min_log_normalizer(support, log_weight, flat[None], self.rate, self.power)
            thin = math.exp(min(0.0, log_c_min - log_c))

            def gamma_of(index):
                diff = support[index] - flat
                return self.rate, int(diff @ diff) if self.power == 2 else int(np.abs(diff).sum()) ** 2, 0.0, 0

            def batch(size):
                index, status, state = _outputs(size)
                congenial_proposals(
                    index, status, state, support, flat, weight, thin, self.rate, self.power, int(rng.integers(2**31))
                )
                return support[index[_accepted(status, state, rng, lambda i: gamma_of(index[i]))]]

            return _first_accepted(count, proposals, batch)

        proposals = len(support) * math.exp(top - log_c_min)
        return proposals, sampler

    def _exact_obstacle(self, z, n_counties: int, proposals: float) -> str:
        above = f"expected proposals per release, above EXACT_PROPOSAL_LIMIT = {EXACT_PROPOSAL_LIMIT}"
        if self.base_measure.translation_invariant:
            return f"{proposals:.3g} {above}"
        size = self.base_measure.support_size(z, n_counties)
        if size > ENUMERATION_LIMIT:
            return f"the support has {size:.3g} tables, above ENUMERATION_LIMIT = {ENUMERATION_LIMIT}"
        return f"{proposals:.3g} {above} (support of {size} tables)"

    def _chain(self, flat, z, count: int, sweeps: int, rng) -> np.ndarray:
        """``count`` chains of ``sweeps`` sweeps from x, run in compiled calls of about CHUNK_STEPS steps."""
        if sweeps < MIN_SWEEPS:
            warnings.warn(
                f"an MCMC release of {sweeps} sweeps (below MIN_SWEEPS = {MIN_SWEEPS}) may stay close to x "
                "and need not hold the privacy guarantee",
                ChainLengthWarning,
                stacklevel=3,
            )
        n_counties = flat.size // 2
        settings = (
            flat,
            self.base_measure.kind,
            self.power,
            self.rate,
            self.base_measure.concentration(z, n_counties),
            self.max_step(z, n_counties),
        )
        per_call = max(1, CHUNK_STEPS // flat.size)  # sweeps per call
        block = max(1, per_call // sweeps)  # chains per call
        out = np.empty((count, flat.size), dtype=np.int64)
        for start in range(0, count, block):
            states = out[start : start + block]
            states[:] = flat
            for done in range(0, sweeps, per_call):
                wem_advance(states, *settings, min(per_call, sweeps - done), int(rng.integers(2**31)))
        return out

    def max_step(self, z, n_counties: int) -> int:
        """Largest MCMC step: about two standard deviations of one entry under exp(-rate L), capped at the total."""
        spread = (math.sqrt(2 * n_counties) if self.power == 2 else 1.0) / self.rate
        step = max(1, math.ceil(2 * spread))
        return step if self.base_measure.translation_invariant else max(1, min(step, public_total(z)))

    # -- likelihood ------------------------------------------------------------------------
    def logpdf(self, y, x, z=None) -> np.ndarray:
        """log pi(y | x, z) for each table in x: (2, J), (B, 2, J) or flattened (B, 2J); y is (2, J) or (2J,)."""
        y = integer_valued(y, "y")
        if y.size % 2 or y.ndim not in (1, 2) or (y.ndim == 2 and y.shape[0] != 2):
            raise ValueError(f"y must have shape (2, J) or (2J,), got shape {y.shape}")
        n_counties = y.size // 2
        y = y.reshape(1, 2, n_counties)
        xs = _as_tables(x, n_counties)
        self._check_x(xs, z, n_counties)
        if not self.base_measure.contains(y, z)[0]:
            raise ValueError(
                f"y = {y[0].tolist()} lies outside the support of the {self.base_measure.name} "
                "base measure given z: no release can take this value"
            )
        y_flat = y.reshape(-1)
        log_kernel = -self.rate * loss_rows(y_flat, xs.reshape(xs.shape[0], -1), self.power)
        if self.base_measure.translation_invariant:
            return log_kernel
        support, log_weight = self._enumerate(z, n_counties)
        unique, inverse = np.unique(xs.reshape(xs.shape[0], -1), axis=0, return_inverse=True)
        log_c, _ = log_normalizer_and_peak(support, log_weight, unique, self.rate, self.power)
        return self.base_measure.log_weight(y, z)[0] + log_kernel - log_c[inverse.reshape(-1)]

    def log_bound(self, z=None, size: int = 1) -> float:
        """log M with M >= pi(y | x, z) for every y and every x that satisfies z.

        Naive: 0 (the unnormalized kernel is at most 1). Congenial: the exact maximum over the
        enumerated (x, y) pairs up to ``BOUND_SCAN_LIMIT`` tables, 0 (a pmf is at most 1) up
        to ``ENUMERATION_LIMIT``, and +inf beyond, where no exact likelihood is available.
        """
        size = positive_int(size, "size")
        if size % 2:
            raise ValueError(f"size must be 2J for tables of shape (2, J), got {size}")
        n_counties = size // 2
        self.base_measure.check_z(z, n_counties)
        if self.base_measure.translation_invariant:
            return 0.0
        support_size = self.base_measure.support_size(z, n_counties)
        if support_size > ENUMERATION_LIMIT:
            return math.inf
        if support_size > BOUND_SCAN_LIMIT:
            return 0.0
        support, log_weight = self._enumerate(z, n_counties)
        log_c, peak = log_normalizer_and_peak(support, log_weight, support, self.rate, self.power)
        return float(np.max(peak - log_c))

    def _enumerate(self, z, n_counties: int) -> tuple[np.ndarray, np.ndarray]:
        """The support (flattened, (S, 2J)) and log nu_z on it; refuses supports above the limit."""
        support_size = self.base_measure.support_size(z, n_counties)
        if support_size > ENUMERATION_LIMIT:
            raise ValueError(
                f"the normalizer C(x) of the {self.base_measure.name} base measure depends on x and needs a sum over "
                f"its {support_size:.3g} tables (total {public_total(z)}, {n_counties} counties), above "
                f"ENUMERATION_LIMIT = {ENUMERATION_LIMIT}: the likelihood cannot be computed here, so neither "
                "rejection nor importance sampling can use this mechanism"
            )
        tables = self.base_measure.support(z, n_counties)
        return tables.reshape(tables.shape[0], -1), self.base_measure.log_weight(tables, z)

    def _check_x(self, xs: np.ndarray, z, n_counties: int) -> None:
        self.base_measure.check_z(z, n_counties)
        if self.base_measure.translation_invariant:
            return
        bad = ~self.base_measure.contains(xs, z)
        if np.any(bad):
            raise ValueError(
                f"x = {xs[np.argmax(bad)].tolist()} does not satisfy z: the cases must sum to "
                f"z['total'] = {public_total(z)} with cases >= deaths >= 0 in every county"
            )


# -- exact sampling -----------------------------------------------------------------------------


def _check_method(method) -> str:
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    return method


def _first_accepted(count: int, proposals: float, batch) -> np.ndarray:
    """The first ``count`` rows returned by successive calls of ``batch(size)`` (the accepted ones of ``size``
    proposals), ``size`` about twice the expected need of ``count`` releases at ``proposals`` each, at most BATCH."""
    size = min(BATCH, 16 + math.ceil(2 * count * proposals))
    found, total = [], 0
    while total < count:
        found.append(batch(size))
        total += len(found[-1])
    return np.concatenate(found)[:count]


#: The naive L2 envelope's rate is a = numerator / _ENVELOPE_DENOMINATOR.
_ENVELOPE_DENOMINATOR = 2**32


def lattice_l2_plan(rate: float, dim: int):
    """Expected proposals and sampler of the naive L2 release: rejection from a discrete Laplace product.

    The expected number of proposals is the continuous approximation sum exp(-a ||v||_1) /
    sum exp(-rate ||v||_2) = (2 sqrt(n))^n Gamma(n / 2 + 1) / (n! pi^(n / 2)) at a = rate / sqrt(n),
    within 30 % of the measured rate up to n = 20. No exact sampler (inf) for rates below
    2^-22 sqrt(n), whose noise could overflow the int64 sums.
    """
    scaled = Fraction(rate) * _ENVELOPE_DENOMINATOR
    numerator = min(math.isqrt(math.floor(scaled * scaled / dim)), 2**52)  # numerator * sqrt(dim) <= scaled
    if numerator < 2**10:
        return math.inf, None
    envelope_rate = numerator / _ENVELOPE_DENOMINATOR
    proposals = math.exp(
        dim * math.log(2 * math.sqrt(dim))
        + math.lgamma(dim / 2 + 1)
        - math.lgamma(dim + 1)
        - dim / 2 * math.log(math.pi)
    )

    def sampler(flat, count, rng):
        def batch(size):
            _, status, state = _outputs(size)
            noise = np.empty((size, dim), dtype=np.int64)
            lattice_l2_proposals(noise, status, state, numerator, _ENVELOPE_DENOMINATOR, rate, int(rng.integers(2**31)))
            accepted = _accepted(
                status,
                state,
                rng,
                lambda i: (rate, int(noise[i] @ noise[i]), -envelope_rate, int(np.abs(noise[i]).sum())),
            )
            return flat + noise[accepted]

        return _first_accepted(count, proposals, batch)

    return proposals, sampler


#: Random binary digits of each uniform of the exact-release kernels (numba's random() is u / 2^53).
_KERNEL_DIGITS = 53


def _outputs(size: int):
    """Empty (index, status, state) arrays for ``size`` proposals of an exact-release kernel."""
    return np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int64), np.zeros((size, 4))


def _accepted(status, state, rng, gamma_of) -> np.ndarray:
    """The accepted proposals of a kernel batch (status 1), each undecided one (-1) finished exactly.

    ``gamma_of(i)`` gives proposal i's (root_rate, q, linear_rate, s), gamma = root_rate sqrt(q) +
    linear_rate s; its ``state`` row (k, pieces left, u, pieces) is where the kernel stopped, u the
    first ``_KERNEL_DIGITS`` binary digits of the trial too close to call.
    """
    accepted = status == 1
    bits = exact_integer.RandomBits(rng)
    for i in np.flatnonzero(status == -1):
        k, left, u, pieces = (int(value) for value in state[i])
        gamma = functools.partial(exact_integer.root_plus_linear, *gamma_of(i))
        accepted[i] = exact_integer.bernoulli_exp_minus(
            gamma, pieces, bits, counter=k, left=left, prefix=u, digits=_KERNEL_DIGITS
        )
    return accepted


def _as_tables(values, n_counties: int) -> np.ndarray:
    """x as a batch of tables (B, 2, J) from (2, J), (B, 2, J), (2J,) or (B, 2J)."""
    arr = nonnegative_counts(values, "x")
    if arr.ndim in (2, 3) and arr.shape[-2:] == (2, n_counties):
        return arr.reshape(-1, 2, n_counties)
    if arr.ndim in (1, 2) and arr.shape[-1] == 2 * n_counties:
        return arr.reshape(-1, 2, n_counties)
    raise ValueError(
        f"x must have shape (2, {n_counties}), (B, 2, {n_counties}) or (B, {2 * n_counties}) "
        f"to match y, got shape {arr.shape}"
    )
