r"""The 2020 Census production privacy-loss allocation for persons (P.L. 94-171 redistricting data, US).

The Disclosure Avoidance System spends a total zCDP budget :math:`\rho` on discrete Gaussian noise,
split across geographic levels and, within a level, across queries. A query with level share
:math:`g` and query share :math:`p` gets :math:`\rho_q = \rho g p` and noise variance
:math:`\sigma_q^2 = 1 / \rho_q` (the Bureau's replace-one neighbours: L2 sensitivity sqrt(2), so
:math:`\rho_q = 2 / (2 \sigma_q^2)`).

Source (published production code and settings; numbers cited, no code copied):
uscensusbureau/DAS_2020_Redistricting_Production_Code,

- ``DAS_PL94.release/configs/production/pl94/person_default.ini``: ``global_scale = 339/542``, so
  :math:`\rho = (542/339)^2 = 2.5562...` (the 2.56 of Abowd et al. 2022);
- ``source/configs/production/pl94/person_US.ini``: ``geolevel_budget_prop = 104/4099, 1440/4099,
  447/4099, 687/4099, 1256/4099, 165/4099`` for US, State, County, Tract, Block_Group (the optimized
  spine's block groups), Block; strategy ``ProductionCandidate20210527US_mult8_add02_dsepJune3``;
- ``DAS_PL94.release/programs/strategies/strategies.py``, that strategy's query proportions per
  level (below: 'total', 'hispanic' and 'hispanic * cenrace', the three of the eleven production
  queries that a Hispanic origin x race table reads).

The production 'hispanic * cenrace' query has 2 x 63 cells (the 63 race combinations); a 14-cell
table (7 race groups) given its share is an approximation of the production noise on those cells.

References
----------
Abowd, J. M. et al. (2022). The 2020 Census Disclosure Avoidance System TopDown Algorithm.
Harvard Data Science Review, Special Issue 2.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction as F

import numpy as np
import pandas as pd

from ..validation import positive_finite
from .geography import CensusQueries

__all__ = [
    "PRODUCTION_LEVEL_SHARES",
    "PRODUCTION_QUERY_SHARES",
    "PRODUCTION_RHO",
    "production_allocation",
    "production_sigmas",
]

#: The persons file's total rho: 1 / global_scale^2 with global_scale = 339/542.
PRODUCTION_RHO = float(F(542, 339) ** 2)

#: geolevel_budget_prop of person_US.ini, top down.
PRODUCTION_LEVEL_SHARES = {
    "US": F(104, 4099),
    "State": F(1440, 4099),
    "County": F(447, 4099),
    "Tract": F(687, 4099),
    "Block_Group": F(1256, 4099),
    "Block": F(165, 4099),
}

#: Query proportions of ProductionCandidate20210527US_mult8_add02_dsepJune3 for the queries of a
#: Hispanic origin x race table ('detailed' here is the production 'hispanic * cenrace').
PRODUCTION_QUERY_SHARES = {
    "US": {"hispanic": F(26, 4097), "detailed": F(130, 4097)},
    "State": {"total": F(3773, 4097), "hispanic": F(6, 4097), "detailed": F(12, 4097)},
    "County": {"total": F(3126, 4097), "hispanic": F(10, 4097), "detailed": F(28, 4097)},
    "Tract": {"total": F(1567, 4102), "hispanic": F(5, 4102), "detailed": F(1933, 4102)},
    "Block_Group": {"total": F(1705, 4099), "hispanic": F(3, 4099), "detailed": F(1055, 4099)},
    "Block": {"total": F(5, 4097), "hispanic": F(5, 4097), "detailed": F(21, 4097)},
}


def production_allocation(levels=("State", "County", "Tract", "Block_Group"), rho: float = PRODUCTION_RHO):
    """A table of the production allocation: level, query, level share, query share, rho_q and sigma_q.

    Parameters
    ----------
    levels : sequence of str
        Production level names (keys of ``PRODUCTION_LEVEL_SHARES``), each once.
    rho : float
        The total budget, a finite number > 0 (default the production 2.5562).

    Examples
    --------
    >>> table = production_allocation()
    >>> row = table[(table["level"] == "Block_Group") & (table["query"] == "detailed")].iloc[0]
    >>> round(float(row["sigma"]), 3)
    2.227
    """
    rho = positive_finite(rho, "rho")
    rows = []
    for level in _production_levels(levels):
        for query, share in PRODUCTION_QUERY_SHARES[level].items():
            rho_q = rho * float(PRODUCTION_LEVEL_SHARES[level]) * float(share)
            rows.append(
                (level, query, float(PRODUCTION_LEVEL_SHARES[level]), float(share), rho_q, 1 / math.sqrt(rho_q))
            )
    return pd.DataFrame(rows, columns=["level", "query", "level_share", "query_share", "rho", "sigma"])


def _production_levels(levels) -> list[str]:
    """``levels`` as a non-empty list of distinct production level names (ValueError naming what is wrong)."""
    if isinstance(levels, str) or not isinstance(levels, (list, tuple, np.ndarray, pd.Index)):
        raise ValueError(f"levels must be a list or tuple of production level names, got {levels!r}")
    levels = list(levels)
    if not levels:
        raise ValueError(f"levels must name at least one of {list(PRODUCTION_LEVEL_SHARES)}")
    for level in levels:
        if not isinstance(level, str) or level not in PRODUCTION_LEVEL_SHARES:
            raise ValueError(f"levels: {level!r} is not one of {list(PRODUCTION_LEVEL_SHARES)}")
        if levels.count(level) > 1:
            raise ValueError(f"levels: {level!r} appears twice")
    return levels


def production_sigmas(census, levels=None, rho: float = PRODUCTION_RHO) -> np.ndarray:
    r"""The production noise scale of each query of ``census``: :math:`\sigma_q = 1 / \sqrt{\rho g p}`.

    Parameters
    ----------
    census : CensusQueries
        Its levels must be named as production levels, or mapped by ``levels``.
    levels : dict, optional
        The geography's level names -> production level names ('State', 'County', 'Tract',
        'Block_Group', ...); by default the names themselves.
    rho : float
        The total budget (default the production 2.5562).

    Examples
    --------
    >>> from ppdinfer.census import Geography, TableSpec, census_queries
    >>> geo = Geography(["s", "c", "t", "b"], [None, "s", "c", "t"], ["State", "County", "Tract", "Block_Group"])
    >>> q = census_queries(geo, TableSpec.hispanic_race(), {"State": ["total"], "Block_Group": ["total", "detailed"]})
    >>> np.round(production_sigmas(q)[:3], 3).tolist()
    [1.1, 1.752, 2.227]
    """
    if not isinstance(census, CensusQueries):
        raise TypeError(f"census must be a CensusQueries (from census_queries), got {type(census).__name__}")
    rho = positive_finite(rho, "rho")
    if levels is not None and not isinstance(levels, Mapping):
        raise ValueError(
            f"levels must be a dict of the geography's level names -> production level names, got {levels!r}"
        )
    mapping = dict(levels or {})
    geo = census.geography
    out = np.empty(census.n_queries)
    for q in range(census.n_queries):
        name = geo.level_names[int(geo.depth[census.unit[q]])]
        level = mapping.get(name, name)
        kind = str(census.kind[q])
        if level not in PRODUCTION_QUERY_SHARES:
            raise ValueError(f"levels: level {name!r} maps to {level!r}, not a production level")
        if kind not in PRODUCTION_QUERY_SHARES[level]:
            raise ValueError(f"query {q} ({kind!r} at {level!r}) has no production share")
        share = float(PRODUCTION_LEVEL_SHARES[level]) * float(PRODUCTION_QUERY_SHARES[level][kind])
        out[q] = 1.0 / math.sqrt(rho * share)
    return out
