r"""How far a sum of independent discrete Gaussian noises is from one discrete Gaussian.

A measurement summed from m noisy values (``Coarsening.sums`` (:class:`ppdinfer.census.pl94.Coarsening`)) carries the noise
:math:`e = \sum_i e_i`, :math:`e_i \sim N_{\mathbb Z}(0, \sigma_i^2)` independent. Its pmf is the convolution
of the m pmfs, which for scales of about 1 and more is a discrete Gaussian of parameter
:math:`\sum_i \sigma_i^2` to many digits (by Poisson summation each pmf differs from the sampled normal
density by terms of order :math:`e^{-2 \pi^2 \sigma_i^2}`). :func:`summed_noise_error` computes the
difference itself, by FFT, so a likelihood that takes the sum to be one discrete Gaussian can check the
approximation it rests on for the scales it meets.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

__all__ = ["SUMMED_NOISE_TOLERANCE", "summed_noise_error"]

#: The largest |log pmf error| within 5 sds that a summed measurement may have to be taken as one discrete Gaussian.
SUMMED_NOISE_TOLERANCE = 1e-6
_SDS = 5.0


def _discrete_gaussian_pmf(variance: float, n: int) -> np.ndarray:
    """The N_Z(0, variance) pmf on the circular grid 0..n-1 (k and k - n the same point)."""
    k = np.fft.fftfreq(n, 1.0 / n)
    log_w = -(k**2) / (2 * variance)
    w = np.exp(log_w - log_w.max())
    return w / w.sum()


@lru_cache(maxsize=256)
def _error(pairs: tuple) -> float:
    total = sum(v * m for v, m in pairs)
    sd = np.sqrt(total)
    n = int(2 ** np.ceil(np.log2(2 * (12 * sd + 12) + 1)))
    spectrum = np.ones(n // 2 + 1, dtype=complex)
    for variance, count in pairs:
        spectrum *= np.fft.rfft(_discrete_gaussian_pmf(variance, n)) ** count
    summed = np.fft.irfft(spectrum, n)
    target = _discrete_gaussian_pmf(total, n)
    k = np.abs(np.fft.fftfreq(n, 1.0 / n))
    near = k <= _SDS * sd
    return float(np.max(np.abs(np.log(np.maximum(summed[near], 1e-300)) - np.log(target[near]))))


def summed_noise_error(variances) -> float:
    r"""The largest :math:`|\log P(\sum_i e_i = k) - \log N_{\mathbb Z}(k; 0, \sum_i \sigma_i^2)|` over
    :math:`|k| \le 5` sds of the sum, for independent :math:`e_i \sim N_{\mathbb Z}(0, \sigma_i^2)`.

    Parameters
    ----------
    variances : array_like
        The :math:`\sigma_i^2` of the summed noises, each finite and > 0.

    Examples
    --------
    >>> summed_noise_error([4.06] * 456) < 1e-8     # a block group's 'detailed' summed over 456 cells
    True
    >>> round(summed_noise_error([0.04, 0.04]), 2)  # sd 0.2: a sum of two is far from one discrete Gaussian
    5.55
    """
    values = np.asarray(variances, dtype=float).ravel()
    if values.size == 0 or not np.all(np.isfinite(values) & (values > 0)):
        raise ValueError(f"variances must be finite numbers > 0 (at least one), got {variances!r}")
    if values.size == 1:
        return 0.0
    unique, counts = np.unique(values, return_counts=True)
    return _error(tuple(zip(unique.tolist(), counts.tolist(), strict=True)))
