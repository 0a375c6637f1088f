"""Issue 41, the census layer's inputs and baselines: scale-free TopDown, one invariant check, noise scales
logpdf can compute, tuple ids, table specs, unsatisfiable invariants, level names, GLS precision."""

import time

import mpmath
import numpy as np
import pandas as pd
import pytest
import scipy.sparse

from ppdinfer.census import (
    Geography,
    TableSpec,
    census_queries,
    gls_estimate,
    largest_remainder,
    project_columns,
    topdown_estimate,
)
from ppdinfer.invariants import _nested_totals_feasible, checked_invariants
from ppdinfer.mechanisms import NoisyMeasurements


def county_problem(seed=0, table=("a", "b"), margins=None, kinds=None):
    """A state, two counties, four block groups; noisy measurements of known cells."""
    geo = Geography(["s", "c1", "c2", "b1", "b2", "b3", "b4"], [None, "s", "s", "c1", "c1", "c2", "c2"])
    spec = TableSpec(table, margins or {})
    q = census_queries(
        geo, spec, kinds or {"level0": ["total", "detailed"], "level1": ["total"], "level2": ["detailed"]}
    )
    rng = np.random.default_rng(seed)
    x = rng.integers(5, 30, size=q.n_cells)
    return q, x, q.matrix @ x + rng.normal(0, 1, q.n_queries).round()


# -- item 12: TopDown does not depend on the overall noise scale -------------------------------------------
@pytest.mark.parametrize("invariant", [False, True])
def test_topdown_is_unchanged_when_every_sigma_is_multiplied_by_a_constant(invariant):
    q, x, y = county_problem()
    sigmas = np.random.default_rng(1).uniform(0.5, 2.0, q.n_queries)
    inv = q.unit_invariants(["s"], [int(x.sum())]) if invariant else None
    reference = topdown_estimate(q, y, sigmas, inv)
    for c in (1e-3, 1e6, 1e12):  # before: a ridge of 1e-6 and a curvature floor of 1e-12 (zeros at 1e12)
        np.testing.assert_array_equal(topdown_estimate(q, y, c * sigmas, inv), reference)


# -- item 13 and the negative totals: one invariant check for gls, topdown and NoisyMeasurements ---------
@pytest.mark.parametrize(
    "units, totals",
    [(["s", "s"], [100, 120]), (["s", "c1", "c2"], [100, 30, 30]), (["c1", "s", "c2"], [80, 100, 30])],
)
def test_contradictory_unit_totals_are_refused_everywhere(units, totals):
    q, _x, y = county_problem()
    geo, A = q.geography, np.zeros((len(units), q.n_cells), dtype=np.int64)
    for row, unit in enumerate(units):
        u = geo.index(unit)
        A[row, geo.leaf_start[u] * 2 : geo.leaf_stop[u] * 2] = 1
    calls = [
        lambda: gls_estimate(q, y, 1.0, (A, totals)),  # before: the last total won, or 60 for a state of 100
        lambda: NoisyMeasurements(q.matrix, 1.0, invariants=(A, totals)),
        lambda: q.unit_invariants(units, totals),
    ]
    if set(units) == {"s"}:  # topdown takes the root's total only
        calls.append(lambda: topdown_estimate(q, y, 1.0, (A, totals)))
    for call in calls:
        with pytest.raises(ValueError, match="no table of non-negative integer cells"):
            call()


def test_consistent_totals_are_kept_and_a_negative_total_is_refused():
    q, x, y = county_problem()
    c1 = int(x[:4].sum())
    inv = q.unit_invariants(["s", "s", "c1", "c2"], [100, 100, c1, 100 - c1])  # a repeat, and parts covering it
    fit = gls_estimate(q, y, 1.0, inv)
    np.testing.assert_allclose(fit.unit_estimate[[0, 1, 2]].sum(axis=1), [100, c1, 100 - c1], rtol=1e-12)
    np.testing.assert_allclose(fit.unit_estimate[0], fit.cell_estimate.sum(axis=0), rtol=1e-12)
    A = q.unit_invariants(["s"], [10])[0]
    for call in (lambda: gls_estimate(q, y, 1.0, (A, [-10])), lambda: topdown_estimate(q, y, 1.0, (A, [-10]))):
        with pytest.raises(ValueError, match="-10 < 0"):  # before: GLS tables summing to -10; numpy's error
            call()
    with pytest.raises(ValueError, match="totals must be non-negative"):
        q.unit_invariants(["s"], [-10])
    with pytest.raises(ValueError, match="totals must hold integers"):
        q.unit_invariants(["s"], [10.7])  # before: truncated to 10


