r"""A compiled posterior sampler for the latent cells of a noisy-measurement file.

**Prior.** For finest unit (block group) l with parent p(l) (its tract) and share group g(l) (its
ancestor at ``share_level``, by default two levels up: the county), cells
:math:`n_{l,1..K}` and total :math:`N_l = \sum_k n_{l,k}`:

.. math::

    N_l \mid m, \phi &\sim \mathrm{NegBin}(\text{mean } m_{p(l)}, \text{size } \phi)
        \quad (\text{Poisson}(\lambda_l),\ \lambda_l \sim \mathrm{Gamma}(\phi, \phi / m_{p(l)})), \\
    n_{l,\cdot} \mid N_l &\sim \mathrm{DirMult}(N_l, \alpha_{g(l)} q_{g(l)})
        \quad (\mathrm{Multinomial}(N_l, p_l),\ p_l \sim \mathrm{Dirichlet}(\alpha_{g(l)} q_{g(l)})), \\
    q_g &\sim \mathrm{Dirichlet}(a_0, \dots, a_0), \quad
    \log \alpha_g \sim \mathcal{N}(\mu_\alpha, s_\alpha^2), \quad \log \phi \sim \mathcal{N}(\mu_\phi, s_\phi^2),
    \quad \log m_p \sim \mathcal{N}(\mu_m, s_m^2).

Block-group sizes scatter around their tract's mean size (phi: their concentration), and block-group
compositions around their county's composition (alpha_g: how closely, per county); the
concentrations, the tract means and the county compositions are learned. The sampler moves
:math:`\beta_g = \alpha_g q_g` one coordinate at a time (random-walk Metropolis on log beta_{g,k},
whose prior density is :math:`-\tfrac12 ((\log\alpha_g - \mu_\alpha)/s_\alpha)^2 - K \log \alpha_g
+ (a_0 - 1) \sum_k \log q_{g,k} + \sum_k \log \beta_{g,k}` with :math:`\alpha_g = \sum_k \beta_{g,k}`),
so one update reads the group's leaves once, O(leaves), not O(leaves x K). The leaf rates lambda_l and shares p_l are
integrated out, so the log prior of one leaf is

.. math::

    \log \pi(n_l) = \log\Gamma(N + \phi) - \log\Gamma(\phi) + \phi \log\frac{\phi}{\phi + m}
      + N \log\frac{m}{\phi + m} + \log\Gamma(\alpha_g) - \log\Gamma(N + \alpha_g)
      + \sum_k \big[\log\Gamma(n_k + \beta_{g,k}) - \log\Gamma(\beta_{g,k}) - \log n_k!\big]

(the N! of the multinomial and the 1/N! of the negative binomial cancel), and a move of one or two
cells changes it in O(1).

**Moves.** A sweep visits every cell i once. Cells under exact invariants (rows of A that are
nested unit totals, e.g. the state total) form classes of identical invariant signature; cell i
picks a partner j: another category of the same leaf (probability 0.6), the same category of a
sibling leaf (0.25) or a cell of another leaf of its class (0.15: 80 % of the time a leaf at most 64
places away in the table, whose queries are in cache; else any) (``partners``; j must share i's
class, so every invariant is kept exactly); a partner's category is drawn by its group's share plus
``partner_floor``, so most moves pair a cell with a populous category, which has people to give.
These choices read the hyperparameters (fixed during a sweep), never the cells, so each move, a
Gibbs draw along a line, leaves the posterior invariant. A cell under no invariant moves alone half
the time. The move is a Gibbs
draw along the line :math:`n + t (e_i - e_j)` (or :math:`n + t e_i`) from the exact conditional on a
window of states, by one of two kernels, each reversible for the conditional on the line:

- *wide* (Gaussian noise; probability 1 - ``local``): the window is fixed by the line, not by the
  position on it: the likelihood's peak along the line (computed from the residuals at the line's
  point n_i = 0, the same numbers from every state of the line) +- ``window`` noise sds, reaching
  down to n_i = 0 (and up to n_j = 0) when within that distance, so one draw crosses the whole
  conditional, a spike at 0 and a bump included; a state outside its line's window stays;
- *local*: a window of ``step`` + 1 values of t holding t = 0 placed at random (uniform offset, so
  every state of the window would place it there with the same probability).

The conditional is the prior change above times the likelihood change of the queries containing i
or j only (their current values are cached; for Gaussian noise a quadratic in t), built by products
of ratios from the likelihood's peak outwards (no log or exp per state), so a move costs O(depth of
the hierarchy + window).
**Spread moves.** Before its paired move, a cell of a rare category (beta_{g,k} < 1) whose own
measurement reads at least half a noise sd above 0 (or that has no own query) gets a *spread* move
(probability ``spread``): a Gibbs draw along :math:`n + t (m e_i - \sum_{s \in S} e_s)`, S the m
(2..6) other categories of its leaf of largest beta, so the cell jumps between 0 and a bump of m
people while m populous cells give one each. Half of them (``sibling_spread``) are *sibling
spreads*, along :math:`n + t (m e_i - \sum_S e_s - m e_j + \sum_{S'} e_{s'})` with j and S' the same
categories in a sibling leaf: a rare category's people pass between two block groups while one
person of each category of S goes back, so both leaves keep their totals and the tract keeps its
count of every category. That is the slowest mode of the posterior: a cell with a spike at 0 whose
people, when absent, sit in a sibling's cell of the same category.

**Revisits.** Over the second half of tuning the sampler records each cell's lag-1
autocorrelation per sweep; the cells where it exceeds 0.6 (averaged over the chains, chosen once,
when tuning ends) are visited ``revisit`` more times per sweep (spread and paired moves) from then
on. The kernel after tuning is fixed, so the draws keep the posterior; the few cells that mix
slowest (a spike at 0 and a bump, about 1-3 % of cells) get the extra work, which bounds the worst
cell's autocorrelation without slowing every cell.

The hyperparameters follow each sweep (``hyper_rounds`` times) by random-walk Metropolis on their
logs (step sizes adapted during tuning, then fixed), and once per sweep each group's alpha_g moves
alone: every log beta_{g,k} shifted by the same step, the shares q_g kept (a symmetric proposal in
log beta, whose Dirichlet-multinomial change reads the group's non-empty cells). Without it alpha_g
of a county with few block groups, weakly identified, diffused through one-coordinate updates only.
Chains run in parallel threads (the compiled sweeps release the GIL), each from its own SeedSequence
child stream.

**References.**

Abowd, J. M. et al. (2022). The 2020 Census Disclosure Avoidance System TopDown Algorithm.
Harvard Data Science Review, Special Issue 2.
Ju, N., Awan, J., Gong, R. & Rao, V. (2022). Data augmentation MCMC for Bayesian inference from
privatized data. NeurIPS.
Canonne, C. L., Kamath, G. & Steinke, T. (2020). The discrete Gaussian for differential privacy.
"""

