r"""A seeded synthetic state: counties split into tracts and block groups, a Hispanic origin x race table each.

**Geography.** County populations are given (by default the 2020 Census estimates base of
Pennsylvania's 67 counties, shipped in ``ppdinfer/data/covid_pa/pa_county_population.csv``). County c
of N_c people gets ``round(N_c / tract_people)`` tracts (at least one) whose sizes are multinomial
over a symmetric Dirichlet(20) split of N_c; a tract of T people gets ``round(T / block_group_people)``
block groups (at least one), sizes multinomial over a Dirichlet(10) split. With 3,800 and 1,300
people the whole state has about 3,400 tracts and 10,000 block groups (Pennsylvania had about 3,450
and 10,200 in 2020).

**Tables.** Each block group holds the 14 cells of Hispanic origin x 7 race groups, drawn through a
Dirichlet hierarchy around illustrative statewide shares ``STATE_SHARES`` (roughly Pennsylvania's
2020 composition; not official figures):

.. math::

    q_c \sim \mathrm{Dir}(\kappa_c q_s + \epsilon), \quad q_t \sim \mathrm{Dir}(\kappa_t q_{c(t)} + \epsilon),
    \quad p_b \sim \mathrm{Dir}(\kappa_b q_{t(b)} + \epsilon), \quad n_b \sim \mathrm{Multinomial}(N_b, p_b),

with (kappa_c, kappa_t, kappa_b) = (30, 8, 50) by default and epsilon = 0.001. The small tract
concentration makes neighbourhoods differ as they do (about 10 % of tracts are majority-minority:
non-Hispanic white below half).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..datasets import COVID_PA_DATA
from ..rng import SeedLike, as_generator
from ..validation import positive_int
from .geography import Geography

__all__ = ["STATE_SHARES", "pa_county_populations", "synthetic_state"]

#: Illustrative statewide shares of the 14 cells of TableSpec.hispanic_race() (not official figures).
STATE_SHARES = np.array(
    [0.735, 0.100, 0.002, 0.038, 0.0005, 0.004, 0.030, 0.016, 0.006, 0.001, 0.001, 0.0003, 0.035, 0.031]
)
STATE_SHARES = STATE_SHARES / STATE_SHARES.sum()
#: Dirichlet concentrations (county around state, tract around county, block group around tract).
CONCENTRATIONS = (30.0, 8.0, 50.0)


def pa_county_populations() -> pd.Series:
    """Pennsylvania's 67 county populations (2020 Census estimates base), indexed by county name.

    Examples
    --------
    >>> populations = pa_county_populations()
    >>> len(populations), int(populations["Adams"])
    (67, 103852)
    """
    frame = pd.read_csv(COVID_PA_DATA / "pa_county_population.csv")
    return frame.set_index("county")["census_estimatesbase_2020_04_01"].astype(np.int64)


def synthetic_state(
    populations=None,
    random_seed: SeedLike = None,
    *,
    tract_people: int = 3800,
    block_group_people: int = 1300,
    concentrations=CONCENTRATIONS,
) -> tuple[Geography, np.ndarray]:
    """A synthetic state: its Geography (State > County > Tract > Block_Group) and true cells (leaves x 14).

    Parameters
    ----------
    populations : pandas.Series, int or sequence of str, optional
        County populations indexed by name; an int n takes the first n Pennsylvania counties, a
        sequence of names those Pennsylvania counties (default all 67).
    random_seed : int or Generator
        The same seed and counties give the same state.
    tract_people, block_group_people : int
        Typical tract and block-group populations.
    concentrations : tuple of 3 floats
        (kappa_c, kappa_t, kappa_b) of the Dirichlet hierarchy (module docstring).

    Examples
    --------
    >>> geo, cells = synthetic_state(["Fulton"], random_seed=0)
    >>> geo.level_names, cells.shape[1], int(cells.sum())
    (('State', 'County', 'Tract', 'Block_Group'), 14, 14556)
    >>> len(geo.level("Tract")), geo.n_leaves
    (4, 11)
    """
    populations = _county_populations(populations)
    for name, value in (("tract_people", tract_people), ("block_group_people", block_group_people)):
        positive_int(value, name)
    kappa = np.asarray(concentrations, dtype=float)
    if kappa.shape != (3,) or np.any(~np.isfinite(kappa) | (kappa <= 0)):
        raise ValueError(f"concentrations must be 3 finite positive numbers, got {concentrations!r}")
    rng = as_generator(random_seed)
    units, parents, made = ["State"], [None], {}
    for county, people in populations.items():
        county = str(county)
        units.append(county)
        parents.append("State")
        q_county = rng.dirichlet(kappa[0] * STATE_SHARES + 1e-3)
        n_tracts = max(1, round(int(people) / tract_people))
        tract_sizes = rng.multinomial(int(people), rng.dirichlet(np.full(n_tracts, 20.0)))
        for t, tract_size in enumerate(tract_sizes):
            tract = f"{county}-T{t:03d}"
            units.append(tract)
            parents.append(county)
            q_tract = rng.dirichlet(kappa[1] * q_county + 1e-3)
            n_bg = max(1, round(int(tract_size) / block_group_people))
            bg_sizes = rng.multinomial(int(tract_size), rng.dirichlet(np.full(n_bg, 10.0)))
            for b, size in enumerate(bg_sizes):
                name = f"{tract}-BG{b}"
                units.append(name)
                parents.append(tract)
                made[name] = rng.multinomial(int(size), rng.dirichlet(kappa[2] * q_tract + 1e-3))
    geo = Geography(units, parents, ["State", "County", "Tract", "Block_Group"])
    return geo, np.array([made[name] for name in geo.ids[geo.leaves]], dtype=np.int64)


def _county_populations(populations) -> pd.Series:
    """County populations by name, from a Series, a count of Pennsylvania counties or their names."""
    pennsylvania = pa_county_populations()
    if populations is None:
        return pennsylvania
    if isinstance(populations, (int, np.integer)) and not isinstance(populations, bool):
        return pennsylvania.iloc[: positive_int(populations, "populations")]
    if isinstance(populations, pd.Series):
        if populations.empty or (populations <= 0).any():
            raise ValueError("populations must hold at least one county, every population > 0")
        return populations
    names = [str(c) for c in populations]
    unknown = [c for c in names if c not in pennsylvania.index]
    if not names or unknown:
        raise ValueError(f"populations: {unknown or names!r} are not Pennsylvania counties (see pa_county_populations)")
    return pennsylvania[names]
