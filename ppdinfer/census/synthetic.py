r"""A seeded synthetic state: counties split into tracts and block groups, a Hispanic origin x race table each.

County populations are given (by default the 2020 Census estimates base of Pennsylvania's 67
counties, shipped in ``ppdinfer/data/covid_pa/pa_county_population.csv``). Each county is split into
tracts of about ``tract_people`` people and each tract into block groups of about
``block_group_people`` (sizes varying by a symmetric Dirichlet of concentration 20 and 10), and the
14 cells of a block group are multinomial with shares from a hierarchical Dirichlet:

.. math::

    q_c \sim \mathrm{Dir}(200\, q_s), \quad q_t \sim \mathrm{Dir}(100\, q_{c(t)}), \quad
    p_b \sim \mathrm{Dir}(50\, q_{t(b)}), \quad n_b \sim \mathrm{Multinomial}(N_b, p_b),

around illustrative statewide shares ``STATE_SHARES`` (roughly Pennsylvania's 2020 composition;
not official figures).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..datasets import COVID_PA_DATA
from ..rng import SeedLike, as_generator
from .geography import Geography

__all__ = ["STATE_SHARES", "pa_county_populations", "synthetic_state"]

#: Illustrative statewide shares of the 14 cells of TableSpec.hispanic_race() (not official figures).
STATE_SHARES = np.array(
    [0.735, 0.100, 0.002, 0.038, 0.0005, 0.004, 0.030, 0.016, 0.006, 0.001, 0.001, 0.0003, 0.035, 0.031]
)
STATE_SHARES = STATE_SHARES / STATE_SHARES.sum()


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
    tract_people: int = 4000,
    block_group_people: int = 1350,
) -> tuple[Geography, np.ndarray]:
    """A synthetic state: its Geography (State > County > Tract > Block_Group) and true cells (leaves x 14).

    Parameters
    ----------
    populations : pandas.Series or int, optional
        County populations indexed by name; an int n takes the first n Pennsylvania counties (default all 67).
    random_seed : int or Generator
        The same seed gives the same state.
    tract_people, block_group_people : int
        Typical tract and block-group populations.

    Examples
    --------
    >>> geo, cells = synthetic_state(1, random_seed=0)
    >>> geo.level_names, cells.shape[1], int(cells.sum())
    (('State', 'County', 'Tract', 'Block_Group'), 14, 103852)
    """
    if populations is None or isinstance(populations, (int, np.integer)):
        allpop = pa_county_populations()
        populations = allpop if populations is None else allpop.iloc[: int(populations)]
    populations = pd.Series(populations)
    if populations.empty or (populations <= 0).any():
        raise ValueError("populations must hold at least one county, every population > 0")
    rng = as_generator(random_seed)
    units, parents, cells = ["State"], [None], []
    for county, people in populations.items():
        units.append(str(county))
        parents.append("State")
        county_shares = rng.dirichlet(200 * STATE_SHARES)
        n_tracts = max(1, round(int(people) / tract_people))
        tract_sizes = rng.multinomial(int(people), rng.dirichlet(np.full(n_tracts, 20.0)))
        for t, tract_size in enumerate(tract_sizes):
            tract = f"{county}-T{t:03d}"
            units.append(tract)
            parents.append(str(county))
            tract_shares = rng.dirichlet(100 * county_shares + 1e-3)
            n_bg = max(1, round(int(tract_size) / block_group_people))
            bg_sizes = rng.multinomial(int(tract_size), rng.dirichlet(np.full(n_bg, 10.0)))
            for b, bg_size in enumerate(bg_sizes):
                units.append(f"{tract}-BG{b}")
                parents.append(tract)
                cells.append(rng.multinomial(int(bg_size), rng.dirichlet(50 * tract_shares + 1e-3)))
    geo = Geography(units, parents, ["State", "County", "Tract", "Block_Group"])
    # cells were made in breadth-first order within each tract; reorder to the geography's leaf order
    made = {name: i for i, name in enumerate(u for u in units if "-BG" in u)}
    order = np.array([made[name] for name in geo.ids[geo.leaves]])
    return geo, np.array(cells, dtype=np.int64)[order]
