r"""The 2020 Census production privacy-loss allocation (P.L. 94-171 redistricting data, US): persons and housing units.

The Disclosure Avoidance System spends a total zCDP budget :math:`\rho` on discrete Gaussian noise,
split across geographic levels and, within a level, across queries. A query with level share
:math:`g` and query share :math:`p` gets :math:`\rho_q = \rho g p` and noise variance
:math:`\sigma_q^2 = 1 / \rho_q` (the Bureau's replace-one neighbours: L2 sensitivity sqrt(2), so
:math:`\rho_q = 2 / (2 \sigma_q^2)`).

**Persons.** Source (published production code and settings; numbers cited, no code copied):
uscensusbureau/DAS_2020_Redistricting_Production_Code,

- ``source/configs/production/pl94/person_default.ini``: ``global_scale = 339/542``, so
  :math:`\rho = (542/339)^2 = 2.5562...` (the 2.56 of Abowd et al. 2022);
- ``source/configs/production/pl94/person_US.ini``: ``geolevel_budget_prop = 104/4099, 1440/4099,
  447/4099, 687/4099, 1256/4099, 165/4099`` for US, State, County, Tract, Block_Group (the optimized
  spine's block groups), Block; strategy ``ProductionCandidate20210527US_mult8_add02_dsepJune3``;
- ``source/programs/strategies/strategies.py``, that strategy's query proportions per level: all
  eleven production queries in :data:`PL94_QUERY_SHARES` (the US level has no 'total').

The PL94 tables (``pl94.PERSON``, 2,016 cells) use that real allocation (:func:`pl94_variances`).
:data:`PRODUCTION_QUERY_SHARES` stays for the older 14-cell synthetic tables (Hispanic origin x 7
race groups): it keeps three of the eleven queries, and its 'detailed' is the production
'hispanic * cenrace' (2 x 63 cells) given to 14 cells, an approximation of the production noise on
those cells.

**Housing units.** The strategies file holds no unit strategy; the production certificate
``docs/certificates/DAS-PL94171-PRODUCTION-RUN1A-202106241420-US-Units.certificate.pdf`` (same
repository; configuration ``unit_US.ini``, not published) states it: total
:math:`\rho = 11417641 / 152349649 = (3379 / 12343)^2 \approx 0.0749` (its epsilon 1455307/588081 at
delta 1e-10), level proportions US 1/205, State 1/205, County 7/82, Tract 364/1025, Block_Group
1759/4100, Block 99/820, and one query per level, 'detailed' (h1: vacant, occupied), with all of its
level's budget: :data:`UNIT_RHO`, :data:`UNIT_LEVEL_SHARES`, :data:`UNIT_QUERY_SHARES`. (The persons
certificate states :math:`\rho = 293764/114921 = (542/339)^2`, as above.)

**References.**

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
from .pl94 import PERSON_QUERIES

__all__ = [
    "PL94_QUERY_SHARES",
    "PRODUCTION_LEVEL_SHARES",
    "PRODUCTION_QUERY_SHARES",
    "PRODUCTION_RHO",
    "UNIT_LEVEL_SHARES",
    "UNIT_QUERY_SHARES",
    "UNIT_RHO",
    "pl94_budget_shares",
    "pl94_variances",
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

#: Query proportions of ProductionCandidate20210527US_mult8_add02_dsepJune3 (strategies.py), level -> query ->
#: share, for all eleven production queries (the US has no 'total'), in ``pl94.PERSON_QUERIES`` order.
PL94_QUERY_SHARES = {
    level: {query: share for query, share in zip(PERSON_QUERIES, shares, strict=True) if share is not None}
    for level, shares in {
        "US": (
            None, F(52, 4097), F(26, 4097), F(26, 4097), F(26, 4097), F(26, 4097), F(130, 4097), F(130, 4097),
            F(26, 4097), F(26, 241), F(189, 241),
        ),
        "State": (
            F(3773, 4097), F(6, 4097), F(6, 4097), F(6, 4097), F(6, 4097), F(6, 4097), F(12, 4097), F(12, 4097),
            F(6, 4097), F(2, 241), F(230, 4097),
        ),
        "County": (
            F(3126, 4097), F(10, 4097), F(10, 4097), F(10, 4097), F(10, 4097), F(10, 4097), F(28, 4097),
            F(28, 4097), F(10, 4097), F(101, 4097), F(754, 4097),
        ),
        "Tract": (
            F(1567, 4102), F(4, 2051), F(5, 4102), F(5, 4102), F(5, 4102), F(5, 4102), F(1933, 4102), F(10, 2051),
            F(5, 4102), F(67, 4102), F(241, 2051),
        ),
        "Block_Group": (
            F(1705, 4099), F(3, 4099), F(3, 4099), F(3, 4099), F(3, 4099), F(3, 4099), F(1055, 4099), F(9, 4099),
            F(3, 4099), F(24, 4099), F(1288, 4099),
        ),
        "Block": (
            F(5, 4097), F(9, 4097), F(5, 4097), F(5, 4097), F(5, 4097), F(5, 4097), F(21, 4097), F(21, 4097),
            F(5, 4097), F(71, 4097), F(3945, 4097),
        ),
    }.items()
}  # fmt: skip

#: The housing-unit file's total rho (production certificate, module docstring): (3379 / 12343)^2.
UNIT_RHO = float(F(3379, 12343) ** 2)
#: The housing-unit file's level proportions, top down (production certificate).
UNIT_LEVEL_SHARES = {
    "US": F(1, 205),
    "State": F(1, 205),
    "County": F(7, 82),
    "Tract": F(364, 1025),
    "Block_Group": F(1759, 4100),
    "Block": F(99, 820),
}
#: The housing-unit file's queries: 'detailed' (h1: vacant, occupied) alone, with all of its level's budget.
UNIT_QUERY_SHARES = {level: {"detailed": F(1)} for level in UNIT_LEVEL_SHARES}

_ALLOCATIONS = {
    "person": (F(542, 339) ** 2, PRODUCTION_LEVEL_SHARES, PL94_QUERY_SHARES),
    "unit": (F(3379, 12343) ** 2, UNIT_LEVEL_SHARES, UNIT_QUERY_SHARES),
}


def pl94_budget_shares(level: str, table: str = "person") -> dict:
    """Each production query's share of the file's total rho at ``level``: level share x query share (Fractions).

    Parameters
    ----------
    level : str
        'US', 'State', 'County', 'Tract', 'Block_Group' or 'Block'.
    table : str
        'person' (the PL94 persons file) or 'unit' (housing units).

    Examples
    --------
    >>> pl94_budget_shares("Block")["total"], pl94_budget_shares("Block", "unit")
    (Fraction(825, 16793603), {'detailed': Fraction(99, 820)})
    """
    if table not in _ALLOCATIONS:
        raise ValueError(f"table must be 'person' or 'unit', got {table!r}")
    _, level_shares, query_shares = _ALLOCATIONS[table]
    if not isinstance(level, str) or level not in level_shares:
        raise ValueError(f"level must be one of {list(level_shares)}, got {level!r}")
    return {query: level_shares[level] * share for query, share in query_shares[level].items()}


def pl94_variances(level: str, rho=None, *, table: str = "person", exact: bool = False) -> dict:
    r"""The production noise variance of each query at ``level``: :math:`1 / (\rho g p)`.

    Parameters
    ----------
    level : str
        'US', 'State', 'County', 'Tract', 'Block_Group' or 'Block'.
    rho : float or Fraction, optional
        The file's total budget, finite and > 0 (default the table's production rho: exactly
        (542/339)^2 for persons, (3379/12343)^2 for housing units).
    table : str
        'person' or 'unit'.
    exact : bool
        Fractions (the exact variances a sampler draws with) instead of floats.

    Examples
    --------
    >>> v = pl94_variances("Block")
    >>> round(v["total"] ** 0.5, 1), round(v["detailed"] ** 0.5, 2)
    (89.2, 3.18)
    >>> round(pl94_variances("Block", table="unit")["detailed"] ** 0.5, 2)
    10.51
    """
    shares = pl94_budget_shares(level, table)
    if rho is None:
        rho = _ALLOCATIONS[table][0]
    elif not isinstance(rho, F):
        rho = F(positive_finite(rho, "rho"))
    elif rho <= 0:
        raise ValueError(f"rho must be a positive finite number, got {rho!r}")
    variances = {query: 1 / (rho * share) for query, share in shares.items()}
    return variances if exact else {query: float(v) for query, v in variances.items()}


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
