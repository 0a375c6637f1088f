"""The person sampler's sparse representation: the default start and the draws of the dense implementation it
replaced (tests/data/people_dense_reference.npz: the start and draws of commit c8efc30, whose start and kernel held
dense leaves x K tables, on Cameron County's 117 blocks and on a two-leaf release), its exact apportioning against
``largest_remainder``, and the sums of a sparse table against those of its dense form."""

import math
import pathlib
import warnings
from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp

from ppdinfer.census import (
    file_exposure,
    grouped_release,
    read_nmf,
    synthetic_pl94_state,
    write_nmf,
)
from ppdinfer.census import people as people_module
from ppdinfer.census.baselines import largest_remainder

REFERENCE = np.load(pathlib.Path(__file__).parent / "data" / "people_dense_reference.npz")


@pytest.fixture(scope="module")
def cameron(tmp_path_factory):
    """Cameron County down to blocks (the reference's file: state seed 1, releases 2 and 3)."""
    root = tmp_path_factory.mktemp("cameron")
    state = synthetic_pl94_state(["Cameron"], random_seed=1)
    write_nmf(root, state, random_seed=2)
    write_nmf(root, state, random_seed=3, table="unit")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        release = grouped_release(read_nmf(root, "42", state_total=int(state.persons.sum())))
        exposure = file_exposure(release, read_nmf(root, "42", table="unit"))
    return release, exposure


def _reference_table(key: str, shape) -> np.ndarray:
    out = np.zeros(shape, dtype=np.int64)
    out[REFERENCE[f"{key}_leaf"], REFERENCE[f"{key}_cell"]] = REFERENCE[f"{key}_count"]
    return out


def test_the_start_is_the_dense_start(cameron):
    """The start, made leaf chunk by leaf chunk and kept sparse, is the dense one's, with and without the exposure
    (its exact totals met by adding and by taking people, its bounds by moving some)."""
    release, exposure = cameron
    closed = people_module.closed_leaves(release)
    shape = (release.geography.n_leaves, release.table.n_cells)
    for key, shut, exp in (("start", closed | exposure.empty, exposure), ("start_noexp", closed, None)):
        start = people_module._initial_cells(release, shut, exp)
        assert sp.issparse(start) and start.nnz == REFERENCE[f"{key}_count"].size
        np.testing.assert_array_equal(start.toarray(), _reference_table(key, shape))


def test_a_sparse_table_sums_as_its_dense_form(cameron):
    release, _ = cameron
    dense = _reference_table("start", (release.geography.n_leaves, release.table.n_cells))
    table = sp.csr_array(dense)
    assert release.log_likelihood(table) == release.log_likelihood(dense)
    for a, b in zip(release.bound_values(table), release.bound_values(dense), strict=True):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="117 leaves x 2016 cells"):
        release.level_sums(table[:5], 0, release.blocks[0].groups, 1)


def _largest_remainder(weights, total: int) -> np.ndarray:
    """largest_remainder's rule in exact rational arithmetic, on a dense vector: floors of w total / sum w, the rest
    one by one to the largest fractional parts, ties to the first."""
    scaled = [Fraction(int(w) * total, int(sum(weights))) for w in weights]
    out = np.array([math.floor(x) for x in scaled], dtype=np.int64)
    order = sorted(range(len(scaled)), key=lambda i: -(scaled[i] - out[i]))  # stable: ties to the first
    out[order[: total - int(out.sum())]] += 1
    return out


@pytest.mark.parametrize("seed", range(8))
def test_apportioning_is_the_largest_remainder(seed):
    """People added in proportion to count + 1 (every empty cell weight 1, never listed unless it gains) or taken in
    proportion to count: the largest remainder of the dense block in exact arithmetic, ties to the first, including
    totals that reach the empty cells through their tie, below it, and past one person per cell (and
    largest_remainder's own, in floating point, where its fractional parts are not ties)."""
    rng = np.random.default_rng(seed)
    rows, cols = rng.integers(1, 6), rng.integers(1, 9)
    dense = rng.integers(0, 5, size=(rows, cols)) * (rng.random((rows, cols)) < rng.uniform(0.1, 0.6))
    block = people_module.leaf_table(dense)
    for residual in (1, 3, int(dense.sum()) // 3 + 1, rows * cols + 2, 3 * rows * cols + dense.sum() + 5):
        change = people_module._apportioned(block, residual, "u").toarray()
        np.testing.assert_array_equal(change.ravel(), _largest_remainder((dense + 1).ravel(), residual))
    for residual in range(1, int(dense.sum()) + 1, max(1, int(dense.sum()) // 7)):
        change = people_module._apportioned(block, -residual, "u").toarray()
        np.testing.assert_array_equal(change.ravel(), -_largest_remainder(dense.ravel(), residual))
    odd = people_module.leaf_table([[0, 2, 0], [5, 0, 0]])  # weights 1 3 1 6 1 1 (13), 5 people: no tie
    np.testing.assert_array_equal(people_module._apportioned(odd, 5, "u").toarray().ravel(),
                                  largest_remainder([1.0, 3, 1, 6, 1, 1], 5))  # fmt: skip
    with pytest.raises(ValueError, match="unit u's total cannot be met"):
        people_module._apportioned(block, -int(dense.sum()) - 1, "u")


def test_bad_cells_are_refused():
    with pytest.raises(ValueError, match="cells must be whole numbers"):
        people_module.leaf_table(sp.csr_array(np.array([[0.5, 1.0]])))
