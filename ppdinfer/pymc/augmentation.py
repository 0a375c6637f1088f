"""A PyMC step for integer latent data observed through privacy noise.

``PrivacyAugmentation([x])`` updates a latent x that has a Multinomial, Binomial, Poisson or
DiscreteUniform prior, or an elementwise Truncated or integer CustomDist one (a family of
:data:`ppdinfer.pymc.families.FAMILIES`), and is observed through a release y.
It needs no gradient of the mechanism: it proposes from x's conditional prior given theta
(Ju, Awan, Gong & Rao 2022) and accepts with the likelihood ratio, alternating with a local
symmetric move. For a multinomial x the moves transfer counts between two cells, so the public
total holds at every state. theta is left to other steps (NUTS by default, or a conjugate step).
When theta ~ Dirichlet(alpha) with constant alpha feeds only the multinomial x, ``collapse=True``
integrates theta out of the x update (the moves target p(x | y, z) under the
Dirichlet-multinomial prior), and ConjugateDirichlet then draws theta | x exactly: a blocked
sampler that mixes even where y says little about x. A Gamma rate of a Poisson x and a Beta
probability of a binomial x collapse in the same way
(:class:`~ppdinfer.pymc.ConjugateGamma`, :class:`~ppdinfer.pymc.ConjugateBeta`).
"""

from __future__ import annotations

import warnings
from dataclasses import field

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from pymc.step_methods.compound import BlockedStep, Competence, StepMethodState
from pymc.step_methods.state import dataclass_state
from pytensor.tensor.random.basic import LaplaceRV, NormalRV

from ..kernels.augmentation import (
    LOCAL,
    PRIOR,
    RELEASE,
    accept,
    augmentation_sweeps,
    child_sweeps,
    make_move,
    pair_family,
    pair_local_move,
    pair_order,
    pair_prior_move,
    pair_release_move,
    seed_moves,
    site_local_move,
    site_prior_move,
    site_release_move,
)
from ._constants import NotConstantError, constant_shape, graph_constant
from .children import ChildTerms, affine_children
from .distributions import DiscreteGaussianRV, DiscreteLaplaceRV, LatticeL2RV
from .families import (  # noqa: F401  (the conjugate steps and graph helpers, where they were)
    FAMILIES,
    LATENT_OPS,
    ConjugateBeta,
    ConjugateDirichlet,
    ConjugateGamma,
    dependents,
    gamma_poisson_rate,
    latent_family,
    multinomial_child,
)
from .release import ReleaseRV
from .tabulated import WindowTable, tabulated_prior


@dataclass_state
class PrivacyAugmentationState(StepMethodState):
    sweeps: int = field(metadata={"frozen": True})
    frequency: np.ndarray
    tuning: bool
    tuning_counts: np.ndarray


def _common_constant(variable, what: str) -> float:
    """A constant of the graph (``graph_constant``: a ``NotConstantError`` where it depends on a model variable)
    that must take one value across coordinates."""
    values = np.unique(graph_constant(variable, what))
    if values.size != 1:
        raise ValueError(f"{what} must be the same for every coordinate, got {values}")
    return float(values[0])


_NOISE_OPS = (DiscreteLaplaceRV, DiscreteGaussianRV, LatticeL2RV)
#: PyMC's own continuous noise written as the release: its scale parameter's name and the Release to write
_PLAIN_NOISE = {
    NormalRV: ("sigma", "pm.Normal", "ppdinfer.mechanisms.Gaussian(sigma)"),
    LaplaceRV: ("b", "pm.Laplace", "ppdinfer.mechanisms.Laplace(1 / b)"),
}


class AugmentationWarning(UserWarning):
    """An integer latent observed through a release gets no data-augmentation step (PyMC's own step instead),
    or a slower form of it than the release could have.

    Examples
    --------
    >>> import warnings
    >>> import pymc as pm
    >>> from ppdinfer.mechanisms import Laplace
    >>> from ppdinfer.pymc import AugmentationWarning, Release
    >>> from ppdinfer.pymc.augmentation import privacy_latents
    >>> with pm.Model() as model:
    ...     x = pm.NegativeBinomial("x", mu=3.0, alpha=2.0)
    ...     y = Release("y", Laplace(1.0), x, observed=2.5)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     privacy_latents(model)
    []
    >>> caught[0].category is AugmentationWarning
    True
    """


#: The observed releases a latent may feed.
_RELEASES = (ReleaseRV, DiscreteLaplaceRV, DiscreteGaussianRV, LatticeL2RV)