# -- item 14: noise scales logpdf cannot compute --------------------------------------------------------------
@pytest.mark.parametrize(
    "sigma, noise", [(1e-160, "gaussian"), (1e155, "gaussian"), (1e-320, "laplace"), (np.inf, "gaussian")]
)
def test_noise_scales_outside_the_computable_range_are_refused_at_construction(sigma, noise):
    with pytest.raises(ValueError, match="sigmas: query 1 has noise scale"):
        NoisyMeasurements(np.eye(2, dtype=int), [1.0, sigma], noise=noise)


def test_noise_scales_at_the_ends_of_the_range_give_finite_log_densities():
    for sigma in (1e-100, 1e15):
        mech = NoisyMeasurements(np.eye(2, dtype=int), sigma)
        assert np.all(np.isfinite(mech.logpdf([1, 2], [[1, 2], [1, 3]])))
    with pytest.raises(ValueError, match=r"\[1e-100, 1e\+15\]"):
        NoisyMeasurements(np.eye(2, dtype=int), 1e-160)


# -- item 15: tuple ids ---------------------------------------------------------------------------------
def test_tuple_unit_ids_are_one_id_each():
    units = [("PA", 0), ("PA", 1), ("PA", 2)]
    geo = Geography(units, [None, ("PA", 0), ("PA", 0)])
    assert geo.n_units == 3 and geo.ids.shape == (3,) and geo.ids[2] == ("PA", 2)  # before: 6 units
    assert geo.index(("PA", 2)) == 2
    q = census_queries(geo, TableSpec(("a",)), {"level1": ["detailed"]})
    assert q.unit_invariants([("PA", 1)], [4])[0].tolist() == [[1, 0]]
    with pytest.raises(TypeError, match="hashable"):
        Geography(["s", ["a"]], [None, "s"])


# -- item 16: table specs -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "margins, match",
    [
        ({"m": ((0.5, 1),)}, "must hold integers"),  # before: truncated to cell 0
        ({"m": ((0, 0),)}, "lists a cell twice"),  # before: a matrix entry of 2
        ({"m": ()}, "has no group"),  # before: numpy's 'need at least one array to concatenate'
        ({"m": ((),)}, "outside 0..1 or empty"),
        ({"m": "01"}, "must be a sequence"),
        ({1: ((0,),), "1": ((1,),)}, "named twice"),
    ],
)
def test_bad_margins_are_refused(margins, match):
    with pytest.raises((ValueError, TypeError), match=match):
        TableSpec(("a", "b"), margins)


def test_labels_levels_and_queries_are_checked():
    with pytest.raises(TypeError, match="labels must be a sequence"):
        TableSpec("ab")
    geo = Geography(["s", "a"], [None, "s"])
    with pytest.raises(ValueError, match="lists no query kind"):
        census_queries(geo, TableSpec(("a",)), {"level0": []})
    with pytest.raises(TypeError, match="frame must be a pandas DataFrame"):
        Geography.from_frame({"unit": ["s"], "parent": [None]})
    with pytest.raises(TypeError, match="level_names must be a sequence"):
        Geography(["s", "a"], [None, "s"], "ab")
    assert isinstance(Geography.from_frame(pd.DataFrame({"unit": ["s"], "parent": [None]})), Geography)


