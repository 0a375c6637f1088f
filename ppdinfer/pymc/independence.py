r"""An independence Metropolis sampler for the few continuous variables a summed-out model keeps.

Once :func:`ppdinfer.pymc.marginal.marginalize` has summed the integer latents out (and integrated a conjugate rate
with them), what is left is often a handful of hyperparameters (the hospital model: a and m) whose posterior, on
PyMC's unconstrained scale, is close to normal. There a Metropolis independence sampler [1]_ beats NUTS: its
proposal does not depend on the chain's state, so every proposal is drawn before the chain runs and costs one
log density evaluation (no gradient, no trajectory), and when the proposal is close to the posterior nearly every
proposal is accepted and successive draws are nearly independent.

The proposal is a multivariate t with ``PROPOSAL_DF`` degrees of freedom (heavier tails than a normal posterior,
so the ratio of posterior to proposal stays bounded and the chain is uniformly ergodic [1]_), centred at the
posterior mode with the inverse Hessian there (finite differences) as its scale, times ``PROPOSAL_SCALE``. Tuning:
half the tuning proposals (at most ``MAX_TUNE`` per chain) run with that fit; the other half with the mean and
covariance of the second quarter's draws (all chains pooled); the kernel is then fixed, so the kept draws have the
posterior as their stationary law. Each kept draw is ``thin`` transitions, ``thin`` chosen from the tuning
acceptance rate to maximize ESS per second.

The sampler rests on two assumptions, and checks both each time it runs. *One mode*: the mode is searched for
from each chain's jittered initial point and from ``PRIOR_SEARCHES`` draws of the prior (dispersed starts); two
climbs' ends are distinct modes where the log density dips by more than ``VALLEY_DEPTH`` on the segment between
them. *A proposal that covers the posterior*: the importance ratios posterior / proposal of the proposals drawn in
the second half of tuning, and again of those drawn for the kept draws, are checked for a heavy tail: a Pareto k
(the PSIS fit of ``ppdinfer.inference.importance``) above ``PARETO_K_THRESHOLD`` together with a largest
ratio above ``MAX_RATIO`` times their mean means tails heavier than the proposal's, which the chain would rarely
or never visit. It declines (and the caller runs NUTS) where either fails, where the mode or Hessian is not finite
or not a maximum, or where the tuning acceptance rate is below ``MIN_ACCEPTANCE``; the posterior's attrs record
the checks' figures.

References
----------
.. [1] L. Tierney, "Markov chains for exploring posterior distributions," Annals of Statistics 22(4), 1994.
"""

from __future__ import annotations

import logging
import math
import time
from typing import NamedTuple

import numpy as np
import pymc as pm
import pytensor
import xarray as xr
from pymc.initial_point import make_initial_point_fn
from pymc.pytensorf import join_nonshared_inputs
from scipy import optimize
from tqdm.auto import tqdm

from ..inference.diagnostics import ess_rhat
from ..inference.importance import PARETO_K_THRESHOLD, pareto_k
from ..rng import root_seed
from ._arguments import _check_sample_arguments

_log = logging.getLogger("pymc")

__all__ = [
    "INDEPENDENCE_MAX_DIM",
    "MAX_TUNE",
    "MAX_RATIO",
    "MIN_ACCEPTANCE",
    "PRIOR_SEARCHES",
    "PROPOSAL_DF",
    "PROPOSAL_SCALE",
    "VALLEY_DEPTH",
    "Declined",
    "sample_independence",
]