def observed_integer_latents(model: pm.Model) -> list:
    """``(rv, its observed children)`` for each free integer variable that feeds an observed release, whatever its
    prior (:func:`privacy_latents` keeps those of a family that ppdinfer has a step for).

    Examples
    --------
    >>> import pymc as pm
    >>> from ppdinfer.mechanisms import Gaussian
    >>> from ppdinfer.pymc import Release
    >>> from ppdinfer.pymc.augmentation import observed_integer_latents
    >>> with pm.Model() as model:
    ...     x = pm.DiscreteUniform("x", 0, 40)
    ...     y = Release("y", Gaussian(2.0), x, observed=12.1)
    >>> [(rv.name, [term.name for term in observed]) for rv, observed in observed_integer_latents(model)]
    [('x', ['y'])]
    """
    found = []
    for rv in model.free_RVs:
        if rv.type.dtype.startswith("float"):
            continue
        observed = [term for term in dependents(model, rv) if term in model.observed_RVs]
        if observed:
            found.append((rv, observed))
    return found


def no_latent_reason(model: pm.Model) -> str:
    """Why :func:`privacy_latents` finds nothing in ``model``: no integer latent feeds an observed release, or each
    one that does has a prior family that ppdinfer neither augments nor sums out.

    Examples
    --------
    >>> import pymc as pm
    >>> from ppdinfer.mechanisms import Gaussian
    >>> from ppdinfer.pymc import Release
    >>> from ppdinfer.pymc.augmentation import no_latent_reason
    >>> with pm.Model() as model:
    ...     x = pm.Geometric("x", 0.1)
    ...     y = Release("y", Gaussian(2.0), x, observed=12.1)
    >>> no_latent_reason(model)[:65]
    'x has a Geometric prior, which ppdinfer neither augments nor sums'
    """
    unsupported = [rv for rv, _ in observed_integer_latents(model) if _unsupported(model, rv)]
    if not unsupported:
        return "the model has no integer latent observed through a release"
    return "; ".join(_unsupported(model, rv) for rv in unsupported)


def _unsupported(model, rv) -> str | None:
    """Why ppdinfer has no step for the integer latent ``rv`` (None where it has one)."""
    if isinstance(rv.owner.op, LATENT_OPS) and latent_family(model, rv, collapse=False) is not None:
        return None
    if isinstance(rv.owner.op, LATENT_OPS):  # a Truncated or CustomDist prior that is not elementwise
        return f"{tabulated_prior(model, rv)}, so ppdinfer neither augments nor sums out {rv.name}"
    return (
        f"{rv.name} has a {type(rv.owner.op).__name__.removesuffix('RV')} prior, which ppdinfer neither augments nor "
        "sums out (it takes Poisson, Binomial and DiscreteUniform latents, elementwise Truncated and integer "
        "CustomDist ones, and augments Multinomial ones)"
    )


def privacy_latents(model: pm.Model) -> list:
    """Free integer variables that feed an observed release: a :class:`ppdinfer.pymc.Release`, a
    ``DiscreteLaplace`` / ``DiscreteGaussian`` / ``WassersteinNaive``, or any other observed
    distribution (a ``pm.Normal`` written as the release).

    Those with a Multinomial, Binomial, Poisson or DiscreteUniform prior are returned (they get
    :class:`PrivacyAugmentation`); for any other, an :class:`AugmentationWarning` names the variable,
    since PyMC's generic Metropolis then updates it.

    Examples
    --------
    >>> import pymc as pm
    >>> from ppdinfer.mechanisms import Gaussian
    >>> from ppdinfer.pymc import Release
    >>> from ppdinfer.pymc.augmentation import privacy_latents
    >>> with pm.Model() as model:
    ...     rate = pm.Gamma("rate", 2.0, 1.0, shape=3)
    ...     x = pm.Poisson("x", rate * 10.0)
    ...     y = Release("y", Gaussian(2.0), x, observed=[12.1, 30.4, 8.8])
    >>> [rv.name for rv in privacy_latents(model)]
    ['x']
    """
    latents = []
    for rv, observed in observed_integer_latents(model):
        why = _unsupported(model, rv)
        if why is None:
            latents.append(rv)
            continue
        releases = [term.name for term in observed if isinstance(term.owner.op, _RELEASES)] or [
            t.name for t in observed
        ]
        warnings.warn(
            f"{rv.name} is an integer latent observed through {', '.join(releases)}, but {why}: PyMC's generic "
            "Metropolis updates it, which can mix slowly; check its convergence, or give it a Poisson, Binomial, "
            "Multinomial or DiscreteUniform prior, or an elementwise Truncated or integer CustomDist one",
            AugmentationWarning,
            stacklevel=3,
        )
    return latents