# -- item 17: invariants with no non-negative integer solution -----------------------------------------------
@pytest.mark.parametrize(
    "A, a",
    [
        ([[2, 0]], [3]),  # no integer solution
        ([[1, 0], [1, 1]], [5, 3]),  # n1 = -2
        ([[1, -1], [0, 1]], [-3, 1]),  # n0 = -2: found by the general search (not 0/1 rows)
        ([[1, 1, 0], [0, 1, 1]], [1, 3]),  # overlapping rows: feasible, n = (0, 1, 2)
    ],
)
def test_invariants_without_a_non_negative_integer_table_are_refused(A, a):
    n_cells = len(A[0])
    if a == [1, 3]:
        assert checked_invariants((A, a), n_cells)[1].tolist() == a
        return
    with pytest.raises(ValueError, match="no table of non-negative integer cells"):  # before: accepted
        NoisyMeasurements(np.eye(n_cells, dtype=int), 1.0, invariants=(A, a))


def test_the_invariant_check_is_fast_at_a_states_scale():
    cells = 140_000  # 10,000 block groups x 14 cells, the state and 67 county totals
    A = np.zeros((68, cells), dtype=np.int64)
    A[0] = 1
    edges = np.linspace(0, cells, 68).astype(int)
    for i in range(67):
        A[i + 1, edges[i] : edges[i + 1]] = 1
    start = time.perf_counter()
    checked_invariants((A, np.r_[67_000, np.full(67, 1000)]), cells)
    with pytest.raises(ValueError, match="no table"):
        checked_invariants((A, np.r_[66_999, np.full(67, 1000)]), cells)
    assert time.perf_counter() - start < 10.0  # about 1 s; the general MILP took 18 s for one


# -- item 18: level names -------------------------------------------------------------------------------------
def test_duplicate_level_names_are_refused():
    with pytest.raises(ValueError, match="level_names must be distinct"):
        Geography(["s", "a", "b"], [None, "s", "a"], ["L", "M", "L"])


# -- item 22: GLS precision over a wide range of sigmas, against a 50-digit solve ----------------------------
def mpmath_gls(q, y, sigmas, invariants):
    """The constrained GLS means and sds of the cells by the KKT system inverted at 50 digits."""
    mpmath.mp.dps = 50
    Q = q.matrix.toarray()
    A, a = invariants
    C, m = Q.shape[1], A.shape[0]
    weights = [1 / mpmath.mpf(float(s)) ** 2 for s in sigmas]
    kkt, rhs = mpmath.zeros(C + m, C + m), mpmath.zeros(C + m, 1)
    for i in range(C):
        rows = np.flatnonzero(Q[:, i])
        rhs[i] = mpmath.fsum(weights[r] * mpmath.mpf(float(y[r])) for r in rows)
        for j in range(C):
            kkt[i, j] = mpmath.fsum(weights[r] for r in rows if Q[r, j])
        for k in range(m):
            kkt[i, C + k] = kkt[C + k, i] = int(A[k, i])
    for k in range(m):
        rhs[C + k] = int(a[k])
    inverse = mpmath.inverse(kkt)
    solution = inverse * rhs
    means = np.array([float(solution[i]) for i in range(C)])
    sds = np.array([float(mpmath.sqrt(inverse[i, i])) for i in range(C)])
    return means, sds


def test_gls_keeps_its_digits_when_the_sigmas_span_a_wide_range():
    q, x, _ = county_problem(
        table=("a", "b", "c"),
        margins={"m": ((0, 1), (2,))},
        kinds={"level0": ["m"], "level1": ["detailed", "total"], "level2": ["detailed", "total"]},
    )
    rng = np.random.default_rng(6)
    sigmas = rng.choice([0.05, 3000.0], size=q.n_queries)
    y = q.matrix @ x + rng.normal(0, sigmas)
    inv = q.unit_invariants(["s"], [int(x.sum())])
    fit = gls_estimate(q, y, sigmas, inv)
    means, sds = mpmath_gls(q, y, sigmas, inv)
    # before: an sd 16x off (covariances as differences of larger ones), means off by 9e-6; now 3e-7, 4e-10
    np.testing.assert_allclose(fit.cell_sd.ravel(), sds, rtol=1e-5)
    np.testing.assert_allclose(fit.cell_estimate.ravel(), means, rtol=0, atol=1e-6 * np.abs(means).max())
    with pytest.raises(ValueError, match="a ratio of 1e\\+06 > 1e\\+05"):
        gls_estimate(q, y, np.where(sigmas > 1, 1000.0, 1e-3), inv)