#: The most unconstrained dimensions the sampler takes: beyond this a fitted proposal's acceptance falls fast.
INDEPENDENCE_MAX_DIM = 6
#: Below this acceptance rate over the second half of tuning the sampler declines.
MIN_ACCEPTANCE = 0.3
#: The proposal's degrees of freedom and the factor on its scale (sd), chosen on the hospital model at 200 units:
#: acceptance 0.86 (0.76 with 5 and 1.2).
PROPOSAL_DF = 10.0
PROPOSAL_SCALE = 1.1
#: The most tuning proposals per chain: enough for the mean and covariance of a few dimensions and the acceptance
#: rate; a larger ``tune`` (NUTS's 1,000 by default) is not spent.
MAX_TUNE = 300
#: Proposals evaluated between two checks of the progress bar (and of Ctrl-C): every chain the same number.
_BLOCK = 100
#: Mode searches started from draws of the prior (on the unconstrained scale), besides one from each chain's jittered
#: initial point: a mode that attracts half the prior's draws is missed with probability 1 / 256, a quarter 0.1.
PRIOR_SEARCHES = 8
#: Where the prior cannot be drawn (a Flat prior), those starts are the initial point jittered by U(-w, w), this w.
_WIDE_JITTER = 5.0
#: Two climbs' ends are distinct modes where the log density on the segment between them falls this far below the
#: lower end (a climb stopped early on the same hill sees no such dip, however far it stopped).
VALLEY_DEPTH = 0.1
#: Points on that segment at which the log density is evaluated.
_VALLEY_POINTS = 15
#: A fitted heavy tail (Pareto k above ``PARETO_K_THRESHOLD``) declines only where the largest importance ratio is
#: also above this many times their mean (a chain that reaches that proposal stays there about this many
#: transitions): below it the ratios are bounded in effect, and a large k is an artefact of a flat-topped ratio
#: (the 4-unit hospital model: k 1.1 with the largest ratio 3 times the mean; a t posterior with 5 df: k 1.9 at 2.9).
MAX_RATIO = 10.0
#: Climbs' ends closer than this (in sd of the best mode's fit, Mahalanobis) are the same mode without the segment.
_SAME_MODE_SD = 0.1


class Declined(Exception):
    """The posterior does not suit an independence proposal; the message says why.

    Examples
    --------
    >>> import pymc as pm
    >>> with pm.Model() as model:
    ...     z = pm.Normal("z", 0.0, 1.0, shape=10)
    >>> try:
    ...     sample_independence(model, draws=10, tune=10, progressbar=False)
    ... except Declined as why:
    ...     print(why)
    10 unconstrained dimensions (it takes 1 to 6)
    """


class _Target:
    """The model's log density (with the transforms' Jacobians) as a function of one flat unconstrained vector."""

    def __init__(self, model: pm.Model):
        self.model = model
        point = model.initial_point()
        self.start = self.flat(point)
        self.labels = [
            label
            for value in model.value_vars
            for label in (
                [value.name] if np.size(point[value.name]) == 1
                else [f"{value.name}[{i}]" for i in range(np.size(point[value.name]))]
            )
        ]  # fmt: skip
        kept = {var.name for var in (*model.free_RVs, *model.deterministics)}
        wanted = [var for var in model.unobserved_value_vars if var.name in kept]
        self.names_out = [var.name for var in wanted]
        # one function for the log density and the constrained values (one compilation; they cost little beside it)
        outputs, flat = join_nonshared_inputs(point, [model.logp(), *wanted], model.value_vars)
        self.function = pytensor.function([flat], outputs, on_unused_input="ignore")
        self.values = None  # the constrained values at the last point evaluated

    @property
    def dim(self) -> int:
        return int(self.start.size)

    def flat(self, point: dict) -> np.ndarray:
        """A point (unconstrained values by name, as ``model.initial_point()``) as one flat vector."""
        return np.concatenate([np.ravel(point[value.name]) for value in self.model.value_vars]).astype(float)

    def describe(self, x: np.ndarray) -> str:
        """A flat unconstrained vector as ``name=value`` pairs (a vector's coordinates as ``name[i]``)."""
        return ", ".join(f"{label}={coordinate:.3g}" for label, coordinate in zip(self.labels, x))

    def __call__(self, x: np.ndarray) -> float:
        logp, *self.values = self.function(x)
        value = float(logp)
        return value if math.isfinite(value) else -math.inf


def _hessian(f, x: np.ndarray) -> np.ndarray:
    """The Hessian of f at x by central differences (steps 1e-3 x max(1, |x_i|))."""
    d = x.size
    h = 1e-3 * np.maximum(1.0, np.abs(x))
    f0 = f(x)
    H = np.empty((d, d))
    for i in range(d):
        e_i = np.zeros(d)
        e_i[i] = h[i]
        H[i, i] = (f(x + e_i) - 2 * f0 + f(x - e_i)) / h[i] ** 2
        for j in range(i):
            e_j = np.zeros(d)
            e_j[j] = h[j]
            H[i, j] = H[j, i] = (f(x + e_i + e_j) - f(x + e_i - e_j) - f(x - e_i + e_j) + f(x - e_i - e_j)) / (
                4 * h[i] * h[j]
            )
    return H


