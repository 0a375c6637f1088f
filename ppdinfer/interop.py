r"""Releases made with other DP libraries, analysed with ppdinfer: their noise as ppdinfer mechanisms.

A release made by OpenDP, IBM's diffprivlib or Tumult Analytics adds noise y = x + K of a known
family and scale; ppdinfer needs the same law as a likelihood. Each library names the scale
differently, so each has a converter here, and they all end in :func:`from_noise`. The
conventions, read from each library's documentation and checked against its releases in the tests:

.. math::

    \text{Laplace, integers: } P(K = k) \propto e^{-|k| / s}, \qquad
    \text{Gaussian, integers: } P(K = k) \propto e^{-k^2 / (2 s^2)},

and on the reals the Laplace density proportional to :math:`e^{-|e| / s}` and the normal density
of standard deviation s. The scale s is

* OpenDP (``opendp`` 0.16): the measurement's ``scale`` (:func:`from_opendp`); its floats are
  drawn on a lattice of spacing :math:`2^k` that by default is the finest the float type has;
* diffprivlib (0.6): ``sensitivity / epsilon`` for ``Geometric``, ``sensitivity / (epsilon -
  log(1 - delta))`` for ``Laplace``, and the calibrated standard deviation for ``Gaussian``,
  ``GaussianAnalytic`` and ``GaussianDiscrete`` (:func:`from_diffprivlib`);
* Tumult (Core 0.20 / Analytics, as its noise information reports it): ``alpha`` of the geometric
  noise and ``scale`` of the Laplace noise, and the square root of ``sigma_squared`` of the
  (discrete) Gaussian noise (:func:`from_tumult`).

ppdinfer's ``DiscreteLaplace(epsilon, sensitivity)`` and ``Laplace(epsilon, sensitivity)`` have the
rate epsilon / sensitivity; :func:`from_noise` maps s to epsilon = 1, sensitivity = s (rate 1 / s,
exactly in floating point; ppdinfer's exact sampler then uses the scale s itself); the Gaussian
ones take sigma = s. The pair (1, s) describes the noise, not the privacy of the release.

The privacy is the producing library's statement, and every converter attaches it: the
mechanism's ``guarantee()`` is OpenDP's ``measurement.map(d_in)`` (epsilon, rho, or (epsilon,
delta)), diffprivlib's (epsilon, delta), or the Tumult budget passed in, with a note saying so.
Where the statement is an epsilon, a Laplace-family mechanism shows it as its ``epsilon`` and
``sensitivity`` = epsilon * s (the same rate to rounding), so the printed epsilon is never one
the scale made up: an OpenDP query at epsilon 1/2 prints ``DiscreteLaplace(epsilon=0.5,
sensitivity=1.0)``, not ``epsilon=1.0, sensitivity=2.0``.
"""

from __future__ import annotations

import math

import numpy as np

from .mechanisms import (
    AdditiveNoiseMechanism,
    DiscreteGaussian,
    DiscreteLaplace,
    Gaussian,
    Guarantee,
    Laplace,
    Mechanism,
    PostProcessedRelease,
)
from .validation import nonnegative_counts, positive_finite

#: OpenDP constructors of plain additive noise, all taking ``scale``.
_NOISE_CONSTRUCTORS = ("make_laplace", "make_geometric", "make_gaussian", "make_noise")
#: OpenDP privacy measure -> noise family.
_FAMILY_OF_MEASURE = {"MaxDivergence": "laplace", "ZeroConcentratedDivergence": "gaussian"}
#: OpenDP's privacy loss of noise of scale s on a statistic of sensitivity Delta, by family.
_LOSS = {"laplace": lambda delta, s: delta / s, "gaussian": lambda delta, s: delta**2 / (2 * s**2)}
#: OpenDP combinators that change the privacy measure of a measurement without changing its release.
_MEASURE_CHANGES = ("make_zCDP_to_approxDP", "make_fix_delta", "make_approximate")
#: An unsigned release's box of raw releases misses at most this much of the noise law at any x in [0, x_max].
BOX_TOLERANCE = 1e-10
#: The largest box of raw releases for an unsigned release.
MAX_BOX = 1_000_000


