"""``ppdinfer.pymc.sample``: pm.sample with the privacy-aware steps assigned automatically."""

from __future__ import annotations

import logging
import sys
import warnings
from contextvars import ContextVar

import pymc as pm
import xarray as xr
from pymc.step_methods import STEP_METHODS
from pymc.step_methods.compound import BlockedStep, Competence
from pytensor.tensor.random.basic import DirichletRV

from ._arguments import _check_sample_arguments
from ._backend_warnings import quiet_blas_warning
from ._slice import SeparableSlice, separable_release
from .augmentation import _RELEASES, AugmentationWarning, PrivacyAugmentation, no_latent_reason, privacy_latents
from .families import FAMILIES, ConjugateStep, dependents, latent_family, multinomial_child
from .marginal import record_method, sum_out_if_chosen
from .release import ReleaseRV

#: True while :func:`sample` runs pm.sample (its steps are ppdinfer's; nothing to warn about)
_IN_SAMPLE: ContextVar[bool] = ContextVar("ppdinfer_pymc_sample", default=False)
#: PyMC's logger: the steps :func:`sample` assigns are reported beside PyMC's own "NUTS: [...]" lines
_log = logging.getLogger("pymc")


def _assigning_model(depth: int = 12):
    """The model whose steps PyMC is assigning: the model context, else ``assign_step_methods``'s own argument
    (``pm.sample(model=model)`` outside a ``with model:`` block enters no context)."""
    try:
        return pm.modelcontext(None)
    except TypeError:
        pass
    frame = sys._getframe(2)
    for _ in range(depth):
        if frame is None:
            return None
        if frame.f_code.co_name == "assign_step_methods" and isinstance(frame.f_locals.get("model"), pm.Model):
            return frame.f_locals["model"]
        frame = frame.f_back
    return None


class _PlainSampleCheck(BlockedStep):
    """Never chosen: PyMC asks every step method in ``STEP_METHODS`` how competent it is for each variable it
    assigns, so this one (appended there, as PyMC's step-method registry invites) sees every integer latent that
    plain ``pm.sample`` is about to give its own Metropolis, and warns where a ppdinfer release reads it."""

    @staticmethod
    def competence(var, has_grad=None):
        if not _IN_SAMPLE.get() and var.type.dtype.startswith("float"):
            _warn_plain_nonsmooth(var)
        if not _IN_SAMPLE.get() and not var.type.dtype.startswith("float"):
            model = _assigning_model()
            if model is not None and var in model.free_RVs:
                releases = [
                    term.name
                    for term in dependents(model, var)
                    if term in model.observed_RVs and isinstance(term.owner.op, _RELEASES)
                ]
                if releases:
                    warnings.warn(
                        f"{var.name} is an integer latent observed through the ppdinfer release "
                        f"{', '.join(releases)}, but pm.sample gives it PyMC's own step (Metropolis), which mixes "
                        "slowly (R-hat 1.02 where ppdinfer's step gives 1.00): sample with "
                        "ppdinfer.pymc.sample(...) (pm.sample's arguments), which gives it the data-augmentation "
                        "step",
                        AugmentationWarning,
                        stacklevel=2,
                    )
        return Competence.INCOMPATIBLE


def _warn_plain_nonsmooth(var) -> None:
    """Warn that plain ``pm.sample`` gives NUTS to a continuous ``var`` that feeds a release without a useful gradient."""
    model = _assigning_model(depth=13)
    if model is None or var not in model.free_RVs:
        return
    releases = _nonsmooth_releases(model, var)
    if releases:
        warnings.warn(
            f"{var.name} is continuous and observed through {', '.join(releases)}, whose log density has no useful "
            "gradient (the mechanism declares smooth = False), but pm.sample gives it NUTS, which then steps blind "
            "(tree depth ~10, small steps): sample with ppdinfer.pymc.sample(...) (pm.sample's arguments), which "
            "gives it a gradient-free slice step",
            AugmentationWarning,
            stacklevel=3,
        )