from __future__ import annotations

import math
import numbers
import threading
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from math import lgamma

import numpy as np
import xarray as xr
from tqdm import tqdm

from ..inference.diagnostics import check_convergence
from ..inference.parallel import resolve_cores
from ..kernels.census import census_sweeps, log_gamma_step
from ..mechanisms.noisy_measurements import NoisyMeasurements
from ..rng import SeedLike, root_seed
from ..validation import (
    MAX_INTEGER,
    integer_valued,
    non_negative_int,
    nonnegative_counts,
    positive_finite,
    positive_int,
    probability,
)
from .baselines import gls_estimate, largest_remainder
from .geography import CensusQueries
from .grouped_release import GroupedRelease

__all__ = ["CellPrior", "hierarchical_log_prior", "sample_cells"]

#: A cell is slow when its lag-1 autocorrelation per sweep over the second half of tuning exceeds this
#: (about 4 sweeps per independent draw); tuning must be at least _WATCHED_SWEEPS sweeps to watch.
_SLOW = 0.6
_WATCHED_SWEEPS = 20

#: What the sampler reads from a noisy-measurement mechanism (it never tests its class).
_DECLARES = ("queries", "sigmas", "rates", "power", "invariant_matrix", "invariant_values", "satisfies_invariants")
#: The hyperparameters (their starting or, with learn=False, fixed values) and their priors' settings.
_HYPERPARAMETERS = ("alpha", "phi", "mean", "shares")
_PRIOR_SETTINGS = ("alpha_prior", "phi_prior", "mean_prior", "share_prior")
#: A query's value is taken to stay below its release + this many noise sds (the chance of more is below
#: exp(-1000) for either noise): the data's bound on a cell that no invariant bounds, which sizes the draws' dtype.
_DATA_SDS = 1000.0
_INT32_MAX = int(np.iinfo(np.int32).max)


class CellPrior:
    """The hierarchy the prior reads: each leaf's parent (mean size) and share group, for a CensusQueries.

    Examples
    --------
    >>> from ppdinfer.census import Geography, TableSpec, census_queries
    >>> geo = Geography(["s", "c", "t", "b1", "b2"], [None, "s", "c", "t", "t"])
    >>> prior = CellPrior(census_queries(geo, TableSpec(("a", "b")), {"level3": ["detailed"]}))
    >>> prior.group_ids.tolist(), prior.parent_ids.tolist()      # shares by county, sizes by tract
    (['c'], ['t'])
    """

    def __init__(self, census: CensusQueries, share_level: str | None = None):
        if not isinstance(census, CensusQueries | GroupedRelease):
            raise ValueError(f"census must be CensusQueries or a GroupedRelease, got {type(census).__name__}")
        geo = census.geography
        finest = geo.n_levels - 1
        if share_level is None:
            depth = max(finest - 2, 0)
        else:
            if share_level not in geo.level_names:
                raise ValueError(f"share_level {share_level!r} is not one of {geo.level_names}")
            depth = geo.level_names.index(share_level)
        leaves = geo.leaves
        parent_unit = np.where(geo.parent[leaves] >= 0, geo.parent[leaves], leaves)
        group_unit = leaves.copy()
        while True:
            up = geo.depth[group_unit] > depth
            if not up.any():
                break
            group_unit[up] = geo.parent[group_unit[up]]
        parents, self.leaf_parent = np.unique(parent_unit, return_inverse=True)
        groups, self.leaf_group = np.unique(group_unit, return_inverse=True)
        self.parent_ids = np.array([str(v) for v in geo.ids[parents]])
        self.group_ids = np.array([str(v) for v in geo.ids[groups]])
        self.K = census.table.n_cells

    @property
    def n_parents(self) -> int:
        """The number of parents of leaves (mean sizes)."""
        return int(self.parent_ids.size)

    @property
    def n_groups(self) -> int:
        """The number of share groups."""
        return int(self.group_ids.size)