def from_noise(distribution: str, scale: float, integer: bool) -> AdditiveNoiseMechanism:
    r"""The ppdinfer mechanism adding noise of the given family and ``scale`` s.

    .. math::

        \text{laplace: } \pi(y \mid x) \propto e^{-|y - x| / s}, \qquad
        \text{gaussian: } \pi(y \mid x) \propto e^{-(y - x)^2 / (2 s^2)},

    per coordinate, on the integers when ``integer`` and on the reals otherwise: ``DiscreteLaplace``
    or ``Laplace`` with epsilon = 1 and sensitivity = s, ``DiscreteGaussian`` or ``Gaussian`` with
    sigma = s.

    Parameters
    ----------
    distribution : {"laplace", "gaussian"}
        The noise family.
    scale : float
        The scale s > 0 (OpenDP's ``scale``; see the module's table for the other libraries).
    integer : bool
        Whether the noise lives on the integers.

    Returns
    -------
    AdditiveNoiseMechanism

    See Also
    --------
    ppdinfer.interop.from_opendp : From an OpenDP measurement.
    ppdinfer.interop.from_diffprivlib : From a diffprivlib mechanism.
    ppdinfer.interop.from_tumult : From Tumult Analytics' noise report.

    Examples
    --------
    >>> from_noise("laplace", 2.0, integer=True)
    DiscreteLaplace(epsilon=1.0, sensitivity=2.0)
    >>> from_noise("gaussian", 1.5, integer=False)
    Gaussian(sigma=1.5)
    """
    scale = positive_finite(scale, "scale")
    if not isinstance(integer, (bool, np.bool_)):
        raise ValueError(f"integer must be True or False (whether the noise lives on the integers), got {integer!r}")
    if distribution == "laplace":
        return (DiscreteLaplace if integer else Laplace)(epsilon=1.0, sensitivity=scale)
    if distribution == "gaussian":
        return (DiscreteGaussian if integer else Gaussian)(scale)
    raise ValueError(f"distribution must be 'laplace' or 'gaussian', got {distribution!r}")