def _nonsmooth_releases(model: pm.Model, rv) -> list[str]:
    """Names (with mechanisms) of the observed releases that read ``rv`` directly and declare ``smooth = False``."""
    if not any(
        isinstance(term.owner.op, ReleaseRV) and not getattr(term.owner.op.mechanism, "smooth", True)
        for term in model.observed_RVs
    ):
        return []  # no such release: no graph to walk (plain pm.sample asks this of every continuous variable)
    return [
        f"{term.name} ({term.owner.op.mechanism!r})"
        for term in dependents(model, rv)
        if term in model.observed_RVs
        and isinstance(term.owner.op, ReleaseRV)
        and not getattr(term.owner.op.mechanism, "smooth", True)
    ]


def nonsmooth_latents(model: pm.Model) -> list:
    """Free continuous variables that feed an observed :class:`~ppdinfer.pymc.Release` whose mechanism has no
    useful gradient (``mechanism.smooth`` is False: Tulap, CanonicalNoise, a post-processed release).

    NUTS would see the central-difference gradient of a piecewise-constant density (zero almost everywhere) and
    step blind; :func:`sample` gives these variables PyMC's slice sampler instead (a univariate slice per
    coordinate: exact for any release, and cheap where the release is separable).

    Examples
    --------
    >>> import pymc as pm
    >>> from ppdinfer.mechanisms import Laplace, Tulap
    >>> from ppdinfer.pymc import Release
    >>> from ppdinfer.pymc.sampling import nonsmooth_latents
    >>> with pm.Model() as model:
    ...     mu = pm.Normal("mu", 0.0, 10.0)
    ...     x = pm.Normal("x", mu, 1.0, shape=2)
    ...     w = pm.Normal("w", 0.0, 1.0)
    ...     y = Release("y", Tulap(1.0), x, observed=[0.3, 1.2])
    ...     v = Release("v", Laplace(1.0), w, observed=0.5)
    >>> [rv.name for rv in nonsmooth_latents(model)]    # mu reaches y only through x; Laplace has a gradient
    ['x']
    """
    return [rv for rv in model.free_RVs if rv.type.dtype.startswith("float") and _nonsmooth_releases(model, rv)]


def gradient_free_steps(model: pm.Model, taken=()) -> list:
    """A gradient-free step on each of :func:`nonsmooth_latents` not in ``taken`` (value variables another step
    already updates), each reported on PyMC's logger with the release that called for it: ``SeparableSlice``
    (every coordinate's slice update at once) where x's coordinates are conditionally independent (an
    elementwise prior, one separable release of x itself), else PyMC's ``Slice`` (one coordinate at a time,
    the whole model's log density each time).

    Examples
    --------
    >>> import pymc as pm
    >>> from ppdinfer.mechanisms import Tulap
    >>> from ppdinfer.pymc import Release
    >>> from ppdinfer.pymc.sampling import gradient_free_steps
    >>> with pm.Model() as model:
    ...     x = pm.Normal("x", 0.0, 3.0, shape=2)
    ...     y = Release("y", Tulap(1.0), x, observed=[0.3, 1.2])
    ...     w = pm.Normal("w", 0.0, 3.0)
    ...     v = Release("v", Tulap(1.0), w + 1.0, observed=0.4)
    >>> [(type(step).__name__, [var.name for var in step.vars]) for step in gradient_free_steps(model)]
    [('SeparableSlice', ['x']), ('Slice', ['w'])]
    """
    taken = set(taken)
    steps = []
    with model:
        for rv in nonsmooth_latents(model):
            value = model.rvs_to_values[rv]
            if value in taken:
                continue
            step = SeparableSlice([rv]) if separable_release(model, rv) is not None else pm.Slice([rv])
            steps.append(step)
            _log.info(
                f"{type(step).__name__} (gradient-free): [{rv.name}], observed through "
                f"{', '.join(_nonsmooth_releases(model, rv))}, whose log density has no useful gradient"
            )
    return steps


if _PlainSampleCheck not in STEP_METHODS:
    STEP_METHODS.append(_PlainSampleCheck)


def conjugate_dirichlets(model: pm.Model) -> list:
    """Free Dirichlet variables that are the probabilities of exactly one free Multinomial."""
    return [
        rv for rv in model.free_RVs if isinstance(rv.owner.op, DirichletRV) and multinomial_child(model, rv) is not None
    ]


