"""The person sampler's sparse representation: the default start and the draws of the dense implementation it
replaced (tests/data/people_dense_reference.npz: commit c8efc30's start on Cameron County's 117 blocks and its draws
on a two-leaf release; its start and kernel held dense leaves x K tables), the same draws while leaves grow and the
pool is repacked, its exact apportioning against ``largest_remainder``, and the sums of a sparse table against those
of its dense form."""

import math
import pathlib
import warnings
from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp

from ppdinfer.census import (
    PERSON,
    Decomposition,
    Geography,
    GroupedRelease,
    PersonMoves,
    TableSpec,
    census_queries,
    file_exposure,
    grouped_release,
    read_nmf,
    sample_people,
    synthetic_pl94_state,
    write_nmf,
)
from ppdinfer.census import people as people_module
from ppdinfer.census.baselines import largest_remainder
from ppdinfer.kernels import leaf_slots as slots
from ppdinfer.kernels.leaf_slots import repacked
from ppdinfer.mechanisms import NoisyMeasurements

REFERENCE = np.load(pathlib.Path(__file__).parent / "data" / "people_dense_reference.npz")
#: The reference commit's default moves (relocations and ten hyperparameter rounds came later).
REFERENCE_MOVES = PersonMoves(relocations=0.0, hyper_rounds=1, mates=0.0)


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
    leaf_level = release.geography.n_levels - 1
    block = [b for b in release.blocks if b.level == leaf_level][-1]  # the blocks' detailed cells
    full = release.level_sums(table, leaf_level, block.groups, block.n_values)
    np.testing.assert_array_equal(release.level_sums(dense, leaf_level, block.groups, block.n_values, (10, 50)),
                                  full[10:50])  # fmt: skip
    assert full.sum() == dense.sum()
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


RECORD = PERSON.coarsen({"votingage": None, "hispanic": None})


def _stressed(monkeypatch):
    """Leaves start with as few slots as hold their cells and the pool with little more than one move's room, so
    leaves fill and grow and the sweeps stop and resume at every repacking: the pools seen are returned."""
    pools = []

    def spy(store, alloc, spare):
        pools.append(store)
        return repacked(store, alloc, spare)

    monkeypatch.setattr(people_module, "SLOT_HEADROOM", 0.0)
    monkeypatch.setattr(people_module, "_spare", lambda slots, room: room + 8)
    monkeypatch.setattr(people_module, "repacked", spy)
    return pools


@pytest.mark.filterwarnings("ignore::ppdinfer.inference.diagnostics.ConvergenceWarning")  # short chains
def test_the_draws_are_the_same_while_leaves_grow(cameron, monkeypatch):
    """Draw for draw the same (every recorded cell, hyperparameter and acceptance rate) with leaves growing and the
    sweeps resumed at each of many repackings as in a roomy pool, under the default moves."""
    release, exposure = cameron
    run = lambda: sample_people(release, draws=6, tune=4, random_seed=4, exposure=exposure, progressbar=False,  # noqa: E731
                                record=RECORD)  # fmt: skip
    roomy = run()
    pools = _stressed(monkeypatch)
    tree = run()
    assert len(pools) > 50
    start = slots.capacity(np.bincount(REFERENCE["start_leaf"], minlength=release.geography.n_leaves), 2048, 0.0)
    assert (pools[-1][1] > start).sum() > 20  # leaves grown
    for key in ("cells", "alpha", "phi", "mean_size", "gq_size", "shares"):
        np.testing.assert_array_equal(tree["posterior"][key].values, roomy["posterior"][key].values, err_msg=key)
    np.testing.assert_array_equal(tree["sample_stats"]["accept"].values, roomy["sample_stats"]["accept"].values)


@pytest.mark.filterwarnings("ignore::ppdinfer.inference.diagnostics.ConvergenceWarning")
def test_the_draws_are_the_dense_sampler_s_with_births():
    """A tract of two leaves under no invariant (people arrive and leave): the dense sampler's draws."""
    from test_census_people import _small

    census, mech, y = _small("gaussian", False)
    tree = sample_people(GroupedRelease.from_census(census, mech, y), draws=300, tune=50, random_seed=5,
                         progressbar=False, moves=REFERENCE_MOVES)  # fmt: skip
    for key in ("cells", "alpha", "phi", "mean_size", "shares"):
        np.testing.assert_array_equal(tree["posterior"][key].values, REFERENCE[f"small_{key}"], err_msg=key)


