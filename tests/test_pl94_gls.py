"""GLS with the real 2,016-cell PL94 table and all eleven production queries, against a dense solve."""

import numpy as np

from ppdinfer.census import Geography, census_queries, gls_estimate
from ppdinfer.census.pl94 import PERSON, PERSON_QUERIES
from ppdinfer.census.production import pl94_variances


def test_tree_gls_equals_the_dense_weighted_least_squares():
    geo = Geography(["t", "b1", "b2"], [None, "t", "t"], ["Tract", "Block_Group"])
    census = census_queries(geo, PERSON.table(), {level: list(PERSON_QUERIES) for level in geo.level_names})
    variance = {level: pl94_variances(level) for level in geo.level_names}
    sigmas = np.array([np.sqrt(variance[geo.level_names[geo.depth[u]]][k]) for u, k in zip(census.unit, census.kind)])
    rng = np.random.default_rng(11)
    truth = rng.poisson(0.05, size=census.n_cells) * rng.integers(1, 40, size=census.n_cells)
    y = census.matrix @ truth + np.round(rng.normal(0, sigmas))
    fit = gls_estimate(census, y, sigmas)
    Q = census.matrix.astype(float)
    W = 1 / sigmas**2
    normal = (Q.T @ Q.multiply(W[:, None])).toarray()
    dense = np.linalg.solve(normal, Q.T @ (W * y))
    np.testing.assert_allclose(fit.cell_estimate.ravel(), dense, atol=1e-6 * np.abs(dense).max())
    covariance = np.linalg.inv(normal)
    np.testing.assert_allclose(fit.cell_sd.ravel(), np.sqrt(np.diag(covariance)), rtol=1e-6)
    query_sd = np.sqrt(np.asarray(Q.multiply(Q @ covariance).sum(axis=1)).ravel())
    np.testing.assert_allclose(fit.query_sd, query_sd, rtol=1e-5)


def test_an_unmeasured_leaf_is_estimated_from_its_parent_and_siblings():
    # a block group the spine optimization bypassed has no rows: its cells are the tract's minus its sibling's
    from ppdinfer.census import TableSpec

    geo = Geography(["t", "b1", "b2"], [None, "t", "t"], ["Tract", "Block_Group"])
    full = census_queries(geo, TableSpec(("a", "b")), {"Tract": ["total", "detailed"], "Block_Group": ["detailed"]})
    keep = full.unit != geo.index("b2")
    from ppdinfer.census.geography import CensusQueries

    census = CensusQueries(geo, full.table, full.matrix[keep], full.unit[keep], full.kind[keep], full.part[keep])
    y = np.array([31.0, 20.0, 12.0, 7.0, 5.0])  # t: total, a, b; b1: a, b
    sigmas = np.array([1.0, 2.0, 2.0, 1.5, 1.5])
    fit = gls_estimate(census, y, sigmas)
    Q, W = census.matrix.toarray().astype(float), 1 / sigmas**2
    dense = np.linalg.solve(Q.T @ (W[:, None] * Q), Q.T @ (W * y))
    np.testing.assert_allclose(fit.cell_estimate.ravel(), dense, rtol=1e-6)
    np.testing.assert_allclose(fit.cell_sd.ravel(), np.sqrt(np.diag(np.linalg.inv(Q.T @ (W[:, None] * Q)))), rtol=1e-6)
