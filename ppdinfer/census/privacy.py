"""The (epsilon, delta) of a noisy-measurement release, from its zCDP guarantee.

Lives outside ``ppdinfer.mechanisms`` (which never imports ``ppdinfer.privacy``).

References
----------
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
    2016, Proposition 1.3) or 'optimal' (Canonne, Kamath & Steinke 2020, Proposition 12).

    Examples
    --------
    >>> import numpy as np
    >>> from ppdinfer.mechanisms import NoisyMeasurements
    >>> mech = NoisyMeasurements(np.eye(2, dtype=int), 1.0)
    >>> eps, delta = epsilon_delta(mech, 1e-6)
    >>> round(eps, 4), delta
    (5.7565, 1e-06)
    """
    guarantee = getattr(mechanism, "guarantee", None)
    if guarantee is None:
        raise ValueError(f"mechanism must be a ppdinfer mechanism, got {type(mechanism).__name__}")
    guarantee = guarantee()
    if guarantee.definition != "zcdp":
        raise ValueError(f"mechanism states {guarantee.definition!r}, not zCDP (discrete Laplace noise is pure DP)")
    return float(zcdp_epsilon(guarantee.rho, delta, bound)), float(delta)
