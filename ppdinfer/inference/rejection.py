"""Exact rejection sampling of (theta, x) | y, z: the corrected Algorithm 1.

Propose theta ~ pi(theta | z) and x ~ pi(x | theta, z); accept when
U <= pi(y | x, z) / M with a constant M >= sup_{x, y} pi(y | x, z). Accepted pairs are exact
draws from the joint posterior (Seeman, Reimherr & Slavkovic, Thm 16, with errata 1-2 of
the project notes: the test is U <= ratio, and M does not depend on x).
"""

from __future__ import annotations

import math
import time
import warnings
from concurrent.futures import Executor
from dataclasses import dataclass

import numpy as np
import xarray as xr
from tqdm import tqdm

from ..kernels import select_accepted
from ..rng import SeedLike, block_generator, root_seed
from ..validation import positive_finite, positive_int
from ._guards import check_box, check_possible, check_z_keys
from .model import PPDModel
from .parallel import LOOKAHEAD_PER_WORKER, BlockPool
from .results import assemble, dimension_names, posterior_dataset

#: Proposals per random stream. A task is a whole number of blocks, which makes the draws
#: of a seed independent of the batch size and of the cores.
BLOCK_SIZE = 16384
#: Default time budget in seconds when ``max_seconds`` is not given.
DEFAULT_MAX_SECONDS = 600.0
_TARGET_CHUNK_SECONDS = 0.05
_MAX_IN_FLIGHT_BYTES = 256 * 2**20


class BudgetWarning(UserWarning):
    """A sampler stopped at its time or proposal budget, or expects to.

    Examples
    --------
    >>> import warnings
    >>> import ppdinfer as pp
    >>> from ppdinfer import generators, mechanisms, priors
    >>> model = pp.PPDModel(priors.Beta(1, 1), generators.Binomial(100), mechanisms.DiscreteLaplace(0.5), names="p")
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     result = pp.rejection_sample(model, 40, draws=1000, max_proposals=4096, random_seed=1,
    ...                                  progressbar=False)
    >>> caught[0].category is pp.BudgetWarning, result.attrs["complete"]  # flags are 0 / 1 (netCDF has no bool)
    (True, 0)
    >>> result["posterior"].sizes["draw"] < 1000            # the draws accepted within the budget
    True
    """