# -- siblings: every argument of the baselines checked --------------------------------------------------------
def test_baseline_arguments_are_checked():
    q, _x, y = county_problem()
    with pytest.raises(ValueError, match="tol must be a positive finite number"):
        topdown_estimate(q, y, 1.0, tol=-1.0)
    with pytest.raises(ValueError, match="limit must be a positive integer"):
        topdown_estimate(q, y, 1.0, limit=0)
    bare = census_queries(q.geography, q.table, {"level2": ["detailed"]})
    # an unmeasured root takes its table from all the measurements (GLS), not an even split or all zeros
    cells = topdown_estimate(bare, y[-8:], 1.0)
    expected = np.maximum(gls_estimate(bare, y[-8:], 1.0).unit_estimate[0], 0)
    assert cells.min() >= 0 and cells.sum() == round(expected.sum())
    np.testing.assert_array_less(np.abs(cells.sum(axis=0) - expected), 1.0 + 1e-9)
    with pytest.raises(ValueError, match="total must hold integers"):
        largest_remainder([1.0, 2.0], 7.5)  # before: 7
    with pytest.raises(ValueError, match="values must be finite"):
        largest_remainder([np.nan, 2.0], 3)
    with pytest.raises(ValueError, match="values must be a non-empty 1-D array"):
        largest_remainder([], 3)  # before: an empty result summing to 0, not 3
    with pytest.raises(ValueError, match="sums must be finite"):
        project_columns(np.ones((2, 1)), [np.nan])  # before: accepted, NaN columns


def test_largest_remainder_of_huge_values_and_cell_queries_bounds():
    assert largest_remainder([1e308, 1e308, 0.0], 3).tolist() == [2, 1, 0]  # before: [1, 1, 1], an overflow
    q, _x, _y = county_problem()
    for cell in (-1, 8):  # before: no query, silently (-1), and numpy's IndexError (8)
        with pytest.raises(ValueError, match="cell must be one cell index in 0..7"):
            q.cell_queries(cell)


def test_the_exact_reasoning_for_nested_totals_agrees_with_brute_force():
    """Nested-or-disjoint 0/1 totals (decided without the MILP) against trying every small table."""
    rng = np.random.default_rng(0)
    sets = [range(5), range(3), range(3, 5), range(2), range(1), range(3, 4), range(2, 3)]
    tables = np.array(np.meshgrid(*[np.arange(5)] * 5, indexing="ij")).reshape(5, -1).T
    decided = 0
    for _ in range(150):
        rows = rng.choice(len(sets), size=int(rng.integers(1, 5)))
        A = np.zeros((rows.size, 5), dtype=np.int64)
        for i, r in enumerate(rows):
            A[i, list(sets[r])] = 1
        a = rng.integers(0, 5, size=rows.size)
        expected = bool(np.any(np.all(tables @ A.T == a, axis=1)))
        assert _nested_totals_feasible(scipy.sparse.csr_matrix(A), a) is expected, (A.tolist(), a.tolist())
        decided += expected
    assert 20 < decided < 130  # both answers exercised


def test_a_feasibility_search_that_runs_out_of_time_says_so(monkeypatch):
    import ppdinfer.invariants

    monkeypatch.setattr(ppdinfer.invariants, "FEASIBILITY_SECONDS", 1e-9)
    rng = np.random.default_rng(0)
    A = rng.integers(0, 7, size=(30, 60))  # general integer rows: the MILP, not the exact reasoning
    with pytest.raises(RuntimeError, match="feasibility search failed"):
        checked_invariants((A, A @ rng.integers(0, 9, 60)), 60)
