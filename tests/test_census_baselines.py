"""GLS against a dense constrained weighted least squares solve; TopDown's integer consistency."""

import numpy as np
import pytest
import scipy.linalg

from ppdinfer.census import Geography, TableSpec, census_queries, gls_estimate, largest_remainder, topdown_estimate


def random_tree(rng, depth=3, max_children=3):
    units, parents, frontier = ["r"], [None], ["r"]
    for _ in range(depth - 1):
        nxt = []
        for parent in frontier:
            for _ in range(int(rng.integers(1, max_children + 1))):
                name = f"u{len(units)}"
                units.append(name)
                parents.append(parent)
                nxt.append(name)
        frontier = nxt
    order = rng.permutation(len(units))  # the input order must not matter
    return Geography([units[i] for i in order], [parents[i] for i in order])


def random_problem(seed, invariant):
    rng = np.random.default_rng(seed)
    geo = random_tree(rng, depth=int(rng.integers(2, 5)))
    table = TableSpec(("a", "b", "c"), {"m": ((0, 1), (2,))})
    kinds = {
        name: list(rng.choice(["total", "m", "detailed"], size=int(rng.integers(1, 3)), replace=False))
        for name in geo.level_names[:-1]
    }
    kinds[geo.level_names[-1]] = ["detailed"] + (["total"] if rng.random() < 0.5 else [])
    q = census_queries(geo, table, kinds)
    sigmas = rng.uniform(0.5, 3.0, size=q.n_queries)
    x = rng.integers(0, 20, size=q.n_cells)
    y = q.matrix @ x + rng.normal(0, sigmas)
    invariants = q.unit_invariants([geo.ids[0]], [int(x.sum())]) if invariant else None
    if invariant and seed % 2:  # and a second unit's total too
        u = geo.children[0]
        A2, a2 = q.unit_invariants(
            [geo.ids[0], geo.ids[u]],
            [int(x.sum()), int(x.reshape(geo.n_leaves, 3)[geo.leaf_start[u] : geo.leaf_stop[u]].sum())],
        )
        invariants = (A2, a2)
    return q, y, sigmas, invariants


def dense_gls(q, y, sigmas, invariants):
    """The constrained WLS estimate of Q x and its covariance, by a null-space solve."""
    Q = q.matrix.toarray().astype(float)
    W = np.diag(1 / sigmas**2)
    if invariants is None:
        x0, N = np.zeros(Q.shape[1]), np.eye(Q.shape[1])
    else:
        A, a = (np.asarray(v, dtype=float) for v in invariants)
        x0 = np.linalg.lstsq(A, a, rcond=None)[0]
        N = scipy.linalg.null_space(A)
    M = N.T @ Q.T @ W @ Q @ N
    z = np.linalg.solve(M, N.T @ Q.T @ W @ (y - Q @ x0))
    x = x0 + N @ z
    cov = N @ np.linalg.inv(M) @ N.T
    return x, Q @ x, np.sqrt(np.maximum(np.diag(Q @ cov @ Q.T), 0)), np.sqrt(np.maximum(np.diag(cov), 0))


@pytest.mark.parametrize("invariant", [False, True])
@pytest.mark.parametrize("seed", range(6))
def test_gls_matches_the_dense_solve(seed, invariant):
    q, y, sigmas, invariants = random_problem(seed, invariant)
    fit = gls_estimate(q, y, sigmas, invariants)
    x, qx, qsd, xsd = dense_gls(q, y, sigmas, invariants)
    np.testing.assert_allclose(fit.cell_estimate.ravel(), x, atol=1e-8, rtol=1e-8)
    np.testing.assert_allclose(fit.query_estimate, qx, atol=1e-8, rtol=1e-8)
    # variances to 1e-8 (an invariant's sd is 0, and a square root turns rounding of 1e-16 into 1e-8)
    np.testing.assert_allclose(fit.query_sd**2, qsd**2, atol=1e-8, rtol=1e-8)
    np.testing.assert_allclose(fit.cell_sd.ravel() ** 2, xsd**2, atol=1e-8, rtol=1e-8)
    if invariants is not None:
        A, a = invariants
        np.testing.assert_allclose(np.asarray(A) @ fit.cell_estimate.ravel(), a, atol=1e-8)