def from_opendp(measurement, x_max: int | None = None, *, d_in=None) -> Mechanism:
    r"""The ppdinfer mechanism equal in law to an OpenDP noise measurement, chain or Context query.

    Accepts

    * the measurements of OpenDP's ``make_laplace``, ``make_geometric`` (without ``bounds``),
      ``make_gaussian`` and ``make_noise`` (also built with their ``then_`` forms) on an
      ``atom_domain`` or a ``vector_domain`` of integers or floats;
    * a chain ``transformation >> measurement`` (``make_chain_mt``: clamp and sum, count, ...)
      of one of them: the release is the transformation's statistic plus the noise, so the
      returned likelihood is the noise's and x in the model is that statistic. The statistic's
      sensitivity Delta is the transformation's stability ``transformation.map(d_in)`` (d_in = 1),
      and the chain's privacy map is checked to be the noise's loss at Delta;
    * the same under OpenDP's changes of privacy measure (``make_zCDP_to_approxDP``,
      ``make_fix_delta``, ``make_approximate``), which do not change the release;
    * an ``opendp.context.Query`` (``context.query().count().laplace()``), resolved to its
      measurement (with the scale the Context found for its share of the budget).

    The noise is :math:`y = x + K`, independent per coordinate (see :func:`from_noise`):

    .. math::

        \text{MaxDivergence} \to \pi(y \mid x) \propto e^{-|y - x| / s}, \qquad
        \text{ZeroConcentratedDivergence} \to \pi(y \mid x) \propto e^{-(y - x)^2 / (2 s^2)}.

    The scale s is the one the noise measurement was built with (OpenDP records the constructor's
    arguments on the measurement) and is checked against its own privacy map:
    ``measurement.map(1)`` must equal 1 / s (Laplace) or 1 / (2 s^2) (Gaussian, zCDP rho).

    On unsigned integers (``u8`` ... ``u64``) OpenDP saturates y at 0: the release is
    :math:`\max(x + K, 0)`, returned as a ``PostProcessedRelease`` of the noise clipped at 0 whose
    box of raw releases runs from -T to ``x_max`` + T, T so wide that the box misses less than
    ``BOX_TOLERANCE`` of the raw law for every x in [0, x_max] (checked with ``box_mass``).

    Parameters
    ----------
    measurement : opendp.mod.Measurement or opendp.context.Query
    x_max : int, optional
        Unsigned measurements only: the largest confidential value x (the statistic) the analysis
        considers; by default the upper bound of the measurement's ``atom_domain`` when it has one.
    d_in : optional
        The input distance of the privacy unit, at which OpenDP's privacy map states the
        guarantee: a Context query's own (``contributions``), else 1 (e.g. pass 2 for a chain on
        data of known size under the symmetric distance, where one record's change is d_in = 2).

    Returns
    -------
    Mechanism
        ``DiscreteLaplace``, ``Laplace``, ``DiscreteGaussian`` or ``Gaussian``; a
        ``PostProcessedRelease`` of one of the discrete ones for unsigned integers. Its
        ``guarantee()`` is what OpenDP states, ``measurement.map(d_in)``: epsilon under
        ``MaxDivergence``, rho under ``ZeroConcentratedDivergence``, (epsilon, delta) under
        ``Approximate(MaxDivergence)``. A Laplace-family mechanism shows that epsilon as its
        ``epsilon``, with ``sensitivity`` = epsilon * s (the statistic's sensitivity in units of
        d_in), so its rate is 1 / s to rounding.

    Raises
    ------
    ValueError
        For a measurement that is not additive Laplace or Gaussian noise (another mechanism, a
        postprocessor, ``make_geometric`` with ``bounds``, a float measurement with an explicit
        granularity ``k``), saying what to call instead; for ``scale`` 0 (no noise, no likelihood);
        for an unsigned measurement without ``x_max`` or on a vector domain.

    See Also
    --------
    ppdinfer.interop.from_noise : The mechanism of a noise family and scale.

    Examples
    --------
    >>> import opendp.prelude as dp
    >>> dp.enable_features("contrib")
    >>> space = dp.atom_domain(T=int), dp.absolute_distance(T=int)
    >>> from_opendp(dp.m.make_laplace(*space, scale=2.0))          # OpenDP states epsilon = 1 / 2 at d_in = 1
    DiscreteLaplace(epsilon=0.5, sensitivity=1.0)
    >>> gaussian = from_opendp(space >> dp.m.then_gaussian(scale=3.0))
    >>> gaussian, round(gaussian.guarantee().rho, 6)                # rho = 1 / (2 * 3^2)
    (DiscreteGaussian(sigma=3.0), 0.055556)
    >>> floats = dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float)
    >>> from_opendp(dp.m.make_laplace(*floats, scale=0.5))
    Laplace(epsilon=2.0, sensitivity=1.0)

    A chain (a count, then Laplace noise) and a Context query:

    >>> records = dp.vector_domain(dp.atom_domain(T=int)), dp.symmetric_distance()
    >>> from_opendp(records >> dp.t.then_count() >> dp.m.then_laplace(scale=4.0))
    DiscreteLaplace(epsilon=0.25, sensitivity=1.0)
    >>> context = dp.Context.compositor(data=[1, 5, 7], privacy_unit=dp.unit_of(contributions=1),
    ...                                 privacy_loss=dp.loss_of(epsilon=1.0), split_evenly_over=2)
    >>> counted = from_opendp(context.query().count().laplace())    # scale 1 / (1 / 2)
    >>> counted, counted.guarantee().note
    (DiscreteLaplace(epsilon=0.5, sensitivity=1.0), 'stated by OpenDP: measurement.map(1) = 0.5 (MaxDivergence)')

    On unsigned integers the release is clipped at 0:

    >>> unsigned = dp.m.make_laplace(dp.atom_domain(T="u32"), dp.absolute_distance(T="u32"), scale=2.0)
    >>> clipped = from_opendp(unsigned, x_max=50)
    >>> type(clipped).__name__, round(float(np.exp(clipped.logpdf(0, [1])[0])), 4)   # P(x + K <= 0 | x = 1)
    ('PostProcessedRelease', 0.3775)
    """
    if type(measurement).__module__ == "opendp.context" and type(measurement).__name__ == "Query":
        d_in = getattr(measurement, "_d_in", None) if d_in is None else d_in  # the Context's privacy unit
        try:
            measurement = measurement.resolve()
        except Exception as err:  # OpenDP raises its own exception types
            raise ValueError(
                f"measurement: the OpenDP Context query does not resolve to a measurement: {str(err).strip()}"
            ) from None
    return _convert_opendp(measurement, x_max, _opendp_guarantee(measurement, d_in))