@pytest.mark.filterwarnings("ignore::ppdinfer.inference.diagnostics.ConvergenceWarning")
def test_local_rounds_resume_after_repacking_with_the_same_draws(cameron, monkeypatch):
    """The block groups' local sweeps in parallel, each in its part of the pool: the same draws whether the pool
    is roomy or repacked again and again (units stopping for room resumed)."""
    release, exposure = cameron
    run = lambda: sample_people(  # noqa: E731
        release, draws=4, tune=2, random_seed=6, exposure=exposure, progressbar=False, record=RECORD,
        decompose=Decomposition("Block_Group", moves=PersonMoves(lines=1.0, exchanges=1.0, bumps=2.0)),
    )["posterior"]["cells"].values  # fmt: skip
    roomy = run()
    _stressed(monkeypatch)
    share, rounds = people_module._share_room, []

    def tight(s, scratches, room):  # each unit a little more than one move's room: units stop, to be resumed
        rounds.append(len(scratches))
        share(s, scratches, room)
        for scratch in scratches:
            scratch["alloc"][1] = scratch["alloc"][0] + room + 8

    monkeypatch.setattr(people_module, "_share_room", tight)
    np.testing.assert_array_equal(run(), roomy)
    assert len(rounds) > 2 * 6  # 6 sweeps' rounds, each resumed more than once


def test_leaf_slots_hold_a_dense_table():
    """Random gains and losses in a store against a dense table: every count, the cell of every person number (in
    cell order), the (group, cell) counts, the table and a repacked copy; leaves fill, compact, grow and become
    dense rows; a range too small is an error, not a refused move."""
    rng = np.random.default_rng(0)
    L, K, P = 5, 40, 64
    dense = np.zeros((L, K), dtype=np.int64)
    store, alloc = slots.slots_from_table(np.zeros(L + 1, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64),
                                          P, 0.0, 4000)  # fmt: skip
    caps = set()
    for step in range(3000):
        leaf = rng.integers(L)
        k = rng.integers(K if leaf < 2 else 6)  # leaves 0 and 1 reach dense rows, the others stay sparse
        d = -1 if dense[leaf, k] and rng.random() < 0.5 else int(rng.integers(1, 3))
        slots.add_people(store, leaf, k, d, P, alloc)
        dense[leaf, k] += d
        caps.update(store[1].tolist())
        if step % 50 == 0:
            for row in range(L):
                assert [slots.count_of(store, row, c, P) for c in range(K)] == dense[row].tolist()
                cum = np.cumsum(dense[row])
                for target in range(0, int(cum[-1]), 3):
                    assert slots.find_person(store, row, target) == np.searchsorted(cum, target, side="right")
    assert {1, 2, 4, 8, P} <= caps and (store[1][2:] < P).all() and (store[2][2:] <= 6).all()
    np.testing.assert_array_equal(slots.to_table(store, K).toarray(), dense)
    new, new_alloc = slots.repacked(store, alloc, 100)
    assert new_alloc[1] - new_alloc[0] == 100 and new_alloc[0] == store[1].sum()
    np.testing.assert_array_equal(slots.to_table(new, K).toarray(), dense)
    groups = np.array([0, 1, 0, 1, 1])
    gk_ptr = np.zeros(2 * K + 1, dtype=np.int64)
    counts = slots.group_counts(new, groups, 2, K, gk_ptr)
    for g in range(2):
        for c in range(K):
            held = dense[groups == g, c]
            assert sorted(counts[gk_ptr[g * K + c] : gk_ptr[g * K + c + 1]].tolist()) == sorted(held[held > 0].tolist())
    one, spent = slots.slots_from_table(np.array([0, 1]), np.array([0]), np.array([1]), P, 0.0, 0)  # one slot, full
    with pytest.raises(RuntimeError, match="allocation range is spent"):
        slots.add_people(one, 0, 1, 1, P, spent)