def test_gls_refuses_what_it_cannot_do():
    geo = Geography(["t", "b1", "b2"], [None, "t", "t"])
    q = census_queries(geo, TableSpec(("a", "b")), {"level0": ["detailed"], "level1": ["total"]})
    with pytest.raises(ValueError, match="unit 'b2'.*detailed"):
        gls_estimate(q, np.zeros(q.n_queries), 1.0)
    q = census_queries(geo, TableSpec(("a", "b")), {"level1": ["detailed"]})
    with pytest.raises(ValueError, match="row 0 is not the total of a unit"):
        gls_estimate(q, np.zeros(4), 1.0, invariants=(np.array([[1, 0, 1, 0]]), [3]))
    with pytest.raises(ValueError, match="query 2 has noise scale -1.0"):
        gls_estimate(q, np.zeros(4), [1.0, 1.0, -1.0, 1.0])
    with pytest.raises(ValueError, match="y must hold 4"):
        gls_estimate(q, np.zeros(3), 1.0)


@pytest.mark.parametrize("seed", range(4))
def test_topdown_gives_consistent_non_negative_integers(seed):
    q, y, sigmas, _ = random_problem(seed, invariant=False)
    geo = q.geography
    total = int(max(round(y[0]), 5))
    cells = topdown_estimate(q, y, sigmas, invariants=q.unit_invariants([geo.ids[0]], [total]))
    assert cells.dtype == np.int64 and cells.min() >= 0 and cells.sum() == total
    # every unit's table is the sum of its children's: implied by integers at the leaves; and the
    # estimate is close to the truth's scale (not degenerate)
    assert cells.shape == (geo.n_leaves, 3)


def test_topdown_with_production_like_noise_is_close_to_the_truth():
    rng = np.random.default_rng(3)
    geo = random_tree(rng, depth=3, max_children=4)
    q = census_queries(geo, TableSpec(("a", "b")), {name: ["total", "detailed"] for name in geo.level_names})
    x = rng.integers(20, 60, size=q.n_cells)
    y = q.matrix @ x + rng.normal(0, 1.0, size=q.n_queries).round()
    cells = topdown_estimate(q, y, 1.0, invariants=q.unit_invariants([geo.ids[0]], [int(x.sum())]))
    assert cells.sum() == x.sum() and np.abs(cells.ravel() - x).max() <= 6


def test_largest_remainder_keeps_the_sum():
    rng = np.random.default_rng(0)
    for _ in range(50):
        values = rng.exponential(size=int(rng.integers(1, 8)))
        total = int(rng.integers(0, 40))
        out = largest_remainder(values, total)
        assert out.sum() == total and out.min() >= 0
        assert np.abs(out - values * total / values.sum()).max() < 1 + 1e-9
    with pytest.raises(ValueError, match="total must be >= 0"):
        largest_remainder([1.0], -1)


def _dense_children_solution(q, y, sigmas, fixed_parent, kids):
    """The children's tables by one dense bounded least squares, the equalities as heavy penalty rows (a
    reference for the fast solver on small problems)."""
    from scipy.optimize import lsq_linear

    K, m = q.table.n_cells, len(kids)
    rows, targets = [], []
    for j, c in enumerate(kids):
        for k in np.flatnonzero(q.unit == c):
            h = np.zeros(m * K)
            h[j * K + np.array(list(q.table.groups(str(q.kind[k]))[int(q.part[k])]))] = 1.0 / sigmas[k]
            rows.append(h)
            targets.append(y[k] / sigmas[k])
    equality = np.hstack([np.eye(K)] * m)
    A = np.vstack([np.array(rows), 1e4 * equality])
    t = np.concatenate([np.array(targets), 1e4 * fixed_parent])
    return lsq_linear(A, t, bounds=(0, np.inf), method="bvls").x.reshape(m, K)


@pytest.mark.parametrize("seed", range(3))
def test_the_simplex_solver_finds_the_dense_solvers_optimum(seed):
    from ppdinfer.census.baselines import _normal_equations, _observations, _simplex_least_squares

    rng = np.random.default_rng(seed)
    geo = random_tree(rng, depth=2, max_children=5)
    q = census_queries(geo, TableSpec(("a", "b", "c")), {name: ["total", "detailed"] for name in geo.level_names})
    sigmas = rng.uniform(0.5, 3.0, size=q.n_queries)
    y = q.matrix @ rng.integers(0, 8, size=q.n_cells) + rng.normal(0, sigmas)
    kids = geo.children[geo.child_ptr[0] : geo.child_ptr[1]]
    parent = np.array([12.0, 3.0, 0.0])  # includes an empty category: the bound x >= 0 is active
    G, b = _normal_equations(_observations(q, y, sigmas), kids, 3)
    start = np.repeat(parent[None, :] / kids.size, kids.size, axis=0)
    fast = _simplex_least_squares(G, b, parent, start, True, 1e-10, 100_000)
    dense = _dense_children_solution(q, y, sigmas, parent, kids)
    np.testing.assert_allclose(fast.sum(axis=0), parent, atol=1e-9)
    assert fast.min() >= 0
    np.testing.assert_allclose(fast, dense, atol=1e-3)