def hierarchical_log_prior(cells, prior: CellPrior, alpha, phi: float, mean, shares, open_cells=None) -> float:
    """The log prior pmf of a (leaves, K) table given the hyperparameters (the module docstring's formula).

    ``alpha``: a scalar or one per share group; ``mean``: a scalar or one mean size per parent;
    ``shares``: K values or one row per share group; ``open_cells``: optionally (leaves, K) bools, the cells each leaf
    may hold (its composition the Dirichlet-multinomial over them, of total alpha x their share, as
    :func:`~ppdinfer.census.people.sample_people` has it where bounds close cells of a leaf; ``cells`` must be 0
    elsewhere).

    Examples
    --------
    >>> import numpy as np
    >>> from ppdinfer.census import Geography, TableSpec, census_queries
    >>> geo = Geography(["t", "b"], [None, "t"])
    >>> prior = CellPrior(census_queries(geo, TableSpec(("a", "b")), {"level1": ["detailed"]}))
    >>> grid = [[[i, j]] for i in range(200) for j in range(200)]
    >>> total = sum(np.exp(hierarchical_log_prior(c, prior, 3.0, 5.0, 4.0, [0.3, 0.7])) for c in grid)
    >>> round(float(total), 6)
    1.0
    """
    cells = np.asarray(cells, dtype=np.int64).reshape(-1, prior.K)
    mean = np.broadcast_to(np.asarray(mean, dtype=float), (prior.n_parents,))
    shares = np.broadcast_to(np.asarray(shares, dtype=float), (prior.n_groups, prior.K))
    alphas = np.broadcast_to(np.asarray(alpha, dtype=float), (prior.n_groups,))
    out = 0.0
    for leaf, row in enumerate(cells):
        m, q, N = mean[prior.leaf_parent[leaf]], shares[prior.leaf_group[leaf]], int(row.sum())
        scale = float(alphas[prior.leaf_group[leaf]])
        alpha = scale  # an empty leaf's terms are 0 whatever its total (one that may hold no cell has total 0)
        if open_cells is not None and N:
            held = np.asarray(open_cells[leaf], dtype=bool)
            if row[~held].any():
                raise ValueError(f"cells: leaf {leaf} has people in a cell that open_cells closes")
            alpha = scale * float(q[held].sum())
        # by log-gamma steps, so that the large log-gammas of a huge count never cancel in float64
        out += log_gamma_step(N + alpha, phi - alpha) + log_gamma_step(phi, alpha - phi)
        out -= phi * math.log1p(m / phi) + N * math.log1p(phi / m)
        out += sum(log_gamma_step(n + 1.0, scale * qk - 1.0) - lgamma(scale * qk) for n, qk in zip(row, q) if n)
    return float(out)


def _classes(A: np.ndarray | None, n_cells: int):
    """Invariant classes: cells with the same column of A; -1 for cells under no invariant."""
    if A is None:
        return np.full(n_cells, -1, dtype=np.int64)
    if np.any((A != 0) & (A != 1)):
        raise ValueError("sample_cells: invariants must be 0/1 rows (unit totals)")
    sizes = A.sum(axis=1)
    overlap = A @ A.T
    for r in range(A.shape[0]):
        for s in range(r + 1, A.shape[0]):
            if overlap[r, s] not in (0, sizes[r], sizes[s]):
                raise ValueError(
                    f"sample_cells: invariant rows {r} and {s} overlap without nesting; the sampler's moves keep "
                    "nested unit totals only"
                )
    _, inverse = np.unique(A.T, axis=0, return_inverse=True)
    inverse = inverse.ravel().astype(np.int64)
    free = ~A.any(axis=0)
    labels = np.unique(inverse[~free])
    relabel = np.full(inverse.max() + 1, -1, dtype=np.int64)
    relabel[labels] = np.arange(labels.size)
    out = relabel[inverse]
    out[free] = -1
    return out


def _repair(cells: np.ndarray, A, a) -> np.ndarray:
    """Make the non-negative integer cells satisfy nested 0/1 invariants, changing as few cells as it can."""
    if A is None:
        return cells
    cells = cells.copy()
    order = np.argsort(A.sum(axis=1), kind="stable")
    covered = np.zeros(cells.size, dtype=bool)
    for r in order:
        support = A[r].astype(bool)
        free = np.flatnonzero(support & ~covered)
        residual = int(a[r] - cells[support].sum())
        if residual > 0:
            if free.size == 0:
                raise ValueError(f"invariants: row {r} cannot be met given the rows nested in it")
            cells[free] += largest_remainder(cells[free] + 1.0, residual)
        elif residual < 0:
            # take the excess from every free cell in proportion to its count (never below zero)
            if cells[free].sum() < -residual:
                raise ValueError(f"invariants: row {r} cannot be met with non-negative cells")
            cells[free] -= largest_remainder(cells[free].astype(float), -residual)
        covered |= support
    return cells


def _initial_cells(census, mechanism, y):
    A, a = mechanism.invariant_matrix, mechanism.invariant_values
    try:
        inv = None if A is None else (A, a)
        start = gls_estimate(census, y, mechanism.sigmas, inv).cell_estimate.ravel()
    except ValueError:
        try:
            start = gls_estimate(census, y, mechanism.sigmas).cell_estimate.ravel()
        except ValueError:
            root_total = max(float(np.max(y)), 1.0)
            start = np.full(census.n_cells, root_total / census.n_cells)
    cells = np.maximum(np.round(start), 0).astype(np.int64)
    return _repair(cells, A, a)


