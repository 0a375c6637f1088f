r"""Release with OpenDP, analyse with ppdinfer: OpenDP noise measurements as ppdinfer mechanisms.

OpenDP (the ``opendp`` package) adds noise of a ``scale`` s. Its conventions, read from the
OpenDP 0.16 documentation and checked against its privacy maps and its releases:

.. math::

    \text{Laplace, integers: } P(K = k) \propto e^{-|k| / s}, \qquad
    \text{Gaussian, integers: } P(K = k) \propto e^{-k^2 / (2 s^2)},

and, on floating-point inputs, the continuous Laplace density proportional to
:math:`e^{-|e| / s}` and the normal density of standard deviation s (drawn by OpenDP on a lattice
of spacing :math:`2^k` that, by default, is the finest the float type has). ppdinfer's
``DiscreteLaplace(epsilon, sensitivity)`` and ``Laplace(epsilon, sensitivity)`` have the rate
epsilon / sensitivity, so s maps to epsilon = 1, sensitivity = s (rate 1 / s, exactly in floating
point; ppdinfer's exact sampler then uses the scale s itself); the Gaussian ones take sigma = s.
The pair (1, s) describes the noise, not the privacy of the release: that is OpenDP's
``measurement.map(d_in)`` (for the Laplace family d_in / s, for the Gaussian one the zCDP
rho = d_in^2 / (2 s^2)).
"""

from __future__ import annotations

import math

from ._validation import positive_finite
from .mechanisms import AdditiveNoiseMechanism, DiscreteGaussian, DiscreteLaplace, Gaussian, Laplace

#: OpenDP constructors of plain additive noise, all taking ``scale``.
_NOISE_CONSTRUCTORS = ("make_laplace", "make_geometric", "make_gaussian", "make_noise")
#: OpenDP privacy measure -> noise family.
_FAMILY_OF_MEASURE = {"MaxDivergence": "laplace", "ZeroConcentratedDivergence": "gaussian"}
#: OpenDP's privacy loss at d_in = 1 for a noise scale s, by family.
_LOSS_AT_ONE = {"laplace": lambda s: 1 / s, "gaussian": lambda s: 1 / (2 * s**2)}


def from_noise(distribution: str, scale: float, integer: bool) -> AdditiveNoiseMechanism:
    r"""The ppdinfer mechanism adding OpenDP's noise of the given family and ``scale``.

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
        OpenDP's ``scale`` s > 0.
    integer : bool
        Whether the noise lives on the integers.

    Returns
    -------
    AdditiveNoiseMechanism

    Examples
    --------
    >>> from_noise("laplace", 2.0, integer=True)
    DiscreteLaplace(epsilon=1.0, sensitivity=2.0)
    >>> from_noise("gaussian", 1.5, integer=False)
    Gaussian(sigma=1.5)
    """
    scale = positive_finite(scale, "scale")
    if distribution == "laplace":
        return (DiscreteLaplace if integer else Laplace)(epsilon=1.0, sensitivity=scale)
    if distribution == "gaussian":
        return (DiscreteGaussian if integer else Gaussian)(scale)
    raise ValueError(f"distribution must be 'laplace' or 'gaussian', got {distribution!r}")