def _plain_noise(op, release, x_rv, centre, params):
    """((rate, power, noise sd), None) of a ``pm.Normal`` (power 2, rate 1 / (2 sigma^2)) or ``pm.Laplace`` (power
    1, rate 1 / b) release of x itself with one constant scale; else (None, why not), with an
    :class:`AugmentationWarning` saying why and what to write for the compiled kernel."""
    scale_name, written, mechanism = _PLAIN_NOISE[type(op)]
    reason = None
    if centre is not x_rv:
        reason = f"its mu is not {x_rv.name} itself"
    else:
        try:
            scale = _common_constant(params[0], scale_name)
        except NotConstantError as err:
            reason = f"its {scale_name} depends on the model variable {err.variable}"
        except ValueError:
            reason = f"its {scale_name} varies by coordinate"
    if reason is not None:
        warnings.warn(
            f"{release.name} = {written}(...) releases {x_rv.name}, but {reason}: ppdinfer's compiled "
            f"data-augmentation kernel needs noise centred on {x_rv.name} itself with one constant {scale_name}, so "
            f"{x_rv.name} gets the generic moves on the model's log density (about 10x slower). Where the noise "
            f"is additive on {x_rv.name} with one {scale_name}, write {written}('{release.name}', mu={x_rv.name}, "
            f"{scale_name}=<a constant>, observed=y) or ppdinfer.pymc.Release('{release.name}', {mechanism}, "
            f"{x_rv.name}, observed=y)",
            AugmentationWarning,
            stacklevel=5,
        )
        return None, f"{release.name}: {reason}"
    if isinstance(op, NormalRV):
        return (1 / (2 * scale**2), 2, scale), None
    return (1 / scale, 1, float(np.sqrt(2.0) * scale)), None


#: the least frequency of an adapted move after tuning (so none is ever dropped)
MIN_FREQUENCY = 0.05
#: the moves' names, in the kernel's order (PRIOR, RELEASE, LOCAL)
MOVES = ("prior", "release", "local")


def _separable_release(model, x_rv, children):
    """((y, rate, power, norm, noise sd), None) when x's only child is an observed release of x itself whose log
    density is the compiled kernel's -rate * sum |y - x| ** power (or the norm), else (None, why not).

    The release may be a :class:`~ppdinfer.pymc.Release` of a mechanism with additive noise, a ppdinfer noise
    distribution, or PyMC's own ``pm.Normal`` / ``pm.Laplace`` with mu = x and one constant scale (power 2,
    rate 1 / (2 sigma^2); power 1, rate 1 / b); a plain release that misses the kernel by its centre or its
    scale is named in an :class:`AugmentationWarning`. Its parameters must be constants of the graph
    (``graph_constant``): a kernel reads them once."""
    if len(children) != 1 or children[0] not in model.observed_RVs:
        return None, f"{x_rv.name} feeds {[term.name for term in children]}, not one observed release"
    release = children[0]
    op = release.owner.op
    _, _, centre, *params = release.owner.inputs
    if type(op) in _PLAIN_NOISE:  # the plain PyMC release: pm.Normal or pm.Laplace noise
        found, why = _plain_noise(op, release, x_rv, centre, params)
        return (None, why) if found is None else ((model.rvs_to_values[release], *found[:2], False, found[2]), None)
    if centre is not x_rv:
        return None, f"{release.name} is not centred on {x_rv.name} itself"
    y = model.rvs_to_values[release]
    if isinstance(op, ReleaseRV):
        noise = op.mechanism.additive_noise  # what the mechanism declares: iid additive noise, or None
        if noise is None:
            return None, f"{release.name}'s mechanism declares no additive noise"
        return (y, noise.rate, noise.power, False, op.mechanism.noise_scale()), None
    if not isinstance(op, _NOISE_OPS):
        return None, f"{release.name} is a {type(op).__name__}, not additive noise"
    try:
        if isinstance(op, DiscreteLaplaceRV):
            rate = _common_constant(params[0] / params[1], f"{release.name}'s epsilon / sensitivity")
            a = np.exp(-rate)
            return (y, rate, 1, False, float(np.sqrt(2 * a) / (1 - a))), None
        if isinstance(op, LatticeL2RV):
            rate = _common_constant(params[0] / (2 * params[1]), f"{release.name}'s epsilon / (2 sigma)")
            # ||y - x||_2 ~ Gamma(n, rate): about sqrt(n) / rate per coordinate
            return (y, rate, 2, True, float(np.sqrt(constant_shape(y, f"{release.name}'s shape")[-1]) / rate)), None
        sigma = _common_constant(params[0], f"{release.name}'s sigma")
        return (y, 1 / (2 * sigma**2), 2, False, sigma), None
    except ValueError as err:  # parameters that vary by coordinate or with the model: the generic moves
        return None, str(err)