def _spread_candidates(queries, y: np.ndarray, sigmas: np.ndarray) -> np.ndarray:
    """Cells a spread move may help: those without a query of their own (a row counting that cell
    alone), and those whose own measurement is at least half a noise sd above zero (a cell whose
    own count reads near or below 0 has no bump for a spread move to reach). The choice reads the
    release only, never the cells, so the moves stay exact; it only saves the moves that would not move."""
    rows = queries.tocsr()
    single = np.flatnonzero(np.diff(rows.indptr) == 1)
    own = rows.indices[rows.indptr[single]]
    candidate = np.ones(rows.shape[1], dtype=bool)
    low = y[single] < 0.5 * sigmas[single]
    candidate[own[low]] = False
    candidate[own[~low]] = True  # a cell with several own queries is a candidate when any of them reads high
    return candidate


def _slow_cells(stats: list, n: int) -> np.ndarray:
    """Cells whose lag-1 autocorrelation over the last n tuning sweeps, averaged over the chains, exceeds
    ``_SLOW`` (each chain's running sums from ``_record_tuning``; a cell that did not move counts 0)."""
    rho = []
    for sums, squares, lagged, last, first in stats:
        mean = sums / n
        var = squares - n * mean**2
        lag = lagged - mean * (2 * sums - first - last) + (n - 1) * mean**2
        rho.append(np.where(var > 1e-9, lag / np.where(var > 1e-9, var, 1.0), 0.0))
    return (np.mean(rho, axis=0) > _SLOW).astype(np.int64)


def _csr(groups: np.ndarray, n: int):
    order = np.argsort(groups, kind="stable").astype(np.int64)
    ptr = np.concatenate([[0], np.cumsum(np.bincount(groups, minlength=n))]).astype(np.int64)
    return ptr, order


def _non_negative_finite(value, name: str) -> float:
    """``value`` as a float: a finite number >= 0 (not a bool)."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real) or not 0 <= value < math.inf:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return float(value)


def _probability(value, name: str) -> float:
    """``value`` as a float in [0, 1] (``validation.probability``, whose message for a non-number names (0, 1))."""
    try:
        return probability(value, name, open_interval=False)
    except ValueError:
        raise ValueError(f"{name} must be a probability in [0, 1], got {value!r}") from None


def _partners(partners) -> tuple[float, float]:
    """The two partner probabilities (same leaf, sibling leaf), checked: each in [0, 1], summing to at most 1."""
    problem = f"partners must be two probabilities (same leaf, sibling leaf) summing to at most 1, got {partners!r}"
    try:
        p_leaf, p_sibling = partners
    except (TypeError, ValueError):
        raise ValueError(problem) from None
    p_leaf, p_sibling = (_probability(v, "partners") for v in (p_leaf, p_sibling))
    if p_leaf + p_sibling > 1:
        raise ValueError(problem)
    return p_leaf, p_sibling


def _unread_cells(census: CensusQueries) -> None:
    """Refuse a census with a cell that no query reads (the release says nothing of it)."""
    unread = np.flatnonzero(np.diff(census.matrix.tocsc().indptr) == 0)
    if unread.size:
        leaf_ids, labels = census.cell_coords()
        K = len(labels)
        raise ValueError(
            f"census: {unread.size} cells are read by no query (the first: unit {leaf_ids[unread[0] // K]!s}, cell "
            f"{labels[unread[0] % K]!r}); the release says nothing of them: add queries that read every cell "
            "(e.g. each finest unit's 'total')"
        )


def _hyper_array(value, name: str, shapes: tuple, what: str) -> np.ndarray:
    """Hyperparameter ``name`` as positive finite floats broadcast to ``shapes[-1]``: a value of one of ``shapes``."""
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"hyperparameters: {name} must be numbers, got {value!r}") from None
    if array.shape not in shapes:
        raise ValueError(f"hyperparameters: {name} must be {what}, got shape {array.shape}")
    if not np.all(np.isfinite(array) & (array > 0)):
        raise ValueError(f"hyperparameters: {name} must be finite and > 0, got {value!r}")
    return np.broadcast_to(array, shapes[-1]).copy()


def _normal_setting(value, name: str) -> tuple[float, float]:
    """A prior setting (mu, sd) of a log's normal prior, checked: mu finite, sd finite and > 0."""
    try:
        mu, sd = value
    except (TypeError, ValueError):
        raise ValueError(
            f"hyperparameters: {name} must be a pair (mu, sd) of the log's normal prior, got {value!r}"
        ) from None
    if isinstance(mu, bool | np.bool_) or not isinstance(mu, numbers.Real) or not math.isfinite(mu):
        raise ValueError(f"hyperparameters: {name}: mu must be a finite number, got {mu!r}")
    return float(mu), positive_finite(sd, f"hyperparameters: {name}: sd")