def from_opendp(measurement) -> AdditiveNoiseMechanism:
    r"""The ppdinfer mechanism equal in law to an OpenDP noise measurement.

    Accepts the measurements of OpenDP's ``make_laplace``, ``make_geometric`` (without
    ``bounds``), ``make_gaussian`` and ``make_noise`` (also built with their ``then_`` forms)
    on an ``atom_domain`` or a ``vector_domain`` of integers or floats. Their release is
    :math:`y = x + K` with independent noise per coordinate, which the returned mechanism
    models as likelihood (see :func:`from_noise`):

    .. math::

        \text{MaxDivergence} \to \pi(y \mid x) \propto e^{-|y - x| / s}, \qquad
        \text{ZeroConcentratedDivergence} \to \pi(y \mid x) \propto e^{-(y - x)^2 / (2 s^2)}.

    The scale s is the one the measurement was built with (OpenDP records the constructor's
    arguments on the measurement) and is checked against the measurement's own privacy map:
    ``measurement.map(1)`` must equal 1 / s (Laplace) or 1 / (2 s^2) (Gaussian, zCDP rho).

    Parameters
    ----------
    measurement : opendp.mod.Measurement

    Returns
    -------
    AdditiveNoiseMechanism
        ``DiscreteLaplace``, ``Laplace``, ``DiscreteGaussian`` or ``Gaussian``.

    Raises
    ------
    ValueError
        For a measurement that is not plain additive Laplace or Gaussian noise: another
        mechanism, a chain with a transformation or a postprocessor (whose noise acts on a
        statistic ppdinfer cannot see), ``make_geometric`` with ``bounds``, or a float
        measurement with an explicit granularity ``k`` (noise on a coarse lattice).

    Examples
    --------
    >>> import opendp.prelude as dp
    >>> dp.enable_features("contrib")
    >>> space = dp.atom_domain(T=int), dp.absolute_distance(T=int)
    >>> from_opendp(dp.m.make_laplace(*space, scale=2.0))
    DiscreteLaplace(epsilon=1.0, sensitivity=2.0)
    >>> from_opendp(space >> dp.m.then_gaussian(scale=3.0))
    DiscreteGaussian(sigma=3.0)
    >>> floats = dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float)
    >>> from_opendp(dp.m.make_laplace(*floats, scale=0.5))
    Laplace(epsilon=1.0, sensitivity=0.5)
    """
    recipe = getattr(measurement, "__opendp_dict__", None)
    if not isinstance(recipe, dict) or "__function__" not in recipe:
        raise ValueError(f"measurement must be an OpenDP Measurement built by one of {list(_NOISE_CONSTRUCTORS)}, "
                         f"got {type(measurement).__name__}")
    constructor, arguments = recipe["__function__"], recipe.get("__kwargs__", {})
    if constructor not in _NOISE_CONSTRUCTORS:
        raise ValueError(f"unsupported OpenDP measurement {constructor!r}: only plain additive noise from "
                         f"{list(_NOISE_CONSTRUCTORS)} can be converted")
    measure = str(measurement.output_measure)
    if measure not in _FAMILY_OF_MEASURE:
        raise ValueError(f"unsupported OpenDP privacy measure {measure!r}: expected one of {list(_FAMILY_OF_MEASURE)}")
    if arguments.get("bounds") is not None:
        raise ValueError(f"unsupported OpenDP argument bounds={arguments['bounds']!r} of {constructor}: "
                         "bounded geometric releases are not unbounded discrete Laplace noise")
    integer = _is_integer_carrier(str(measurement.input_domain.carrier_type))
    if not integer and arguments.get("k") is not None:
        raise ValueError(f"unsupported OpenDP argument k={arguments['k']!r} of {constructor}: noise on the lattice "
                         "of spacing 2^k is not continuous; leave k at its default")
    family, scale = _FAMILY_OF_MEASURE[measure], float(arguments["scale"])
    _check_privacy_map(measurement, family, scale, integer)
    return from_noise(family, scale, integer)


def _is_integer_carrier(carrier: str) -> bool:
    """Whether an OpenDP carrier type such as ``i32``, ``Vec<u64>`` or ``f64`` holds integers."""
    atom = carrier.removeprefix("Vec<").removesuffix(">")
    if atom[:1] in ("i", "u"):
        return True
    if atom[:1] == "f":
        return False
    raise ValueError(f"unsupported OpenDP input type {carrier!r}: expected integers or floats")


def _check_privacy_map(measurement, family: str, scale: float, integer: bool) -> None:
    """Raise unless OpenDP's privacy loss at d_in = 1 is the one the scale implies (to 1e-9)."""
    loss = float(measurement.map(1 if integer else 1.0))
    expected = _LOSS_AT_ONE[family](scale)
    if not math.isclose(loss, expected, rel_tol=1e-9):
        raise ValueError(f"OpenDP measurement's privacy map gives {loss!r} at d_in = 1, not {expected!r} as a "
                         f"{family} scale of {scale!r} implies: unsupported OpenDP noise convention")
