"""sample_cells with the real 2,016-cell PL94 histogram and all eleven production queries, against enumeration.

A tract of two block groups holds two people (an exact tract total of 2): the states are the placements of
2 people in 2 x 2,016 cells, 8,130,528 of them, enumerated exactly. Every level measures the eleven
production queries (7,809 queries), with the production strategy's proportions and level shares at a
budget four times the production rho (sigmas half the production ones: two people are then seen, not
pinned down: about 16 effective states, the most probable holding 0.20 of the posterior). The fixed
hyperparameters make the prior a Dirichlet-multinomial of known shares (learn=False).

Enumeration. With v = Q(e_i + e_j) the queries' values and r_q = 1 / (2 sigma_q^2), the log likelihood is
``2 (b_i + b_j) - (d_i + d_j) - 2 G_ij`` + const, b = Q^T (r y), d = Q^T r, G = Q^T diag(r) Q; the log prior
of the module docstring of ppdinfer.census.sampler, for leaf counts N <= 2, is
``g(N_0) + g(N_1) + log beta_i + log beta_j`` (+ ``log((beta_i + 1) / (2 beta_i))`` when i = j) + const,
g(N) = lgamma(N + phi) + N log(m / (phi + m)) - lgamma(N + alpha). Both are checked against
hierarchical_log_prior and NoisyMeasurements.logpdf on states of every kind. An event's probability is a
quadratic form of the posterior matrix: P(f . n = 2) = f^T W f for a 0/1 feature f of the cells.

The allocation is the production one of ppdinfer.census.production.pl94_variances (the strategy
ProductionCandidate20210527US_mult8_add02_dsepJune3's proportions of Tract and Block_Group queries, the
level shares of person_US.ini), at four times its rho.
"""

import math
from fractions import Fraction as F

import arviz as az
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import gammaln

from ppdinfer.census import (
    CellPrior,
    Geography,
    GroupedRelease,
    census_queries,
    hierarchical_log_prior,
    sample_cells,
    sample_people,
)
from ppdinfer.census.pl94 import PERSON, PERSON_QUERIES
from ppdinfer.census.production import pl94_variances
from ppdinfer.mechanisms import NoisyMeasurements

RHO = 4 * F(542, 339) ** 2  # four times the production persons rho
K = PERSON.n_cells
C = 2 * K


def prior_shares():
    """Made-up but plausible shares: a product of margins of hhgq, voting age, Hispanic origin and race."""
    hhgq = [0.93, 0.01, 0.002, 0.01, 0.003, 0.03, 0.005, 0.01]
    race = np.full(63, 0.02 / 57)
    race[:6] = [0.6, 0.12, 0.01, 0.06, 0.002, 0.188]
    return np.einsum("a,b,c,d->abcd", hhgq, [0.22, 0.78], [0.81, 0.19], race / race.sum()).ravel()


FIXED = {"alpha": 30.0, "phi": 5.0, "mean": 3.0, "shares": prior_shares()}
LABELS = PERSON.labels()
PEOPLE = (  # (leaf, cell) of the two people of the confidential table
    (0, LABELS.index("hhgq=household, votingage=18+, hispanic=not, cenrace=white")),
    (1, LABELS.index("hhgq=household, votingage=0-17, hispanic=hispanic, cenrace=sor")),
)


@pytest.fixture(scope="module")
def release():
    geo = Geography(["t", "b0", "b1"], [None, "t", "t"], ["Tract", "Block_Group"])
    census = census_queries(geo, PERSON.table(), {level: list(PERSON_QUERIES) for level in geo.level_names})
    variances = {level: pl94_variances(level, RHO) for level in geo.level_names}
    sigmas = [math.sqrt(variances[geo.level_names[geo.depth[u]]][k]) for u, k in zip(census.unit, census.kind)]
    mech = NoisyMeasurements(census.matrix, sigmas, invariants=census.unit_invariants(["t"], [2]))
    truth = np.zeros(C, dtype=np.int64)
    for leaf, cell in PEOPLE:
        truth[leaf * K + cell] = 1
    return census, mech, mech.release(truth, random_seed=7)


def pair_log_likelihood(queries, rates, y) -> np.ndarray:
    """(C, C): log pi(y | one person in cell i and one in cell j), up to a constant."""
    Q = sp.csc_matrix(queries, dtype=float)
    u = 2 * (Q.T @ (rates * y)) - Q.T @ rates
    out = (Q.T @ Q.multiply(rates[:, None]).tocsc()).toarray()
    out *= -2
    out += u[:, None]
    out += u[None, :]
    return out


def pair_log_prior() -> np.ndarray:
    """(C, C): the log prior of the two people in cells i and j, up to a constant."""
    alpha, phi, m = FIXED["alpha"], FIXED["phi"], FIXED["mean"]
    g = lambda n: gammaln(n + phi) + n * math.log(m / (phi + m)) - gammaln(n + alpha)  # noqa: E731
    beta = np.tile(alpha * FIXED["shares"], 2)
    leaf = np.arange(C) // K
    out = np.where(leaf[:, None] == leaf[None, :], g(2) + g(0), 2 * g(1))
    out += np.log(beta)[:, None] + np.log(beta)[None, :]
    out[np.diag_indices(C)] += np.log((beta + 1) / (2 * beta))
    return out


def posterior(log_density: np.ndarray) -> np.ndarray:
    """The posterior of the states i <= j (upper triangle), zero elsewhere."""
    w = np.exp(log_density - log_density[np.triu_indices(C)].max())
    w = np.triu(w)
    return w / w.sum()