def assign_steps(model: pm.Model, *, conjugate: bool = True, sweeps: int = 5, moves=None) -> list:
    """The steps :func:`sample` gives ``pm.sample``: :class:`~ppdinfer.pymc.PrivacyAugmentation` on every
    latent of :func:`privacy_latents` (of its first family in :data:`ppdinfer.pymc.families.FAMILIES`, the
    collapsed ones only with ``conjugate``), then, family by family in the table's order, the conjugate
    step of every collapsed latent's integrated-out variable.

    Examples
    --------
    >>> import pymc as pm
    >>> from ppdinfer.pymc import DiscreteLaplace
    >>> from ppdinfer.pymc.sampling import assign_steps
    >>> with pm.Model() as model:
    ...     p = pm.Beta("p", 2.0, 3.0)
    ...     x = pm.Binomial("x", n=20, p=p)
    ...     y = DiscreteLaplace("y", mu=x, epsilon=1.0, observed=8)
    >>> [(type(step).__name__, getattr(step, "family", None)) for step in assign_steps(model)][0][1].name
    'beta_binomial'
    >>> [type(step).__name__ for step in assign_steps(model)]
    ['PrivacyAugmentation', 'ConjugateBeta']
    """
    with model:
        found = [latent_family(model, rv, collapse=conjugate) for rv in privacy_latents(model)]
        steps = [
            PrivacyAugmentation([match.x], sweeps=sweeps, collapse=match.family.collapsed, moves=moves)
            for match in found
        ]
        for family in FAMILIES:
            steps += [family.step([match.conjugate]) for match in found if family.collapsed and match.family is family]
    return steps