def _hyperparameters(hyperparameters, prior: CellPrior, learn: bool, table0: np.ndarray):
    """The hyperparameters' starting (with learn=False: fixed) values and the priors' settings, checked, and the
    names of those filled in from the defaults (learn=False requires every one)."""
    given = {} if hyperparameters is None else hyperparameters
    if not isinstance(given, Mapping):
        raise ValueError(f"hyperparameters must be a dict or None, got {type(given).__name__}")
    unknown = set(given) - {*_HYPERPARAMETERS, *_PRIOR_SETTINGS}
    if unknown:
        raise ValueError(
            f"hyperparameters: unknown keys {sorted(map(str, unknown))}; they are {[*_HYPERPARAMETERS, *_PRIOR_SETTINGS]}"
        )
    filled = [name for name in _HYPERPARAMETERS if name not in given]
    if not learn and filled:
        raise ValueError(
            f"learn=False keeps the hyperparameters fixed at those given: give all of {', '.join(_HYPERPARAMETERS)} "
            f"(missing: {', '.join(filled)}), or learn them (learn=True)"
        )
    totals = table0.sum(axis=1)
    shares = np.array([table0[prior.leaf_group == g].sum(axis=0) + 0.5 for g in range(prior.n_groups)])
    defaults = {
        "alpha": 20.0,
        "phi": 10.0,
        "mean": [totals[prior.leaf_parent == p].mean() + 0.5 for p in range(prior.n_parents)],
        "shares": shares / shares.sum(axis=1, keepdims=True),
    }
    value = {**defaults, **{name: given[name] for name in _HYPERPARAMETERS if name in given}}
    G, P, K = prior.n_groups, prior.n_parents, prior.K
    alpha = _hyper_array(value["alpha"], "alpha", ((), (G,)), f"a scalar or one value per share group ({G})")
    phi = positive_finite(value["phi"], "hyperparameters: phi")
    mean = _hyper_array(value["mean"], "mean", ((), (P,)), f"a scalar or one value per parent ({P})")
    shares = _hyper_array(value["shares"], "shares", ((K,), (G, K)), f"{K} values or one row of them per group ({G})")
    if np.any(np.abs(shares.sum(axis=1) - 1) > 1e-9):
        raise ValueError(f"hyperparameters: shares must sum to one per group, got sums {shares.sum(axis=1)}")
    settings = [
        *_normal_setting(given.get("alpha_prior", (math.log(20.0), 1.5)), "alpha_prior"),
        *_normal_setting(given.get("phi_prior", (math.log(10.0), 1.5)), "phi_prior"),
        *_normal_setting(given.get("mean_prior", (math.log(max(float(totals.mean()), 1.0)), 3.0)), "mean_prior"),
        positive_finite(given.get("share_prior", 1.0), "hyperparameters: share_prior"),
    ]
    return alpha, phi, mean, shares, np.array(settings), filled


def _cell_bounds(mechanism, y: np.ndarray, cells0: np.ndarray) -> np.ndarray:
    """Each cell's largest value: the smallest invariant total holding it (exact), else the smallest of its
    queries' releases + ``_DATA_SDS`` noise sds (the data's bound), and at least its starting value."""
    by_cell = mechanism.queries.tocsc()
    data = y + _DATA_SDS * mechanism.sigmas
    upper = np.minimum.reduceat(data[by_cell.indices], by_cell.indptr[:-1])  # every cell is read (checked)
    A, a = mechanism.invariant_matrix, mechanism.invariant_values
    for r in range(0 if A is None else A.shape[0]):
        held = A[r] != 0
        upper[held] = np.minimum(upper[held], a[r])
    return np.maximum(upper, cells0)


def _draws_dtype(mechanism, y: np.ndarray, upper: np.ndarray, cells0: np.ndarray) -> np.dtype:
    """int32 for the stored draws where every cell's bound fits, else int64; refuses queries whose values may
    pass 2^53 (from the bounds, or at the start), where the float64 likelihood no longer holds them exactly."""
    reach = np.minimum(np.asarray(mechanism.queries @ upper).ravel(), y + _DATA_SDS * mechanism.sigmas)
    reach = np.maximum(reach, np.asarray(mechanism.queries @ cells0.astype(float)).ravel())
    if reach.max(initial=0.0) > MAX_INTEGER:
        raise ValueError(
            f"y: a query's value may reach {reach.max():.4g} (its release + {_DATA_SDS:g} noise sds, or its "
            f"invariants), beyond 2^53 = {MAX_INTEGER:,}, where float64 likelihoods lose counts"
        )
    return np.dtype(np.int32 if upper.max(initial=0.0) <= _INT32_MAX else np.int64)


def _wait(futures, stop: threading.Event) -> bool:
    """Wait for every chain's future; a Ctrl-C (one or more) sets ``stop``, so the chains end after their current
    chunk of sweeps, and the wait goes on, so that their finished draws are kept. Returns whether one came."""
    interrupted = False
    for future in futures:
        while True:
            try:
                future.result()
                break
            except KeyboardInterrupt:
                interrupted = True
                stop.set()
            except Exception:
                stop.set()  # a chain failed: the others stop too, rather than finish before the error shows
                raise
    return interrupted