def _opendp_guarantee(measurement, d_in) -> Guarantee | None:
    """What OpenDP states for ``measurement`` at ``d_in``: ``measurement.map(d_in)`` read by its privacy
    measure; None for an object without a privacy map (the conversion then says what it is)."""
    if not isinstance(getattr(measurement, "__opendp_dict__", None), dict) or not hasattr(measurement, "map"):
        return None
    given = d_in is not None
    if not given:
        try:
            d_in = 1 if _is_integer_carrier(str(measurement.input_distance_type)) else 1.0
        except ValueError:
            return None
    try:
        loss = measurement.map(d_in)
    except Exception as err:  # OpenDP raises its own exception types
        if not given:
            return None
        raise ValueError(f"d_in: OpenDP's privacy map refuses d_in = {d_in!r}: {str(err).strip()}") from None
    measure = str(measurement.output_measure)
    note = f"stated by OpenDP: measurement.map({d_in!r}) = {loss!r} ({measure})"
    if isinstance(loss, tuple) and len(loss) == 2 and measure.startswith("Approximate(MaxDivergence"):
        return Guarantee("approximate", epsilon=float(loss[0]), delta=float(loss[1]), note=note)
    if isinstance(loss, int | float) and measure == "MaxDivergence":
        return Guarantee("pure", epsilon=float(loss), note=note)
    if isinstance(loss, int | float) and measure == "ZeroConcentratedDivergence":
        return Guarantee("zcdp", rho=float(loss), note=note)
    return Guarantee(
        "unstated",
        note=f"OpenDP states {measure} as {type(loss).__name__} at d_in = {d_in!r}: read measurement.map(d_in)",
    )


def _restated(noise: AdditiveNoiseMechanism, family: str, scale: float, stated: Guarantee | None) -> Mechanism:
    """The noise stating OpenDP's guarantee; a Laplace family shows the stated epsilon (sensitivity epsilon * s)."""
    if stated is None:
        return noise
    epsilon = stated.epsilon
    if family == "laplace" and epsilon is not None and 0 < epsilon * scale < math.inf:
        noise = type(noise)(epsilon=epsilon, sensitivity=epsilon * scale)
    return noise.with_guarantee(stated)


def _convert_opendp(measurement, x_max, stated: Guarantee | None = None) -> Mechanism:
    """from_opendp on a Measurement: unwrap chains and changes of measure down to the noise."""
    recipe = getattr(measurement, "__opendp_dict__", None)
    if not isinstance(recipe, dict) or "__function__" not in recipe:
        raise ValueError(
            f"measurement must be an OpenDP Measurement built by one of {list(_NOISE_CONSTRUCTORS)} "
            f"(or a chain or Context query ending in one), got {type(measurement).__name__}"
        )
    constructor, arguments = recipe["__function__"], recipe.get("__kwargs__", {})
    if constructor == "make_chain_mt":
        mechanism = _convert_opendp(arguments["measurement1"], x_max, stated)
        _check_chain(measurement, arguments["transformation0"], arguments["measurement1"])
        return mechanism
    if constructor in _MEASURE_CHANGES:
        return _convert_opendp(arguments["measurement"], x_max, stated)
    if constructor == "make_chain_pm":
        raise ValueError(
            "unsupported OpenDP measurement 'make_chain_pm': its release is post-processed; convert the "
            "measurement before the postprocessor and model the postprocessing with "
            "ppdinfer.mechanisms.PostProcessedRelease(mechanism, postprocess, box)"
        )
    if constructor not in _NOISE_CONSTRUCTORS:
        raise ValueError(
            f"unsupported OpenDP measurement {constructor!r}: only additive Laplace or Gaussian noise "
            f"from {list(_NOISE_CONSTRUCTORS)} (alone, in a chain or a Context query) can be converted; "
            "if the release is a statistic plus such noise, build its likelihood with "
            "ppdinfer.interop.from_noise(family, scale, integer) from the query's parameters"
        )
    family, scale, integer = _noise_of(measurement, constructor, arguments)
    mechanism = _restated(from_noise(family, scale, integer), family, scale, stated)
    carrier = str(measurement.input_domain.carrier_type)
    atom = carrier.removeprefix("Vec<").removesuffix(">")
    if atom[:1] != "u":
        return mechanism
    if atom != carrier:
        raise ValueError(
            f"unsupported OpenDP input type {carrier!r}: OpenDP saturates each coordinate at 0, a clipped "
            "release per coordinate; convert the same noise on an atom_domain (one coordinate) instead"
        )
    largest = 2 ** (int(carrier[1:]) if carrier[1:].isdigit() else 64) - 1  # usize: 64 bits
    return _clipped_at_zero(mechanism, family, scale, _unsigned_x_max(measurement, carrier, x_max), largest)


