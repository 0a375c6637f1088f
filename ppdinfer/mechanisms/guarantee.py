"""What a mechanism guarantees, as constructed: the privacy definition and its parameters.

A :class:`Guarantee` is a record, not a calculation: the mechanism states it from the settings it
was built with (``Gaussian.from_epsilon_delta(1, 1e-5)`` keeps epsilon = 1 and delta = 1e-5, a
``Gaussian(sigma)`` states rho = 1 / (2 sigma^2) for L2 sensitivity 1), a converted release from
another library states what that library stated. Results record it in their constant data, so the
guarantee a user asked for travels with the posterior.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

#: The privacy definitions a guarantee may name.
DEFINITIONS = {
    "pure": "epsilon-differential privacy",
    "approximate": "(epsilon, delta)-differential privacy",
    "zcdp": "rho-zero-concentrated differential privacy",
    "gdp": "mu-Gaussian differential privacy",
    "f-dp": "f-differential privacy (a tradeoff function)",
    "pufferfish": "epsilon-Pufferfish privacy (of a secret, given public information)",
    "semi-dp": "differential privacy on a sensitivity space (Semi-DP)",
    "distribution": "(epsilon, delta)-distribution privacy",
    "unstated": "no guarantee stated",
}


@dataclass(frozen=True)
class Guarantee:
    r"""A privacy guarantee: a definition and its parameters (None where the definition has none).

    Parameters
    ----------
    definition : str
        One of ``DEFINITIONS``: 'pure', 'approximate', 'zcdp', 'gdp', 'f-dp', 'pufferfish',
        'semi-dp', 'distribution' or 'unstated'.
    epsilon, delta, rho, mu : float, optional
        The definition's parameters, as stated.
    sensitivity : float, optional
        The sensitivity of the query the noise was calibrated for (L1 for Laplace, L2 for Gaussian).
    note : str
        Where the guarantee comes from, when that is not the mechanism's own calibration (e.g.
        'stated by OpenDP').

    Examples
    --------
    >>> from ppdinfer.mechanisms import Gaussian, Laplace
    >>> Laplace(epsilon=0.5, sensitivity=2.0).guarantee()
    Guarantee(definition='pure', epsilon=0.5, sensitivity=2.0)
    >>> Gaussian.from_epsilon_delta(1.0, 1e-5).guarantee().delta
    1e-05
    >>> Gaussian(2.0).guarantee().attrs()["guarantee_rho"]
    0.125
    """

    definition: str
    epsilon: float | None = None
    delta: float | None = None
    rho: float | None = None
    mu: float | None = None
    sensitivity: float | None = None
    note: str = field(default="")

    def __post_init__(self):
        if self.definition not in DEFINITIONS:
            raise ValueError(f"definition must be one of {sorted(DEFINITIONS)}, got {self.definition!r}")
        for name in ("epsilon", "delta", "rho", "mu", "sensitivity"):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) or value < 0:
                raise ValueError(f"{name} must be a number >= 0 or None, got {value!r}")
            object.__setattr__(self, name, float(value))

    def attrs(self) -> dict[str, float | str]:
        """The guarantee as flat attributes (``guarantee``, ``guarantee_epsilon``, ...), netCDF-safe."""
        out: dict[str, float | str] = {"guarantee": self.definition}
        for name in ("epsilon", "delta", "rho", "mu", "sensitivity"):
            value = getattr(self, name)
            if value is not None:
                out[f"guarantee_{name}"] = value
        if self.note:
            out["guarantee_note"] = self.note
        return out

    def __repr__(self) -> str:
        fields = [f"definition={self.definition!r}"]
        for name in ("epsilon", "delta", "rho", "mu", "sensitivity"):
            value = getattr(self, name)
            if value is not None:
                fields.append(f"{name}={value!r}")
        if self.note:
            fields.append(f"note={self.note!r}")
        return f"Guarantee({', '.join(fields)})"

    def __str__(self) -> str:
        values = ", ".join(
            f"{name}={getattr(self, name):g}"
            for name in ("epsilon", "delta", "rho", "mu", "sensitivity")
            if getattr(self, name) is not None
        )
        text = DEFINITIONS[self.definition] + (f" ({values})" if values else "")
        return text + (f"; {self.note}" if self.note else "")


@dataclass(frozen=True)
class AdditiveNoise:
    """The compiled kernel's view of iid additive noise: log density ``log_norm - rate * |e| ** power``.

    ``power`` is 1 (Laplace shapes) or 2 (Gaussian shapes); ``discrete`` says the noise lives on the
    integers (a pmf) rather than the real line (a density).

    Examples
    --------
    >>> from ppdinfer.mechanisms import DiscreteLaplace
    >>> noise = DiscreteLaplace(1.0).additive_noise
    >>> noise.rate, noise.power, noise.discrete
    (1.0, 1, True)
    """

    log_norm: float
    rate: float
    power: int
    discrete: bool
