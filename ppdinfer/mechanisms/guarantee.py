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

import numpy as np

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
    sensitivity : float or tuple of float, optional
        The sensitivity of the query the noise was calibrated for (L1 for Laplace, L2 for Gaussian).
        A tuple (Delta_1, ..., Delta_d), one per released coordinate, states a budget per statistic:
        the guarantee holds for neighbours x, x' whose query values differ by a weighted norm of at
        most one, sum_i |f_i(x) - f_i(x')| / Delta_i <= 1 (pure) or sum_i ((f_i(x) - f_i(x')) / Delta_i)^2
        <= 1 (approximate, zCDP). A tuple of equal values Delta states the same as the scalar Delta.
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
    >>> print(Laplace(epsilon=1.0, sensitivity=[1.0, 4.0]).guarantee())
    epsilon-differential privacy (epsilon=1, sensitivity=(1, 4)); ...
    """

    definition: str
    epsilon: float | None = None
    delta: float | None = None
    rho: float | None = None
    mu: float | None = None
    sensitivity: float | tuple[float, ...] | None = None
    note: str = field(default="")

    def __post_init__(self):
        if self.definition not in DEFINITIONS:
            raise ValueError(f"definition must be one of {sorted(DEFINITIONS)}, got {self.definition!r}")
        for name in ("epsilon", "delta", "rho", "mu", "sensitivity"):
            value = getattr(self, name)
            if value is None:
                continue
            if name == "sensitivity" and isinstance(value, (tuple, list, np.ndarray)):
                entries = np.asarray(value).reshape(-1).tolist()
                if np.ndim(value) != 1 or not entries:
                    raise ValueError(f"sensitivity must be a number or a non-empty 1-D sequence of them, got {value!r}")
                object.__setattr__(self, name, tuple(_number(entry, name) for entry in entries))
                continue
            object.__setattr__(self, name, _number(value, name))

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
            f"{name}={_format(getattr(self, name))}"
            for name in ("epsilon", "delta", "rho", "mu", "sensitivity")
            if getattr(self, name) is not None
        )
        text = DEFINITIONS[self.definition] + (f" ({values})" if values else "")
        return text + (f"; {self.note}" if self.note else "")


def _number(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) or value < 0:
        raise ValueError(f"{name} must be a number >= 0 or None, got {value!r}")
    return float(value)


def _format(value: float | tuple[float, ...]) -> str:
    if isinstance(value, tuple):
        return "(" + ", ".join(f"{entry:g}" for entry in value) + ")"
    return f"{value:g}"


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