def _noise_of(measurement, constructor: str, arguments: dict) -> tuple[str, float, bool]:
    """(family, scale, integer) of a plain OpenDP noise measurement, its scale checked against its privacy map."""
    measure = str(measurement.output_measure)
    if measure not in _FAMILY_OF_MEASURE:
        raise ValueError(f"unsupported OpenDP privacy measure {measure!r}: expected one of {list(_FAMILY_OF_MEASURE)}")
    if arguments.get("bounds") is not None:
        raise ValueError(
            f"unsupported OpenDP argument bounds={arguments['bounds']!r} of {constructor}: "
            "bounded geometric releases are not unbounded discrete Laplace noise"
        )
    integer = _is_integer_carrier(str(measurement.input_domain.carrier_type))
    if not integer and arguments.get("k") is not None:
        raise ValueError(
            f"unsupported OpenDP argument k={arguments['k']!r} of {constructor}: noise on the lattice "
            "of spacing 2^k is not continuous; leave k at its default"
        )
    scale = float(arguments["scale"])
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(
            f"scale must be positive and finite, got scale={arguments['scale']!r} in the OpenDP "
            f"{constructor}: a release without noise has no likelihood to convert"
        )
    family = _FAMILY_OF_MEASURE[measure]
    _check_privacy_map(measurement, family, scale, 1 if integer else 1.0, 1.0)
    return family, scale, integer


def _check_chain(chain, transformation, noise) -> None:
    """The chain's privacy map is the noise's loss at the statistic's sensitivity Delta = transformation.map(d_in)."""
    d_in = 1 if _is_integer_carrier(str(chain.input_distance_type)) else 1.0
    sensitivity = float(transformation.map(d_in))
    while getattr(noise, "__opendp_dict__", {}).get("__function__") in _MEASURE_CHANGES:
        noise = noise.__opendp_dict__["__kwargs__"]["measurement"]
    family = _FAMILY_OF_MEASURE.get(str(noise.output_measure))
    if family is not None:
        _check_privacy_map(chain, family, float(noise.__opendp_dict__["__kwargs__"]["scale"]), d_in, sensitivity)


def _unsigned_x_max(measurement, carrier: str, x_max) -> int:
    """x_max for an unsigned measurement: the argument, else the atom domain's upper bound; below the type's maximum."""
    if x_max is None:
        bounds = getattr(measurement.input_domain, "bounds", None)
        if bounds is None:
            raise ValueError(
                f"x_max is needed for an OpenDP measurement on {carrier!r}: OpenDP saturates unsigned "
                "releases at 0, so the release is clipped and its likelihood sums the raw law over a box "
                "of raw releases covering every x; pass x_max, the largest confidential value x"
            )
        x_max = bounds[1]
    return int(nonnegative_counts(x_max, "x_max"))


def _saturate_at_zero(y, z=None):
    """OpenDP's saturating addition on unsigned integers: releases below 0 are published as 0."""
    return np.maximum(y, 0)