@pytest.mark.parametrize("P", [8, 64, 2048])
def test_a_leaf_grows_by_less_than_half_a_reserve_in_any_one_move(P):
    """The most one move could give a leaf: from one full slot, every other cell of the table in turn. Its slots
    double up to a dense row of P within half of ``reserve(P)`` free positions (a move touches two leaves at most),
    and one position fewer than they take is an error, not a refused move."""
    table = lambda spare: slots.slots_from_table(np.array([0, 1]), np.array([0]), np.array([1]), P, 0.0, spare)  # noqa: E731
    store, alloc = table(slots.reserve(P) // 2)
    for k in range(1, P):
        slots.add_people(store, 0, k, 1, P, alloc)
    assert store[1][0] == P and [slots.count_of(store, 0, k, P) for k in range(P)] == [1] * P
    short, spent = table(int(alloc[0]) - 2)  # one position fewer than the growth took
    with pytest.raises(RuntimeError, match="allocation range is spent"):
        for k in range(1, P):
            slots.add_people(short, 0, k, 1, P, spent)


def _pulled_runs(first: int):
    """Four leaves of 10,000 people each (cells a, b) under an exact total of 40,000: each leaf's detailed values (sd 1)
    read ``first`` people of cell a in the first leaf and 1,000 in each other, its totals (sd 10^6) read 0. The
    totals' residuals start within int16's half (int16), the detailed ones not (int32). Runs with int16 residuals and
    without."""
    geo = Geography(["t", "b1", "b2", "b3", "b4"], [None, "t", "t", "t", "t"])
    census = census_queries(geo, TableSpec(("a", "b")), {"level1": ["total", "detailed"]})
    loose = census.kind == "total"
    y = np.where(loose, 0, census.matrix @ np.array([first, 0, 1000, 0, 1000, 0, 1000, 0]))
    mech = NoisyMeasurements(
        census.matrix, np.where(loose, 1e6, 1.0), invariants=census.unit_invariants(["t"], [40000])
    )
    release = GroupedRelease.from_census(census, mech, y)
    return [sample_people(release, draws=5, tune=5, random_seed=1, initial=np.tile([10000, 0], (4, 1)), progressbar=False,
                          moves=PersonMoves(lines=1.0, narrow_residuals=narrow)) for narrow in (True, False)]  # fmt: skip


@pytest.mark.filterwarnings("ignore::ppdinfer.inference.diagnostics.ConvergenceWarning")
def test_int16_residuals_give_the_draws_of_int32_ones(cameron):
    """Residuals held as int16 where they start well inside it: the draws of int32 ones, draw for draw, on Cameron
    County in local rounds (every block int16) and where some blocks are int16 and others int32."""
    release, exposure = cameron

    def run(narrow, **kw):
        return sample_people(release, draws=4, tune=2, random_seed=6, exposure=exposure, progressbar=False,
                             record=RECORD, moves=PersonMoves(narrow_residuals=narrow), **kw)  # fmt: skip

    local = Decomposition("Block_Group", moves=PersonMoves(lines=1.0, exchanges=1.0, bumps=2.0))
    n_values = sum(b.y.size for b in release.blocks)
    for (tree, wide), types in (
        ((run(True, decompose=local), run(False, decompose=local)), (f"{n_values} int16, 0 int32", f"0 int16, {n_values} int32")),
        (_pulled_runs(12000), ("4 int16, 8 int32", "0 int16, 12 int32")),
    ):  # fmt: skip
        assert "residual_refusals" not in tree.attrs
        assert (tree.attrs["residuals"], wide.attrs["residuals"]) == types
        for key in ("cells", "alpha", "phi", "mean_size", "shares"):
            np.testing.assert_array_equal(tree["posterior"][key].values, wide["posterior"][key].values, err_msg=key)


@pytest.mark.filterwarnings("ignore::ppdinfer.inference.diagnostics.ConvergenceWarning")
def test_a_move_past_int16_is_refused_and_warned():
    """The detailed values pull the first leaf to 37,000 people; its total's residual (0 - its people, int16) would
    pass -32,767 first: the int16 run holds it there and warns, the int32 one goes on."""
    with pytest.warns(RuntimeWarning, match="narrow_residuals=False"):
        narrow, wide = _pulled_runs(37000)
    first = lambda tree: tree["posterior"]["cells"].values[:, :, 0].sum(axis=-1)  # noqa: E731
    assert narrow.attrs["residual_refusals"] > 0 and "residual_refusals" not in wide.attrs
    assert first(narrow).max() <= 32767 < 36000 < first(wide).min()


def test_narrow_residuals_must_be_a_bool():
    with pytest.raises(ValueError, match="narrow_residuals must be True or False"):
        PersonMoves(narrow_residuals=1)
