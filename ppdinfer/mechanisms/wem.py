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
- :class:`Congenial`: tables whose cases sum to z["total"] with cases >= deaths >= 0.
- :class:`PriorCongenial`: the congenial tables weighted by the Dirichlet-multinomial pmf of the
  cases with total z["total"] and concentration alpha * (previous_cases + pseudocount).

For the congenial measures C(x) depends on x and logpdf includes it, computed exactly by
enumerating the support: the tables are the compositions of the total into 2J parts (each
county's cases split into deaths and survivors), C(total + 2J - 1, 2J - 1) of them. Above
:data:`ENUMERATION_LIMIT` logpdf refuses and log_bound is +inf, so the samplers refuse too.

Example (the case study's three mechanisms at Delta_z = 2, L2 loss)::

    naive = WassersteinExponential(eps, 2.0, base_measure="naive")
    congenial = WassersteinExponential(eps, 2.0, base_measure="congenial")
    prior = WassersteinExponential(eps, 2.0, base_measure=PriorCongenial(alpha=1.0))
"""

from __future__ import annotations

import functools
import math
import numbers

import numpy as np

from .._random import SeedLike, as_generator
from .._validation import integer_valued, nonnegative_counts, positive_finite, positive_int
from ..generators import compositions
from ..kernels.wem import (
    CONGENIAL,
    NAIVE,
    PRIOR_CONGENIAL,
    dirichlet_multinomial_logpmf,
    log_normalizer_and_peak,
    loss_rows,
    wem_chains,
)
from .base import Mechanism
from .laplace import DiscreteLaplace

#: The losses L_x(y) = ||y - x||_p, by name, with their power p.
LOSSES = {"l1": 1, "l2": 2}
#: Largest support (number of tables) enumerated for the normalizer C(x).
ENUMERATION_LIMIT = 200_000
#: Largest support for which log_bound scans every (x, y) pair (S^2 work) for the exact sup of
#: the pmf; between this and ENUMERATION_LIMIT it returns log 1 = 0, valid for any pmf.
BOUND_SCAN_LIMIT = 5_000
#: Default MCMC sweeps per release (a sweep proposes 2J moves): four times the 500 that mixed on the
#: case study's table; see WassersteinExponential.
DEFAULT_SWEEPS = 2_000


class BaseMeasure:
    """A base measure nu_z on tables of shape (2, J). Subclasses set ``name`` and ``kind``.

    ``kind`` tells the compiled chain (:mod:`ppdinfer.kernels.wem`) which moves and weights to
    use; it knows the three measures below, so a new measure needs a new kind there.
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
        return {"base_measure": self.name}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.parameters().items() if k != "base_measure")
        return f"{type(self).__name__}({args})"


class Naive(BaseMeasure):
    """(a) The counting measure on the whole lattice Z^{2J}."""

    name, kind = "naive", NAIVE
    translation_invariant = True


class Congenial(BaseMeasure):
    """(b) The counting measure on integer tables with sum_j cases_j = z["total"] and cases >= deaths >= 0."""

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


class PriorCongenial(Congenial):
    """(c) The congenial tables weighted by DirMult(cases; z["total"], alpha * (previous_cases + pseudocount)).

    The pmf is the standard one (ERRATUM 5 of the project notes). A county with no cases last
    month would get concentration 0, where Gamma(a_j) is infinite and the pmf's limit forbids
    any case in that county this month. The ``pseudocount`` (1 by default, as in
    :meth:`ppdinfer.priors.Dirichlet.centered`) keeps every county possible; against the case
    study's counts (hundreds to thousands per county) it shifts the other concentrations by a
    negligible 1 / previous_cases_j. ``pseudocount=0`` gives the paper's measure exactly and is
    refused when some previous count is 0. The paper does not give alpha; the default 1 makes the
    concentrations last month's counts, a prior as strong as last month's total.
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
            raise ValueError("z['previous_cases'] has zero counts, whose concentration would be 0: "
                             "use pseudocount > 0")
        return self.alpha * (previous + self.pseudocount)

    def log_weight(self, tables, z):
        concentration = self.concentration(z, tables.shape[2])
        return dirichlet_multinomial_logpmf(np.ascontiguousarray(tables[:, 0]), concentration)

    def parameters(self):
        return {"base_measure": self.name, "alpha": self.alpha, "pseudocount": self.pseudocount}


BASE_MEASURES = {"naive": Naive, "congenial": Congenial, "prior_congenial": PriorCongenial}


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
        MCMC sweeps per release; each proposes 2J moves.

    Notes
    -----
    **Release.** The naive measure with the L1 loss is a product of discrete Laplace terms with
    rate eps / (2 sigma), released exactly (Canonne, Kamath & Steinke 2020). Every other
    combination is released by Metropolis MCMC (:func:`ppdinfer.kernels.wem.wem_chains`) that
    starts at x, which satisfies z and so lies in the support, and whose moves never leave it:
    single-entry steps (naive), case transfers between two counties and death steps within
    [0, cases] (congenial). Step sizes are log-uniform on 1..m, m about two standard deviations
    of one entry under the loss alone (capped at the total), so one kernel serves small tables
    and the case study's counts. The chain length is ``sweeps`` (default
    :data:`DEFAULT_SWEEPS` = 2000; override it here or per call), set from measured mixing. On
    tables of 1-3 counties with deaths (totals 4-6), the total-variation distance of 20 000
    replicate releases from the enumerated pmf falls from about 0.6 after one sweep to its
    sampling floor (0.025-0.03) by 20 sweeps. On the case study's January 2021 table (67
    counties, 134 entries, total 203 060) at eps = 1 and 0.01, for all three base measures, the
    loss ||y - x||_2 and single counties' counts of 200 replicates differ from those of
    8000-sweep chains (two-sample KS p < 0.01) after 50 sweeps, and at eps = 0.01 (congenial)
    still after 200, but not after 500 or more. The default is four times that: 268 000 steps,
    0.04-0.07 s per release at the 4-7 million steps per second measured on a shared two-core
    machine (benchmarks/wem_release.py).
    MCMC release is approximate: the output follows Theorem 9's pmf only up to the chain's
    unknown distance delta from stationarity, so the guarantee is epsilon-TP for the ideal
    mechanism and only (epsilon, (1 + e^epsilon) delta) for the chain; a short chain also
    stays near its start x, which leaks. Use ample sweeps.

    **Likelihood.** See the module docstring: the naive pmf omits its constant normalizer; the
    congenial pmfs include C(x) for supports up to :data:`ENUMERATION_LIMIT` tables and refuse
    beyond. For the congenial measures x must satisfy z, as the confidential table does.
    """

    discrete = True

    def __init__(self, epsilon: float, sigma: float, *, loss: str = "l2",
                 base_measure: str | BaseMeasure = "naive", sweeps: int = DEFAULT_SWEEPS):
        self.epsilon = positive_finite(epsilon, "epsilon")
        self.sigma = positive_finite(sigma, "sigma")
        if loss not in LOSSES:
            raise ValueError(f"loss must be one of {sorted(LOSSES)}, got {loss!r}")
        self.loss = loss
        self.power = LOSSES[loss]
        if isinstance(base_measure, str):
            if base_measure not in BASE_MEASURES:
                raise ValueError(f"base_measure must be one of {sorted(BASE_MEASURES)} or a BaseMeasure, "
                                 f"got {base_measure!r}")
            base_measure = BASE_MEASURES[base_measure]()
        elif not isinstance(base_measure, BaseMeasure):
            raise ValueError(f"base_measure must be one of {sorted(BASE_MEASURES)} or a BaseMeasure, "
                             f"got {base_measure!r}")
        self.base_measure = base_measure
        self.sweeps = positive_int(sweeps, "sweeps")
        self.rate = self.epsilon / (2 * self.sigma)

    def parameters(self) -> dict[str, float | str]:
        return {"epsilon": self.epsilon, "sigma": self.sigma, "loss": self.loss, "sweeps": self.sweeps,
                **self.base_measure.parameters()}

    # -- release ---------------------------------------------------------------------------
    def release(self, x, z=None, random_seed: SeedLike = None, *, sweeps: int | None = None,
                replicates: int | None = None) -> np.ndarray:
        """A release for the table x (shape (2, J)), or ``replicates`` independent ones (shape (R, 2, J)).

        ``sweeps`` overrides the mechanism's chain length for this call.
        """
        x = nonnegative_counts(x, "x")
        if x.ndim != 2 or x.shape[0] != 2:
            raise ValueError(f"x must have shape (2, J): row 0 cases, row 1 deaths; got shape {x.shape}")
        n_counties = x.shape[1]
        self._check_x(x[None], z, n_counties)
        count = 1 if replicates is None else positive_int(replicates, "replicates")
        sweeps = self.sweeps if sweeps is None else positive_int(sweeps, "sweeps")
        rng = as_generator(random_seed)
        if self.base_measure.translation_invariant and self.power == 1:
            y = DiscreteLaplace(self.epsilon, 2 * self.sigma).release(np.broadcast_to(x, (count, 2, n_counties)),
                                                                      random_seed=rng)
        else:
            y = wem_chains(x.reshape(-1), self.base_measure.kind, self.power, self.rate,
                           self.base_measure.concentration(z, n_counties), self.max_step(z, n_counties), sweeps,
                           count, int(rng.integers(2**31)))
        y = y.reshape(count, 2, n_counties)
        return y[0] if replicates is None else y

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
            raise ValueError(f"y = {y[0].tolist()} lies outside the support of the {self.base_measure.name} "
                             "base measure given z: no release can take this value")
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
        enumerated (x, y) pairs up to :data:`BOUND_SCAN_LIMIT` tables, 0 (a pmf is at most 1) up
        to :data:`ENUMERATION_LIMIT`, and +inf beyond, where no exact likelihood is available.
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
            raise ValueError(f"x = {xs[np.argmax(bad)].tolist()} does not satisfy z: the cases must sum to "
                             f"z['total'] = {public_total(z)} with cases >= deaths >= 0 in every county")


def _as_tables(values, n_counties: int) -> np.ndarray:
    """x as a batch of tables (B, 2, J) from (2, J), (B, 2, J), (2J,) or (B, 2J)."""
    arr = nonnegative_counts(values, "x")
    if arr.ndim in (2, 3) and arr.shape[-2:] == (2, n_counties):
        return arr.reshape(-1, 2, n_counties)
    if arr.ndim in (1, 2) and arr.shape[-1] == 2 * n_counties:
        return arr.reshape(-1, 2, n_counties)
    raise ValueError(f"x must have shape (2, {n_counties}), (B, 2, {n_counties}) or (B, {2 * n_counties}) "
                     f"to match y, got shape {arr.shape}")