def features() -> dict:
    """0/1 features of the 4,032 cells: how many of the two people have each."""
    axes = np.unravel_index(np.arange(C) % K, PERSON.shape)  # hhgq, votingage, hispanic, cenrace
    own = [np.arange(C) == leaf * K + cell for leaf, cell in PEOPLE]
    return {
        "in block group 0": np.arange(C) < K,
        "hispanic": axes[2] == 1,
        "18+": axes[1] == 1,
        "in group quarters": axes[0] > 0,
        "white alone": axes[3] == 0,
        "sor alone": axes[3] == 5,
        "two or more races": axes[3] >= 6,
        "in person 0's cell": own[0],
        "in person 1's cell": own[1],
    }


def event_probabilities(w: np.ndarray, feats: dict) -> dict:
    """P(exactly c of the two people have feature f), c = 0, 1, 2, as quadratic forms of the posterior."""
    out = {}
    for name, f in feats.items():
        f = f.astype(float)
        both, neither = f @ w @ f, (1 - f) @ w @ (1 - f)
        out.update({(name, 0): neither, (name, 1): 1 - both - neither, (name, 2): both})
    return out


def test_the_enumeration_is_the_library_s_prior_and_likelihood(release):
    census, mech, y = release
    lik, prior = pair_log_likelihood(mech.queries, mech.rates, y), pair_log_prior()
    cell_prior = CellPrior(census)
    (l0, c0), (l1, c1) = PEOPLE
    states = [(l0 * K + c0, l1 * K + c1), (3, 3), (5, 2000), (K + 7, K + 7), (100, K + 50), (0, C - 1)]
    gaps = []
    for i, j in states:
        x = np.zeros(C, dtype=np.int64)
        x[i] += 1
        x[j] += 1
        exact = hierarchical_log_prior(x.reshape(2, K), cell_prior, **FIXED) + mech.logpdf(y, x)[0]
        gaps.append(exact - lik[i, j] - prior[i, j])
    np.testing.assert_allclose(gaps, gaps[0], atol=1e-8)  # one constant for every kind of state


def test_sampler_matches_enumeration_with_the_pl94_histogram(release):
    census, mech, y = release
    lik, prior = pair_log_likelihood(mech.queries, mech.rates, y), pair_log_prior()
    feats = features()
    exact = event_probabilities(posterior(lik + prior), feats)
    # a start of our own: the default (the rounded GLS estimate) cannot hold 2,016 cells (gls_estimate builds
    # a (queries, K, K) array of query covariances: 236 GiB here)
    start = np.zeros(C, dtype=np.int64)
    start[K + PEOPLE[0][1]] = 2
    tree = sample_cells(census, mech, y, draws=1200, tune=200, random_seed=3, learn=False, hyperparameters=FIXED,
                        initial=start, progressbar=False)  # fmt: skip
    cells = tree["posterior"]["cells"].values.reshape(2, 1200, C)
    assert (cells.sum(-1) == 2).all()  # the invariant, every draw
    counts = {name: cells @ f.astype(np.int64) for name, f in feats.items()}
    estimate, mcse = {}, {}
    for (name, c), p in exact.items():
        hits = (counts[name] == c).astype(float)
        estimate[name, c] = hits.mean()
        mcse[name, c] = math.sqrt(p * (1 - p) / float(az.ess(hits)))
    tested = [e for e, p in exact.items() if 0.05 < p < 0.95]  # rarer events: too few excursions to size the error
    assert len(tested) >= 15
    for e in tested:
        assert abs(estimate[e] - exact[e]) < 4 * mcse[e], (e, estimate[e], exact[e], mcse[e])
    # The test would fail with a wrong likelihood: noise sds off by 2x either way, or block group 0's 2,016
    # detailed rows each reading the next cell (an index off by one): the worst event then lies 25, 20 and 22
    # MCSE away (P(one person in each block group), P(both in block group 0)). It would not reliably see a
    # single detailed row off (the one of person 0's cell moves P(someone there) by 3-4 MCSE).
    wrong = {"sigma x 2": lik / 4 + prior, "sigma / 2": 4 * lik + prior}
    shifted = mech.queries.tolil()
    rows = np.flatnonzero((census.kind == "detailed") & (census.unit == 1))
    shifted[rows, rows - rows[0]] = 0
    shifted[rows, (rows - rows[0] + 1) % K] = 1
    wrong["detailed off by one"] = pair_log_likelihood(shifted.tocsr(), mech.rates, y) + prior
    for what, log_density in wrong.items():
        other = event_probabilities(posterior(log_density), feats)
        worst = max(abs(estimate[e] - other[e]) / mcse[e] for e in tested)
        assert worst > 8, (what, worst)


def test_people_sampler_matches_enumeration_with_the_pl94_histogram(release):
    """sample_people (moves of persons, the grouped release: no query matrix) against the same enumeration."""
    census, mech, y = release
    exact = event_probabilities(
        posterior(pair_log_likelihood(mech.queries, mech.rates, y) + pair_log_prior()), features()
    )
    start = np.zeros((2, K), dtype=np.int64)
    start[1, PEOPLE[0][1]] = 2
    grouped = GroupedRelease.from_census(census, mech, y, shape=PERSON.shape)  # neighbours: one axis changed
    tree = sample_people(grouped, draws=1500, tune=300, thin=4, random_seed=3,
                         learn=False, hyperparameters=FIXED, initial=start, progressbar=False)  # fmt: skip
    cells = tree["posterior"]["cells"].values.reshape(2, 1500, C)
    assert (cells.sum(-1) == 2).all()
    tested = 0
    for (name, c), p in exact.items():
        if not 0.05 < p < 0.95:
            continue
        hits = (cells @ features()[name].astype(np.int64) == c).astype(float)
        mcse = math.sqrt(p * (1 - p) / float(az.ess(hits)))
        assert abs(hits.mean() - p) < 4 * mcse, (name, c, hits.mean(), p, mcse)
        tested += 1
    assert tested >= 15