def rejection_sample(
    model: PPDModel,
    y,
    z=None,
    *,
    draws: int = 1000,
    random_seed: SeedLike = None,
    batch_size: int | str = "auto",
    max_proposals: int | None = None,
    max_seconds: float | None = None,
    progressbar: bool = True,
    cores: int | None = None,
    executor: Executor | None = None,
) -> xr.DataTree:
    r"""Exact posterior draws of theta and x given the release y and public information z.

    The corrected Algorithm 1: propose theta ~ pi(theta | z) and x ~ pi(x | theta, z), draw
    U ~ Uniform(0, 1), and accept the pair when

    .. math::

        U \le \frac{\pi(y \mid x, z)}{M}, \qquad M \ge \sup_{x, y} \pi(y \mid x, z),

    with M the mechanism's constant bound (``mechanism.log_bound``). A proposal is accepted
    with probability p(y | z) / M, so each draw costs M / p(y | z) proposals on average: the
    ``acceptance_rate`` in ``sample_stats`` tells whether a longer run is affordable.

    Per unit: when the prior is a product over units (``priors.Beta(..., size=H)`` or
    ``priors.Gamma(..., size=H)``), x_k depends on theta_k alone (the per-unit
    :class:`ppdinfer.generators.Binomial` or :class:`ppdinfer.generators.Poisson`) and the
    mechanism's noise is iid per coordinate (additive noise, Tulap), the posterior is a product
    over units, and the sampler runs one exact rejection per unit (unit k from its own stream, with
    its own acceptance rate p(y_k | z) / M_k) and pairs the units' draws: the joint draws are
    exact, where joint proposals would be accepted with the product of the H rates. The budgets
    then apply per unit (``max_seconds`` to the whole run); a unit stopped by one ends the run
    with the draws every unit has. A model whose units do not
    factorize (a hyperprior, a non-separable mechanism) is refused: use
    :func:`ppdinfer.pymc.sample_model`.

    Checks before sampling (shared with :func:`importance_sample` and :func:`exact_posterior`): a key
    of z that neither the prior, the data model nor the mechanism reads is warned about (a misspelt
    key); a y of probability zero under the model is refused ("y has probability zero under the
    model") where that is decided soundly: by y alone for a post-processed release (y outside the
    image of its box) and a congenial mechanism (y off its invariants), or when the likelihood is
    zero at every x of the data model's finite support (tried when it is zero at a pilot of
    prior-predictive x). After sampling, a :class:`ppdinfer.mechanisms.PostProcessedRelease` whose
    box misses more than 0.1 % of the raw release's law at an x drawn gives a
    :class:`ppdinfer.mechanisms.BoxMassWarning`.

    Parameters
    ----------
    model : PPDModel
    y : array_like
        The privatized release, with the shape of the model's x.
    z : mapping, optional
        Public information, passed to the prior, the data model and the mechanism.
    draws : int
        Accepted draws wanted.
    random_seed : int, SeedSequence or Generator, optional
        The same seed gives the same draws whatever ``batch_size``, ``cores`` or ``executor`` is.
    batch_size : int or "auto"
        Proposals generated and tested in one task (rounded up to whole blocks of 16,384); the
        workers take tasks one after another, a few ahead of the one being collected. "auto"
        aims at about 0.05 s of one worker's work per task, less near the end of the run.
    max_proposals, max_seconds : optional
        Budgets. The sampler stops at the first one reached and returns the draws it has, with
        a :class:`BudgetWarning` that says how long the full request would take. Without
        ``max_seconds`` the time budget is 600 s. Ctrl-C also stops it with the draws so far.
    progressbar : bool
    cores : int, optional
        Threads that propose and test blocks concurrently. One core runs without threads. The
        default is every available core when called from the main thread of the main process,
        and one core inside a worker thread or a child process (a thread or process pool, a dask
        worker), which is parallel already. More than the available cores are capped to them,
        with a warning.
    executor : concurrent.futures.Executor, optional
        Runs the blocks instead of the thread pool, e.g. a ``ProcessPoolExecutor`` when the
        model's simulator is pure Python and holds the GIL (the model must then pickle).

    Returns
    -------
    xarray.DataTree
        ``posterior``: theta (named per ``model.names``) and x; ``sample_stats``: proposals per
        accepted draw, total proposals, acceptance rate, seconds (per unit where it runs per unit);
        ``observed_data``: y;
        ``constant_data``: z and the mechanism's parameters.

    See Also
    --------
    ppdinfer.importance_sample : Algorithm 2, self-normalized importance sampling.
    ppdinfer.exact_posterior : The posterior by enumeration.
    ppdinfer.exchange_sample : MCMC by the exchange algorithm.

    References
    ----------
    .. [1] J. Seeman, M. Reimherr and A. Slavkovic, "Formal privacy for partially private data,"
        arXiv:2204.01102, 2022. Algorithm 1.
    .. [2] R. Gong, "Exact inference with approximate computation for differentially private data via
        perturbations," arXiv:1909.12237, 2019.

    Examples
    --------
    >>> import numpy as np
    >>> import ppdinfer as pp
    >>> from ppdinfer import generators, mechanisms, priors
    >>> model = pp.PPDModel(priors.Beta(1, 1), generators.Binomial(100), mechanisms.DiscreteLaplace(0.5), names="p")
    >>> result = pp.rejection_sample(model, 40, draws=200, random_seed=1, progressbar=False)
    >>> result["posterior"]["p"].shape                    # (chain, draw)
    (1, 200)
    >>> stats = result["sample_stats"]
    >>> evidence = pp.exact_posterior(model, 40)["exact"]["log_evidence"]   # log p(y | z)
    >>> expected = float(np.exp(evidence - stats["log_bound"]))             # p(y | z) / M
    >>> round(expected, 3), abs(float(stats["acceptance_rate"]) - expected) < 0.01
    (0.04, True)
    """
    draws = positive_int(draws, "draws")
    max_seconds = _seconds_budget(max_seconds)
    max_proposals = math.inf if max_proposals is None else positive_int(max_proposals, "max_proposals")
    blocks_per_chunk = None if batch_size == "auto" else -(-positive_int(batch_size, "batch_size") // BLOCK_SIZE)
    labels = model.labels(y, z)
    y, z, theta_shape, x_shape = model.prepare(y, z)
    model.check_memory(draws, theta_shape, x_shape)
    finite_log_bound(model, y, z)  # before the checks below, which evaluate the likelihood
    check_z_keys(model, y, z, "rejection_sample")
    check_possible(model, y, z)
    unit_models = _unit_models(model, x_shape)
    root = root_seed(random_seed)
    settings = dict(
        draws=draws,
        blocks_per_chunk=blocks_per_chunk,
        max_proposals=max_proposals,
        progressbar=progressbar,
        cores=cores,
        executor=executor,
    )
    start = time.perf_counter()
    if unit_models is None:
        run = _run(model, y, z, theta_shape, x_shape, root, max_seconds=max_seconds, **settings)
        theta, x, stop_reason = run.theta, run.x, run.stop_reason
        stats = xr.Dataset(
            {
                "proposals": (["chain", "draw"], run.per_draw().reshape(1, -1)),
                "total_proposals": ((), run.n_proposals),
                "acceptance_rate": ((), theta.shape[0] / max(run.n_proposals, 1)),
                "seconds": ((), run.seconds),
                "log_bound": ((), run.log_bound),
            }
        )
    else:
        runs = []
        for unit, unit_model in enumerate(unit_models):  # independent posteriors: one exact rejection each
            unit_y, unit_z, unit_theta_shape, unit_x_shape = unit_model.prepare(y[unit], z)
            unit_root = np.random.SeedSequence(root.entropy, spawn_key=(*root.spawn_key, unit))
            remaining = max_seconds - (time.perf_counter() - start)
            runs.append(
                _run(
                    unit_model,
                    unit_y,
                    unit_z,
                    unit_theta_shape,
                    unit_x_shape,
                    unit_root,
                    max_seconds=max(remaining, 1e-9),
                    desc=f"rejection unit {unit}",
                    **settings,
                )
            )
            if runs[-1].stop_reason is not None:
                runs[-1].stop_reason += f" in unit {unit} of {len(unit_models)}"
                break
        units, missing = len(unit_models), len(unit_models) - len(runs)
        kept = min(run.theta.shape[0] for run in runs) if not missing else 0

        def stack(column):  # (kept, units): the units' draws side by side, the first `kept` of each
            return np.column_stack([column(run)[:kept] for run in runs]) if kept else np.empty((0, units))

        theta, x = stack(lambda run: run.theta[:, 0]), stack(lambda run: run.x[:, 0])
        stop_reason = runs[-1].stop_reason
        unit_dim = dimension_names(model.unit_name, 1, model.dims)
        proposals = np.array([run.n_proposals for run in runs] + [0] * missing)
        accepted = np.array([run.theta.shape[0] for run in runs] + [0] * missing)
        stats = xr.Dataset(
            {
                "proposals": (["chain", "draw", *unit_dim], stack(_Run.per_draw)[None]),
                "total_proposals": (unit_dim, proposals),
                "acceptance_rate": (unit_dim, accepted / np.maximum(proposals, 1)),
                "seconds": ((), time.perf_counter() - start),
                "log_bound": (unit_dim, np.array([run.log_bound for run in runs] + [np.nan] * missing)),
            }
        )
    if stop_reason is not None:  # the run (per unit: the unit) that the budget stopped
        stopped = run if unit_models is None else runs[-1]
        warnings.warn(
            _stop_message(stop_reason, stopped.theta.shape[0], draws, stopped.n_proposals, float(stats["seconds"])),
            BudgetWarning,
            stacklevel=2,
        )
    check_box(model, x, z, "rejection_sample")
    return assemble(
        model,
        y,
        z,
        posterior_dataset(model, theta, x, theta_shape, x_shape),
        stats,
        attrs={
            "sampler": "rejection",
            "complete": stop_reason is None,
            "stopped_by": stop_reason or "",
            "per_unit": unit_models is not None,
        },
        labels=labels,
    )


def _unit_models(model: PPDModel, x_shape) -> list[PPDModel] | None:
    """One scalar model per unit when the posterior factorizes over units; None for a model without units.

    The posterior factorizes when the prior is a product over units (a per-unit Beta or Gamma,
    no hyperprior), x_k depends on theta_k alone (the per-unit Binomial and Poisson) and the
    mechanism's density is a product over coordinates; otherwise a model with units is refused:
    joint rejection would accept with the product of the per-unit rates.
    """
    advice = "; use ppdinfer.pymc.sample_model (MCMC) for this model"
    if model.blocks is not None:
        raise ValueError(
            f"the hyperprior of {type(model.prior).__name__} couples the units, so the posterior does "
            "not factorize over them and exact rejection would accept with the product of their "
            f"acceptance rates{advice}"
        )
    units = getattr(model.prior, "units", None)
    if units is None:
        return None
    if not (hasattr(model.prior, "unit") and hasattr(model.simulate, "unit")) or x_shape != (units,):
        raise ValueError(
            f"rejection_sample runs exactly per unit only for a per-unit data model "
            f"(generators.Binomial or Poisson, x of shape ({units},)), not {model.simulate!r} with x of "
            f"shape {x_shape}: the posterior may not factorize over the {units} units{advice}"
        )
    if not model.mechanism.separable:
        raise ValueError(
            f"{model.mechanism!r} is not separable over coordinates (iid noise per coordinate), so the "
            f"posterior does not factorize over the {units} units{advice}"
        )
    return [
        PPDModel(
            model.prior.unit(unit),
            model.simulate.unit(unit),
            model.mechanism,
            names=model.unit_name,
            x_name=model.x_name,
        )
        for unit in range(units)
    ]


@dataclass
class _Run:
    """The accepted draws of one rejection run and its counts."""

    theta: np.ndarray
    x: np.ndarray
    index: np.ndarray
    n_proposals: int
    stop_reason: str | None
    seconds: float
    log_bound: float

    def per_draw(self) -> np.ndarray:
        """Proposals spent on each accepted draw."""
        return np.diff(np.concatenate([[-1], self.index]))


def finite_log_bound(model: PPDModel, y, z) -> float:
    """log M of the model's mechanism for a release like y; a ValueError when M is not finite."""
    log_bound = float(model.mechanism.log_bound(z, size=y.size))
    if not math.isfinite(log_bound):
        raise ValueError(
            f"{model.mechanism!r} supplies no finite bound M on its density, so exact rejection "
            "sampling is impossible; use importance_sample or the PyMC layer"
        )
    return log_bound


def _run(
    model,
    y,
    z,
    theta_shape,
    x_shape,
    root,
    *,
    draws,
    blocks_per_chunk,
    max_proposals,
    max_seconds,
    progressbar,
    cores,
    executor,
    desc="rejection",
) -> _Run:
    """Propose and test blocks until ``draws`` acceptances or a budget: the joint rejection sampler."""
    log_bound = finite_log_bound(model, y, z)
    y_flat = y.reshape(-1).astype(np.float64)
    bytes_per_block = BLOCK_SIZE * 8 * (int(np.prod(x_shape)) + int(np.prod(theta_shape)) + 3)
    max_blocks = max(1, _MAX_IN_FLIGHT_BYTES // bytes_per_block)  # blocks in flight at once

    propose_block = _ProposalBlock(model, y_flat, z, root, log_bound)
    accepted_theta, accepted_x, accepted_index = [], [], []
    n_accepted = 0
    n_proposals = 0
    stop_reason = None
    warned_early = False
    start = time.perf_counter()
    bar = tqdm(total=draws, desc=desc, unit="draw", disable=not progressbar, leave=False)
    with BlockPool(cores, executor) as pool:
        plan = _ChunkPlan(
            draws,
            pool.workers,
            blocks_per_chunk,
            max_blocks,
            last_block=math.inf if math.isinf(max_proposals) else -(-max_proposals // BLOCK_SIZE),
        )
        try:
            for chunk, (keep_theta, keep_x, index) in pool.map(propose_block, plan):
                if math.isfinite(max_proposals):
                    within = index < max_proposals
                    keep_theta, keep_x, index = keep_theta[within], keep_x[within], index[within]
                accepted_theta.append(keep_theta)
                accepted_x.append(keep_x)
                accepted_index.append(index)
                n_accepted += index.size
                n_proposals = min(chunk.stop * BLOCK_SIZE, max_proposals)
                elapsed = time.perf_counter() - start
                plan.record(chunk, n_accepted, elapsed)
                bar.set_postfix(accept=f"{n_accepted / n_proposals:.2e}", refresh=False)  # drawn by update,
                bar.update(min(index.size, draws - bar.n))  # at most every 0.1 s
                if n_accepted >= draws:
                    break
                if elapsed >= max_seconds:
                    stop_reason = f"max_seconds={max_seconds:g}"
                    break
                if not warned_early and elapsed > 1.0:
                    warned_early = True
                    _warn_if_over_budget(n_accepted, n_proposals, draws, elapsed, max_seconds, max_proposals)
            else:  # the plan ended: the proposal budget is spent
                stop_reason = f"max_proposals={max_proposals}"
        except KeyboardInterrupt:
            stop_reason = "an interrupt"
        finally:
            bar.close()
    seconds = time.perf_counter() - start

    theta = np.concatenate(accepted_theta)[:draws] if accepted_theta else np.empty((0, int(np.prod(theta_shape))))
    x = np.concatenate(accepted_x)[:draws] if accepted_x else np.empty((0, int(np.prod(x_shape))))
    index = np.concatenate(accepted_index)[:draws] if accepted_index else np.empty(0, dtype=np.int64)
    if theta.shape[0] == draws and stop_reason != "an interrupt":
        stop_reason = None
        n_proposals = int(index[-1]) + 1  # proposals actually needed for the first `draws`
    return _Run(theta, x, index, n_proposals, stop_reason, seconds, log_bound)


def _seconds_budget(max_seconds) -> float:
    """The time budget: 600 s by default, any positive number, or math.inf for none."""
    if max_seconds is None:
        return DEFAULT_MAX_SECONDS
    if max_seconds == math.inf:
        return math.inf
    return positive_finite(max_seconds, "max_seconds")


@dataclass(frozen=True)
class _ProposalBlock:
    """Propose and test one block: the accepted theta, x and their global proposal indices.

    A module-level class (not a closure) so that a process pool can pickle it.
    """

    model: PPDModel
    y: np.ndarray
    z: dict
    root: np.random.SeedSequence
    log_bound: float

    def __call__(self, block: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        rng = block_generator(self.root, block)
        theta = self.model.sample_prior(BLOCK_SIZE, rng, self.z)
        x = self.model.simulate_x(theta, self.z, rng)
        uniforms = rng.random(BLOCK_SIZE)
        keep = select_accepted(self.model.loglik(self.y, x, self.z), uniforms, self.log_bound)
        return theta[keep], x[keep], keep + block * BLOCK_SIZE


class _ChunkPlan:
    """The chunks of blocks to propose, from block 0 on, each sized when it is submitted.

    A fixed ``blocks_per_chunk``, or by default about ``_TARGET_CHUNK_SECONDS`` of one worker's
    work, growing at most twofold over the blocks done, never much more than the draws still
    missing need at the acceptance rate so far (shared by the workers), and with the chunks
    in flight within ``max_blocks``. Ends before ``last_block`` (the proposal budget).
    """

    def __init__(self, draws, workers, blocks_per_chunk, max_blocks, last_block):
        self.draws, self.workers, self.fixed, self.last_block = draws, workers, blocks_per_chunk, last_block
        self.max_chunk = max(1, max_blocks // (LOOKAHEAD_PER_WORKER * workers))
        self.blocks_done = self.n_accepted = self.submitted = 0
        self.elapsed = 0.0

    def record(self, chunk: range, n_accepted: int, elapsed: float) -> None:
        self.blocks_done, self.n_accepted, self.elapsed = chunk.stop, n_accepted, elapsed

    def __iter__(self):
        while self.submitted < self.last_block:
            size = int(min(self.fixed or self._auto_size(), self.last_block - self.submitted))
            yield range(self.submitted, self.submitted + size)
            self.submitted += size

    def _auto_size(self) -> int:
        if self.blocks_done == 0:
            return 1
        seconds_per_block = self.elapsed * self.workers / self.blocks_done
        size = min(_TARGET_CHUNK_SECONDS / max(seconds_per_block, 1e-9), self.blocks_done, self.max_chunk)
        if self.n_accepted > 0:
            still_needed = 1.2 * (self.draws - self.n_accepted) * self.blocks_done / self.n_accepted
            size = min(size, (still_needed - (self.submitted - self.blocks_done)) / self.workers)
        return max(1, int(size))


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def _projection(n_accepted, n_proposals, draws, seconds) -> str:
    rate = n_proposals / seconds
    if n_accepted == 0:
        return (
            f"no proposal of {n_proposals} was accepted (acceptance rate < {1 / n_proposals:.1e}), so "
            f"{draws} draws need more than {_duration(draws * n_proposals / rate)}"
        )
    acceptance = n_accepted / n_proposals
    needed = draws / acceptance
    return (
        f"the acceptance rate is {acceptance:.2e} at {rate:.3g} proposals/s, so {draws} draws need "
        f"about {needed:.3g} proposals, {_duration(needed / rate)}"
    )


def _warn_if_over_budget(n_accepted, n_proposals, draws, seconds, max_seconds, max_proposals):
    rate = n_proposals / seconds
    needed = draws * n_proposals / max(n_accepted, 1)
    if needed / rate > max_seconds or needed > max_proposals:
        warnings.warn(
            f"rejection_sample pilot: {_projection(n_accepted, n_proposals, draws, seconds)}; the budget "
            f"will stop it first (max_seconds={max_seconds:g}, max_proposals={max_proposals})",
            BudgetWarning,
            stacklevel=4,
        )


def _stop_message(reason, n_draws, draws, n_proposals, seconds) -> str:
    return (
        f"rejection_sample stopped by {reason} with {n_draws} of {draws} draws after {n_proposals} "
        f"proposals ({_duration(seconds)}): {_projection(n_draws, max(n_proposals, 1), draws, max(seconds, 1e-9))}"
    )
