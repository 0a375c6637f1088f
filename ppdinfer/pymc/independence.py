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
covariance of the second quarter's draws (all chains pooled); the kernel is then fixed, so the kept draws have the posterior as their stationary law. Each
kept draw is ``thin`` transitions, ``thin`` chosen from the tuning acceptance rate to maximize ESS per second.

The sampler declines (and the caller runs NUTS) where a normal fit cannot describe the posterior: a mode or
Hessian that is not finite or not a maximum, chains whose starting points climb to different modes, or a tuning
acceptance rate below ``MIN_ACCEPTANCE``.

References
----------
.. [1] L. Tierney, "Markov chains for exploring posterior distributions," Annals of Statistics 22(4), 1994.
"""

from __future__ import annotations

import logging
import math
import time

import numpy as np
import pymc as pm
import pytensor
import xarray as xr
from pymc.pytensorf import join_nonshared_inputs
from scipy import optimize
from tqdm.auto import tqdm

from ..inference.diagnostics import ess_rhat
from ..rng import root_seed
from ._arguments import _check_sample_arguments

_log = logging.getLogger("pymc")

__all__ = [
    "INDEPENDENCE_MAX_DIM",
    "MAX_TUNE",
    "MIN_ACCEPTANCE",
    "PROPOSAL_DF",
    "PROPOSAL_SCALE",
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
        self.start = np.concatenate([np.ravel(point[value.name]) for value in model.value_vars]).astype(float)
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
    """(mode, covariance): the posterior mode climbed to from every start, and the inverse of minus its Hessian.

    Raises :class:`Declined` where a climb fails, the starts reach different modes, or the Hessian is not
    negative definite."""
    modes = []
    for start in starts:
        found = optimize.minimize(lambda x: -target(x), start, method="BFGS", options={"gtol": 1e-3})
        if not np.all(np.isfinite(found.x)) or not math.isfinite(found.fun):
            raise Declined(f"the climb to the posterior mode from {np.round(start, 3).tolist()} failed")
        modes.append(found.x)
    best = min(modes, key=lambda x: -target(x))
    H = _hessian(target, best)
    try:
        chol = np.linalg.cholesky(-(H + H.T) / 2)
    except np.linalg.LinAlgError:
        raise Declined("the log density's Hessian at the mode is not negative definite") from None
    covariance = np.linalg.inv(chol @ chol.T)
    sd = np.sqrt(np.diag(covariance))
    for mode in modes:
        if np.any(np.abs(mode - best) > 0.1 * sd):
            raise Declined("chains started at different points climb to different modes")
    return best, covariance


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

    def run(self, proposal: _Proposal, n: int, thin: int = 1):
        """n kept states per chain (``thin`` transitions each): (states (chains, n, d), their constrained values
        (per chain, per draw, the target's outputs), lp (chains, n), accepted (chains, n): the last transition
        moved, and the acceptance rate of every transition). Ctrl-C stops it after the last whole block: the
        results then hold the draws every chain finished, and ``interrupted`` is set."""
        chains, d = len(self.state), self.target.dim
        states, lps = np.empty((chains, n, d)), np.empty((chains, n))
        values = [[None] * n for _ in range(chains)]
        moved = np.zeros((chains, n), dtype=bool)
        q_now = [proposal.log_density(x) for x in self.state]
        accepted, done, total = 0, 0, n * thin
        try:
            for begin in range(0, total, _BLOCK):
                size = min(_BLOCK, total - begin)
                for c in range(chains):
                    points, log_q = proposal.draw(self.rngs[c], size)
                    log_u = np.log(self.rngs[c].random(size))
                    for t in range(size):
                        lp = self.target(points[t])
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
        values = [chain[:kept] for chain in values]
        return states[:, :kept], values, lps[:, :kept], moved[:, :kept], accepted / max(done * chains, 1)


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
    ``ppdinfer_step`` and ``ppdinfer_step_description``. With ``convergence_checks`` (and two chains or more), a
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
    """
    _check_sample_arguments(True, {"draws": draws, "tune": tune, "chains": chains, "random_seed": random_seed})
    draws, tune, chains = int(draws), int(tune), int(chains)
    started = time.perf_counter()
    target = _Target(model)
    if not 1 <= target.dim <= INDEPENDENCE_MAX_DIM:
        raise Declined(f"{target.dim} unconstrained dimensions (it takes 1 to {INDEPENDENCE_MAX_DIM})")
    if not math.isfinite(target(target.start)):
        raise Declined("the log density is not finite at the model's initial point")
    seeds = _chain_seeds(random_seed, chains)
    rngs = [np.random.default_rng(seed) for seed in seeds]
    starts = [target.start + rng.uniform(-1, 1, target.dim) for rng in rngs]
    starts = [x if math.isfinite(target(x)) else target.start for x in starts]
    mode, covariance = fit_mode(target, starts)
    proposal = _Proposal(mode, covariance)
    bar = tqdm(
        total=(tune + 5 * draws) * chains, desc="independence Metropolis", unit="proposal", disable=not progressbar,
        leave=False,
    )  # fmt: skip
    sampler = _Chains(target, [mode] * chains, rngs, bar)
    tuning_started = time.perf_counter()
    tune = min(tune, MAX_TUNE)
    first, thin = tune // 2, 2
    if first:
        states = sampler.run(proposal, first)[0]
        pooled = states[:, first // 2 :].reshape(-1, target.dim)
        if pooled.shape[0] > 20 * target.dim:
            refit = np.cov(pooled.T).reshape(target.dim, target.dim)
            if np.all(np.isfinite(refit)) and np.all(np.linalg.eigvalsh(refit) > 0):
                proposal = _Proposal(pooled.mean(axis=0), refit)
    if tune - first and not sampler.interrupted:
        acceptance = sampler.run(proposal, tune - first)[4]
        if acceptance < MIN_ACCEPTANCE:
            bar.close()
            raise Declined(f"the fitted proposal's acceptance rate in tuning was {acceptance:.2f} (< {MIN_ACCEPTANCE})")
        thin = _thin_for(acceptance)
    if sampler.interrupted:
        bar.close()
        raise KeyboardInterrupt
    bar.total = sampler.evaluations + draws * thin * chains
    _, values, lps, moved, rate = sampler.run(proposal, draws, thin)
    bar.close()
    finished = time.perf_counter()
    tree = _tree(
        target, values, lps, moved, rate, thin, tune, finished - started, finished - tuning_started, sampler.interrupted
    )
    if convergence_checks:
        _check_convergence(tree["posterior"])
    return tree


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


def _tree(target: _Target, kept, lps, moved, rate, thin, tune, seconds, sampling_seconds, interrupted) -> xr.DataTree:
    """The DataTree of the kept draws: ``kept`` holds each chain's draws' constrained values (the target's
    outputs)."""
    model = target.model
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
            "sampling_time": sampling_seconds,
            "tuning_steps": tune,
            "thin": thin,
            "acceptance_rate": rate,
            "interrupted": interrupted,
            "ppdinfer_step": "independence",
            "ppdinfer_step_description": (
                f"independence Metropolis (multivariate t, {PROPOSAL_DF:g} df, fitted at the mode and refitted in "
                f"tuning; {thin} transition(s) per draw)"
            ),
            "ppdinfer_step_seconds": seconds,
        }
    )
    stats = xr.Dataset(
        {"lp": (("chain", "draw"), lps), "accepted": (("chain", "draw"), moved)},
        coords={"chain": np.arange(chains), "draw": np.arange(draws)},
    )
    return xr.DataTree(children={"posterior": xr.DataTree(posterior), "sample_stats": xr.DataTree(stats)})
