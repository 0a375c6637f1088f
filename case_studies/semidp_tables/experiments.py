r"""Figures 2 and 3 of Cho & Awan: the L2 cost of Semi-DP releases of a k x k table against naive DP ones.

A confidential k x k table x ~ Multinomial(n = 500, pi) is released with all its one-way margins
public. Model I: pi uniform over the k^2 cells; Model II: pi_i proportional to i (cells in
row-major order). Each design adds noise to x, and the cost of a replicate is ||y - x||_2 (the
paper's L2 cost) or, as in the authors' published Gaussian script (their K-norm script does not
clamp), ||max(y, 0) - x||_2 (clamped).

Designs (the mechanisms of :mod:`ppdinfer.mechanisms.semidp`):

- Figure 2 (mu-GDP): the Semi-DP Gaussian N(0, (Delta_2 / mu)^2 P) on the span of the sensitivity
  space, with Delta_2 = 2 for the rectangles of Proposition 32 (as printed) and Delta_2 = sqrt 6
  for the space enumerated under three record changes when k >= 3 (the 3-cycles of the notes'
  erratum); against the naive N(0, (a sqrt 2 / mu)^2 I) by group privacy over a = 3 changes.
- Figure 3 (eps-DP): the optimal K-norm mechanism on the same spaces, against the naive l1, l2
  and l_inf mechanisms at eps / 3 with the DP sensitivities 2, sqrt 2 and 1.

Additive noise makes the cost independent of the table, so Models I and II agree up to Monte
Carlo error; their expected unclamped costs are known in closed form for the Gaussians
(:func:`expected_gaussian_cost`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable

import numpy as np
import xarray as xr
from scipy import special

from ...mechanisms import Gaussian
from ...mechanisms.semidp import KNormMechanism, NormBallMechanism, SemiDPGaussian
from ...privacy import SensitivitySpace, contingency_sensitivity_space

__all__ = [
    "GAUSSIAN_DESIGNS",
    "KNORM_DESIGNS",
    "MODELS",
    "N_RECORDS",
    "NAIVE_CHANGES",
    "cell_probabilities",
    "expected_gaussian_cost",
    "gaussian_designs",
    "knorm_designs",
    "simulate_costs",
]

#: Records per table.
N_RECORDS = 500
#: The number of record changes the naive designs protect by group privacy (the paper's a(t) = 3).
NAIVE_CHANGES = 3
MODELS = ("I", "II")
GAUSSIAN_DESIGNS = ("semidp_rectangles", "semidp_enumerated", "naive")
KNORM_DESIGNS = ("knorm_rectangles", "knorm_enumerated", "naive_l1", "naive_l2", "naive_linf")


def cell_probabilities(model: str, k: int) -> np.ndarray:
    """pi for Model I (uniform) or Model II (pi_i proportional to i, row-major), as a k x k array."""
    cells = k * k
    if model == "I":
        pi = np.full(cells, 1.0 / cells)
    elif model == "II":
        pi = np.arange(1, cells + 1) / (cells * (cells + 1) / 2)
    else:
        raise ValueError(f"model must be 'I' or 'II', got {model!r}")
    return pi.reshape(k, k)


@functools.cache
def _spaces(k: int) -> tuple[SensitivitySpace, SensitivitySpace]:
    """The k x k spaces of two changes (rectangles) and three (3-cycles too), built once per run."""
    return contingency_sensitivity_space(k, k, changes=2), contingency_sensitivity_space(k, k, changes=NAIVE_CHANGES)


def gaussian_designs(k: int, mu: float) -> dict[str, object]:
    """Figure 2's mechanisms for a k x k table at mu-GDP (see the module docstring)."""
    rectangles, enumerated = _spaces(k)
    return {
        "semidp_rectangles": SemiDPGaussian(mu, rectangles),
        "semidp_enumerated": SemiDPGaussian(mu, enumerated),
        "naive": Gaussian(sigma=NAIVE_CHANGES * math.sqrt(2) / mu),
    }


def knorm_designs(k: int, epsilon: float) -> dict[str, object]:
    """Figure 3's mechanisms for a k x k table at eps-DP (see the module docstring)."""
    rectangles, enumerated = _spaces(k)
    naive_epsilon = epsilon / NAIVE_CHANGES
    return {
        "knorm_rectangles": KNormMechanism(epsilon, rectangles),
        "knorm_enumerated": KNormMechanism(epsilon, enumerated),
        "naive_l1": NormBallMechanism(naive_epsilon, sensitivity=2.0, norm=1),
        "naive_l2": NormBallMechanism(naive_epsilon, sensitivity=math.sqrt(2), norm=2),
        "naive_linf": NormBallMechanism(naive_epsilon, sensitivity=1.0, norm=math.inf),
    }


def expected_gaussian_cost(sigma: float, dim: int) -> float:
    r"""E ||sigma Z||_2 for Z standard normal on a dim-dimensional subspace: sigma sqrt 2 Gamma((s+1)/2) / Gamma(s/2)."""
    return sigma * math.sqrt(2) * math.exp(special.gammaln((dim + 1) / 2) - special.gammaln(dim / 2))


def simulate_costs(
    sizes: Iterable[int],
    levels: Iterable[float],
    designs: Callable[[int, float], dict],
    replicates: int,
    seed: int,
    progress=None,
) -> xr.Dataset:
    """Mean L2 cost (unclamped and clamped at zero) of every design over ``replicates`` tables.

    Returns a Dataset with variables ``cost`` and ``cost_clamped`` (mean over replicates) and
    their Monte Carlo standard errors ``cost_se`` and ``cost_clamped_se``, indexed by ``model``,
    ``k``, ``level`` (mu or eps) and ``design``. Every (model, k, level) cell draws its tables and
    noise from its own child of ``seed``, so a cell's numbers do not depend on which others run.
    """
    sizes, levels = list(sizes), list(levels)
    names = list(designs(sizes[0], levels[0]))
    shape = (len(MODELS), len(sizes), len(levels), len(names))
    out = {key: np.full(shape, np.nan) for key in ("cost", "cost_clamped", "cost_se", "cost_clamped_se")}
    seeds = np.random.SeedSequence(seed).spawn(math.prod(shape[:3]))
    for index in np.ndindex(*shape[:3]):
        m, s, l = index
        rng = np.random.default_rng(seeds[np.ravel_multi_index(index, shape[:3])])
        k = sizes[s]
        pi = cell_probabilities(MODELS[m], k).reshape(-1)
        tables = rng.multinomial(N_RECORDS, pi, size=replicates).reshape(replicates, k, k)
        for d, mechanism in enumerate(designs(k, levels[l]).values()):
            releases = np.stack([mechanism.release(table, random_seed=rng) for table in tables])
            for key, values in (("cost", releases), ("cost_clamped", np.maximum(releases, 0.0))):
                costs = np.sqrt(((values - tables) ** 2).sum(axis=(1, 2)))
                out[key][m, s, l, d] = costs.mean()
                out[f"{key}_se"][m, s, l, d] = costs.std(ddof=1) / math.sqrt(replicates)
        if progress is not None:
            progress.update(1)
    coords = {"model": list(MODELS), "k": sizes, "level": levels, "design": names}
    return xr.Dataset(
        {key: (("model", "k", "level", "design"), value) for key, value in out.items()},
        coords=coords,
        attrs={"replicates": replicates, "seed": seed, "n_records": N_RECORDS},
    )
