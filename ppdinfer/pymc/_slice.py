"""``SeparableSlice``: slice sampling of every coordinate of a continuous x at once, where x's coordinates are
conditionally independent (an elementwise prior, one separable release of x itself)."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor
from pymc.step_methods.compound import BlockedStep, Competence, StepMethodState
from pymc.step_methods.state import dataclass_state

from .families import dependents
from .release import ReleaseRV


@dataclass_state
class SeparableSliceState(StepMethodState):
    width: np.ndarray
    tuning: bool
    n_tuned: int


def separable_release(model: pm.Model, rv):
    """The one observed release that reads ``rv`` when ``rv``'s coordinates are conditionally independent given
    the rest of the model, else None: ``rv`` continuous and untransformed, with an elementwise log prior, read by
    nothing but one :class:`~ppdinfer.pymc.Release` of ``rv`` itself whose mechanism is ``separable``."""
    if not rv.type.dtype.startswith("float") or model.rvs_to_transforms.get(rv) is not None:
        return None
    terms = dependents(model, rv)
    if len(terms) != 1 or terms[0] not in model.observed_RVs:
        return None
    (term,) = terms
    op = term.owner.op
    if not isinstance(op, ReleaseRV) or term.owner.inputs[2] is not rv or not op.mechanism.separable:
        return None
    if model.logp(vars=[rv], sum=False, jacobian=False)[0].ndim != rv.ndim:
        return None  # a multivariate prior: its coordinates are not independent
    return term


class SeparableSlice(BlockedStep):
    r"""Univariate slice sampling (Neal 2003, stepping out and shrinkage) of every coordinate of x at once.

    Where x_k given the rest of the model has density prop. to p(x_k | parents) pi_k(y_k - x_k) (an elementwise
    prior and a separable release, :func:`separable_release`), the coordinates are conditionally independent,
    so their univariate slice updates run side by side: each step costs a few vectorized evaluations of the
    prior's elementwise log density and one batched ``mechanism.logpdf``, where PyMC's ``Slice`` evaluates the
    whole model's log density a few times per coordinate. Each coordinate has its own width, the mean of its
    final intervals during tuning.
    """

    name = "separable_slice"
    _state_class = SeparableSliceState
    stats_dtypes_shapes = {"slice_evaluations": (np.int64, [])}

    def __init__(self, vars, *, width=1.0, max_steps: int = 100, model=None, rng=None, initial_point=None,
                 compile_kwargs=None, blocked=True):  # fmt: skip
        model = pm.modelcontext(model)
        if len(vars) != 1:
            raise ValueError(f"{type(self).__name__} updates one variable at a time")
        value = model.rvs_to_values.get(vars[0], vars[0])
        rv = model.values_to_rvs[value]
        release = separable_release(model, rv)
        if release is None:
            raise ValueError(
                f"{rv.name}'s coordinates are not conditionally independent (an elementwise prior and one "
                "separable release of it): use pm.Slice"
            )
        if not isinstance(max_steps, int) or max_steps < 1:
            raise ValueError(f"max_steps must be a positive integer, got {max_steps!r}")
        self.vars = [value]
        self.max_steps = max_steps
        self.mechanism, self.z = release.owner.op.mechanism, release.owner.op.z
        self._y = pytensor.function([], model.rvs_to_values[release])
        prior = model.logp(vars=[rv], sum=False, jacobian=False)[0]
        self._prior = model.compile_fn(
            prior, inputs=model.value_vars, on_unused_input="ignore", **(compile_kwargs or {})
        )
        self._initial_width = float(width)
        self.rng = np.random.default_rng(rng)
        self.setup_chain(self.rng, tune=0, draws=0)

    def setup_chain(self, rng, tune: int, draws: int) -> None:
        super().setup_chain(rng, tune, draws)
        self.width = None
        self.tuning = tune > 0
        self.n_tuned = 0

    def stop_tuning(self):
        self.tuning = False

    def step(self, point):
        name = self.vars[0].name
        x0 = np.array(point[name], dtype=float)
        shape = x0.shape
        y = np.asarray(self._y(), dtype=float).reshape(-1)
        if y.size != x0.size:
            raise ValueError(f"{name} has {x0.size} values but its release y has {y.size}")
        trial = dict(point)
        evaluations = 0

        def log_density(flat):
            nonlocal evaluations
            evaluations += 1
            trial[name] = flat.reshape(shape)
            prior = np.broadcast_to(np.asarray(self._prior(trial), dtype=float), shape).reshape(-1)
            value = prior + np.asarray(self.mechanism.logpdf(0.0, flat - y, self.z), dtype=float)
            return np.where(np.isnan(value), -np.inf, value)

        rng = self.rng
        x = x0.reshape(-1)
        if self.width is None:
            self.width = np.full(x.size, self._initial_width)
        width = self.width
        level = log_density(x) - rng.standard_exponential(x.size)
        left = x - rng.uniform(size=x.size) * width
        right = left + width
        steps_left = rng.integers(self.max_steps, size=x.size)
        steps_right = self.max_steps - 1 - steps_left
        for bound, budget, direction in ((left, steps_left, -1.0), (right, steps_right, 1.0)):
            out = budget > 0
            while out.any():
                out &= log_density(bound) >= level
                bound[out] += direction * width[out]
                budget[out] -= 1
                out &= budget > 0
        new = x.copy()
        pending = np.ones(x.size, dtype=bool)
        while pending.any():
            new[pending] = rng.uniform(left[pending], right[pending])
            pending &= ~(log_density(new) >= level)
            below = pending & (new < x)
            left[below] = new[below]
            above = pending & (new > x)
            right[above] = new[above]  # x itself is always in the slice: the shrinking ends
        if self.tuning:
            self.width = width * (self.n_tuned / (self.n_tuned + 1)) + (right - left) / (self.n_tuned + 1)
            self.n_tuned += 1
        point = dict(point)
        point[name] = new.reshape(shape)
        return point, [{"slice_evaluations": evaluations}]

    @staticmethod
    def competence(var, has_grad=None):
        return Competence.INCOMPATIBLE  # assigned by ppdinfer.pymc.sample only