def _clipped_at_zero(
    noise: AdditiveNoiseMechanism, family: str, scale: float, x_max: int, largest: int
) -> PostProcessedRelease:
    """max(x + K, 0) as a PostProcessedRelease whose box misses under BOX_TOLERANCE for every x in [0, x_max]."""
    level = math.log(2 / BOX_TOLERANCE)  # each tail of K beyond T holds at most e^-level
    tail = math.ceil(scale * (level if family == "laplace" else math.sqrt(2 * level))) + 1
    if x_max + tail >= largest:
        raise ValueError(
            f"x_max = {x_max} is within the noise's reach ({tail}) of {largest}, where OpenDP also "
            "saturates: model a smaller range of x"
        )
    if x_max + 2 * tail + 1 > MAX_BOX:
        raise ValueError(
            f"x_max = {x_max} with noise scale {scale:g} needs a box of {x_max + 2 * tail + 1} raw "
            f"releases, more than {MAX_BOX}: model a smaller range of x"
        )
    release = PostProcessedRelease(noise, _saturate_at_zero, np.arange(-tail, x_max + tail + 1)[:, None])
    missed = 1 - release.box_mass(np.array([0, x_max]))
    if missed.max() > BOX_TOLERANCE:
        raise ValueError(f"the box of raw releases misses {missed.max():.3g} of the noise law, above {BOX_TOLERANCE}")
    return release


def _is_integer_carrier(carrier: str) -> bool:
    """Whether an OpenDP carrier type such as ``i32``, ``Vec<u64>`` or ``f64`` holds integers."""
    atom = carrier.removeprefix("Vec<").removesuffix(">")
    if atom[:1] in ("i", "u"):
        return True
    if atom[:1] == "f":
        return False
    raise ValueError(f"unsupported OpenDP input type {carrier!r}: expected integers or floats")


def _check_privacy_map(measurement, family: str, scale: float, d_in, sensitivity: float) -> None:
    """Raise unless OpenDP's privacy loss at ``d_in`` is the noise's at ``sensitivity`` (to 1e-9)."""
    loss = float(measurement.map(d_in))
    expected = _LOSS[family](sensitivity, scale)
    if not math.isclose(loss, expected, rel_tol=1e-9):
        raise ValueError(
            f"OpenDP measurement's privacy map gives {loss!r} at d_in = {d_in}, not {expected!r} as a "
            f"{family} scale of {scale!r} at sensitivity {sensitivity!r} implies: unsupported OpenDP "
            "noise convention"
        )


#: diffprivlib mechanism class -> (noise family, integer noise). Subclasses with bounds, folding or
#: truncation are other laws and are refused by name.
_DIFFPRIVLIB_NOISE = {
    "Geometric": ("laplace", True),
    "Laplace": ("laplace", False),
    "Gaussian": ("gaussian", False),
    "GaussianAnalytic": ("gaussian", False),
    "GaussianDiscrete": ("gaussian", True),
}