def sample(
    model: pm.Model | None = None,
    *,
    conjugate: bool = True,
    sweeps: int = 5,
    moves=None,
    method: str = "auto",
    tol: float = 1e-12,
    marginal_step: str = "auto",
    **kwargs,
):
    """``pm.sample`` with the privacy-aware steps assigned; NUTS (PyMC's default) for the rest.

    ``method`` picks how the integer latents are handled: ``"augment"`` (the data-augmentation steps below),
    ``"marginalize"`` (each latent summed out over a window that omits at most ``tol`` of the posterior mass it
    keeps, checked at the start point and on every draw, :func:`ppdinfer.pymc.marginal.marginalize`, then NUTS, any
    ``nuts_sampler``, on the continuous model and x drawn exactly per draw), or ``"auto"`` (the default: summing
    out where every latent can be, its noise scale and support are constants of the graph and the predicted cost
    per draw is lower, :func:`ppdinfer.pymc.marginal.choose_method`; augmenting where the windows still fall short
    on the draws after one rerun with wider ones). The posterior's attrs ``ppdinfer_method`` and
    ``ppdinfer_method_reason`` say which ran and why: ``"none"`` where neither did (no integer latent is observed
    through a release, or its prior family is one ppdinfer neither augments nor sums out). Where x is summed out,
    ``marginal_step`` picks the sampler of what is left (:func:`ppdinfer.pymc.marginal.sample_marginal`): by
    default an independence Metropolis sampler where at most a few unconstrained dimensions remain and no NUTS
    setting is given, NUTS otherwise; ``ppdinfer_step`` and ``ppdinfer_step_reason`` say which ran and why.

    Every integer latent x that feeds an observed release (``privacy_latents``) gets
    :class:`PrivacyAugmentation`: sum-preserving moves where a multinomial total binds it, the
    compiled kernel where the release is additive noise on x itself, the model's log density of
    x's children otherwise. An integer latent it cannot handle is named in an
    :class:`AugmentationWarning`. Each latent gets the first family of
    :data:`ppdinfer.pymc.families.FAMILIES` it matches, and each collapsed family's conjugate step
    follows, in the table's order. Every continuous variable that feeds a release whose mechanism
    has no useful gradient (``mechanism.smooth`` False: Tulap, CanonicalNoise, a post-processed
    release; ``ppdinfer.pymc.sampling.nonsmooth_latents``) gets a slice sampler instead of NUTS:
    ``SeparableSlice`` (all coordinates at once) where its coordinates are conditionally independent
    (an elementwise prior, one separable release of x itself), else PyMC's ``Slice``; PyMC's logger
    says which ("SeparableSlice (gradient-free): [x], observed through ...", beside PyMC's own
    "SeparableSlice: [x]" / "NUTS: [mu]"). With ``conjugate=True`` a Dirichlet that feeds only a
    multinomial latent x, a Gamma rate per coordinate of a Poisson latent x ~ Poisson(rate *
    exposure), or a Beta probability per coordinate of a binomial latent x, is integrated out of x's
    update (``collapse=True``) and then drawn exactly by :class:`~ppdinfer.pymc.ConjugateDirichlet`,
    :class:`~ppdinfer.pymc.ConjugateGamma` or :class:`~ppdinfer.pymc.ConjugateBeta`, so x and its
    rates move together given the hyperparameters. ``sweeps`` and ``moves`` go to each :class:`PrivacyAugmentation` (by default the
    prior and release moves, their frequencies adapted during tuning), ``kwargs`` to ``pm.sample``: with
    ``cores`` above 1 (PyMC's default where the machine has several) the chains run in separate processes
    at the same time and give the same draws as one after the other. That pays only where cores are idle and
    a fit outlasts starting the processes: on a 2-core machine that another job kept busy (load 2-3), 2 chains
    of 1,000 tuning + 1,000 draws of three Poisson counts under discrete Laplace noise took 0.3 s with
    ``cores=1`` and 0.9 s with ``cores=2``, and 2 chains of 1,000 + 3,000 of a Student-t model of 20,000
    observations (``pm.sample``) 6.6 s against 8.8 s: ``cores=1`` was the faster there.

    References
    ----------
    .. [1] M. A. Tanner and W. H. Wong, "The calculation of posterior distributions by data augmentation,"
        1987.

    Examples
    --------
    >>> import numpy as np
    >>> import pymc as pm
    >>> import ppdinfer.pymc
    >>> with pm.Model():
    ...     share = pm.Dirichlet("share", a=np.ones(3))
    ...     cases = pm.Multinomial("cases", n=30, p=share, initval=np.array([10, 10, 10]))
    ...     y = ppdinfer.pymc.DiscreteLaplace("y", mu=cases, epsilon=1.0, observed=[12, 9, 8])
    ...     idata = ppdinfer.pymc.sample(draws=100, tune=100, chains=1, random_seed=1, progressbar=False,
    ...                                  compute_convergence_checks=False)
    >>> draws = idata["posterior"]["cases"]
    >>> draws.shape, bool((draws.sum(axis=-1) == 30).all())   # every state keeps the public total
    ((1, 100, 3), True)
    """
    _check_sample_arguments(conjugate, kwargs)
    model = pm.modelcontext(model)
    with quiet_blas_warning():
        fitted, reason = sum_out_if_chosen(model, method, tol, conjugate, sweeps, kwargs, marginal_step)
    if fitted is not None:
        return record_guarantees(model, fitted)
    with model:
        steps = assign_steps(model, conjugate=conjugate, sweeps=sweeps, moves=moves)
        user_steps = kwargs.pop("step", None) or []
        steps += gradient_free_steps(model, taken=_step_values(steps, user_steps))
        token = _IN_SAMPLE.set(True)  # ppdinfer's steps: no warning that pm.sample gives x PyMC's own
        try:
            with warnings.catch_warnings(), quiet_blas_warning():
                # a release's log density may be a mechanism's Python logpdf by design: PyTensor's numba
                # backend says it calls it in object mode, which is expected here
                warnings.filterwarnings("ignore", message="Numba will use object mode to run MechanismLogLikelihood")
                idata = pm.sample(
                    step=steps + list(user_steps if isinstance(user_steps, list) else [user_steps]), **kwargs
                )
        finally:
            _IN_SAMPLE.reset(token)
    used = "augment"
    if not any(isinstance(step, PrivacyAugmentation) for step in steps):  # nothing augmented, nothing summed out
        used, reason = "none", f"{no_latent_reason(model)}: nothing to augment or sum out"
    return record_guarantees(model, record_steps(record_method(idata, used, reason), model, steps))