def fit_mode(target: _Target, starts: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(mode, covariance): the highest end of the climbs from ``starts`` and the inverse of minus its Hessian.

    Raises :class:`Declined` where a climb fails, the Hessian at the mode is not negative definite, or the climbs
    reach distinct modes (:func:`_distinct_modes`)."""
    ends = [_climb(target, start) for start in starts]
    heights = [target(end) for end in ends]
    best = ends[int(np.argmax(heights))]
    H = _hessian(target, best)
    try:
        chol = np.linalg.cholesky(-(H + H.T) / 2)
    except np.linalg.LinAlgError:
        raise Declined("the log density's Hessian at the mode is not negative definite") from None
    modes = _distinct_modes(target, ends, heights, chol)
    if len(modes) > 1:
        found = " and ".join(f"{target.describe(mode)} (log density {target(mode):.2f})" for mode in modes[:2])
        raise Declined(
            f"the {len(starts)} mode searches from dispersed starts climb to {len(modes)} different modes: at {found}"
        )
    return best, np.linalg.inv(chol @ chol.T)


def _climb(target: _Target, start: np.ndarray) -> np.ndarray:
    """Where BFGS climbing the log density from ``start`` stops; :class:`Declined` where it runs off."""
    found = optimize.minimize(lambda x: -target(x), start, method="BFGS", options={"gtol": 1e-3})
    if not np.all(np.isfinite(found.x)) or not math.isfinite(found.fun):
        raise Declined(f"the climb to the posterior mode from {target.describe(start)} failed")
    return found.x


def _distinct_modes(target: _Target, ends: list, heights: list, chol: np.ndarray) -> list[np.ndarray]:
    """One end per distinct mode among the climbs' ``ends``, highest first. An end is a mode already listed where
    it lies within ``_SAME_MODE_SD`` of it (Mahalanobis, in the metric ``chol chol^T`` of minus the Hessian at
    the best mode) or where the log density on the segment between them nowhere falls ``VALLEY_DEPTH`` below the
    lower of the two."""
    modes: list[tuple[np.ndarray, float]] = []
    for index in np.argsort(heights)[::-1]:
        end, height = ends[index], heights[index]
        if not any(_same_hill(target, end, height, mode, top, chol) for mode, top in modes):
            modes.append((end, height))
    return [mode for mode, _ in modes]


def _same_hill(target: _Target, a: np.ndarray, height_a: float, b: np.ndarray, height_b: float, chol) -> bool:
    """Whether the ends ``a`` and ``b`` (log densities ``height_a``, ``height_b``) are one mode (as
    :func:`_distinct_modes` says)."""
    if np.linalg.norm(chol.T @ (a - b)) <= _SAME_MODE_SD:
        return True
    between = np.linspace(0.0, 1.0, _VALLEY_POINTS + 2)[1:-1]
    lowest = min(target(a + t * (b - a)) for t in between)
    return lowest >= min(height_a, height_b) - VALLEY_DEPTH


def _search_starts(target: _Target, rngs: list[np.random.Generator]) -> list[np.ndarray]:
    """The mode searches' starts: each chain's initial point jittered by U(-1, 1), and ``PRIOR_SEARCHES`` dispersed
    ones (:func:`_dispersed`); those where the log density is not finite are left out (the initial point, whose
    log density the caller checked, where that leaves none)."""
    jittered = [target.start + rng.uniform(-1, 1, target.dim) for rng in rngs]
    starts = [x for x in [*jittered, *_dispersed(target, rngs[0])] if math.isfinite(target(x))]
    return starts or [target.start]


def _dispersed(target: _Target, rng: np.random.Generator) -> list[np.ndarray]:
    """``PRIOR_SEARCHES`` draws of the prior on the unconstrained scale (any initial values set in the model
    ignored); where the prior cannot be drawn (a Flat prior), the initial point jittered by U(-_WIDE_JITTER,
    _WIDE_JITTER)."""
    seeds = rng.integers(2**32, size=PRIOR_SEARCHES)
    model = target.model
    draw = make_initial_point_fn(model=model, overrides=dict.fromkeys(model.free_RVs, "prior"), return_transformed=True)
    try:
        return [target.flat(draw(int(seed))) for seed in seeds]
    except NotImplementedError:  # "Cannot sample from flat variable"
        return [target.start + rng.uniform(-_WIDE_JITTER, _WIDE_JITTER, target.dim) for _ in seeds]


class _Proposal:
    """A multivariate t: draws and their log density up to a constant."""

    def __init__(
        self, mean: np.ndarray, covariance: np.ndarray, df: float = PROPOSAL_DF, scale: float = PROPOSAL_SCALE
    ):
        self.mean, self.df = mean, df
        self.chol = np.linalg.cholesky(covariance) * scale

    def draw(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        z = rng.standard_normal((n, self.mean.size)) / np.sqrt(rng.chisquare(self.df, n) / self.df)[:, None]
        return self.mean + z @ self.chol.T, self.log_density_of_standard(z)

    def log_density(self, x: np.ndarray) -> float:
        return float(self.log_density_of_standard(np.linalg.solve(self.chol, x - self.mean)))

    def log_density_of_standard(self, z: np.ndarray) -> np.ndarray:
        return -0.5 * (self.df + self.mean.size) * np.log1p(np.sum(z * z, axis=-1) / self.df)


def _chain_seeds(random_seed, chains: int) -> list[np.random.SeedSequence]:
    if isinstance(random_seed, list | tuple):
        if len(random_seed) != chains:
            raise ValueError(f"random_seed: a list needs one seed per chain ({chains}), got {len(random_seed)}")
        return [root_seed(seed) for seed in random_seed]
    return root_seed(random_seed).spawn(chains)


class _Chains:
    """The chains' states, stepping through blocks of proposals with the same proposal law."""

    def __init__(self, target: _Target, starts: list[np.ndarray], rngs: list[np.random.Generator], bar):
        self.target, self.rngs, self.bar = target, rngs, bar
        self.state = [np.array(start, dtype=float) for start in starts]
        self.logp, self.values = [], []
        for x in self.state:
            self.logp.append(target(x))
            self.values.append(target.values)
        self.evaluations = 0
        self.interrupted = False

    def run(self, proposal: _Proposal, n: int, thin: int = 1) -> _Run:
        """n kept states per chain, ``thin`` transitions each (:class:`_Run`). Ctrl-C stops it after the last whole
        block: the results then hold the draws every chain finished, and ``interrupted`` is set."""
        chains, d = len(self.state), self.target.dim
        states, lps = np.empty((chains, n, d)), np.empty((chains, n))
        values = [[None] * n for _ in range(chains)]
        moved = np.zeros((chains, n), dtype=bool)
        q_now = [proposal.log_density(x) for x in self.state]
        accepted, done, total = 0, 0, n * thin
        log_ratios = np.empty((chains, total))
        try:
            for begin in range(0, total, _BLOCK):
                size = min(_BLOCK, total - begin)
                for c in range(chains):
                    points, log_q = proposal.draw(self.rngs[c], size)
                    log_u = np.log(self.rngs[c].random(size))
                    for t in range(size):
                        lp = self.target(points[t])
                        log_ratios[c, begin + t] = lp - log_q[t]
                        move = log_u[t] < lp - self.logp[c] + q_now[c] - log_q[t]
                        if move:
                            self.state[c], self.logp[c], q_now[c] = points[t], lp, log_q[t]
                            self.values[c] = self.target.values
                            accepted += 1
                        if (begin + t + 1) % thin == 0:
                            k = (begin + t) // thin
                            states[c, k], lps[c, k], moved[c, k] = self.state[c], self.logp[c], move
                            values[c][k] = self.values[c]
                done = begin + size
                self.evaluations += size * chains
                self.bar.update(size * chains)
        except KeyboardInterrupt:
            self.interrupted = True
        kept = done // thin
        return _Run(
            states[:, :kept],
            [chain[:kept] for chain in values],
            lps[:, :kept],
            moved[:, :kept],
            accepted / max(done * chains, 1),
            log_ratios[:, :done],
        )


class _Run(NamedTuple):
    """What :meth:`_Chains.run` returns: the kept ``states`` (chains, n, d), their constrained ``values`` (per
    chain, per draw, the target's outputs), ``lp`` (chains, n), ``moved`` (chains, n: the draw's last transition
    moved), the ``acceptance`` rate of every transition, and the ``log_ratios`` log posterior - log proposal (up to
    constants) of every proposal drawn (chains, transitions)."""

    states: np.ndarray
    values: list
    lp: np.ndarray
    moved: np.ndarray
    acceptance: float
    log_ratios: np.ndarray


def _max_ratio(log_ratios: np.ndarray) -> float:
    """The largest of the importance ratios whose logs are ``log_ratios`` over their mean (inf where none is
    positive)."""
    flat = np.ravel(log_ratios)
    top = float(flat.max()) if flat.size else -math.inf
    return 1.0 / float(np.mean(np.exp(flat - top))) if top > -math.inf else math.inf


def _coverage(log_ratios: np.ndarray, stage: str, suffix: str = "") -> tuple[dict, str | None]:
    """(the coverage figures of the ``stage``'s proposals: their importance ratios' Pareto k and largest ratio over
    the mean, as attrs named with ``suffix``; why the proposal fails to cover the posterior, or None). It fails
    where k exceeds ``PARETO_K_THRESHOLD`` and the largest ratio ``MAX_RATIO`` times the mean: the posterior's tails
    are heavier than the proposal's."""
    k, spread = pareto_k(log_ratios), _max_ratio(log_ratios)
    figures = {f"ppdinfer_independence_pareto_k{suffix}": k, f"ppdinfer_independence_max_ratio{suffix}": spread}
    if not (k > PARETO_K_THRESHOLD and spread > MAX_RATIO):
        return figures, None
    return figures, (
        f"the proposal does not cover the posterior's tails: the importance ratios posterior / proposal of the "
        f"{log_ratios.size} proposals {stage} have Pareto k {k:.2f} (> {PARETO_K_THRESHOLD}) and the largest is "
        f"{spread:.3g} times their mean (> {MAX_RATIO:g})"
    )


def _final_checks(run: _Run, interrupted: bool) -> dict:
    """The coverage figures of the kept draws' proposals: :class:`Declined` where they fail, a warning instead
    after Ctrl-C (the draws are kept), and one where k cannot be fitted."""
    figures, problem = _coverage(run.log_ratios, "drawn for the kept draws")
    if problem and not interrupted:
        raise Declined(problem)
    if problem:
        _log.warning("independence Metropolis (interrupted): %s", problem)
    if not math.isfinite(figures["ppdinfer_independence_pareto_k"]):
        _log.warning(
            "independence Metropolis: the Pareto k of %d proposals' importance ratios could not be fitted (too few "
            "or tied): that the proposal covers the posterior is unchecked",
            run.log_ratios.size,
        )
    return figures


def _thin_for(acceptance: float, latent_cost: float = 2.0) -> int:
    """Transitions per kept draw that maximize ESS per unit of work: a kept draw costs ``latent_cost`` (the exact
    draws of the summed-out latents, in evaluations of the log density) plus ``thin`` evaluations, and its lag-1
    autocorrelation is about the chance (1 - acceptance)^thin of staying put."""

    def cost(thin):
        stay = (1 - acceptance) ** thin
        return (latent_cost + thin) * (1 + stay) / (1 - stay)

    return min(range(1, 6), key=cost)


def sample_independence(
    model: pm.Model,
    *,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 2,
    random_seed=None,
    progressbar: bool = True,
    convergence_checks: bool = True,
) -> xr.DataTree:
    """Posterior draws of ``model``'s free variables by the independence Metropolis sampler (module docstring).

    Returns a DataTree with ``posterior`` (every free variable and deterministic, with its dims) and
    ``sample_stats`` (``lp``, ``accepted``: the last transition of the draw moved); the posterior's attrs hold
    ``sampling_time`` (the transitions' seconds, tuning included), ``tuning_steps``, ``thin``,
    ``acceptance_rate``, ``interrupted`` (after Ctrl-C the draws every chain finished are kept),
    ``ppdinfer_step``, ``ppdinfer_step_description`` and the checks' figures (module docstring):
    ``ppdinfer_independence_mode_searches`` (climbs from dispersed starts), ``ppdinfer_independence_modes`` (the
    distinct modes they found: 1), ``ppdinfer_independence_tuning_acceptance``, and of the importance ratios
    posterior / proposal in tuning's second half and over the kept draws' proposals, the Pareto k
    (``ppdinfer_independence_pareto_k_tuning``, ``ppdinfer_independence_pareto_k``; NaN where too few to fit, with
    a warning for the latter) and the largest ratio over their mean (``ppdinfer_independence_max_ratio_tuning``,
    ``ppdinfer_independence_max_ratio``). With ``convergence_checks`` (and two chains or more), a
    rank-normalized R-hat above 1.01 or a bulk ESS below 100 per chain, over every variable, is logged as a
    warning on PyMC's logger, as ``pm.sample`` does. Raises :class:`Declined` (nothing sampled) where the
    posterior does not suit it.

    Examples
    --------
    >>> import pymc as pm
    >>> from ppdinfer.pymc.independence import sample_independence
    >>> with pm.Model() as model:
    ...     mu = pm.Normal("mu", 0.0, 1.0)
    ...     y = pm.Normal("y", mu, 1.0, observed=[0.3, -0.2, 0.5])
    >>> tree = sample_independence(model, draws=200, tune=200, random_seed=1, progressbar=False)
    >>> tree["posterior"]["mu"].shape, tree["posterior"].attrs["acceptance_rate"] > 0.8
    ((2, 200), True)
    >>> tree["posterior"].attrs["ppdinfer_independence_pareto_k"] < 0.7
    True
    """
    _check_sample_arguments(True, {"draws": draws, "tune": tune, "chains": chains, "random_seed": random_seed})
    draws, tune, chains = int(draws), int(tune), int(chains)
    started = time.perf_counter()
    target = _Target(model)
    if not 1 <= target.dim <= INDEPENDENCE_MAX_DIM:
        raise Declined(f"{target.dim} unconstrained dimensions (it takes 1 to {INDEPENDENCE_MAX_DIM})")
    if not math.isfinite(target(target.start)):
        raise Declined("the log density is not finite at the model's initial point")
    rngs = [np.random.default_rng(seed) for seed in _chain_seeds(random_seed, chains)]
    starts = _search_starts(target, rngs)
    mode, covariance = fit_mode(target, starts)
    tune = min(tune, MAX_TUNE)
    bar = tqdm(
        total=(tune + 5 * draws) * chains, desc="independence Metropolis", unit="proposal", disable=not progressbar,
        leave=False,
    )  # fmt: skip
    try:
        sampler = _Chains(target, [mode] * chains, rngs, bar)
        tuning_started = time.perf_counter()
        proposal, thin, checks = _tune(sampler, _Proposal(mode, covariance), tune)
        bar.total = sampler.evaluations + draws * thin * chains
        run = sampler.run(proposal, draws, thin)
    finally:
        bar.close()
    checks.update(_final_checks(run, sampler.interrupted))
    checks.update({"ppdinfer_independence_mode_searches": len(starts), "ppdinfer_independence_modes": 1})
    finished = time.perf_counter()
    seconds = {"ppdinfer_step_seconds": finished - started, "sampling_time": finished - tuning_started}
    tree = _tree(target, run, thin, tune, sampler.interrupted, {**seconds, **checks})
    if convergence_checks:
        _check_convergence(tree["posterior"])
    return tree


def _tune(sampler: _Chains, proposal: _Proposal, tune: int) -> tuple[_Proposal, int, dict]:
    """(the proposal, ``thin``, the checks' figures) after ``tune`` proposals per chain (module docstring): the
    first half's proposal refitted to the second quarter's draws; the second half's acceptance rate and coverage
    checked (:class:`Declined` where either fails) and ``thin`` chosen from that rate."""
    first = tune // 2
    checks = dict.fromkeys(
        [f"ppdinfer_independence_{name}" for name in ("tuning_acceptance", "pareto_k_tuning", "max_ratio_tuning")],
        math.nan,
    )
    if first:
        proposal = _refit(proposal, sampler.run(proposal, first).states[:, first // 2 :])
    if sampler.interrupted:
        raise KeyboardInterrupt
    if tune == first:
        return proposal, 2, checks
    run = sampler.run(proposal, tune - first)
    if sampler.interrupted:
        raise KeyboardInterrupt
    if run.acceptance < MIN_ACCEPTANCE:
        raise Declined(f"the fitted proposal's acceptance rate in tuning was {run.acceptance:.2f} (< {MIN_ACCEPTANCE})")
    checks["ppdinfer_independence_tuning_acceptance"] = run.acceptance
    figures, problem = _coverage(run.log_ratios, "in tuning's second half", "_tuning")
    if problem:
        raise Declined(problem)
    checks.update(figures)
    return proposal, _thin_for(run.acceptance), checks


def _refit(proposal: _Proposal, states: np.ndarray) -> _Proposal:
    """A proposal with the mean and covariance of ``states`` (chains, n, d) pooled, where there are more than 20 a
    dimension and their covariance is positive definite; else ``proposal``."""
    dim = states.shape[-1]
    pooled = states.reshape(-1, dim)
    if pooled.shape[0] <= 20 * dim:
        return proposal
    refit = np.cov(pooled.T).reshape(dim, dim)
    if np.all(np.isfinite(refit)) and np.all(np.linalg.eigvalsh(refit) > 0):
        return _Proposal(pooled.mean(axis=0), refit)
    return proposal


def _check_convergence(posterior) -> None:
    """Log a warning where some variable's R-hat exceeds 1.01 or its bulk ESS falls below 100 per chain."""
    chains, draws = posterior.sizes["chain"], posterior.sizes["draw"]
    if chains < 2 or draws < 4:
        return
    flat = np.concatenate([posterior[name].values.reshape(chains, draws, -1) for name in posterior.data_vars], axis=2)
    ess, rhat = ess_rhat(flat)
    worst_rhat, least_ess = float(np.nanmax(rhat)), float(np.nanmin(ess))
    if worst_rhat > 1.01 or least_ess < 100 * chains:
        _log.warning(
            "independence Metropolis: largest R-hat %.3f, smallest bulk ESS %.0f over %d chains: check the draws",
            worst_rhat,
            least_ess,
            chains,
        )


def _tree(target: _Target, run: _Run, thin: int, tune: int, interrupted: bool, records: dict) -> xr.DataTree:
    """The DataTree of ``run``'s kept draws, ``records`` (the seconds and the checks' figures) in the posterior's
    attrs."""
    model = target.model
    kept, lps = run.values, run.lp
    chains, draws = lps.shape
    data = {}
    for index, name in enumerate(target.names_out):
        shape = np.shape(target.values[index])
        values = np.array([[row[index] for row in chain] for chain in kept], dtype=float).reshape(chains, draws, *shape)
        dims = tuple(model.named_vars_to_dims.get(name, ()) or ()) or tuple(
            f"{name}_dim_{i}" for i in range(values.ndim - 2)
        )
        coords = {dim: np.asarray(model.coords[dim]) for dim in dims if dim in model.coords}
        data[name] = xr.DataArray(values, dims=("chain", "draw", *dims), coords=coords)
    posterior = xr.Dataset(data, coords={"chain": np.arange(chains), "draw": np.arange(draws)})
    posterior.attrs.update(
        {
            "tuning_steps": tune,
            "thin": thin,
            "acceptance_rate": run.acceptance,
            "interrupted": interrupted,
            "ppdinfer_step": "independence",
            "ppdinfer_step_description": (
                f"independence Metropolis (multivariate t, {PROPOSAL_DF:g} df, fitted at the mode and refitted in "
                f"tuning; {thin} transition(s) per draw; one mode in "
                f"{records['ppdinfer_independence_mode_searches']} searches, Pareto k of the importance ratios "
                f"{records['ppdinfer_independence_pareto_k']:.2f})"
            ),
            **records,
        }
    )
    stats = xr.Dataset(
        {"lp": (("chain", "draw"), lps), "accepted": (("chain", "draw"), run.moved)},
        coords={"chain": np.arange(chains), "draw": np.arange(draws)},
    )
    return xr.DataTree(children={"posterior": xr.DataTree(posterior), "sample_stats": xr.DataTree(stats)})
