r"""Two checks of the block-level prior (:mod:`ppdinfer.census.exposure`): simulation-based calibration on a small
geography, and the posterior predictive check of the block measurements.

**Simulation-based calibration** (:func:`block_prior_sbc`). A :class:`BlockDesign` is a small geography (by
default :data:`SMALL_DESIGN`: one tract of two block groups of three blocks each, two blocks with no housing unit
and no facility, one block holding a facility and no housing unit), its blocks' exposure, a table of a few cells
and the noise sd of each level's measurements (block totals measured loosely, as in the real file, so that the
prior is in charge). Each simulation draws the hyperparameters from the very priors that
:func:`ppdinfer.census.sample_people` puts on them (:data:`PRIORS`, passed to it as ``hyperparameters``),

.. math::

    \log\phi \sim \mathcal N(\mu_\phi, s_\phi^2),\ \log m_p \sim \mathcal N(\mu_m, s_m^2),\
    \log c_t \sim \mathcal N(\mu_c, s_c^2),\ \log\alpha_g \sim \mathcal N(\mu_\alpha, s_\alpha^2),\
    q_g \sim \mathrm{Dirichlet}(a_0, \dots, a_0),

then each block's total :math:`N_l \sim \mathrm{NegBin}(\text{mean } m_{p(l)} u_l + \sum_t c_t f_{l,t},
\text{size } \phi)` (0 where the mean is 0) and its cells :math:`\mathrm{DirMult}(N_l, \alpha_g q_g)`, releases
them (:class:`ppdinfer.mechanisms.NoisyMeasurements`, the root's total exact), fits the release by
``sample_people(..., exposure=..., learn=True)`` and ranks the truth of every block total, phi, each mean size
m_p, each facility size c_t, alpha and the shares among the posterior draws
(:func:`ppdinfer.simulation_based_calibration.sbc_simulator`, which breaks the ties of the integer block totals
with a coin). Every hyperparameter is learned: nothing is held fixed.

**The posterior predictive check** (:func:`block_predictive_check`). For every posterior draw of a fit's cells, a
block-level (by default) released value is simulated afresh: the drawn cells' value plus fresh noise of the
release's own law and scale. Per query (e.g. the block totals), the discrepancy of the whole set of blocks,
:math:`T(y, x) = \sum_{u, v} r_u s_v |y_{u,v} - v_{u,v}(x)|^p` (the release's own negative log likelihood: for
Gaussian noise half the sum of squared standardized residuals), is compared at the file's values and at the
simulated ones, draw by draw; its posterior predictive p-value
:math:`P(T(y^{rep}, x) > T(y, x)) + \tfrac12 P(=)` near 0 says that the model does not reproduce the spread of the
block measurements (near 1: the measurements sit closer to the fit than the noise allows). Per released value, the
tail probability :math:`P(y^{rep} > y) + \tfrac12 P(=)` points at the blocks that do not fit.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse as sp
import xarray as xr

from ...census import (
    CellPrior,
    Coarsening,
    Geography,
    GroupedRelease,
    LeafExposure,
    TableSpec,
    census_queries,
    sample_people,
)
from ...inference.diagnostics import ConvergenceWarning, ess_rhat
from ...mechanisms import DiscreteGaussian, DiscreteLaplace, NoisyMeasurements
from ...rng import SeedLike, as_generator
from ...simulation_based_calibration import SBCResult, sbc_simulator
from ...validation import positive_int

__all__ = [
    "PRIORS",
    "SMALL_DESIGN",
    "VACANT_PRIOR",
    "BlockDesign",
    "BlockSBC",
    "PredictiveCheck",
    "block_predictive_check",
    "block_prior_sbc",
]

#: The hyperparameters' priors of both checks, passed to ``sample_people`` as ``hyperparameters``: (mu, sd) of each
#: log's normal prior and the shares' Dirichlet a0. phi's, alpha's and a0 are the library's defaults; the persons per
#: housing unit (``mean_prior``) and per facility (``gq_prior``) are set here, since the library's default
#: ``mean_prior`` with an exposure reads the start (the data), which no simulation can draw from, and its
#: ``gq_prior`` (log 50, 2) gives facilities of thousands of persons in a geography of a few dozen.
PRIORS = {
    "phi_prior": (math.log(10.0), 1.5),
    "alpha_prior": (math.log(20.0), 1.5),
    "share_prior": 1.0,
    "mean_prior": (math.log(2.5), 0.5),
    "gq_prior": (math.log(20.0), 0.5),
}
#: The names ranked by :func:`block_prior_sbc` (``block_total``: each block's total, summed from the cells), and
#: ``vacant`` too where the priors have a ``vacant_prior``.
RANKED = ("block_total", "phi", "mean_size", "gq_size", "alpha", "shares")
#: The zero-inflation's prior that :func:`block_prior_sbc` may add to :data:`PRIORS`: (mu, sd) of logit v, v the
#: chance that a housed block is empty whatever its mean (about 10 %: 1 % to 55 % within 2 sds).
VACANT_PRIOR = (math.log(0.1 / 0.9), 1.2)


@dataclass(frozen=True, eq=False)
class BlockDesign:
    """A small geography for the checks: its blocks' exposure, a table, and each level's measurements' noise.

    Attributes
    ----------
    geography : Geography
        The root (its total published exactly), block groups (the prior's parents) and blocks (the leaves).
    exposure : LeafExposure
        The blocks' housing units and facilities.
    table : TableSpec
        The cells of every block.
    noise : dict
        Level name -> {query kind ('total', 'detailed' or a margin of ``table``): noise sd (discrete Gaussian)}.

    Examples
    --------
    >>> SMALL_DESIGN.exposure.empty.tolist(), SMALL_DESIGN.noise["Block"]
    ([False, True, False, False, False, True], {'total': 20.0, 'detailed': 8.0})
    """

    geography: Geography
    exposure: LeafExposure
    table: TableSpec
    noise: dict

    def __post_init__(self):
        if not isinstance(self.geography, Geography):
            raise ValueError(f"geography must be a Geography, got {type(self.geography).__name__}")
        if not isinstance(self.exposure, LeafExposure) or self.exposure.n_leaves != self.geography.n_leaves:
            raise ValueError(f"exposure must be a LeafExposure of the geography's {self.geography.n_leaves} leaves")
        if not isinstance(self.noise, dict) or not self.noise:
            raise ValueError(f"noise must be a non-empty dict level -> {{kind: sd}}, got {self.noise!r}")
        if any(not isinstance(kinds, dict) or not kinds for kinds in self.noise.values()):
            raise ValueError(f"noise must map each level to a non-empty dict kind -> sd, got {self.noise!r}")
        census = census_queries(self.geography, self.table, {level: list(k) for level, k in self.noise.items()})
        names = self.geography.level_names
        sds = [self.noise[names[d]][k] for d, k in zip(self.geography.depth[census.unit], census.kind, strict=True)]
        object.__setattr__(self, "_census", census)
        object.__setattr__(self, "_mechanism", NoisyMeasurements(census.matrix, sds))
        object.__setattr__(self, "_prior", CellPrior(census))

    def release(self, cells, rng) -> GroupedRelease:
        """The measurements of (leaves, cells) ``cells`` with fresh noise drawn from ``rng``, the root's total
        exact."""
        cells = np.asarray(cells, dtype=np.int64)
        y = self._mechanism.release(cells.ravel(), random_seed=rng)
        measured = GroupedRelease.from_census(self._census, self._mechanism, y)
        # the root's exact total, this simulation's, set here: the mechanism is built once, without invariants
        root = int(np.flatnonzero(self.geography.parent < 0)[0])
        return GroupedRelease(self.geography, self.table, measured.blocks, measured.power, {root: int(cells.sum())})

    def simulate(self, rng, priors: dict = PRIORS, exposure: LeafExposure | None = None) -> tuple[dict, GroupedRelease]:
        """One draw of the block prior and its release: ({name: truth} of :data:`RANKED` and ``cells``, release).

        ``priors`` as :data:`PRIORS`, and a ``vacant_prior`` ((mu, sd) of logit v) for the zero-inflated totals
        (each block of positive mean empty with probability v, else negative binomial); ``exposure`` (default the
        design's) gives the blocks' means.
        """
        exposure = self.exposure if exposure is None else exposure
        prior, K = self._prior, self.table.n_cells

        def log_normal(key, size=None):
            mu, sd = priors[key]
            return np.exp(rng.normal(mu, sd, size))

        phi = float(log_normal("phi_prior"))
        mean = log_normal("mean_prior", prior.n_parents)
        gq = log_normal("gq_prior", exposure.facilities.shape[1])
        alpha = log_normal("alpha_prior", prior.n_groups)
        shares = rng.dirichlet(np.full(K, float(priors["share_prior"])), size=prior.n_groups)
        mu = mean[prior.leaf_parent] * exposure.units + exposure.facilities @ gq
        totals = np.where(mu > 0, rng.poisson(rng.gamma(phi, np.where(mu > 0, mu, 1.0) / phi)), 0)
        vacant = {}
        if "vacant_prior" in priors:
            mu_v, sd_v = priors["vacant_prior"]
            vacant = {"vacant": float(1.0 / (1.0 + math.exp(-rng.normal(mu_v, sd_v))))}
            totals = np.where(rng.random(totals.size) < vacant["vacant"], 0, totals)
        cells = np.zeros((mu.size, K), dtype=np.int64)
        for leaf in np.flatnonzero(totals):
            g = prior.leaf_group[leaf]
            cells[leaf] = rng.multinomial(totals[leaf], rng.dirichlet(alpha[g] * shares[g]))
        truth = {"block_total": totals, "phi": phi, "mean_size": mean, "gq_size": gq, "alpha": alpha}
        return {**truth, "shares": shares, **vacant, "cells": cells}, self.release(cells, rng)


def _small_design() -> BlockDesign:
    blocks = [f"b{i}" for i in range(1, 7)]
    geography = Geography(
        ["t", "g1", "g2", *blocks],
        [None, "t", "t", "g1", "g1", "g1", "g2", "g2", "g2"],
        ["Tract", "Block_Group", "Block"],
    )
    # b2 and b6: no housing unit, no facility (they hold nobody); b3: one facility and no housing unit
    exposure = LeafExposure(np.array([4.0, 0.0, 0.0, 2.0, 6.0, 0.0]), np.array([[0, 0, 1, 0, 0, 0]]).T, ("nursing",))
    noise = {"Block_Group": {"total": 3.0, "detailed": 3.0}, "Block": {"total": 20.0, "detailed": 8.0}}
    return BlockDesign(geography, exposure, TableSpec(("a", "b")), noise)


#: One tract, two block groups of three blocks (exposure in :class:`BlockDesign`'s example), cells ('a', 'b'):
#: block groups measured with sd 3 (total and cells), blocks loosely (total sd 20, cells sd 8).
SMALL_DESIGN = _small_design()


@dataclass(frozen=True, repr=False)
class BlockSBC:
    """The outcome of :func:`block_prior_sbc`: the ranks' :class:`~ppdinfer.SBCResult` and each fit's mixing.

    Attributes
    ----------
    result : SBCResult
        Ranks, their chi-square tests and the verdict.
    min_ess, max_rhat : numpy.ndarray
        Per simulation, the smallest bulk ESS and the largest R-hat over the ranked quantities (the logs of the
        positive ones) of its fit's kept draws, against which the ``draws`` ranked among should be small.

    Examples
    --------
    >>> check = block_prior_sbc(simulations=10, draws=9, chain_draws=20, tune=50, random_seed=1)
    >>> check.min_ess.shape, check.result.draws
    ((10,), 9)
    """

    result: SBCResult
    min_ess: np.ndarray
    max_rhat: np.ndarray

    def __repr__(self) -> str:
        return f"BlockSBC({self.result!r}, median min_ess={np.median(self.min_ess):.0f})"


class _Fits:
    """sample_people on one simulation's release (sbc_simulator's sampler), keeping each fit's mixing."""

    def __init__(self, design: BlockDesign, priors: dict, settings: dict):
        self.design, self.priors, self.settings = design, priors, settings
        self.min_ess, self.max_rhat = [], []

    def __call__(self, release: GroupedRelease, random_seed) -> xr.DataTree:
        hyperparameters = dict(self.priors)
        if "vacant_prior" in hyperparameters:  # on, from the prior's median
            hyperparameters["vacant"] = 1.0 / (1.0 + math.exp(-hyperparameters["vacant_prior"][0]))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # measured below, over every ranked quantity
            tree = sample_people(
                release, exposure=self.design.exposure, hyperparameters=hyperparameters, learn=True,
                random_seed=random_seed, progressbar=False, **self.settings,
            )  # fmt: skip
        post = tree["posterior"].to_dataset()
        post = post.assign(block_total=post["cells"].sum("cell"))
        tree["posterior"] = post
        chains, draws = post.sizes["chain"], post.sizes["draw"]
        names = [*RANKED[1:5], *(["vacant"] if "vacant" in post else [])]
        positive = [np.log(post[name].values.reshape(chains, draws, -1)) for name in names]
        shares = post["shares"].values.reshape(chains, draws, -1)
        ess, rhat = ess_rhat(np.concatenate([post["block_total"].values, *positive, shares], axis=2))
        self.min_ess.append(float(ess.min()))
        self.max_rhat.append(float(np.nanmax(rhat, initial=1.0)))
        return tree


def _checked_priors(priors, name: str) -> dict:
    """``priors`` as a dict of the keys of :data:`PRIORS` (and optionally ``vacant_prior``), each (mu, sd > 0) or, for
    share_prior, a0 > 0."""
    if not isinstance(priors, dict) or set(priors) - {"vacant_prior"} != set(PRIORS):
        raise ValueError(
            f"{name} must be a dict of exactly {sorted(PRIORS)} (as PRIORS), and optionally vacant_prior, got {priors!r}"
        )
    for key, value in priors.items():
        if key == "share_prior":
            ok = isinstance(value, int | float) and 0 < value < math.inf
        else:
            ok = isinstance(value, tuple | list) and len(value) == 2 and np.isfinite(value).all() and value[1] > 0
        if not ok:
            raise ValueError(
                f"{name}: {key} must be {'a0 > 0' if key == 'share_prior' else '(mu, sd > 0)'}, got {value!r}"
            )
    return dict(priors)


def block_prior_sbc(
    design: BlockDesign | None = None,
    *,
    simulations: int = 100,
    draws: int = 39,
    chain_draws: int = 100,
    tune: int = 200,
    thin: int = 6,
    chains: int = 2,
    priors: dict = PRIORS,
    truth_priors: dict | None = None,
    truth_exposure: LeafExposure | None = None,
    alpha: float = 0.01,
    random_seed: SeedLike = None,
    cores: int | None = 1,
) -> BlockSBC:
    """Simulation-based calibration of the block prior on a small geography (module docstring).

    Parameters
    ----------
    design : BlockDesign, optional
        The geography, exposure, table and noise (default :data:`SMALL_DESIGN`).
    simulations : int
        Draws of the prior, each released and fitted.
    draws : int
        L: each truth is ranked among L of its fit's draws, evenly spaced over the ``chains`` x ``chain_draws``
        kept (thin them to about independent draws: :attr:`BlockSBC.min_ess` says how many there were).
    chain_draws, tune, thin, chains, cores
        ``sample_people``'s ``draws``, ``tune``, ``thin``, ``chains`` and ``cores`` for each fit.
    priors : dict
        The hyperparameters' priors (the keys of :data:`PRIORS`, and ``vacant_prior`` for zero-inflated block
        totals, e.g. :data:`VACANT_PRIOR`), those of the simulations and of the fits.
    truth_priors, truth_exposure : dict or LeafExposure, optional
        The simulations' priors and exposure, by default ``priors`` and the design's: anything else is a model the
        fits do not assume, whose ranks must come out uneven (the check's power).
    alpha : float
        The level of the verdict (:class:`~ppdinfer.SBCResult`).
    random_seed : int, SeedSequence or Generator
        The simulations' and fits' streams.

    Returns
    -------
    BlockSBC
        The ranks (``result.ranks``: :data:`RANKED`, block totals by ``unit``) and each fit's ESS and R-hat.

    Examples
    --------
    >>> check = block_prior_sbc(simulations=10, draws=9, chain_draws=20, tune=50, random_seed=2)
    >>> sorted(check.result.ranks.data_vars), check.result.ranks["block_total"].shape
    (['alpha', 'block_total', 'gq_size', 'mean_size', 'phi', 'shares'], (10, 6))
    """
    design = SMALL_DESIGN if design is None else design
    if not isinstance(design, BlockDesign):
        raise ValueError(f"design must be a BlockDesign, got {type(design).__name__}")
    priors = _checked_priors(priors, "priors")
    truth_priors = priors if truth_priors is None else _checked_priors(truth_priors, "truth_priors")
    if "vacant_prior" in priors and "vacant_prior" not in truth_priors:
        raise ValueError("truth_priors: the fits learn the zero-inflation (priors' vacant_prior), give its prior too")
    ranked = RANKED + (("vacant",) if "vacant_prior" in priors else ())
    exposure = design.exposure if truth_exposure is None else truth_exposure
    if not isinstance(exposure, LeafExposure) or exposure.facilities.shape != design.exposure.facilities.shape:
        raise ValueError(
            f"truth_exposure must be a LeafExposure of the design's shape {design.exposure.facilities.shape}"
        )
    settings = {"draws": positive_int(chain_draws, "chain_draws"), "tune": tune, "thin": thin, "chains": chains}
    if draws > chains * settings["draws"]:
        raise ValueError(f"draws must be at most chains x chain_draws = {chains * chain_draws}, got {draws}")
    fits = _Fits(design, priors, {**settings, "cores": cores})
    result = sbc_simulator(
        lambda rng: design.simulate(rng, truth_priors, exposure), fits, ranked, simulations=simulations,
        draws=draws, alpha=alpha, random_seed=random_seed,
    )  # fmt: skip
    return BlockSBC(result, np.array(fits.min_ess), np.array(fits.max_rhat))


@dataclass(frozen=True, repr=False)
class PredictiveCheck:
    """The outcome of :func:`block_predictive_check`.

    Attributes
    ----------
    p_values : pandas.Series
        Per query checked, the posterior predictive p-value of the discrepancy T (module docstring).
    values : pandas.DataFrame
        One row per measured value: ``query``, ``unit``, ``value`` (its index in the query), ``y`` (released),
        ``mean`` and ``sd`` of its replicates, ``tail`` = P(y_rep > y) + P(y_rep = y) / 2.
    skipped : tuple of str
        The level's queries that are not sums of the recorded cells (not checked).
    draws : int
        The posterior draws used.

    Examples
    --------
    >>> rng = np.random.default_rng(3)
    >>> truth, release = SMALL_DESIGN.simulate(rng)
    >>> tree = sample_people(release, exposure=SMALL_DESIGN.exposure, hyperparameters=dict(PRIORS), draws=100,
    ...                      tune=100, random_seed=4, progressbar=False)
    >>> check = block_predictive_check(tree, release, random_seed=5)
    >>> check.p_values.index.tolist(), check.values.shape
    (['total', 'detailed'], (18, 7))
    """

    p_values: pd.Series
    values: pd.DataFrame
    skipped: tuple
    draws: int

    def __repr__(self) -> str:
        p = ", ".join(f"{q}: {v:.3f}" for q, v in self.p_values.items())
        return f"PredictiveCheck(p-values {p}; {self.draws} draws, skipped {list(self.skipped)})"


def _recorded_groups(groups: np.ndarray, cell_of: np.ndarray, n: int) -> np.ndarray | None:
    """A query's groups over the recorded cells (-1: in none), or None where a recorded cell's fine cells fall in
    different values (the query is no sum of recorded cells)."""
    out = np.full(n, -2, dtype=np.int64)
    for k, r in enumerate(cell_of):
        if out[r] == -2:
            out[r] = groups[k]
        elif out[r] != groups[k]:
            return None
    return np.where(out == -2, -1, out)


def _noise(rate: np.ndarray, power: int, draws: int, rng) -> np.ndarray:
    """(draws, *rate.shape) fresh noise of the release's law: discrete Gaussian of sd 1 / sqrt(2 rate) (power 2),
    or discrete Laplace P(e) proportional to exp(-rate |e|) (power 1), drawn exactly."""
    out = np.zeros((draws, rate.size), dtype=np.int64)
    for r in np.unique(rate):
        where = np.flatnonzero(rate.ravel() == r)
        family = DiscreteGaussian(math.sqrt(1.0 / (2.0 * r))) if power == 2 else DiscreteLaplace(float(r))
        out[:, where] = family.release(np.zeros((draws, where.size), dtype=np.int64), random_seed=rng)
    return out.reshape(draws, *rate.shape)


def block_predictive_check(
    tree: xr.DataTree,
    release: GroupedRelease,
    *,
    record: Coarsening | None = None,
    queries=None,
    level: str | None = None,
    draws: int | None = None,
    random_seed: SeedLike = None,
) -> PredictiveCheck:
    """The posterior predictive check of a release's block measurements (module docstring).

    Parameters
    ----------
    tree : xarray.DataTree
        A :func:`ppdinfer.census.sample_people` fit of ``release`` (its ``posterior`` ``cells``).
    release : GroupedRelease
        The release fitted.
    record : Coarsening, optional
        The fit's ``record``: only the queries whose every value is a sum of recorded cells are checked.
    queries : sequence of str, optional
        The queries to check (default every one of ``level`` that the recorded cells determine); one that is
        not measured at ``level``, or not a sum of the recorded cells, is refused.
    level : str, optional
        The level whose measurements are checked (default the leaves': blocks).
    draws : int, optional
        Use this many of the posterior draws, evenly spaced (default all): the noise is drawn exactly, about
        40 microseconds per value.
    random_seed : int, Generator or None
        The fresh noise's stream.

    Returns
    -------
    PredictiveCheck

    Examples
    --------
    >>> truth, release = SMALL_DESIGN.simulate(np.random.default_rng(1))
    >>> tree = sample_people(release, exposure=SMALL_DESIGN.exposure, hyperparameters=dict(PRIORS), draws=100,
    ...                      tune=100, random_seed=2, progressbar=False)
    >>> check = block_predictive_check(tree, release, queries=["total"], random_seed=3)
    >>> check.values["unit"].tolist(), bool(0 <= check.p_values["total"] <= 1)
    (['b1', 'b2', 'b3', 'b4', 'b5', 'b6'], True)
    """
    if not isinstance(release, GroupedRelease):
        raise ValueError(f"release must be a GroupedRelease, got {type(release).__name__}")
    geo, K = release.geography, release.table.n_cells
    if not isinstance(tree, xr.DataTree) or "posterior" not in tree.children or "cells" not in tree["posterior"]:
        raise ValueError("tree must be a sample_people DataTree with posterior 'cells'")
    cells = tree["posterior"]["cells"]
    leaf_ids = [str(v) for v in geo.ids[geo.leaves]]
    if cells.dims != ("chain", "draw", "unit", "cell") or cells["unit"].values.tolist() != leaf_ids:
        raise ValueError(f"tree: its cells are not (chain, draw, unit, cell) over the release's {len(leaf_ids)} leaves")
    if record is None:
        cell_of, labels = np.arange(K), release.table.labels
    elif isinstance(record, Coarsening) and record.cell_of.size == K:
        cell_of, labels = record.cell_of, record.table.labels
    else:
        raise ValueError(f"record must be None or a Coarsening of the release's {K} cells, got {record!r}")
    if tuple(cells["cell"].values.tolist()) != tuple(labels):
        raise ValueError("record: the tree's cells are not the recorded table's (pass the fit's record)")
    depth = geo.n_levels - 1 if level is None else None
    if level is not None:
        if level not in geo.level_names:
            raise ValueError(f"level must be one of {geo.level_names}, got {level!r}")
        depth = geo.level_names.index(level)
    blocks = {b.query: b for b in release.blocks if b.level == depth and (b.rate > 0).any()}
    if not blocks:
        raise ValueError(f"level: the release measures nothing at {geo.level_names[depth]}")
    grouped = {q: _recorded_groups(b.groups, cell_of, len(labels)) for q, b in blocks.items()}
    if queries is None:
        chosen = [q for q, g in grouped.items() if g is not None]
        if not chosen:
            raise ValueError(f"record: no query at {geo.level_names[depth]} is a sum of the recorded cells")
    else:
        chosen = [queries] if isinstance(queries, str) else list(queries)
        unknown = [q for q in chosen if q not in blocks]
        if unknown or not chosen:
            raise ValueError(f"queries: {unknown or chosen} not among those measured at this level, {list(blocks)}")
        coarse = [q for q in chosen if grouped[q] is None]
        if coarse:
            raise ValueError(f"queries: {coarse} are not sums of the recorded cells (record): they cannot be checked")
    rng = as_generator(random_seed)
    flat = cells.values.reshape(-1, geo.n_leaves, len(labels))
    if draws is not None:
        draws = positive_int(draws, "draws")
        if draws > flat.shape[0]:
            raise ValueError(f"draws must be at most the tree's {flat.shape[0]} draws, got {draws}")
        flat = flat[(2 * np.arange(draws) + 1) * flat.shape[0] // (2 * draws)]
    S, units = flat.shape[0], release.ancestors[depth]
    to_units = sp.csr_array((np.ones(geo.n_leaves), (units, np.arange(geo.n_leaves))))
    p_values, rows = {}, []
    for q in chosen:
        b, groups = blocks[q], grouped[q]
        indicator = np.zeros((len(labels), b.n_values))
        indicator[groups >= 0, groups[groups >= 0]] = 1.0
        leaf_values = flat @ indicator  # (draws, leaves, values)
        values = (to_units @ leaf_values.transpose(1, 0, 2).reshape(geo.n_leaves, -1)).reshape(-1, S, b.n_values)
        measured = np.flatnonzero(b.rate > 0)
        values = values[measured].transpose(1, 0, 2)  # (draws, measured units, values)
        rate = b.rate[measured, None] * b.scale[None, :]
        y = b.y[measured].astype(np.int64)
        noise = _noise(rate, release.power, S, rng)
        observed = (rate * np.abs(y - values) ** release.power).sum(axis=(1, 2))
        replicated = (rate * np.abs(noise) ** release.power).sum(axis=(1, 2))
        p_values[q] = float(np.mean(replicated > observed) + 0.5 * np.mean(replicated == observed))
        y_rep = values + noise
        tail = np.mean(y_rep > y, axis=0) + 0.5 * np.mean(y_rep == y, axis=0)
        unit_ids = np.repeat(geo.ids[release.level_units[depth][measured]].astype(str), b.n_values)
        frame = {"query": q, "unit": unit_ids, "value": np.tile(np.arange(b.n_values), measured.size), "y": y.ravel(),
                 "mean": y_rep.mean(axis=0).ravel(), "sd": y_rep.std(axis=0).ravel(), "tail": tail.ravel()}  # fmt: skip
        rows.append(pd.DataFrame(frame))
    skipped = tuple(q for q, g in grouped.items() if g is None)
    return PredictiveCheck(pd.Series(p_values, name="p_value"), pd.concat(rows, ignore_index=True), skipped, S)