def record_steps(idata, model: pm.Model, steps):
    """``idata`` with what the data augmentation ran in its posterior's attrs: ``ppdinfer_augmentation`` (each
    latent and what its moves evaluate: the compiled kernel, or the model's log density and why) and
    ``ppdinfer_conjugate`` (each variable drawn exactly by a conjugate step, and the step).

    Examples
    --------
    >>> import pymc as pm
    >>> import xarray as xr
    >>> from ppdinfer.pymc import DiscreteLaplace
    >>> from ppdinfer.pymc.sampling import assign_steps, record_steps
    >>> with pm.Model() as model:
    ...     e = pm.HalfNormal("e", 2.0)
    ...     x = pm.Poisson("x", 9.0, shape=2)
    ...     y = DiscreteLaplace("y", mu=x, epsilon=e, observed=[8, 11])
    >>> tree = record_steps(xr.DataTree(children={"posterior": xr.DataTree()}), model, assign_steps(model))
    >>> tree["posterior"].attrs["ppdinfer_augmentation"].startswith("x: the model's log density (y's epsilon")
    True
    """
    if not (isinstance(idata, xr.DataTree) and "posterior" in idata.children):
        return idata
    names = {value: rv.name for rv, value in model.rvs_to_values.items()}
    idata["posterior"].attrs.update(
        {
            "ppdinfer_augmentation": "; ".join(
                f"{names[step.vars[0]]}: {step.kernel}" for step in steps if isinstance(step, PrivacyAugmentation)
            ),
            "ppdinfer_conjugate": ", ".join(
                f"{names[step.vars[0]]} ({type(step).__name__})" for step in steps if isinstance(step, ConjugateStep)
            ),
        }
    )
    return idata


def _step_values(*step_lists) -> set:
    """The value variables the given steps (lists of steps or single steps, compound or not) update."""
    values = set()
    for steps in step_lists:
        for step in steps if isinstance(steps, list | tuple) else [steps]:
            for method in getattr(step, "methods", [step]):
                values.update(getattr(method, "vars", []))
    return values


def record_guarantees(model: pm.Model, idata):
    """``idata`` with the privacy guarantee of each :class:`Release` of ``model`` in its constant data.

    The attributes of the ``constant_data`` group (made if missing) gain, per release named y,
    ``y_mechanism`` (its repr) and ``y_guarantee``, ``y_guarantee_epsilon``, ... (see
    :meth:`ppdinfer.mechanisms.Guarantee.attrs`), so the guarantee a user asked for travels with
    the posterior and its netCDF file. Anything but a DataTree (``return_inferencedata=False``) is
    returned unchanged.

    Examples
    --------
    >>> import pymc as pm
    >>> import xarray as xr
    >>> from ppdinfer.mechanisms import Gaussian
    >>> from ppdinfer.pymc import Release
    >>> with pm.Model() as model:
    ...     x = pm.Normal("x", 0.0, 10.0)
    ...     y = Release("y", Gaussian.from_epsilon_delta(1.0, 1e-6), x, observed=2.0)
    >>> tree = record_guarantees(model, xr.DataTree())
    >>> tree["constant_data"].attrs["y_guarantee"], tree["constant_data"].attrs["y_guarantee_delta"]
    ('approximate', 1e-06)
    """
    if not isinstance(idata, xr.DataTree):
        return idata
    attrs = {}
    for rv in model.observed_RVs:
        if isinstance(rv.owner.op, ReleaseRV):
            mechanism = rv.owner.op.mechanism
            attrs[f"{rv.name}_mechanism"] = repr(mechanism)
            attrs.update({f"{rv.name}_{key}": value for key, value in mechanism.guarantee().attrs().items()})
    if attrs:
        group = idata["constant_data"].to_dataset() if "constant_data" in idata.children else xr.Dataset()
        idata["constant_data"] = xr.DataTree(group.assign_attrs({**group.attrs, **attrs}))
    return idata