def _row_index(row):
    """``row`` (a tuple of indices, or Ellipsis for all of x) as a tuple that indexes after a leading axis."""
    return (Ellipsis,) if row is Ellipsis else tuple(row)


def _release_and_children(model, x_rv, children):
    """(the release's kernel parameters, None, the other children) where one of x's several children is a release
    of x itself that the compiled kernel evaluates and every other one is an :class:`~ppdinfer.pymc.children.AffineChild`
    (a Poisson or Normal of mean affine in x, a Binomial of n = x); else (None, why not, None)."""
    for release in children:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", AugmentationWarning)
            separable, _ = _separable_release(model, x_rv, [release])
        if separable is None:
            continue
        others = [term for term in children if term is not release]
        found, why = affine_children(model, x_rv, others)
        if found is None:
            return None, f"{x_rv.name}'s child {why}", None
        return separable, None, found
    return (
        None,
        f"{x_rv.name} feeds {[term.name for term in children]}, none of them a release the kernel evaluates",
        None,
    )


class _SeparableLikelihood:
    """A release the compiled kernel evaluates: log L(x) = -rate * sum |y - x| ** power (or the L2 norm)."""

    def __init__(self, y, rate, power, norm, noise_sd):
        # read y at every chain's start: pm.set_data may change it between runs of one model
        self.y = pytensor.function([], pt.cast(y, "float64"))
        self.rate, self.power, self.norm, self.noise_sd = float(rate), int(power), bool(norm), float(noise_sd)

    def centre(self, shape):
        """The release move's centre: y itself."""
        return self.y()


class _ModelLikelihood:
    """The log density of every term that reads x (its releases, any other child), from the model graph."""

    def __init__(self, model, x_rv, children, compile_kwargs):
        self.name = model.rvs_to_values[x_rv].name
        self._logp = model.compile_fn(
            model.logp(vars=children), inputs=model.value_vars, on_unused_input="ignore", **compile_kwargs
        )
        self._releases = [
            (term.owner.op, term.owner.inputs[2] is x_rv)
            for term in children
            if isinstance(getattr(term.owner, "op", None), ReleaseRV)
        ]
        self.noise_sd = None
        # x's one child a release of x itself: call the mechanism's logpdf directly (half the cost of the graph)
        self._direct = None
        if (
            len(children) == 1
            and self._releases == [(children[0].owner.op, True)]
            and children[0] in model.observed_RVs
        ):
            self._direct = pytensor.function([], model.rvs_to_values[children[0]])

    def at(self, point, shape):
        """log L as a function of the flat values of x, the rest of ``point`` held."""
        if self._direct is not None:
            (op, _), y = self._releases[0], self._direct()

            def direct(flat):
                return float(op.mechanism.logpdf(y, flat.reshape(1, *shape), op.z)[0])

            return direct
        trial = dict(point)

        def loglik(flat):
            trial[self.name] = flat.reshape(shape)
            return float(self._logp(trial))

        return loglik

    def centre(self, shape):
        """The release move's centre: y where x's one child is a numeric release of x itself with x's shape,
        else None (the local move then replaces the release move)."""
        if self._direct is None:
            return None
        y = np.asarray(self._direct())
        return y.astype(float) if y.shape == shape and np.issubdtype(y.dtype, np.number) else None

    def step_scale(self, x) -> float:
        """The noise's size for x's local moves: the mechanism's own where a release reads x itself,
        else infinite (the prior's spread then sets the step)."""
        if self.noise_sd is None:
            scales = [op.mechanism.noise_scale(x, op.z) for op, of_x in self._releases if of_x]
            self.noise_sd = min(scales, default=np.inf)
        return self.noise_sd


