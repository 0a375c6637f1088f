"""The (epsilon, delta) of a noisy-measurement release, from its zCDP guarantee.

Lives outside ``ppdinfer.mechanisms`` (which never imports ``ppdinfer.privacy``).

**References.**

Bun, M. & Steinke, T. (2016). Concentrated differential privacy: simplifications, extensions, and
lower bounds. TCC. Canonne, C. L., Kamath, G. & Steinke, T. (2020). The discrete Gaussian for
differential privacy. NeurIPS.
"""

from __future__ import annotations

from ..privacy import zcdp_epsilon

__all__ = ["epsilon_delta"]


def epsilon_delta(mechanism, delta: float, bound: str = "standard") -> tuple[float, float]:
    """(epsilon, delta) of a discrete Gaussian noisy-measurement release: ``zcdp_epsilon(rho, delta, bound)``.

    rho is the mechanism's guarantee (add/remove one person); ``bound`` is 'standard' (Bun & Steinke
    2016, Proposition 1.3), 'optimal' (Canonne, Kamath & Steinke 2020, Proposition 12) or 'gaussian'
    (the exact conversion of continuous Gaussian noise, `ppdinfer.privacy.gaussian_zcdp_epsilon`:
    refused for any other noise, the discrete Gaussian noise of the Census included, for which it
    does not hold).

    Examples
    --------
    >>> import numpy as np
    >>> from ppdinfer.mechanisms import NoisyMeasurements
    >>> mech = NoisyMeasurements(np.eye(2, dtype=int), 1.0)
    >>> eps, delta = epsilon_delta(mech, 1e-6)
    >>> round(eps, 4), delta
    (5.7565, 1e-06)
    """
    rho = _zcdp_rho(mechanism)
    if bound == "gaussian" and not _continuous_gaussian(mechanism):
        raise ValueError(
            f"bound='gaussian' is the exact conversion of continuous Gaussian noise; {type(mechanism).__name__} "
            f"adds other noise (discrete Gaussian noise is not covered by it): use bound='standard' or 'optimal'"
        )
    return float(zcdp_epsilon(rho, delta, bound)), float(delta)


def _zcdp_rho(mechanism) -> float:
    """The rho of the zCDP guarantee ``mechanism`` states (a ValueError when it states no zCDP, or no rho)."""
    guarantee = getattr(mechanism, "guarantee", None)
    if guarantee is None:
        raise ValueError(f"mechanism must be a ppdinfer mechanism, got {type(mechanism).__name__}")
    guarantee = guarantee()
    if guarantee.definition != "zcdp":
        raise ValueError(f"mechanism states {guarantee.definition!r}, not zCDP (discrete Laplace noise is pure DP)")
    if guarantee.rho is None:
        raise ValueError(f"mechanism states zCDP without a rho ({guarantee}): there is nothing to convert")
    return guarantee.rho


def _continuous_gaussian(mechanism) -> bool:
    """Whether ``mechanism`` declares iid continuous Gaussian noise (the only noise the exact conversion covers)."""
    noise = getattr(mechanism, "additive_noise", None)
    return noise is not None and noise.power == 2 and not noise.discrete and not mechanism.discrete