def from_diffprivlib(mechanism) -> AdditiveNoiseMechanism:
    r"""The ppdinfer mechanism equal in law to a diffprivlib noise mechanism.

    diffprivlib's ``randomise(x)`` returns :math:`y = x + K` with

    .. math::

        \text{Geometric: } P(K = k) \propto e^{-\epsilon |k| / \Delta}, \qquad
        \text{Laplace: } p(e) \propto e^{-(\epsilon - \log(1 - \delta)) |e| / \Delta},

    and normal noise of the calibrated standard deviation :math:`\sigma` for ``Gaussian``
    (:math:`\sigma = \Delta \sqrt{2 \log(1.25 / \delta)} / \epsilon`) and ``GaussianAnalytic``,
    or discrete Gaussian noise :math:`P(K = k) \propto e^{-k^2 / (2 \sigma^2)}` for
    ``GaussianDiscrete``, whose :math:`\sigma` diffprivlib finds numerically and keeps in the
    mechanism (read from there: diffprivlib has no public accessor for it).

    Parameters
    ----------
    mechanism : diffprivlib.mechanisms.DPMechanism
        A ``Geometric``, ``Laplace``, ``Gaussian``, ``GaussianAnalytic`` or ``GaussianDiscrete``.

    Returns
    -------
    AdditiveNoiseMechanism
        ``DiscreteLaplace(epsilon, sensitivity)``, ``Laplace(epsilon - log(1 - delta),
        sensitivity)``, ``Gaussian(sigma)`` or ``DiscreteGaussian(sigma)``, whose ``guarantee()``
        is diffprivlib's (epsilon, delta) at its sensitivity (a ``Laplace`` with delta > 0 shows
        the noise's rate as ``epsilon - log(1 - delta)``; the guarantee keeps epsilon and delta).

    Raises
    ------
    ValueError
        For any other object or diffprivlib mechanism (the bounded, folded and truncated
        variants, the staircase, exponential and binary mechanisms, ...), naming its class, and
        for a mechanism that adds no noise.

    See Also
    --------
    ppdinfer.interop.from_noise : The mechanism of a noise family and scale.

    Examples
    --------
    >>> from diffprivlib.mechanisms import Geometric, Laplace
    >>> from_diffprivlib(Geometric(epsilon=0.5, sensitivity=2))
    DiscreteLaplace(epsilon=0.5, sensitivity=2.0)
    >>> from_diffprivlib(Laplace(epsilon=1.0, sensitivity=0.5))
    Laplace(epsilon=1.0, sensitivity=0.5)
    """
    kind = type(mechanism)
    name = kind.__name__
    if not kind.__module__.startswith("diffprivlib.") or name not in _DIFFPRIVLIB_NOISE:
        raise ValueError(
            f"unsupported diffprivlib mechanism {kind.__module__}.{name}: only plain additive noise "
            f"from {sorted(_DIFFPRIVLIB_NOISE)} can be converted"
        )
    family, integer = _DIFFPRIVLIB_NOISE[name]
    epsilon, sensitivity = float(mechanism.epsilon), float(mechanism.sensitivity)
    delta = float(getattr(mechanism, "delta", 0.0))
    stated = Guarantee(
        "approximate" if delta > 0 else "pure",
        epsilon=epsilon,
        delta=delta if delta > 0 else None,
        sensitivity=sensitivity,
        note=f"stated by diffprivlib: {name}(epsilon={epsilon!r}, delta={delta!r}, sensitivity={sensitivity!r})",
    )
    if family == "laplace":
        rate_epsilon = epsilon - math.log1p(-delta)
        if sensitivity <= 0 or not math.isfinite(rate_epsilon):
            raise ValueError(
                f"diffprivlib {name} with epsilon={epsilon!r}, sensitivity={sensitivity!r} adds no "
                "noise: there is no likelihood to convert"
            )
        converted = (DiscreteLaplace if integer else Laplace)(epsilon=rate_epsilon, sensitivity=sensitivity)
        return converted.with_guarantee(stated)
    return from_noise(family, float(mechanism._scale), integer).with_guarantee(stated)


#: Tumult's noise mechanism name -> (noise family, integer noise, parameter is a variance).
_TUMULT_NOISE = {
    "GEOMETRIC": ("laplace", True, False),
    "LAPLACE": ("laplace", False, False),
    "DISCRETE_GAUSSIAN": ("gaussian", True, True),
    "GAUSSIAN": ("gaussian", False, True),
}


