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

import numbers
from collections import Counter
from collections.abc import Mapping

import numpy as np
import pandas as pd

from ..datasets import COVID_PA_DATA
from ..rng import SeedLike, as_generator
from ..validation import positive_int, unit_parameter
from .geography import Geography

__all__ = ["STATE_SHARES", "pa_county_populations", "synthetic_state"]

#: Illustrative statewide shares of the 14 cells of TableSpec.hispanic_race() (not official figures).
STATE_SHARES = np.array(
    [0.735, 0.100, 0.002, 0.038, 0.0005, 0.004, 0.030, 0.016, 0.006, 0.001, 0.001, 0.0003, 0.035, 0.031]
)
STATE_SHARES = STATE_SHARES / STATE_SHARES.sum()
#: Dirichlet concentrations (county around state, tract around county, block group around tract).
CONCENTRATIONS = (30.0, 8.0, 50.0)
#: The most tracts and block groups a synthetic state may have (about 8 times the US's block groups).
MAX_UNITS = 2_000_000


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
    populations : pandas.Series, dict, int or sequence of str, optional
        County populations (whole numbers >= 1) by name, as a Series indexed by name or a dict; an
        int n (1 to 67) takes the first n Pennsylvania counties, a sequence of distinct names those
        Pennsylvania counties (default all 67).
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
    tract_people = positive_int(tract_people, "tract_people")
    block_group_people = positive_int(block_group_people, "block_group_people")
    _check_scale(populations, tract_people, block_group_people)
    kappa = np.asarray(concentrations, dtype=float)
    if kappa.shape != (3,) or np.any(~np.isfinite(kappa) | (kappa <= 0)):
        raise ValueError(f"concentrations must be 3 finite positive numbers, got {concentrations!r}")
    rng = as_generator(random_seed)
    units, parents, made = ["State"], [None], {}
    for county, people in populations.items():
        people = int(people)
        units.append(county)
        parents.append("State")
        q_county = rng.dirichlet(kappa[0] * STATE_SHARES + 1e-3)
        n_tracts = max(1, round(people / tract_people))
        tract_sizes = rng.multinomial(people, rng.dirichlet(np.full(n_tracts, 20.0)))
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
    """County populations (int64) by name (str), from a Series or dict, a count of Pennsylvania counties or their
    names; a ValueError names what is wrong with any other form."""
    pennsylvania = pa_county_populations()
    if populations is None:
        return pennsylvania
    if isinstance(populations, numbers.Real) or isinstance(populations, np.bool_):
        count = positive_int(populations, "populations")
        if count > len(pennsylvania):
            raise ValueError(f"populations: {count} counties asked for, but Pennsylvania has {len(pennsylvania)}")
        return pennsylvania.iloc[:count]
    if isinstance(populations, (pd.Series, Mapping)):
        return _given_populations(pd.Series(populations))
    if isinstance(populations, str):
        raise ValueError(
            f"populations: give a list of county names, not one string ({[populations]!r}, not {populations!r})"
        )
    return pennsylvania[_county_names(populations, pennsylvania.index)]


def _given_populations(populations: pd.Series) -> pd.Series:
    """Check a Series of county populations: at least one, distinct names, whole numbers >= 1."""
    names = _distinct([str(name) for name in populations.index])
    if not names:
        raise ValueError("populations must hold at least one county")
    values = unit_parameter(populations.to_numpy(), "populations", positive_int, "positive integer")
    return pd.Series(values, index=names, dtype=np.int64)


def _county_names(names, known: pd.Index) -> list[str]:
    """``names`` as a non-empty list of distinct Pennsylvania county names."""
    try:
        names = list(names)
    except TypeError:
        raise ValueError(
            f"populations must be a Series or dict of populations, a count or a list of county names, got {names!r}"
        ) from None
    unknown = [name for name in names if not isinstance(name, str) or name not in known]
    if not names or unknown:
        raise ValueError(f"populations: {unknown or names!r} are not Pennsylvania counties (see pa_county_populations)")
    return _distinct(names)


def _distinct(names: list[str]) -> list[str]:
    """``names`` after checking that none appears twice."""
    repeated = [name for name, count in Counter(names).items() if count > 1]
    if repeated:
        raise ValueError(f"populations: county {repeated[0]!r} appears twice")
    return names


def _check_scale(populations: pd.Series, tract_people: int, block_group_people: int) -> None:
    """Refuse a state of more than ``MAX_UNITS`` tracts and block groups (it would exhaust time and memory)."""
    people = populations.to_numpy(dtype=float)
    units = np.maximum(1, np.round(people / tract_people)).sum() + people.sum() / block_group_people
    if units > MAX_UNITS:
        raise ValueError(
            f"populations, tract_people and block_group_people make about {units:,.0f} tracts and block groups, "
            f"more than {MAX_UNITS:,} (the whole US has about 240,000 block groups): check the populations "
            f"({populations.sum():,} people) and the unit sizes ({tract_people}, {block_group_people})"
        )