def generic_sweeps(code, x, params, scale, centre, frequency, sweeps, loglik, seed) -> np.ndarray:
    """The compiled kernel's sweeps (:func:`ppdinfer.kernels.augmentation.augmentation_sweeps`), the same
    moves and random stream, with the log likelihood from a Python callable ``loglik(x)``.

    Runs in place on the flat int64 x (its family's ``code`` and packed ``params``, one row per coordinate)
    and returns the counts of (accepted, tried) moves, shape (2, 3), columns (prior, release, local).

    Examples
    --------
    >>> import numpy as np
    >>> from ppdinfer.kernels.augmentation import POISSON
    >>> from ppdinfer.pymc.augmentation import generic_sweeps
    >>> x, y = np.array([3, 7]), np.array([4.2, 6.1])
    >>> counts = generic_sweeps(POISSON, x, np.array([[4.0], [6.0]]), np.full(2, 2.0), y,
    ...                         np.ones(3), 5, lambda v: -np.abs(y - v).sum(), 1)
    >>> counts[1].tolist()   # every move tried on both coordinates in each of the 5 sweeps
    [10.0, 10.0, 10.0]
    """
    seed_moves(seed)
    counts = np.zeros((2, 3))
    current = loglik(x)

    def attempt(changes, log_ratio, move):
        nonlocal current
        counts[1, move] += 1
        if not log_ratio > -np.inf:
            return
        proposal = x.copy()
        for index, value in changes:
            proposal[index] = value
        proposed = loglik(proposal)
        if proposed > -np.inf and accept(log_ratio + proposed - current):
            x[:] = proposal
            current = proposed
            counts[0, move] += 1

    for _ in range(sweeps):
        if pair_family(code):
            order = pair_order(x.size)
            for pair in range(x.size // 2):
                i, j = order[2 * pair], order[2 * pair + 1]
                if make_move(frequency, PRIOR):
                    xi, xj, ok = pair_prior_move(code, x, params, i, j)
                    attempt(((i, xi), (j, xj)), 0.0 if ok else -np.inf, PRIOR)
                if make_move(frequency, RELEASE):
                    xi, xj, log_ratio = pair_release_move(code, x, params, centre, scale, i, j)
                    attempt(((i, xi), (j, xj)), log_ratio, RELEASE)
                if make_move(frequency, LOCAL):
                    xi, xj, log_ratio = pair_local_move(code, x, params, scale, i, j)
                    attempt(((i, xi), (j, xj)), log_ratio, LOCAL)
        else:
            for k in range(x.size):
                if make_move(frequency, PRIOR):
                    attempt(((k, site_prior_move(code, params, k)),), 0.0, PRIOR)
                if make_move(frequency, RELEASE):
                    candidate, log_ratio = site_release_move(code, x, params, centre, scale, k)
                    attempt(((k, candidate),), log_ratio, RELEASE)
                if make_move(frequency, LOCAL):
                    candidate, log_ratio = site_local_move(code, x, params, scale, k)
                    attempt(((k, candidate),), log_ratio, LOCAL)
    return counts


class PrivacyAugmentation(BlockedStep):
    r"""Metropolis-within-Gibbs update of an integer latent x observed through a privacy release.

    A prior move proposes x' from x's conditional prior given theta (and the other
    coordinates, or the other cell of a pair for a multinomial x), so that the prior cancels
    from the Metropolis-Hastings ratio and only the likelihood remains
    (Ju, Awan, Gong & Rao 2022):

    .. math::

        \alpha(x \to x') = \min\left(1, \frac{L(x')}{L(x)}\right),

    where L(x) is the density of everything x feeds: its releases (a :class:`ppdinfer.pymc.Release`
    of any mechanism, ``DiscreteLaplace``, ``DiscreteGaussian``, ``WassersteinNaive``, or any other
    observed distribution) and its other children. Where x's one child is a release of x itself, a
    release move proposes from the release's side instead: a discrete-Laplace-shaped law around
    the values the release y points to, the likelihood's own shape on a pair for discrete Laplace
    noise (an independence proposal, accepted with prior ratio times likelihood ratio times the
    proposal ratio); it is accepted almost always where the release pins x and the prior move almost
    never. A local move proposes a symmetric integer step and accepts with the prior ratio times the
    likelihood ratio (it mixes the coordinates the prior pins more tightly than the release does).
    For a multinomial x each move transfers counts between two cells of a row (disjoint random
    pairs, each cell once per sweep), so the public total holds at every state. Where the release
    is of x itself, the frequencies of the three moves adapt during tuning: each runs on a share of
    the pairs (or coordinates) equal to its acceptance rate over the best one's, at least
    ``MIN_FREQUENCY``; they are fixed after tuning. (On Pennsylvania's 67 counties in 2020-06 at eps
    1, the smallest bulk ESS of 2 x 1,000 draws is 394-452 over three seeds with the local move and
    219-381 without; on 3,000 synthetic counties the release move does nearly all the work and the
    adapted frequencies keep the local move's cost small.) Where x's one child is an additive release
    of x itself (discrete or continuous Laplace or Gaussian noise, the naive WEM), the moves run in
    a compiled kernel; so do they where x also has other children that
    :func:`ppdinfer.pymc.children.affine_children` recognizes (an observed Poisson or Normal of mean affine in x,
    a Binomial of n = x: each move adds one term per child); otherwise the same moves (one implementation,
    ``ppdinfer.kernels.augmentation``) call the model's log density of x's children.

    Parameters
    ----------
    vars : list
        One latent variable x with a Multinomial (rows of a table too: each row keeps its total),
        Binomial, Poisson or DiscreteUniform prior, or an elementwise one whose log pmf is tabulated on a window
        of candidates at each step (a ``pm.Truncated``, an integer ``pm.CustomDist``, a prior a ``pm.Potential``
        also reads: :mod:`ppdinfer.pymc.tabulated`); its family, :data:`ppdinfer.pymc.families.FAMILIES`, is
        ``step.family``.
    sweeps : int
        Sweeps over x per step (each sweep moves every coordinate, or every disjoint pair of cells, once
        with each move at its frequency); 5 by default.
    collapse : bool
        Integrate a conjugate prior out of the x update: a Dirichlet on a multinomial x's cells
        (pair this step with a following :class:`~ppdinfer.pymc.ConjugateDirichlet` on the same
        theta), a Gamma rate per coordinate of a Poisson x (pair it with
        :class:`~ppdinfer.pymc.ConjugateGamma`) or a Beta probability per coordinate of a
        binomial x (pair it with :class:`~ppdinfer.pymc.ConjugateBeta`).
    moves : collection of str, optional
        The moves to make, each on every pair or coordinate, without adaptation: any of "prior",
        "release" (needs a release of x itself with x's shape) and "local". None (the default): all three
        with adapted frequencies where the release has x's shape, else the prior and local moves.
        ``("prior", "local")`` is the step before the release move (issue 26), whose sweeps moved J
        random pairs, twice the disjoint pairs of a sweep now.

    See Also
    --------
    ppdinfer.pymc.sample : Assigns this step to every integer latent a release reads.
    ppdinfer.pymc.ConjugateDirichlet : The exact draw of a Dirichlet integrated out of x's update.

    References
    ----------
    .. [1] M. A. Tanner and W. H. Wong, "The calculation of posterior distributions by data augmentation,"
        1987.
    .. [2] J. Seeman, M. Reimherr and A. Slavkovic, "Formal privacy for partially private data,"
        arXiv:2204.01102, 2022 (the privatized counts as latent data).

    Examples
    --------
    >>> import numpy as np
    >>> import pymc as pm
    >>> from ppdinfer.pymc import DiscreteLaplace, PrivacyAugmentation
    >>> with pm.Model():
    ...     share = pm.Dirichlet("share", a=np.ones(3))
    ...     cases = pm.Multinomial("cases", n=30, p=share, initval=np.array([10, 10, 10]))
    ...     y = DiscreteLaplace("y", mu=cases, epsilon=1.0, observed=[12, 9, 8])
    ...     step = PrivacyAugmentation([cases], collapse=True)
    >>> [variable.name for variable in step.vars], step.family.name, step.alpha, step.compiled
    (['cases'], 'dirichlet_multinomial', array([1., 1., 1.]), True)

    :func:`ppdinfer.pymc.sample` assigns the step by itself.
    """

    name = "privacy_augmentation"
    _state_class = PrivacyAugmentationState
    stats_dtypes_shapes = {
        "accept_prior": (np.float64, []),
        "accept_release": (np.float64, []),
        "accept_local": (np.float64, []),
    }

    def __init__(
        self,
        vars,
        *,
        sweeps: int = 5,
        collapse: bool = False,
        moves=None,
        model=None,
        rng=None,
        initial_point=None,
        compile_kwargs=None,
        blocked=True,
    ):
        model = pm.modelcontext(model)
        if len(vars) != 1:
            raise ValueError(f"{type(self).__name__} updates one latent variable at a time")
        value_var = model.rvs_to_values.get(vars[0], vars[0])
        x_rv = model.values_to_rvs[value_var]
        found = latent_family(model, x_rv, collapse=collapse)
        if found is None:
            raise ValueError(
                f"{x_rv.name} must have a Multinomial, Binomial, Poisson or DiscreteUniform prior, or an elementwise "
                f"Truncated or integer CustomDist one, not {type(x_rv.owner.op).__name__} "
                f"({tabulated_prior(model, x_rv)})"
            )
        if collapse and not found.family.collapsed:
            needs = "; or ".join(
                family.requirement
                for family in FAMILIES
                if family.collapsed and isinstance(x_rv.owner.op, family.latent)
            )
            raise ValueError(f"collapse=True needs {x_rv.name}'s prior parameter to be {needs or 'a conjugate prior'}")
        if not isinstance(sweeps, int) or sweeps < 1:
            raise ValueError(f"sweeps must be a positive integer, got {sweeps!r}")
        if moves is not None and (isinstance(moves, str) or not set(moves) or not set(moves) <= set(MOVES)):
            raise ValueError(f"moves must be None or a non-empty collection of {MOVES}, got {moves!r}")
        self.moves = None if moves is None else tuple(move for move in MOVES if move in moves)
        children = dependents(model, x_rv)
        prior = found.constants.get("prior")  # a tabulated prior: the Potentials that read x belong to it
        self._table = None if prior is None else WindowTable(model, prior, compile_kwargs)
        children = [term for term in children if prior is None or term not in prior.potentials]
        # a Potential left among the children: why it is not part of a tabulated prior (it couples x's elements)
        declined = tabulated_prior(model, x_rv) if any(term in model.potentials for term in children) else None
        if not children:
            raise ValueError(f"nothing in the model depends on {x_rv.name}: no release to augment")
        self.vars = [value_var]
        self.sweeps = sweeps
        self.family = found.family
        self.kind = found.family.code  # the kernel's code of x's family
        self._children = None  # x's other children, evaluated by the compiled kernel (``ChildTerms``)
        if len(children) > 1:
            separable, why, others = _release_and_children(model, x_rv, children)
            why = declined or why
            if separable is not None:
                self._children = ChildTerms(model, others, compile_kwargs)
            else:
                warnings.warn(
                    f"{why}: {x_rv.name}'s moves run on the model's log density, not the compiled kernel (slower). The "
                    "kernel takes one release of x itself with additive noise, other children that are observed "
                    "Poisson or Normal of a mean affine in x, or Binomial with n = x, and Potentials elementwise in x",
                    AugmentationWarning,
                    stacklevel=4,
                )
        else:
            separable, why = _separable_release(model, x_rv, children)
        self.compiled = separable is not None
        #: what the moves evaluate, and why: recorded in the posterior's attrs by ``ppdinfer.pymc.sample``
        self.kernel = "the compiled kernel" if self.compiled else f"the model's log density ({why})"
        if self._children is not None:
            self.kernel += f" (with the children {', '.join(self._children.names)})"
        self._likelihood = (
            _SeparableLikelihood(*separable)
            if self.compiled
            else _ModelLikelihood(model, x_rv, children, compile_kwargs or {})
        )
        self._constants = found.constants
        self.alpha = found.constants.get("alpha")  # a collapsed Dirichlet's concentration
        if "exposure" in found.constants:
            self.exposure = found.constants["exposure"]
        graphs = model.replace_rvs_by_values(list(found.parameters))  # read at each step
        self._params = None
        if self._table is None:
            self._params = model.compile_fn(
                graphs, inputs=model.value_vars, on_unused_input="ignore", **(compile_kwargs or {})
            )
        self.rng = np.random.default_rng(rng)
        # the frequencies of the moves: fixed by ``moves``, else known at the first step (from the release)
        self._moves = None if moves is None else np.array([float(move in moves) for move in MOVES])
        self.setup_chain(self.rng, tune=0, draws=0)

    def setup_chain(self, rng, tune: int, draws: int) -> None:
        """Start a chain: every enabled move at frequency 1, adapted during its ``tune`` tuning steps."""
        super().setup_chain(rng, tune, draws)
        self._centre = None  # y, read once per chain (pm.set_data may change it between runs)
        self.frequency = None if self._moves is None else self._moves.copy()
        self.tuning = tune > 0
        self.tuning_counts = np.zeros((2, 3))

    def stop_tuning(self):
        """Fix the moves' frequencies for the rest of the chain."""
        self.tuning = False

    def _adapt(self, counts):
        """Tuning: each move gets the frequency acceptance rate / the best rate (at least ``MIN_FREQUENCY``)."""
        self.tuning_counts += counts
        if self.moves is not None or not self._moves[RELEASE]:
            return
        accepted, tried = self.tuning_counts
        rates = accepted / np.maximum(tried, 1)
        if rates.max() > 0:
            self.frequency = np.maximum(rates / rates.max(), MIN_FREQUENCY)

    def step(self, point):
        name = self.vars[0].name
        x = np.array(point[name], dtype=np.int64, copy=True)
        if self._table is None:
            params, prior_sd = self.family.packed(self._params(point), self._constants, x.shape)
        else:  # a tabulated prior: its window's values below, once the moves' scale is known
            params, prior_sd = None, np.broadcast_to(self._table.prior.prior_sd, x.shape)
        pairs = self.family.pairs
        if pairs:
            n = params[..., 0, 0]  # the rows' totals (column "total", the same on every cell)
        if pairs and (np.any(x.sum(axis=-1) != n) or np.any(x < 0)):
            raise ValueError(
                f"{name} = {x.tolist()} does not satisfy its total {n.tolist()}: "
                "start from a value inside the set the public total allows"
            )
        likelihood = self._likelihood
        if self._centre is None:
            self._centre = (likelihood.centre(x.shape),)
        (centre,) = self._centre
        if self.compiled:
            if x.shape != centre.shape:
                raise ValueError(f"{name} has shape {x.shape} but its release y has shape {centre.shape}")
            noise_sd = likelihood.noise_sd
        else:
            noise_sd = likelihood.step_scale(x)
        if self._moves is None:  # the first step: the release move too where y has x's shape
            self._moves = np.array([1.0, float(centre is not None), 1.0])
        if self.frequency is None:
            self.frequency = self._moves.copy()
        if self._moves[RELEASE] and centre is None:
            raise ValueError(f"the release move needs a release of {name} itself with its shape: use other moves")
        scale = np.maximum(2.0 * np.minimum(prior_sd, noise_sd), 1.0)
        if self._table is not None:
            params = self._table.packed(point, x, self._table.width(scale), self.rng)
        # a multinomial's rows are updated one by one (each keeps its total); other kinds all at once
        rows = list(np.ndindex(x.shape[:-1])) if pairs else [Ellipsis]
        counts = np.zeros((2, 3))
        if self.compiled and self._children is not None:  # free of x: once per step, not per row
            codes, observed, a, b, c = self._children(point)
        for row in rows:
            cells = x[row].reshape(-1)  # a copy of the row, written back below
            params_row = np.ascontiguousarray(params[row], dtype=float).reshape(cells.size, -1)
            scale_row, centre_row = (
                np.ascontiguousarray(values, dtype=float).reshape(-1)
                for values in (scale[row], np.zeros(0) if centre is None else centre[row])
            )
            seed = int(self.rng.integers(2**31))
            if self.compiled:  # y, then the moves' centres: the same row
                common = (self.kind, cells, centre_row, params_row, likelihood.rate, likelihood.power,
                          likelihood.norm, scale_row, centre_row, self.frequency, self.sweeps, seed)  # fmt: skip
            if self.compiled and self._children is not None:
                counts += child_sweeps(
                    *common,
                    codes,
                    *(
                        np.ascontiguousarray(
                            v.reshape(len(codes), *x.shape)[(slice(None), *_row_index(row))].reshape(len(codes), -1)
                        )
                        for v in (observed, a, b, c)
                    ),
                )
            elif self.compiled:
                counts += augmentation_sweeps(*common)
            else:
                loglik = self._row_likelihood(point, x, row)
                if loglik(cells) == -np.inf:
                    raise ValueError(
                        f"{name} = {x.tolist()} has probability zero given the release: start from "
                        "a value the release allows (initvals)"
                    )
                counts += generic_sweeps(
                    self.kind, cells, params_row, scale_row, centre_row, self.frequency, self.sweeps, loglik, seed
                )
            x[row] = cells.reshape(x[row].shape)
        if self.tuning:
            self._adapt(counts)
        new_point = dict(point)
        new_point[name] = x
        with np.errstate(invalid="ignore"):
            rates = counts[0] / counts[1]  # NaN for a move not made
        return new_point, [{f"accept_{move}": float(rates[i]) for i, move in enumerate(MOVES)}]

    def _row_likelihood(self, point, x, row):
        """log L as a function of one row's cells (all of x when ``row`` is Ellipsis)."""
        full = x.copy()
        loglik = self._likelihood.at(point, x.shape)

        def of_row(cells):
            full[row] = cells.reshape(full[row].shape)
            return loglik(full.reshape(-1))

        return of_row

    @staticmethod
    def competence(var):
        return Competence.INCOMPATIBLE  # assigned explicitly, never chosen automatically