def sample_cells(
    census: CensusQueries,
    mechanism: NoisyMeasurements,
    y,
    *,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 2,
    thin: int = 1,
    random_seed: SeedLike = None,
    learn: bool = True,
    hyperparameters: dict | None = None,
    share_level: str | None = None,
    step: int | None = None,
    cores: int | None = None,
    initial=None,
    progressbar: bool = True,
    window: float = 4.0,
    local: float = 0.05,
    hyper_rounds: int = 2,
    partners: tuple = (0.6, 0.25),
    spread: float = 1.0,
    partner_floor: float = 0.005,
    sibling_spread: float = 0.5,
    revisit: int = 3,
) -> xr.DataTree:
    """Posterior draws of every cell of a noisy-measurement file under the hierarchical prior (module docstring).

    Parameters
    ----------
    census : CensusQueries
        The geography, table and query matrix (the mechanism's must be the same).
    mechanism : NoisyMeasurements
        The release mechanism (its sigmas, noise family and invariants).
    y : array_like
        The release: one integer per query.
    draws, tune, thin : int
        Draws kept per chain, tuning sweeps (0 or more), and sweeps per kept draw (thinning bounds
        memory: chains x draws x cells values, int32 where every cell's bound fits, else int64: a
        cell's bound is its smallest invariant total, else its queries' releases + 1000 noise sds).
    chains : int
        Independent chains, run in parallel threads (``cores`` at a time, default min(chains, CPUs);
        one inside a worker thread or process: ``ppdinfer.inference.parallel.resolve_cores``).
    random_seed : int, SeedSequence or Generator
        The chains' streams are spawned from it: the same seed gives the same draws.
    learn : bool
        Sample the hyperparameters (default); False keeps them at ``hyperparameters``, which must then
        give all four of 'alpha', 'phi', 'mean' and 'shares'.
    hyperparameters : dict, optional
        Starting (or, with learn=False, fixed) 'alpha' (scalar or per group), 'phi', 'mean' (scalar
        or per parent) and 'shares' (K values or one row per group), those left out filled in (alpha 20,
        phi 10, the starting cells' mean sizes and shares: the result's attrs name them); and prior
        settings 'alpha_prior', 'phi_prior', 'mean_prior' ((mu, sd) of the log; defaults (log 20, 1.5),
        (log 10, 1.5) and (log of the starting cells' mean leaf total, 3)) and 'share_prior' (a0, default 1).
    share_level : str, optional
        The level whose units are the share groups (default two above the finest).
    step : int, optional
        The width of a move's window: each move draws t from the exact conditional over step + 1
        states along its line (default twice the median over cells of the smallest sigma among its
        queries, at least 2).
    initial : array_like, optional
        Starting cells (leaves x K or flat), satisfying the invariants; default the rounded GLS estimate.
    progressbar : bool
        A tqdm bar over sweeps. Ctrl-C stops the chains after their current chunk of sweeps and returns
        the draws finished by all of them (attrs ``interrupted``); a further Ctrl-C while they stop changes
        nothing.
    window : float
        The wide moves' window: the likelihood's peak along the move's line +- ``window`` noise sds
        (reaching down to 0 when that is within the same distance), a window fixed by the line so
        that one draw can cross the whole conditional (a spike at 0 and a bump included); 0 turns
        the wide moves off (Gaussian noise only; Laplace noise always uses the local moves).
    local : float
        The probability that a move uses the local window of ``step`` + 1 states instead (it also
        moves states outside their line's wide window).
    hyper_rounds : int
        Hyperparameter updates (phi, the mean sizes, every beta_{g,k}) per sweep of the cells.
    partners : (float, float)
        The probabilities that a paired move's partner is another category of the same leaf, or
        the same category of a sibling leaf; the rest: any cell of the same invariant class.
    partner_floor : float
        A same-leaf partner's category, and the category of a partner in another leaf, is drawn with
        probability proportional to its group's share plus ``partner_floor`` (the shares as they stand
        at the start of the sweep, so the choice never reads the cells): most moves then pair a cell
        with a populous category, which has people to give, instead of an empty one.
    spread : float
        The probability, per visit, of an extra *spread* move of a cell of a spike-prone category
        (beta_{g,k} < 1) before its paired move: a Gibbs draw along n + t (m e_i - sum_{j in S} e_j),
        S the m (uniform in 2..6) other categories of its leaf of largest beta_{g,k}, so a rare cell
        can jump between 0 and m people while m large cells each give one (exact, a window of 5
        states at a uniform offset; the choice of cells and partners reads the hyperparameters only).
    sibling_spread : float
        The probability that a spread move is a sibling spread (module docstring): the m people come
        from the same category of a sibling leaf, to which one person of each of the m categories goes
        back.
    revisit : int
        Extra visits per sweep, after tuning, to the cells that mixed slowest during its second half
        (lag-1 autocorrelation per sweep above 0.6, averaged over the chains); 0 turns this off, as
        does a tuning of fewer than 20 sweeps.

    Returns
    -------
    xarray.DataTree
        posterior: ``cells`` (chain, draw, unit, cell), ``alpha`` (chain, draw, group), ``phi``,
        ``mean_size`` (chain, draw, parent), ``shares`` (chain, draw, group, cell); sample_stats: ``accept`` (the cell moves'
        acceptance rate); observed_data: ``y`` (query); constant_data: ``sigma``, ``query_unit``,
        ``query_kind`` and the invariants; attrs: ``x_name`` (``"cells"``, the latent that
        :func:`ppdinfer.posterior_predictive` releases again), the settings, ``interrupted``,
        ``hyperparameters_filled``, and the draws' ``cells_dtype`` with the bound that chose it and the
        largest cell stored (``cells_bound``, ``cells_peak``).

    Examples
    --------
    >>> import numpy as np
    >>> from ppdinfer.census import Geography, TableSpec, census_queries
    >>> from ppdinfer.mechanisms import NoisyMeasurements
    >>> geo = Geography(["t", "b1", "b2"], [None, "t", "t"])
    >>> q = census_queries(geo, TableSpec(("a", "b")), {"level1": ["total", "detailed"]})
    >>> mech = NoisyMeasurements(q.matrix, 1.0, invariants=q.unit_invariants(["t"], [40]))
    >>> y = mech.release([10, 5, 15, 10], random_seed=1)
    >>> tree = sample_cells(q, mech, y, draws=50, tune=50, random_seed=2, progressbar=False)
    >>> tree["posterior"]["cells"].shape
    (2, 50, 2, 2)
    >>> bool((tree["posterior"]["cells"].sum(("unit", "cell")) == 40).all())    # the invariant, every draw
    True
    """
    if not isinstance(census, CensusQueries):
        raise ValueError(f"census must be CensusQueries, got {type(census).__name__}")
    if not all(hasattr(mechanism, name) for name in _DECLARES):
        raise ValueError(
            f"mechanism must be a noisy-measurement release (NoisyMeasurements: {', '.join(_DECLARES)}), "
            f"got {type(mechanism).__name__}"
        )
    if mechanism.queries.shape != census.matrix.shape or (mechanism.queries != census.matrix).nnz:
        raise ValueError(
            f"mechanism's query matrix {mechanism.queries.shape} is not census's {census.matrix.shape}: build it "
            "from census.matrix"
        )
    _unread_cells(census)
    y = integer_valued(y, "y")
    if y.shape != (census.n_queries,):
        raise ValueError(f"y must hold one integer per query ({census.n_queries}), got shape {y.shape}")
    draws, chains, thin = (positive_int(v, n) for v, n in ((draws, "draws"), (chains, "chains"), (thin, "thin")))
    tune, revisit = non_negative_int(tune, "tune"), non_negative_int(revisit, "revisit")
    if not isinstance(learn, bool | np.bool_):
        raise ValueError(f"learn must be True or False, got {learn!r}")
    workers = min(chains, resolve_cores(cores))
    prior = CellPrior(census, share_level)
    K, n_cells, n_leaves = prior.K, census.n_cells, census.geography.n_leaves
    cell_class = _classes(mechanism.invariant_matrix, n_cells)
    if initial is None:
        cells0 = _initial_cells(census, mechanism, y)
    else:
        cells0 = nonnegative_counts(initial, "initial").reshape(-1)
        if cells0.size != n_cells:
            raise ValueError(f"initial must hold {n_cells} counts (leaves x K, or flat), got {cells0.size}")
        if not mechanism.satisfies_invariants(cells0)[0]:
            raise ValueError("initial breaks the invariants A x = a")
    alpha0, phi0, mean0, shares0, prior_vec, filled = _hyperparameters(
        hyperparameters, prior, learn, cells0.reshape(n_leaves, K).astype(float)
    )
    by_cell = mechanism.queries.tocsc()
    cq_ptr, cq_idx = by_cell.indptr.astype(np.int64), by_cell.indices.astype(np.int64)
    if step is None:
        smallest = np.minimum.reduceat(mechanism.sigmas[cq_idx], cq_ptr[:-1])  # every cell is read (checked)
        step = max(2, int(round(2 * float(np.median(smallest)))))
    step, hyper_rounds = positive_int(step, "step"), positive_int(hyper_rounds, "hyper_rounds")
    p_leaf, p_sibling = _partners(partners)
    window = _non_negative_finite(window, "window")
    partner_floor = positive_finite(partner_floor, "partner_floor")
    local, spread, sibling_spread = (
        _probability(v, n) for v, n in ((local, "local"), (spread, "spread"), (sibling_spread, "sibling_spread"))
    )
    upper = _cell_bounds(mechanism, y, cells0)
    dtype = _draws_dtype(mechanism, y, upper, cells0)
    classed = np.flatnonzero(cell_class >= 0)
    n_classes = int(cell_class.max()) + 1 if classed.size else 0
    class_ptr, class_order = _csr(cell_class[classed], max(n_classes, 1))
    class_cells = classed[class_order]
    parent_ptr, parent_leaves = _csr(prior.leaf_parent.astype(np.int64), prior.n_parents)
    group_ptr, group_leaves = _csr(prior.leaf_group.astype(np.int64), prior.n_groups)
    y_f = y.astype(float)
    spread_cells = _spread_candidates(mechanism.queries, y_f, mechanism.sigmas)
    seeds = root_seed(random_seed).spawn(chains)
    n_sweeps = tune + draws * thin
    watch = revisit > 0 and tune >= _WATCHED_SWEEPS
    outputs, states = [], []
    all_cells = np.zeros((chains, draws, n_cells), dtype=dtype)  # each chain fills its own slice
    for c in range(chains):
        stream = np.random.default_rng(seeds[c])
        rng_state = seeds[c].generate_state(4, np.uint64)
        if not rng_state.any():
            rng_state[0] = 1
        jitter = 0.0 if not learn else 0.3
        log_alpha = np.log(alpha0) + jitter * stream.normal(size=prior.n_groups)
        cells = cells0.copy()
        states.append(
            dict(
                cells=cells,
                leaf_total=cells.reshape(n_leaves, K).sum(axis=1),
                values=np.asarray(mechanism.queries @ cells, dtype=float),
                log_phi=np.array([math.log(phi0) + jitter * stream.normal()]),
                log_mean=np.log(mean0) + (jitter * stream.normal(size=prior.n_parents) if learn else 0.0),
                log_beta=np.log(shares0) + log_alpha[:, None],
                steps=np.concatenate(
                    [
                        [0.1],
                        np.full(prior.n_parents, 0.1),
                        np.full(prior.n_groups * K, 0.2),
                        np.full(prior.n_groups, 0.1),
                    ]
                ),
                rng=rng_state,
                shift=np.zeros(census.n_queries, dtype=np.int64),
                stamp=np.zeros(census.n_queries, dtype=np.int64),
                touched=np.zeros(int(np.diff(cq_ptr).max(initial=1)) * (2 * max(K, 2) + 2) + 2, dtype=np.int64),
                extra=np.zeros(n_cells, dtype=np.int64),
                tune_stats=np.zeros((5, n_cells if watch else 0)),
                peak=np.zeros(1, dtype=np.int64),
            )
        )
        outputs.append(
            dict(
                cells=all_cells[c],
                phi=np.zeros(draws),
                mean=np.zeros((draws, prior.n_parents)),
                beta=np.zeros((draws, prior.n_groups, K)),
                accept=np.zeros(draws),
            )
        )
    done = [0] * chains
    stop = threading.Event()
    chunk = max(1, min(50, int(2_000_000 // max(n_cells, 1))))
    bar = tqdm(total=n_sweeps * chains, desc="census cells", unit="sweep", disable=not progressbar, leave=False)
    lock = threading.Lock()

    def run(c, until):
        s, o = states[c], outputs[c]
        while done[c] < until and not stop.is_set():
            count = min(chunk, until - done[c])
            census_sweeps(
                done[c], count, tune, thin, s["cells"], s["leaf_total"], s["values"], y_f, mechanism.rates,
                mechanism.power, cq_ptr, cq_idx, cell_class, class_ptr, class_cells, step, K,
                prior.leaf_parent.astype(np.int64), prior.leaf_group.astype(np.int64), s["log_phi"], s["log_mean"],
                s["log_beta"], learn, s["steps"], prior_vec, parent_ptr, parent_leaves, group_ptr,
                group_leaves, np.arange(n_leaves, dtype=np.int64), s["rng"], o["cells"], o["phi"], o["mean"],
                o["beta"], o["accept"], s["shift"], s["stamp"], s["touched"], window, local, hyper_rounds, p_leaf,
                p_sibling, spread, 6, partner_floor, 0.8, 64, spread_cells, s["extra"], s["tune_stats"], sibling_spread,
                s["peak"],
            )  # fmt: skip
            done[c] += count
            with lock:
                bar.update(count)

    started = time.perf_counter()
    interrupted = False
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for until in (tune, n_sweeps) if watch else (n_sweeps,):  # the slow cells are chosen between the two
            interrupted = _wait([pool.submit(run, c, until) for c in range(chains)], stop)
            if interrupted:
                break
            if until == tune:
                slow = _slow_cells([s["tune_stats"] for s in states], tune - tune // 2) * revisit
                for s in states:
                    s["extra"][:] = slow
    bar.close()
    peak = max(int(s["peak"][0]) for s in states)
    if peak > np.iinfo(dtype).max:  # the data's bound failed: never seen, but the draws would have wrapped
        raise RuntimeError(f"sample_cells: a cell reached {peak:,}, past the {dtype} draws' range chosen from y")
    kept = min(max(0, d - tune) // thin for d in done)
    attrs = {"sampling_seconds": time.perf_counter() - started, "interrupted": int(interrupted), "tune": tune,
             "thin": thin, "step": step, "learn": int(learn), "hyperparameters_filled": ", ".join(filled),
             "cells_dtype": str(dtype), "cells_bound": float(upper.max(initial=0.0)), "cells_peak": peak}  # fmt: skip
    tree = _tree(census, mechanism, y, prior, outputs, all_cells, kept, attrs)
    totals = tree["posterior"]["cells"].values.sum(axis=3)
    check_convergence(np.concatenate([totals, np.log(tree["posterior"]["phi"].values)[..., None]], axis=2),
                      "leaf totals and phi", tree.attrs)  # fmt: skip
    return tree


def _tree(census, mechanism, y, prior, outputs, all_cells, kept, attrs):
    K = prior.K
    leaf_ids, labels = census.cell_coords()
    leaf_ids = np.array([str(v) for v in leaf_ids])
    n_leaves = leaf_ids.size
    stack = lambda key: np.stack([o[key][:kept] for o in outputs])  # noqa: E731
    cells = all_cells[:, :kept].reshape(len(outputs), kept, n_leaves, K)  # a view: no copy of the draws
    beta = np.exp(stack("beta"))
    alpha = beta.sum(axis=-1)
    chain, draw = np.arange(len(outputs)), np.arange(kept)
    posterior = xr.Dataset(
        {
            "cells": (("chain", "draw", "unit", "cell"), cells),
            "alpha": (("chain", "draw", "group"), alpha),
            "phi": (("chain", "draw"), np.exp(stack("phi"))),
            "mean_size": (("chain", "draw", "parent"), np.exp(stack("mean"))),
            "shares": (("chain", "draw", "group", "cell"), beta / alpha[..., None]),
        },
        coords={"chain": chain, "draw": draw, "unit": leaf_ids, "cell": list(labels),
                "parent": prior.parent_ids, "group": prior.group_ids},
    )  # fmt: skip
    stats = xr.Dataset({"accept": (("chain", "draw"), stack("accept"))}, coords={"chain": chain, "draw": draw})
    query = np.arange(census.n_queries)
    observed = xr.Dataset({"y": (("query",), np.asarray(y))}, coords={"query": query})
    constant = {
        "sigma": (("query",), mechanism.sigmas),
        "query_unit": (("query",), np.array([str(v) for v in census.geography.ids[census.unit]])),
        "query_kind": (("query",), census.kind.astype(str)),
    }
    if mechanism.invariant_values is not None:
        constant["invariant_values"] = (("invariant",), mechanism.invariant_values)
    for key, value in mechanism.parameters().items():
        constant[f"mechanism_{key}"] = ((), value)
    constant_data = xr.Dataset(
        constant, coords={"query": query}, attrs={"mechanism": repr(mechanism), **mechanism.guarantee().attrs()}
    )
    tree = xr.DataTree.from_dict(
        {"posterior": posterior, "sample_stats": stats, "observed_data": observed, "constant_data": constant_data}
    )
    tree.attrs.update({"sampler": "census cells (compiled Metropolis within Gibbs)", "x_name": "cells", **attrs})
    return tree
