r"""The paper's 2 x 23 sex-by-age table (Table 1), its invariants, and the synthetic tables of Figure 1.

Tables are arrays of shape (2, 23), female row first, flattened row-major into the paper's
46-vector s. The invariants are three equalities A s = a and non-negativity:

.. math::

    \sum_{i=1}^{46} s_i = 256, \qquad \sum_{i=1}^{23} s_i = 130, \qquad
    \sum_{j=5}^{23} (s_j + s_{23 + j}) = 213, \qquad s \ge 0,

(grand total, female total, voting-age total; the numbers are Table 1's). The MIS solves the
cells I^c = {1, 23, 46} (1-based, as in the paper) from the equalities; A[:, I^c] has
determinant 1, so solved cells of an integer proposal are integers.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from ...invariants import LinearInvariants
from ...rng import SeedLike, as_generator
from ...validation import integer_valued, positive_int

__all__ = [
    "AGE_GROUPS",
    "CONFIDENTIAL",
    "FIRST_ADULT_COLUMN",
    "PAPER_RELEASE",
    "ROWS",
    "SHAPE",
    "SOLVED_CELLS",
    "free_cells",
    "invariant_matrix",
    "invariants_for",
    "synthetic_tables",
]

ROWS = ("female", "male")
#: The age groups of the columns, as printed in Table 1.
AGE_GROUPS = (
    "<5",
    "6-10",
    "11-15",
    "16-17",
    "18-19",
    "20",
    "21",
    "22-24",
    "25-29",
    "30-34",
    "35-39",
    "40-44",
    "45-49",
    "50-54",
    "55-59",
    "60-61",
    "62-64",
    "65-66",
    "67-69",
    "70-74",
    "75-79",
    "80-84",
    "85+",
)
SHAPE = (len(ROWS), len(AGE_GROUPS))
#: The first voting-age (18+) column, 0-based: columns 5-23 in the paper's 1-based numbering.
FIRST_ADULT_COLUMN = 4

#: Table 1 (top): the simulated confidential table.
CONFIDENTIAL = np.array(
    [
        [8, 6, 3, 6, 4, 4, 4, 8, 5, 7, 7, 6, 1, 5, 4, 4, 9, 6, 2, 8, 8, 8, 7],
        [3, 4, 5, 8, 6, 4, 5, 5, 5, 6, 10, 7, 3, 2, 5, 11, 6, 4, 7, 4, 5, 3, 8],
    ],
    dtype=np.int64,
)
#: Table 1 (bottom): the paper's own congenial release of it.
PAPER_RELEASE = np.array(
    [
        [6, 6, 4, 3, 2, 10, 2, 5, 6, 7, 5, 6, 0, 5, 4, 5, 10, 8, 3, 8, 8, 12, 5],
        [9, 4, 5, 6, 3, 4, 5, 5, 3, 4, 7, 8, 5, 3, 2, 23, 8, 2, 6, 3, 0, 3, 8],
    ],
    dtype=np.int64,
)
#: I^c, the cells the MIS solves from the equalities: {1, 23, 46} 1-based, here 0-based.
SOLVED_CELLS = (0, 22, 45)


def invariant_matrix() -> np.ndarray:
    """A, shape (3, 46): the grand total, the female total and the voting-age total of a flattened table.

    Examples
    --------
    >>> invariant_matrix() @ CONFIDENTIAL.reshape(-1)
    array([256, 130, 213])
    """
    adult = np.zeros(SHAPE, dtype=np.int64)
    adult[:, FIRST_ADULT_COLUMN:] = 1
    female = np.zeros(SHAPE, dtype=np.int64)
    female[0] = 1
    return np.vstack([np.ones(adult.size, dtype=np.int64), female.reshape(-1), adult.reshape(-1)])


def invariants_for(table) -> LinearInvariants:
    """The invariants S* computed from a confidential 2 x 23 table: its three totals, and every cell >= 0.

    Examples
    --------
    >>> inv = invariants_for(CONFIDENTIAL)
    >>> inv.a.tolist(), inv.B.shape
    ([256, 130, 213], (46, 46))
    >>> bool(inv.contains(PAPER_RELEASE))     # the paper's release conforms
    True
    """
    table = integer_valued(table, "table")
    if table.shape != SHAPE:
        raise ValueError(f"table must have shape {SHAPE} (female row first), got {table.shape}")
    A = invariant_matrix()
    return LinearInvariants(A, A @ table.reshape(-1), shape=SHAPE) & LinearInvariants.nonnegative(SHAPE)


def free_cells() -> np.ndarray:
    """I, the 43 flat cell indices the MIS proposes (every cell but ``SOLVED_CELLS``).

    Examples
    --------
    >>> cells = free_cells()
    >>> len(cells), round(float(np.linalg.det(invariant_matrix()[:, list(SOLVED_CELLS)])))
    (43, 1)
    """
    return np.setdiff1d(np.arange(SHAPE[0] * SHAPE[1]), SOLVED_CELLS)


def synthetic_tables(n_tables: int, random_seed: SeedLike = None) -> np.ndarray:
    """Figure 1's confidential tables: cells iid NegativeBinomial(100, 0.05), shape (n_tables, 2, 23).

    The paper's NegativeBinomial(100, .05) has mean 5.26, that is scipy's ``nbinom(n=100, p=0.95)``
    (failures before the 100th success of probability 0.95).

    Examples
    --------
    >>> tables = synthetic_tables(20, random_seed=1)
    >>> tables.shape, bool(tables.min() >= 0)
    ((20, 2, 23), True)
    """
    n_tables = positive_int(n_tables, "n_tables")
    cells = stats.nbinom(n=100, p=0.95)
    return cells.rvs(size=(n_tables, *SHAPE), random_state=as_generator(random_seed)).astype(np.int64)