def from_tumult(noise_info, budget=None) -> AdditiveNoiseMechanism:
    r"""The ppdinfer mechanism of one noise draw that Tumult Analytics reports for a query.

    Tumult reports the noise of a query (``Session._noise_info(query, budget)`` in Tumult
    Analytics) as entries ``{"noise_mechanism": ..., "noise_parameter": p}``. The laws, from
    Tumult Core's ``AddGeometricNoise(alpha)``, ``AddLaplaceNoise(scale)``,
    ``AddDiscreteGaussianNoise(sigma_squared)`` and ``AddGaussianNoise(sigma_squared)``:

    .. math::

        \text{GEOMETRIC: } P(K = k) \propto e^{-|k| / \alpha}, \qquad
        \text{DISCRETE\_GAUSSIAN: } P(K = k) \propto e^{-k^2 / (2 \sigma^2)},

    LAPLACE the density proportional to :math:`e^{-|e| / b}` and GAUSSIAN the normal of variance
    :math:`\sigma^2`. The parameter is :math:`\alpha`, b or :math:`\sigma^2`. Tumult's privacy
    functions (loss :math:`d_{in} / \alpha` under PureDP, :math:`\rho = d_{in}^2 / (2 \sigma^2)`
    under RhoZCDP) give, for a query of sensitivity :math:`\Delta` on a budget
    ``PureDP(epsilon)`` or ``RhoZCDP(rho)``, :math:`\alpha = \Delta / \epsilon` and
    :math:`\sigma^2 = \Delta^2 / (2 \rho)`: ``DiscreteLaplace(epsilon, Delta)`` and
    ``DiscreteGaussian(Delta / sqrt(2 rho))``.

    Parameters
    ----------
    noise_info : dict or sequence of one dict
        One entry, or Tumult's whole report when it holds exactly one. ``noise_mechanism`` may be
        Tumult's enum member or its name as a string.
    budget : optional
        The query's privacy budget as Tumult states it: ``PureDPBudget(epsilon)``,
        ``ApproxDPBudget(epsilon, delta)`` or ``RhoZCDPBudget(rho)`` (any object or dict with
        ``epsilon`` / ``delta`` / ``rho``). The report alone holds only the noise.

    Returns
    -------
    AdditiveNoiseMechanism
        Whose ``guarantee()`` is the budget; a Laplace family then shows its epsilon (with
        sensitivity epsilon * alpha). Without a budget the guarantee is 'unstated' and the
        parameters are the noise's, epsilon = 1 and sensitivity = alpha (rate 1 / alpha).

    Raises
    ------
    ValueError
        For a report of several noise draws (a composed query: convert each entry), an
        unsupported mechanism (e.g. the exponential mechanism of a quantile), or a bad parameter.

    See Also
    --------
    ppdinfer.interop.from_noise : The mechanism of a noise family and scale.

    Examples
    --------
    >>> from_tumult({"noise_mechanism": "GEOMETRIC", "noise_parameter": 2})
    DiscreteLaplace(epsilon=1.0, sensitivity=2.0)
    >>> from_tumult([{"noise_mechanism": "DISCRETE_GAUSSIAN", "noise_parameter": 2.25}])
    DiscreteGaussian(sigma=1.5)
    >>> from_tumult({"noise_mechanism": "GEOMETRIC", "noise_parameter": 2}, budget={"epsilon": 0.5})
    DiscreteLaplace(epsilon=0.5, sensitivity=1.0)
    """
    entry = _single_noise_entry(noise_info)
    mechanism = entry.get("noise_mechanism")
    name = str(getattr(mechanism, "name", mechanism)).upper()
    if name not in _TUMULT_NOISE:
        raise ValueError(f"unsupported Tumult noise mechanism {mechanism!r}: expected one of {sorted(_TUMULT_NOISE)}")
    family, integer, is_variance = _TUMULT_NOISE[name]
    parameter = positive_finite(entry.get("noise_parameter"), "noise_parameter")
    scale = math.sqrt(parameter) if is_variance else parameter
    noise = from_noise(family, scale, integer)
    stated = _tumult_guarantee(budget)
    if family == "laplace" and stated.epsilon is not None:
        noise = type(noise)(epsilon=stated.epsilon, sensitivity=positive_finite(stated.epsilon * scale, "budget"))
    return noise.with_guarantee(stated)


def _tumult_guarantee(budget) -> Guarantee:
    """A Tumult budget (PureDPBudget, ApproxDPBudget, RhoZCDPBudget, or a dict of their fields) as a Guarantee."""
    if budget is None:
        return Guarantee("unstated", note="Tumult's noise report states no budget: pass from_tumult(..., budget=)")

    def field(name):
        value = budget.get(name) if isinstance(budget, dict) else getattr(budget, name, None)
        return None if value is None else float(value)

    epsilon, delta, rho = field("epsilon"), field("delta"), field("rho")
    note = f"stated by Tumult: budget {budget!r}"
    if rho is not None and epsilon is None:
        return Guarantee("zcdp", rho=rho, note=note)
    if epsilon is not None and rho is None:
        if delta:
            return Guarantee("approximate", epsilon=epsilon, delta=delta, note=note)
        return Guarantee("pure", epsilon=epsilon, note=note)
    raise ValueError(
        f"budget must be a Tumult PureDPBudget(epsilon), ApproxDPBudget(epsilon, delta) or RhoZCDPBudget(rho), "
        f"got {budget!r}"
    )


def _single_noise_entry(noise_info) -> dict:
    """The one entry of a Tumult noise report, or a ValueError saying why there is not one."""
    if isinstance(noise_info, dict):
        return noise_info
    try:
        entries = list(noise_info)
    except TypeError:
        raise ValueError(f"noise_info must be a dict or a sequence of dicts, got {type(noise_info).__name__}") from None
    if len(entries) != 1 or not isinstance(entries[0], dict):
        raise ValueError(
            f"noise_info must hold exactly one noise draw, got {len(entries)} entries: a composed "
            "query is several releases; convert each entry"
        )
    return entries[0]
