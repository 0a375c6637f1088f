"""sample_people (moves of persons over a GroupedRelease) against enumeration and against sample_cells; the grouped
release against the query-matrix release it replaces.

Enumeration: a tract of two block groups with two cells each, every state with cells up to 22 (234,256 states;
the posterior beyond them is below 1e-9), the fixed hyperparameters' prior (:func:`hierarchical_log_prior`, checked
on states) times NoisyMeasurements' likelihood: with no invariant (people arrive and leave), and with the tract's
total exact (people move between the block groups), for Gaussian and Laplace noise.
"""

import itertools
import math
from dataclasses import replace

import arviz as az
import numpy as np
import pytest
from scipy.special import gammaln

from ppdinfer.census import (
    PERSON,
    BoundBlock,
    CellPrior,
    Geography,
    GroupedRelease,
    LeafExposure,
    PersonMoves,
    TableSpec,
    census_queries,
    grouped_release,
    hierarchical_log_prior,
    read_nmf,
    sample_cells,
    sample_people,
    synthetic_pl94_state,
    write_nmf,
)
from ppdinfer.census import people as people_module
from ppdinfer.census.grouped_release import UNBOUNDED
from ppdinfer.mechanisms import NoisyMeasurements

FIXED = {"alpha": 3.0, "phi": 5.0, "mean": 8.0, "shares": [0.6, 0.4]}
TRUTH = np.array([6, 3, 2, 5])
TOP = 23  # cells 0..22


def _small(noise: str, total: bool):
    geo = Geography(["t", "b1", "b2"], [None, "t", "t"], ["Tract", "Block_Group"])
    census = census_queries(geo, TableSpec(("a", "b")), {"Tract": ["total"], "Block_Group": ["total", "detailed"]})
    invariants = census.unit_invariants(["t"], [int(TRUTH.sum())]) if total else None
    mech = NoisyMeasurements(census.matrix, [3.0] + [2.0] * 6, noise=noise, invariants=invariants)
    return census, mech, mech.release(TRUTH, random_seed=11)


def _log_prior(states: np.ndarray, fixed=FIXED, m=None, open_cells=None) -> np.ndarray:
    """The fixed hyperparameters' log prior of (S, leaves, cells) states, up to a constant (m: the leaves' mean
    sizes, default the fixed mean; open_cells: (leaves, cells) bools, the cells each leaf may hold, its composition
    the Dirichlet-multinomial over them, of total alpha x their share; default all)."""
    alpha, phi = fixed["alpha"], fixed["phi"]
    m = np.asarray(fixed["mean"] if m is None else m, dtype=float)
    shares = np.asarray(fixed["shares"], dtype=float)
    beta = alpha * shares
    total = alpha if open_cells is None else alpha * (np.asarray(open_cells, dtype=float) * shares).sum(axis=1)
    N = states.sum(axis=2)
    held = np.where(N > 0, gammaln(N + total) - gammaln(np.maximum(total, 1e-300)), 0.0)  # 0 for an empty leaf
    out = gammaln(N + phi) + N * np.log(m / (phi + m)) - held
    out = out + (gammaln(states + beta) - gammaln(states + 1)).sum(axis=2)
    return out.sum(axis=1)


def _exact(census, mech, y) -> tuple[np.ndarray, np.ndarray]:
    states = np.array(list(itertools.product(range(TOP), repeat=4)))
    if mech.invariant_matrix is not None:
        states = states[states.sum(axis=1) == TRUTH.sum()]
    log = _log_prior(states.reshape(-1, 2, 2)) + mech.logpdf(y, states)
    w = np.exp(log - log.max())
    return states, w / w.sum()


def _exact_moments(p, f) -> tuple[float, float]:
    """The mean and sd of f under the exact weights p."""
    exact = float(p @ f)
    return exact, math.sqrt(max(float(p @ f**2) - exact**2, 0.0))


def _assert_exact_mean(p, f, x, name) -> float:
    """The draws x (chain, draw) have the exact mean of f under p within 4.5 Monte Carlo standard errors (ESS-based);
    returns that standard error."""
    exact, sd = _exact_moments(p, f)
    x = np.asarray(x, dtype=float)
    mcse = sd / math.sqrt(float(az.ess(x)))
    assert abs(x.mean() - exact) < 4.5 * mcse, (name, x.mean(), exact, mcse)
    return mcse


def test_the_enumeration_is_the_library_s_prior():
    census = _small("gaussian", False)[0]
    prior = CellPrior(census)
    states = np.array([[0, 0, 0, 0], [6, 3, 2, 5], [22, 0, 1, 9], [3, 3, 3, 3]])
    ours = _log_prior(states.reshape(-1, 2, 2))
    library = [hierarchical_log_prior(s.reshape(2, 2), prior, **FIXED) for s in states]
    np.testing.assert_allclose(np.subtract(library, ours), library[0] - ours[0], atol=1e-9)
    # where bounds close a leaf's cells, its composition is the Dirichlet-multinomial over those it may hold
    states = np.array([[0, 0, 0, 0], [6, 0, 2, 5], [0, 0, 1, 9], [3, 0, 0, 0]])
    held = np.array([[True, False], [True, True]])
    ours = _log_prior(states.reshape(-1, 2, 2), open_cells=held)
    library = [hierarchical_log_prior(s.reshape(2, 2), prior, **FIXED, open_cells=held) for s in states]
    np.testing.assert_allclose(np.subtract(library, ours), library[0] - ours[0], atol=1e-9)
    plain = [hierarchical_log_prior(s.reshape(2, 2), prior, **FIXED) for s in states]
    assert np.ptp(np.subtract(library, plain)) > 0.5  # the closed cell changes the prior of b1's total
    with pytest.raises(ValueError, match="open_cells closes"):
        hierarchical_log_prior(np.array([[1, 1], [0, 0]]), prior, **FIXED, open_cells=held)


@pytest.mark.parametrize("noise", ["gaussian", "laplace"])
@pytest.mark.parametrize("total", [False, True], ids=["no invariant", "exact tract total"])
def test_people_sampler_matches_enumeration(noise, total):
    census, mech, y = _small(noise, total)
    states, p = _exact(census, mech, y)
    assert p[states.max(axis=1) == TOP - 1].sum() < 1e-9  # the grid holds the posterior
    release = GroupedRelease.from_census(census, mech, y)
    tree = sample_people(release, draws=3000, tune=300, thin=2, random_seed=5, learn=False, hyperparameters=FIXED,
                         progressbar=False)  # fmt: skip
    cells = tree["posterior"]["cells"].values.reshape(2, 3000, 4)
    if total:
        assert (cells.sum(axis=-1) == TRUTH.sum()).all()
    features = {f"cell {c}": states[:, c] for c in range(4)}
    features["block group 1 total"] = states[:, :2].sum(axis=1)
    features["tract total"] = states.sum(axis=1)
    features["b1 larger"] = (states[:, :2].sum(axis=1) > states[:, 2:].sum(axis=1)).astype(float)
    drawn = {f"cell {c}": cells[..., c] for c in range(4)}
    drawn["block group 1 total"] = cells[..., :2].sum(axis=-1)
    drawn["tract total"] = cells.sum(axis=-1)
    drawn["b1 larger"] = (cells[..., :2].sum(axis=-1) > cells[..., 2:].sum(axis=-1)).astype(float)
    checked = 0
    for name, f in features.items():
        if _exact_moments(p, f)[1] < 1e-9:
            continue
        _assert_exact_mean(p, f, drawn[name], name)
        checked += 1
    assert checked >= 6


@pytest.mark.parametrize("total", [False, True], ids=["no invariant", "exact tract total"])
def test_people_sampler_keeps_bounds_and_matches_enumeration(total):
    """Bounds (the hhgq inequalities' kind) at both levels: the posterior is the enumeration's restricted to them."""
    census, mech, y = _small("gaussian", total)
    free = GroupedRelease.from_census(census, mech, y)
    bounds = (
        BoundBlock(1, "leaf", np.array([0, 1]), np.array([[4, 0], [0, 4]]), np.array([[9, UNBOUNDED], [UNBOUNDED, 8]])),
        BoundBlock(0, "tract", np.array([0, -1]), np.array([[-UNBOUNDED]]), np.array([[11]])),
    )
    release = GroupedRelease(free.geography, free.table, free.blocks, free.power, free.unit_totals,
                             free.structural_zeros, bounds=bounds)  # fmt: skip
    states, p = _exact(census, mech, y)
    a, b = states[:, [0, 2]], states[:, [1, 3]]
    inside = (a[:, 0] >= 4) & (a[:, 0] <= 9) & (b[:, 1] >= 4) & (b[:, 1] <= 8) & (a.sum(axis=1) <= 11)
    p = np.where(inside, p, 0.0) / p[inside].sum()
    start = np.array([[5, 2], [3, 6]]) if total else np.array([[5, 0], [0, 5]])
    tree = sample_people(release, draws=3000, tune=300, thin=2, random_seed=9, learn=False, hyperparameters=FIXED,
                         initial=start, progressbar=False)  # fmt: skip
    cells = tree["posterior"]["cells"].values.reshape(-1, 4)
    assert all(release.meets_bounds(c.reshape(2, 2)) for c in cells[::50])
    assert (cells[:, 0] >= 4).all() and (cells[:, 0] <= 9).all() and (cells[:, 0] + cells[:, 2] <= 11).all()
    for c in range(4):
        _assert_exact_mean(p, states[:, c], tree["posterior"]["cells"].values.reshape(2, 3000, 4)[..., c], c)


def _hierarchy():
    ids, parents = ["s"], [None]
    for c in range(2):
        ids.append(f"c{c}")
        parents.append("s")
        for t in range(2):
            ids.append(f"c{c}t{t}")
            parents.append(f"c{c}")
            for b in range(3):
                ids.append(f"c{c}t{t}b{b}")
                parents.append(f"c{c}t{t}")
    return Geography(ids, parents, ["State", "County", "Tract", "Block_Group"])


def test_people_sampler_learns_the_hyperparameters_as_sample_cells_does():
    """The two samplers share one posterior (prior, hyperparameters and likelihood): learning every hyperparameter,
    their posterior means of every cell, of phi and of each county's alpha agree within their Monte Carlo errors."""
    geo = _hierarchy()
    spec = TableSpec(("a", "b", "c", "d"))
    census = census_queries(geo, spec, {level: ["total", "detailed"] for level in geo.level_names})
    rng = np.random.default_rng(4)
    truth = rng.poisson(np.tile([9.0, 4.0, 1.0, 0.3], geo.n_leaves))
    sigmas = np.where(geo.depth[census.unit] == 3, 1.5, 3.0)
    mech = NoisyMeasurements(census.matrix, sigmas, invariants=census.unit_invariants(["s"], [int(truth.sum())]))
    y = mech.release(truth, random_seed=6)
    dense = sample_cells(census, mech, y, draws=1500, tune=500, random_seed=1, progressbar=False)
    sparse = sample_people(GroupedRelease.from_census(census, mech, y), draws=1500, tune=500, thin=3, random_seed=2,
                           progressbar=False)  # fmt: skip
    worst = 0.0
    for name in ("cells", "phi", "alpha"):
        a, b = dense["posterior"][name], sparse["posterior"][name]
        ess_a, ess_b = az.ess(a.astype(float)), az.ess(b.astype(float))
        mcse = np.sqrt(a.var(("chain", "draw")) / ess_a + b.var(("chain", "draw")) / ess_b)
        z = np.abs(a.mean(("chain", "draw")) - b.mean(("chain", "draw"))) / np.maximum(mcse, 1e-9)
        worst = max(worst, float(z.max()))
    assert worst < 4.5, worst


@pytest.fixture(scope="module")
def file_release(tmp_path_factory):
    root = tmp_path_factory.mktemp("nmf")
    state = synthetic_pl94_state(["Fulton"], random_seed=3, levels=("State", "County", "Tract", "Block_Group"))
    write_nmf(root, state, random_seed=4)
    return read_nmf(root, 42, state_total=int(state.persons.sum())), state


@pytest.mark.parametrize("coarse", [False, True], ids=["2,016 cells", "28 cells"])
def test_the_grouped_release_is_the_matrix_release(file_release, coarse):
    """grouped_release reads a file into the same likelihood and invariants as NoisyMeasurementFile.release (its
    query matrix), for the full histogram and a coarser table; from_census of the matrix release is the same too."""
    nmf, state = file_release
    table = PERSON.coarsen({"votingage": None, "hispanic": None, "cenrace": "major"}) if coarse else None
    grouped = grouped_release(nmf, table)
    census, mech, y = nmf.release(table)
    again = GroupedRelease.from_census(census, mech, y)
    K = census.table.n_cells
    geo = grouped.geography
    ranges = lambda r: {(int(geo.leaf_start[u]), int(geo.leaf_stop[u]), t) for u, t in r.unit_totals.items()}  # noqa: E731
    assert grouped.table.n_cells == K and ranges(grouped) == ranges(again) == {
        (0, geo.n_leaves, int(state.persons.sum()))
    }
    if not coarse:
        assert grouped.structural_zeros.sum() == 126 and np.array_equal(
            grouped.structural_zeros, again.structural_zeros
        )
    rng = np.random.default_rng(0)
    gaps = []
    for _ in range(3):
        x = rng.poisson(0.3, size=census.n_cells)
        x.reshape(-1, K)[:, grouped.structural_zeros] = 0
        exact = float(mech.logpdf(y, x)[0] - mech.log_norms.sum()) if mech.invariant_matrix is None else None
        if exact is None:  # the invariants make logpdf -inf off them: the likelihood alone
            residual = np.abs(y - mech.queries @ x).astype(float)
            exact = -float((residual**mech.power) @ mech.rates)
        gaps.append([grouped.log_likelihood(x) - exact, again.log_likelihood(x) - exact])
    np.testing.assert_allclose(gaps, 0.0, atol=1e-6 * abs(exact))


def test_people_sampler_on_a_file_keeps_the_invariants_and_follows_the_truth(file_release):
    nmf, state = file_release
    release = grouped_release(nmf)
    coarse = PERSON.coarsen({"votingage": None, "hispanic": None, "cenrace": "major"})
    assert {b.name for b in release.bounds} == {"hhgq_total_lb_con", "hhgq_total_ub_con"}
    full = sample_people(release, draws=20, tune=20, random_seed=2, progressbar=False)["posterior"]["cells"].values
    for draw in full.reshape(-1, *full.shape[2:])[::5]:  # every draw inside the file's hhgq bounds
        assert all(held.all() for held in nmf.check_constraints(draw).values())
    tree = sample_people(release, draws=40, tune=40, random_seed=1, record=coarse, progressbar=False)
    cells = tree["posterior"]["cells"]
    assert cells.shape[-1] == 28 and (cells.sum(("unit", "cell")) == state.persons.sum()).all()
    truth = coarse.collapse(np.asarray(state.persons.todense()) if hasattr(state.persons, "todense") else state.persons)
    error = np.abs(cells.mean(("chain", "draw")).values - truth).mean()
    assert error < 3.0, error  # block-group cells of hundreds of people, within a few persons


@pytest.mark.filterwarnings("ignore::ppdinfer.inference.diagnostics.ConvergenceWarning")  # short chains
def test_an_exact_total_of_zero_is_a_unit_total_not_structural_zeros():
    """A tract whose exact total is 0 holds nobody in every draw (its zero is not read as structural zeros of the
    table, which would have to be the same cells in every leaf), though its sibling tract has no exact total: the
    sibling's leaves exchange people among themselves only."""
    geo = Geography(["s", "t1", "t2", "b1", "b2", "b3"], [None, "s", "s", "t1", "t1", "t2"])
    census = census_queries(geo, TableSpec(("a", "b")), {"level2": ["total", "detailed"]})
    mech = NoisyMeasurements(census.matrix, 2.0, invariants=census.unit_invariants(["s", "t2"], [9, 0]))
    release = GroupedRelease.from_census(census, mech, mech.release([4, 2, 1, 2, 0, 0], random_seed=1))
    assert release.unit_totals == {0: 9, 2: 0} and not release.structural_zeros.any()
    tree = sample_people(release, draws=30, tune=30, random_seed=2, progressbar=False)
    cells = tree["posterior"]["cells"].values
    assert (cells[:, :, 2].sum(axis=-1) == 0).all() and (cells.sum(axis=(2, 3)) == 9).all()
    # an exact tract between two runs of its parent's other leaves: refused, the runs' split could not move
    geo = Geography(["s", "t1", "t2", "t3", "b1", "b2", "b3"], [None, "s", "s", "s", "t1", "t2", "t3"])
    census = census_queries(geo, TableSpec(("a", "b")), {"level2": ["total"]})
    mech = NoisyMeasurements(census.matrix, 2.0, invariants=census.unit_invariants(["s", "t2"], [9, 3]))
    release = GroupedRelease.from_census(census, mech, mech.release([4, 2, 1, 2, 0, 0], random_seed=1))
    with pytest.raises(ValueError, match="not consecutive"):
        sample_people(release, draws=5, tune=5, progressbar=False)


def test_bad_input_is_refused():
    census, mech, y = _small("gaussian", True)
    release = GroupedRelease.from_census(census, mech, y)
    with pytest.raises(ValueError, match="record must be None or a Coarsening"):
        sample_people(release, record="major", progressbar=False)
    with pytest.raises(ValueError, match="breaks the exact total"):
        sample_people(release, initial=[1, 1, 1, 1], progressbar=False)
    with pytest.raises(ValueError, match="partners"):
        PersonMoves(partners=(0.8, 0.5))
    with pytest.raises(ValueError, match="within"):
        PersonMoves(within=-1)
    with pytest.raises(ValueError, match="line_turns must be a probability"):
        PersonMoves(line_turns=1.5)
    with pytest.raises(ValueError, match="second_axis must be an axis"):
        PersonMoves(second_axis=-2)
    with pytest.raises(ValueError, match="second_axis 3 is not an axis of the release's 1-axis table"):
        sample_people(release, moves=PersonMoves(second_axis=3), progressbar=False)
    with pytest.raises(ValueError, match="moves must be a PersonMoves"):
        sample_people(release, moves={"within": 2}, progressbar=False)
    with pytest.raises(ValueError, match="GroupedRelease"):
        sample_people(census, progressbar=False)
    odd = NoisyMeasurements(census.matrix, 2.0, invariants=(np.array([[1, 0, 1, 0]]), np.array([8])))
    with pytest.raises(ValueError, match="neither a unit's total nor a zero"):
        GroupedRelease.from_census(census, odd, y)


def test_stored_draws_beyond_the_memory_guard_are_refused(monkeypatch):
    census, mech, y = _small("gaussian", True)
    monkeypatch.setattr(people_module, "DRAWS_BYTES", 1000)
    with pytest.raises(ValueError, match="record a coarser table"):
        sample_people(GroupedRelease.from_census(census, mech, y), draws=100, progressbar=False)


def test_bump_trades_keep_the_posterior():
    """Bump trades (with a few moves inside each leaf) between two leaves of exact, unequal totals (12 and 4, so
    the trade's proposal ratio N_src / N_dst matters; a small alpha, so that compositions are lopsided and the trades
    frequent): the draws follow the enumerated posterior given those totals."""
    sparse = {**FIXED, "alpha": 0.3}
    truth = np.array([8, 4, 1, 3])
    geo = Geography(["t", "b1", "b2"], [None, "t", "t"], ["Tract", "Block_Group"])
    census = census_queries(geo, TableSpec(("a", "b")), {"Block_Group": ["detailed"]})
    mech = NoisyMeasurements(census.matrix, 6.0, invariants=census.unit_invariants(["b1", "b2"], [12, 4]))
    y = mech.release(truth, random_seed=4)
    states = np.array([[a, 12 - a, c, 4 - c] for a in range(13) for c in range(5)])
    log = _log_prior(states.reshape(-1, 2, 2), sparse) + mech.logpdf(y, states)
    p = np.exp(log - log.max())
    p /= p.sum()
    moves = PersonMoves(within=0.01, within_per_cell=0.0, swaps=0.0, spreads=0.0, flips=0.0, bumps=3.0)
    tree = sample_people(GroupedRelease.from_census(census, mech, y), draws=4000, tune=200, random_seed=3,
                         learn=False, hyperparameters=sparse, moves=moves, progressbar=False)  # fmt: skip
    cells = tree["posterior"]["cells"].values.reshape(2, 4000, 4)
    assert (cells[..., :2].sum(axis=-1) == 12).all() and (cells[..., 2:].sum(axis=-1) == 4).all()
    for c in (0, 2):
        _assert_exact_mean(p, states[:, c], cells[..., c], c)


def test_people_sampler_with_an_exposure_matches_enumeration():
    """A block group of three blocks, the middle one with no housing unit and no facility, the last with a
    facility: the prior mean of a block is m units + c facilities (fixed), the block group's total exact; the draws
    follow the enumeration and the empty block stays empty."""
    truth = np.array([6, 3, 0, 0, 2, 5])
    geo = Geography(["g", "b1", "b2", "b3"], [None, "g", "g", "g"], ["Block_Group", "Block"])
    census = census_queries(geo, TableSpec(("a", "b")), {"Block_Group": ["total"], "Block": ["total", "detailed"]})
    invariants = census.unit_invariants(["g"], [int(truth.sum())])
    mech = NoisyMeasurements(census.matrix, [3.0] + [5.0] * 9, invariants=invariants)
    y = mech.release(truth, random_seed=12)
    exposure = LeafExposure(np.array([3.0, 0.0, 1.0]), np.array([[0.0], [0.0], [1.0]]), ("nursing",))
    fixed = {**FIXED, "mean": 2.5, "gq_size": 4.0}
    grid = np.array(list(itertools.product(range(TOP), repeat=4)))
    grid = grid[grid.sum(axis=1) == truth.sum()]
    states = np.zeros((grid.shape[0], 6), dtype=np.int64)
    states[:, [0, 1, 4, 5]] = grid
    both = states.reshape(-1, 3, 2)[:, [0, 2]]
    log = _log_prior(both, fixed, m=[7.5, 6.5]) + mech.logpdf(y, states)
    p = np.exp(log - log.max())
    p /= p.sum()
    tree = sample_people(GroupedRelease.from_census(census, mech, y), draws=3000, tune=300, thin=2, random_seed=8,
                         learn=False, hyperparameters=fixed, exposure=exposure, progressbar=False)  # fmt: skip
    cells = tree["posterior"]["cells"].values.reshape(2, 3000, 6)
    assert (cells[..., 2:4] == 0).all() and (cells.sum(axis=-1) == truth.sum()).all()
    # the facility matters: left out (b3's mean 2.5, not 6.5), b3's total moves far beyond the errors
    flat = _log_prior(both, fixed, m=[7.5, 2.5]) + mech.logpdf(y, states)
    q = np.exp(flat - flat.max())
    q /= q.sum()
    features = {f"cell {c}": states[:, c] for c in (0, 1, 4, 5)} | {"b3 total": states[:, 4] + states[:, 5]}
    for name, f in features.items():
        x = cells[..., 4] + cells[..., 5] if name == "b3 total" else cells[..., int(name[-1])]
        mcse = _assert_exact_mean(p, f, x, name)
    assert abs(x.mean() - float(q @ f)) > 10 * mcse


def _held_blocks(totals):
    """A block group of blocks with these totals (cells a and b, two thirds and one third), measured with noise sd
    0.01, so that a fit holds its cells at the truth: the release and the truth."""
    names = [f"b{i}" for i in range(len(totals))]
    geo = Geography(["g", *names], [None] + ["g"] * len(totals), ["Block_Group", "Block"])
    census = census_queries(geo, TableSpec(("a", "b")), {"Block": ["detailed"]})
    truth = np.column_stack([totals - totals // 3, totals // 3]).ravel()
    mech = NoisyMeasurements(census.matrix, 0.01)
    return GroupedRelease.from_census(census, mech, mech.release(truth, random_seed=1)), truth


def test_learned_unit_and_facility_means_match_quadrature():
    """The cells held at the truth (measurements of noise sd 0.01), phi, the persons per housing unit m and the
    persons per facility c learned: their posterior (normal priors on the logs, the negative binomial of each
    block's total with mean m units + c facilities) is the quadrature's on a grid of the three logs."""
    from scipy.stats import nbinom, norm

    units = np.array([4.0, 0.0, 3.0, 10.0, 1.0, 2.0, 6.0])
    facilities = np.array([[0.0], [0.0], [0.0], [0.0], [0.0], [1.0], [1.0]])
    totals = np.array([11, 0, 6, 27, 2, 46, 61])
    release, truth = _held_blocks(totals)
    settings = {
        "phi_prior": (math.log(10.0), 1.0),
        "mean_prior": (math.log(2.5), 1.0),
        "gq_prior": (math.log(30.0), 1.0),
    }
    tree = sample_people(release, draws=4000, tune=1000, random_seed=4,
                         hyperparameters=settings, exposure=LeafExposure(units, facilities, ("nursing",)),
                         initial=truth.reshape(-1, 2), progressbar=False)  # fmt: skip
    assert (tree["posterior"]["cells"].values.reshape(-1, truth.size) == truth).all()
    grid = np.linspace(-4.0, 4.0, 81)
    lp, lm, lc = np.meshgrid(grid + math.log(10.0), grid / 2 + math.log(2.5), grid / 2 + math.log(30.0), indexing="ij")
    log = (
        norm.logpdf(lp, math.log(10.0), 1.0)
        + norm.logpdf(lm, math.log(2.5), 1.0)
        + norm.logpdf(lc, math.log(30.0), 1.0)
    )
    phi = np.exp(lp)
    for n, u, f in zip(totals, units, facilities[:, 0], strict=True):
        if u or f:
            mu = np.exp(lm) * u + np.exp(lc) * f
            log = log + nbinom.logpmf(n, phi, phi / (phi + mu))
    w = np.exp(log - log.max())
    w /= w.sum()
    post = tree["posterior"]
    drawn = {"phi": np.log(post["phi"].values), "m": np.log(post["mean_size"].values[..., 0]),
             "c": np.log(post["gq_size"].values[..., 0])}  # fmt: skip
    for name, grid_value in (("phi", lp), ("m", lm), ("c", lc)):
        _assert_exact_mean(w.ravel(), grid_value.ravel(), drawn[name], name)
        sd = _exact_moments(w.ravel(), grid_value.ravel())[1]
        assert abs(drawn[name].std() - sd) < 0.15 * sd, (name, drawn[name].std(), sd)


def _cells_kept(noise: float, seed: int, fixed: dict, bounds: tuple):
    """Two leaves of two cells measured (total and cells) with noise sd ``noise``, optionally bounded: the release
    of TRUTH, and the states that keep each cell's total over the leaves (and the bounds) with their posterior
    weights under the ``fixed`` hyperparameters, for moves that pass people between the leaves in their cells."""
    geo = Geography(["t", "b1", "b2"], [None, "t", "t"], ["Tract", "Block_Group"])
    census = census_queries(geo, TableSpec(("a", "b")), {"Block_Group": ["total", "detailed"]})
    mech = NoisyMeasurements(census.matrix, noise)
    y = mech.release(TRUTH, random_seed=seed)
    release = GroupedRelease.from_census(census, mech, y)
    A, B = TRUTH[0] + TRUTH[2], TRUTH[1] + TRUTH[3]
    states = np.array([[a, b, A - a, B - b] for a in range(A + 1) for b in range(B + 1)])
    if bounds:
        release = GroupedRelease(release.geography, release.table, release.blocks, release.power, release.unit_totals,
                                 release.structural_zeros, bounds=bounds)  # fmt: skip
        states = states[[release.meets_bounds(x.reshape(2, 2)) for x in states]]
    log = _log_prior(states.reshape(-1, 2, 2), fixed) + mech.logpdf(y, states)
    p = np.exp(log - log.max())
    return release, states, p / p.sum()


@pytest.mark.parametrize("bounded", [False, True], ids=["free", "bounded"])
def test_line_draws_keep_the_posterior(bounded):
    """Line draws alone (no other move) pass people of one cell between two leaves, so each cell's total over the
    leaves stays at the start's: the draws follow the enumerated posterior given those totals, with and without
    bounds on the leaves' cells (lopsided compositions and wide noise, so the cell choice's correction matters)."""
    lopsided = {**FIXED, "alpha": 0.5}
    bounds = (BoundBlock(1, "leaf", np.array([0, 1]), np.array([[2, 0], [0, 5]]), np.array([[7, 6], [5, 9]])),)
    release, states, p = _cells_kept(4.0, 2, lopsided, bounds if bounded else ())
    A, B = TRUTH[0] + TRUTH[2], TRUTH[1] + TRUTH[3]
    moves = PersonMoves(within=0.0, within_per_cell=0.0, exchanges=0.0, swaps=0.0, bumps=0.0, spreads=0.0, flips=0.0,
                        births=0.0, lines=2.0, line_window=6, relocations=0.0)  # fmt: skip
    tree = sample_people(release, draws=4000, tune=300, random_seed=6, learn=False, hyperparameters=lopsided,
                         moves=moves, initial=TRUTH.reshape(2, 2), progressbar=False)  # fmt: skip
    cells = tree["posterior"]["cells"].values.reshape(2, 4000, 4)
    assert (cells[..., 0] + cells[..., 2] == A).all() and (cells[..., 1] + cells[..., 3] == B).all()
    if bounded:  # every draw, leaf by leaf: cells within [lower, upper]
        drawn = cells.reshape(-1, 2, 2)
        assert ((drawn >= bounds[0].lower) & (drawn <= bounds[0].upper)).all()
    for c in (0, 1):
        _assert_exact_mean(p, states[:, c], cells[..., c], c)


@pytest.mark.parametrize("bounded", [False, True], ids=["free", "bounded"])
def test_relocations_keep_the_posterior(bounded):
    """Relocations (a cell's people passing whole to the same cell, empty, of the other leaf) with line draws, no
    other move: each cell's total over the leaves stays at the start's and the draws follow the enumerated posterior
    given those totals, with and without bounds; the leaves' totals jump by whole cells."""
    lopsided = {**FIXED, "alpha": 0.5, "mean": 4.0}
    bounds = (BoundBlock(1, "leaf", np.array([0, 1]), np.array([[0, 0], [0, 1]]), np.array([[8, 6], [8, 8]])),)
    release, states, p = _cells_kept(6.0, 3, lopsided, bounds if bounded else ())
    A, B = TRUTH[0] + TRUTH[2], TRUTH[1] + TRUTH[3]
    moves = replace(NO_MOVES, lines=0.2, line_window=2, relocations=2.0, turns=0.0)
    tree = sample_people(release, draws=4000, tune=300, random_seed=9, learn=False, hyperparameters=lopsided,
                         moves=moves, initial=TRUTH.reshape(2, 2), progressbar=False)  # fmt: skip
    cells = tree["posterior"]["cells"].values.reshape(2, 4000, 4)
    assert (cells[..., 0] + cells[..., 2] == A).all() and (cells[..., 1] + cells[..., 3] == B).all()
    if bounded:
        drawn = cells.reshape(-1, 2, 2)
        assert ((drawn >= bounds[0].lower) & (drawn <= bounds[0].upper)).all()
    totals = cells[..., 0] + cells[..., 1]
    assert np.abs(np.diff(totals, axis=1)).max() > 2 * moves.line_window  # a whole cell at once
    for name, f, x in (("cell 0", states[:, 0], cells[..., 0]), ("cell 1", states[:, 1], cells[..., 1]),
                       ("b1 total", states[:, 0] + states[:, 1], totals)):  # fmt: skip
        _assert_exact_mean(p, f, x, name)
        _assert_exact_mean(p, f**2, x**2, name + " squared")


@pytest.mark.parametrize("turn_axis", [-1, 0])
def test_relocations_that_turn_keep_the_posterior(turn_axis):
    """Relocations half of which turn (a cell's people passing whole to the other cell, empty, of the other leaf),
    with a few exchanges that turn: the draws follow the enumeration with the tract's total exact (a clustered
    composition, so that the turned relocations are made)."""
    census = _small("gaussian", True)[0]
    invariants = census.unit_invariants(["t"], [int(TRUTH.sum())])
    mech = NoisyMeasurements(census.matrix, 10.0, invariants=invariants)  # wide: whole cells may move
    y = mech.release(TRUTH, random_seed=11)
    states = _exact(census, mech, y)[0]
    clustered = {**FIXED, "alpha": 0.3, "shares": [0.85, 0.15]}  # concentrated: empty cells to relocate into
    log = _log_prior(states.reshape(-1, 2, 2), clustered) + mech.logpdf(y, states)
    p = np.exp(log - log.max())
    p /= p.sum()
    moves = replace(NO_MOVES, exchanges=0.1, turns=0.5, turn_axis=turn_axis, relocations=2.0)
    tree = sample_people(GroupedRelease.from_census(census, mech, y), draws=3000, tune=300, random_seed=7,
                         learn=False, hyperparameters=clustered, moves=moves, progressbar=False)  # fmt: skip
    cells = tree["posterior"]["cells"].values.reshape(2, 3000, 4)
    assert (cells.sum(axis=-1) == TRUTH.sum()).all()
    for c in range(4):
        _assert_exact_mean(p, states[:, c], cells[..., c], c)


def _states_summing_to(N: int, free: np.ndarray, size: int) -> np.ndarray:
    """Every state of ``size`` cells, zero outside ``free``, that sums to N (stars and bars)."""
    states = []
    for bars in itertools.combinations(range(N + free.size - 1), free.size - 1):
        parts = np.diff(np.concatenate([[-1], bars, [N + free.size - 1]])) - 1
        state = np.zeros(size, dtype=np.int64)
        state[free] = parts
        states.append(state)
    return np.array(states)


def _three_levels(b2_holds_g: bool = True, two_ages: bool = False):
    """A tract (total exact) of b1, which may hold levels h and f of a three-level axis, and b2, which may hold f and
    (``b2_holds_g``) g, and (``two_ages``) a second axis of two ages, measured by block group (total and cells, noise
    sd 4): the release, a truth, the enumerated states and their posterior weights under fixed hyperparameters (a
    turn's proposal ratio is 1/2, 1 or 2: h to f or g, f to g, and back)."""
    ages = ("young", "old") if two_ages else ("all",)
    K = 3 * len(ages)
    geo = Geography(["t", "b1", "b2"], [None, "t", "t"], ["Tract", "Block_Group"])
    labels = tuple(f"{level}:{age}" for level in ("h", "f", "g") for age in ages)
    census = census_queries(geo, TableSpec(labels), {"Block_Group": ["total", "detailed"]})
    truth = (np.array([2, 1, 1, 2, 0, 0, 0, 0, 2, 1, b2_holds_g, b2_holds_g]) if two_ages
             else np.array([4, 2, 0, 0, 3, 2 * b2_holds_g]))  # fmt: skip
    N = int(truth.sum())
    mech = NoisyMeasurements(census.matrix, 4.0, invariants=census.unit_invariants(["t"], [N]))
    y = mech.release(truth, random_seed=4)
    upper = np.array([[N, N, 0], [0, N, N * b2_holds_g]])
    groups = np.repeat(np.arange(3), len(ages))  # each cell's level
    bounds = (BoundBlock(1, "leaf", groups, np.zeros((2, 3), dtype=np.int64), upper),)
    base = GroupedRelease.from_census(census, mech, y)
    release = GroupedRelease(base.geography, base.table, base.blocks, base.power, base.unit_totals,
                             base.structural_zeros, shape=(3, 2) if two_ages else None, bounds=bounds)  # fmt: skip
    states = _states_summing_to(N, np.flatnonzero(upper[:, groups].ravel() > 0), 2 * K)
    shares = [0.3, 0.2, 0.1, 0.1, 0.15, 0.15] if two_ages else [0.5, 0.2, 0.3]
    fixed = {**FIXED, "alpha": 0.5, "mean": 5.0, "shares": shares}
    log = _log_prior(states.reshape(-1, 2, K), fixed, open_cells=upper[:, groups] > 0) + mech.logpdf(y, states)
    p = np.exp(log - log.max())
    return release, truth, states, p / p.sum(), fixed


def _assert_three_levels_kept(tree, truth, states, p):
    """The draws of a fit to :func:`_three_levels` keep its closed cells and its total, b1's total moves as much as
    its posterior spread, and each free cell and b1's total follow the enumeration."""
    cells = tree["posterior"]["cells"].values.reshape(2, -1, 6)
    assert (cells[..., [2, 3]] == 0).all() and (cells.sum(axis=-1) == truth.sum()).all()
    assert (cells[..., 5] > 0).any() == (states[:, 5] > 0).any()
    b1 = cells[..., :3].sum(axis=-1)
    assert b1.std() > 0.5 * _exact_moments(p, states[:, :3].sum(axis=1))[1]
    for name, f, x in (("h", states[:, 0], cells[..., 0]), ("b1 f", states[:, 1], cells[..., 1]),
                       ("b2 f", states[:, 4], cells[..., 4]), ("b1 total", states[:, :3].sum(axis=1), b1)):  # fmt: skip
        _assert_exact_mean(p, f, x, name)


@pytest.mark.parametrize("move", ["relocations", "exchanges"])
def test_turns_into_the_levels_a_leaf_allows_keep_the_posterior(move):
    """Turns draw the new level among those the receiving leaf's bounds leave open (:func:`_three_levels`): the
    draws follow the enumeration with the tract's total exact, and both leaves' totals move."""
    release, truth, states, p, fixed = _three_levels()
    rates = {"relocations": 3.0} if move == "relocations" else {"exchanges": 2.0, "jump": 0.3}
    moves = replace(NO_MOVES, within=1.0, turns=0.9, turn_axis=0, **rates)
    tree = sample_people(release, draws=4000, tune=300, random_seed=8, learn=False, hyperparameters=fixed,
                         moves=moves, initial=truth.reshape(2, 3), progressbar=False)  # fmt: skip
    _assert_three_levels_kept(tree, truth, states, p)


@pytest.mark.parametrize("b2_holds_g", [True, False], ids=["b2 holds f and g", "b2 holds f only"])
def test_line_draws_that_turn_keep_the_posterior(b2_holds_g):
    """Line draws alone, most of them turning (:func:`_three_levels`): no move inside a leaf, so b1's households (h)
    change only by people of one cell passing into another level's cell of the other leaf, by their exact
    conditional on a window, corrected for the pair's choice (the turn's 1/2 or 1 from either side). Where b2 holds
    f only, a turn of b1's f finds no level in b2 and the draw falls back to f itself, which b2's f turning into b1
    never does (the pair's chance differs by side). The draws follow the enumeration."""
    release, truth, states, p, fixed = _three_levels(b2_holds_g)
    moves = replace(NO_MOVES, lines=3.0, line_window=4, line_turns=0.7, turn_axis=0)
    tree = sample_people(release, draws=4000, tune=300, random_seed=2, learn=False, hyperparameters=fixed,
                         moves=moves, initial=truth.reshape(2, 3), progressbar=False)  # fmt: skip
    _assert_three_levels_kept(tree, truth, states, p)


@pytest.mark.parametrize("turn_axis, second_axis, b2_holds_g", [(0, 1, True), (-1, -1, False)],
                         ids=["level, then age; b2 holds f and g", "any two axes; b2 holds f only"])  # fmt: skip
def test_line_draws_that_turn_two_axes_keep_the_posterior(turn_axis, second_axis, b2_holds_g):
    """Line draws alone, most of them turning, half of the turns on a second axis too (:func:`_three_levels` with
    two ages). Where b2 holds f and g, b1's young households become b2's old f or g people (two cells to draw
    among), b1's young f people only b2's old g (one), b2's old g b1's young h or f (two): the proposal ratio is
    1/2, 1 or 2, and with turns on the level axis, the young's total changes by two-axis turns alone. Where b2 holds
    f only, a turn of b1's f on any two axes finds none open, on one axis half the time (age alone is open): the
    draw falls back to f by a chance that mixes the two, and b2's f never does. The draws follow the enumeration and
    the young's total moves as much as its posterior spread."""
    release, truth, states, p, fixed = _three_levels(b2_holds_g, two_ages=True)
    moves = replace(NO_MOVES, lines=3.0, line_window=4, line_turns=0.8, turn_axis=turn_axis, second_turns=0.5,
                    second_axis=second_axis)  # fmt: skip
    tree = sample_people(release, draws=16000, tune=300, random_seed=5, learn=False, hyperparameters=fixed,
                         moves=moves, initial=truth.reshape(2, 6), progressbar=False)  # fmt: skip
    cells = tree["posterior"]["cells"].values.reshape(2, 16000, 12)
    assert (cells.sum(axis=-1) == truth.sum()).all()
    young = cells[..., 0::2].sum(axis=-1)
    assert young.std() > 0.5 * _exact_moments(p, states[:, 0::2].sum(axis=1))[1]
    for c in range(12):
        if states[:, c].any():
            _assert_exact_mean(p, states[:, c], cells[..., c], f"cell {c}")
        else:
            assert (cells[..., c] == 0).all()
    _assert_exact_mean(p, states[:, 0::2].sum(axis=1), young, "young")


def _facility_and_households(two_ages: bool = False):
    """Four blocks in two block groups, hhgq levels h (household) and f (facility), and (``two_ages``) two ages: b1
    may hold both levels, b2 and b3 only h, b4 only f, so f is a rare group and b1 and b4 are mates; the tract's total
    exact. The release, a truth, the enumerated states, their posterior weights under fixed hyperparameters and the
    cells' shape per leaf."""
    ages = ("young", "old") if two_ages else ("all",)
    K = 2 * len(ages)
    geo = Geography(["t", "g1", "g2", "b1", "b2", "b3", "b4"], [None, "t", "t", "g1", "g1", "g2", "g2"],
                    ["Tract", "Block_Group", "Block"])  # fmt: skip
    labels = tuple(f"{level}:{age}" for level in ("h", "f") for age in ages)
    census = census_queries(geo, TableSpec(labels), {"Block_Group": ["total"], "Block": ["total", "detailed"]})
    truth = (np.array([1, 1, 1, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1]) if two_ages
             else np.array([3, 2, 2, 0, 1, 0, 0, 2]))  # fmt: skip
    N = int(truth.sum())
    mech = NoisyMeasurements(census.matrix, 2.0, invariants=census.unit_invariants(["t"], [N]))
    y = mech.release(truth, random_seed=5)
    upper = np.array([[N, N], [N, 0], [N, 0], [0, N]])
    groups = np.repeat(np.arange(2), len(ages))  # each cell's hhgq level
    bounds = (BoundBlock(2, "leaf", groups, np.zeros((4, 2), dtype=np.int64), upper),)
    base = GroupedRelease.from_census(census, mech, y)
    release = GroupedRelease(base.geography, base.table, base.blocks, base.power, base.unit_totals,
                             base.structural_zeros, shape=(2, len(ages)), bounds=bounds)  # fmt: skip
    states = _states_summing_to(N, np.flatnonzero(upper[:, groups].ravel() > 0), 4 * K)
    shares = [0.3, 0.2, 0.3, 0.2] if two_ages else FIXED["shares"]
    fixed = {**FIXED, "alpha": 1.0, "mean": 3.0, "shares": shares}
    log = _log_prior(states.reshape(-1, 4, K), fixed, open_cells=upper[:, groups] > 0) + mech.logpdf(y, states)
    p = np.exp(log - log.max())
    return release, truth, states, p / p.sum(), fixed, (4, K)


@pytest.mark.filterwarnings("ignore::ppdinfer.inference.diagnostics.ConvergenceWarning")  # b4 mixes by mates alone
@pytest.mark.parametrize("move", ["exchanges", "lines", "relocations"])
def test_mates_pass_a_facility_s_people_to_a_distant_facility_and_keep_the_posterior(move):
    """The four blocks of :func:`_facility_and_households`: partners are siblings or next leaves only (near 1), no
    turns, so f's people pass between b1 and b4 by mates alone. The draws follow the enumeration and b4's total moves
    as much as its posterior spread."""
    release, truth, states, p, fixed, shape = _facility_and_households()
    N = int(truth.sum())
    rates = {"exchanges": {"exchanges": 2.0, "jump": 0.3}, "lines": {"lines": 2.0, "line_window": 4},
             "relocations": {"relocations": 2.0, "exchanges": 0.5}}[move]  # fmt: skip
    moves = replace(NO_MOVES, within=1.0, turns=0.0, partners=(0.5, 0.5), near=1, mates=0.5, **rates)
    tree = sample_people(release, draws=4000, tune=300, random_seed=3, learn=False, hyperparameters=fixed,
                         moves=moves, initial=truth.reshape(shape), progressbar=False)  # fmt: skip
    cells = tree["posterior"]["cells"].values.reshape(2, 4000, 8)
    assert (cells[..., [3, 5, 6]] == 0).all() and (cells.sum(axis=-1) == N).all()
    assert cells[..., 7].std() > 0.5 * _exact_moments(p, states[:, 7])[1]
    for c, name in ((0, "b1 h"), (1, "b1 f"), (2, "b2 h"), (4, "b3 h"), (7, "b4 f")):
        _assert_exact_mean(p, states[:, c], cells[..., c], name)


@pytest.mark.parametrize("turn_axis", [0, -1], ids=["on hhgq", "on any axis"])
def test_rare_lines_turn_a_facility_s_people_into_a_sibling_s_households_and_keep_the_posterior(turn_axis):
    """The four blocks of :func:`_facility_and_households` (b1 may hold h and f, b2 and b3 only h, b4 only f): rare
    lines alone change f, always turning, with a sibling (b1's f with b2's h, b4's with b3's) or a mate (b1's f with
    b4's, which has no other level: the turn falls back to f; b4's f with b1's h); line draws between neighbours pass
    h across the block groups, never turning. The draws follow the enumeration, and b4's total moves as much as its
    posterior spread. With a second axis (age, two levels), a turn on any axis may find none open: the pair's chance
    from each side differs."""
    release, truth, states, p, fixed, shape = _facility_and_households(two_ages=turn_axis < 0)
    moves = replace(NO_MOVES, lines=1.0, partners=(0.0, 1.0), near=1, mates=0.5, rare_lines=3.0, turn_axis=turn_axis,
                    line_window=4)  # fmt: skip
    tree = sample_people(release, draws=4000, tune=300, random_seed=3, learn=False, hyperparameters=fixed,
                         moves=moves, initial=truth.reshape(shape), progressbar=False)  # fmt: skip
    cells = tree["posterior"]["cells"].values.reshape(2, 4000, -1)
    assert (cells.sum(axis=-1) == truth.sum()).all()
    per = cells.shape[-1] // 4
    b4 = cells[..., 3 * per :].sum(axis=-1)
    assert b4.std() > 0.5 * _exact_moments(p, states[:, 3 * per :].sum(axis=1))[1]
    for c in range(cells.shape[-1]):
        if states[:, c].any():
            _assert_exact_mean(p, states[:, c], cells[..., c], f"cell {c}")
        else:
            assert (cells[..., c] == 0).all()


def test_short_chains_warn_that_they_have_not_converged():
    """Too few draws for the leaf totals' R-hat and ESS: a ConvergenceWarning, and the figures in the attrs."""
    from ppdinfer.inference.diagnostics import ConvergenceWarning

    census, mech, y = _small("gaussian", True)
    with pytest.warns(ConvergenceWarning, match="leaf totals and phi"):
        tree = sample_people(GroupedRelease.from_census(census, mech, y), draws=20, tune=20, random_seed=1,
                             progressbar=False)  # fmt: skip
    assert tree.attrs["unconverged"] >= 1 and tree.attrs["max_rhat"] >= 1.0 and tree.attrs["min_ess"] < 200


def test_exchanges_that_turn_keep_the_posterior():
    """Exchanges alone, half of them changing the people's cell on the way (the only moves between cells here):
    the draws follow the enumeration with the tract's total exact."""
    census, mech, y = _small("gaussian", True)
    states, p = _exact(census, mech, y)
    moves = PersonMoves(within=0.0, within_per_cell=0.0, exchanges=2.0, turns=0.5, lines=0.0, swaps=0.0, bumps=0.0,
                        spreads=0.0, flips=0.0, relocations=0.0)  # fmt: skip
    tree = sample_people(GroupedRelease.from_census(census, mech, y), draws=3000, tune=300, random_seed=7,
                         learn=False, hyperparameters=FIXED, moves=moves, progressbar=False)  # fmt: skip
    cells = tree["posterior"]["cells"].values.reshape(2, 3000, 4)
    assert (cells.sum(axis=-1) == TRUTH.sum()).all()
    for c in range(4):
        _assert_exact_mean(p, states[:, c], cells[..., c], c)


def test_a_county_down_to_blocks_with_its_housing_units(tmp_path):
    """A file down to the Block level (Cameron County: 117 blocks, 21 with no housing unit and no facility): the
    default start meets every block's bounds, the exposure is the truth's, every draw meets the file's
    constraints and keeps the empty-by-construction blocks empty, and the block totals beat GLS's by far."""
    from ppdinfer.census import file_exposure, gls_estimate

    state = synthetic_pl94_state(["Cameron"], random_seed=1)
    write_nmf(tmp_path, state, random_seed=2)
    write_nmf(tmp_path, state, random_seed=3, table="unit")
    nmf = read_nmf(tmp_path, "42", state_total=int(state.persons.sum()))
    release = grouped_release(nmf)
    detailed = next(b for b in release.blocks if b.query == "detailed" and b.level == release.geography.n_levels - 1)
    assert detailed.y.dtype == np.int16  # a block's noisy cells: the smallest integer that holds them
    exposure = file_exposure(release, read_nmf(tmp_path, "42", table="unit"))
    assert (exposure.units == state.units.sum(axis=1)).all() and (
        exposure.facilities == state.gq_facilities[:, 1:]
    ).all()
    assert exposure.empty.sum() == 21 and release.meets_bounds(
        people_module._initial_cells(release, exposure.empty, exposure)
    )
    tree = sample_people(release, draws=40, tune=60, random_seed=4, exposure=exposure, progressbar=False)
    draws = tree["posterior"]["cells"].values
    for draw in draws.reshape(-1, *draws.shape[2:])[::10]:
        assert all(held.all() for held in nmf.check_constraints(draw).values())
    totals = draws.sum(axis=3)
    assert (totals[..., exposure.empty] == 0).all() and (totals.sum(axis=2) == state.persons.sum()).all()
    assert tree["posterior"]["gq_size"].sizes["gq_type"] == 7
    truth = np.asarray(state.persons.sum(axis=1)).ravel()
    census, mechanism, y = nmf.release(PERSON.coarsen({"votingage": (((0, 1),), ("all",))}))
    gls = gls_estimate(census, y, mechanism.sigmas).cell_estimate.ravel()
    ours = np.sqrt(((totals.mean(axis=(0, 1)) - truth) ** 2).mean())
    assert ours < 0.25 * np.sqrt(((gls - truth) ** 2).mean()), ours


TWO_COUNTIES = np.array([2, 1, 3, 0, 1, 2, 2, 1])  # blocks b1..b4 (cells a, b), b1 b2 in county c1, b3 b4 in c2
COUNTY_FIXED = {**FIXED, "mean": 3.0}


def _two_counties():
    """A state of two counties of two blocks each (two cells), its total exact: every state (50,388 of them)."""
    geo = Geography(["s", "c1", "c2", "b1", "b2", "b3", "b4"], [None, "s", "s", "c1", "c1", "c2", "c2"],
                    ["State", "County", "Block"])  # fmt: skip
    census = census_queries(geo, TableSpec(("a", "b")), {"County": ["total"], "Block": ["total", "detailed"]})
    N = int(TWO_COUNTIES.sum())
    mech = NoisyMeasurements(census.matrix, [3.0] * 2 + [1.5] * 12, invariants=census.unit_invariants(["s"], [N]))
    y = mech.release(TWO_COUNTIES, random_seed=3)
    bars = np.array(list(itertools.combinations(range(N + 7), 7)))  # stars and bars: 8 cells summing to N
    edges = np.concatenate([np.full((len(bars), 1), -1), bars, np.full((len(bars), 1), N + 7)], axis=1)
    states = np.diff(edges, axis=1) - 1
    log = _log_prior(states.reshape(-1, 4, 2), COUNTY_FIXED) + mech.logpdf(y, states)
    return GroupedRelease.from_census(census, mech, y), states, log


NO_MOVES = PersonMoves(within=0.0, within_per_cell=0.0, exchanges=0.0, lines=0.0, swaps=0.0, bumps=0.0, spreads=0.0,
                       flips=0.0, births=0.0, relocations=0.0)  # fmt: skip
LOCAL = PersonMoves(exchanges=1.0, lines=1.0, swaps=0.5, bumps=0.5, line_window=4)


def test_local_sweeps_keep_each_county_s_cells_and_the_posterior_given_them():
    """Local sweeps alone (the whole-table sweep moves nothing): each county's two cell sums stay the start's, and
    the draws follow the enumerated posterior given them, so no local move reaches past its county."""
    from ppdinfer.census import Decomposition

    release, states, log = _two_counties()
    county = lambda x: np.stack([x[..., 0] + x[..., 2], x[..., 1] + x[..., 3], x[..., 4] + x[..., 6]], -1)  # noqa: E731
    keep = (county(states) == county(TWO_COUNTIES)).all(axis=1)
    p = np.exp(log[keep] - log[keep].max())
    p /= p.sum()
    tree = sample_people(release, draws=3000, tune=200, random_seed=8, learn=False, hyperparameters=COUNTY_FIXED,
                         moves=NO_MOVES, initial=TWO_COUNTIES.reshape(4, 2), progressbar=False,
                         decompose=Decomposition("County", sweeps=2, moves=LOCAL))  # fmt: skip
    cells = tree["posterior"]["cells"].values.reshape(2, 3000, 8)
    assert (county(cells) == county(TWO_COUNTIES)).all()
    for c in (0, 1, 4, 5):
        _assert_exact_mean(p, states[keep][:, c], cells[..., c], c)


@pytest.mark.filterwarnings("ignore::ppdinfer.inference.diagnostics.ConvergenceWarning")  # the short runs
def test_a_decomposed_fit_matches_enumeration_and_is_the_same_on_any_executor():
    """Counties' local sweeps between whole-table sweeps: the enumerated posterior (the state's total exact), and
    draw for draw the same whether the counties run one after another, on two threads or on dask's workers."""
    from concurrent.futures import ThreadPoolExecutor

    from ppdinfer.census import Decomposition

    release, states, log = _two_counties()
    p = np.exp(log - log.max())
    p /= p.sum()
    run = lambda executor, draws=3000: sample_people(  # noqa: E731
        release, draws=draws, tune=300, random_seed=9, learn=False, hyperparameters=COUNTY_FIXED, progressbar=False,
        decompose=Decomposition("County", moves=LOCAL, executor=executor),
    )  # fmt: skip
    tree = run(None)
    cells = tree["posterior"]["cells"].values.reshape(2, 3000, 8)
    assert (cells.sum(axis=-1) == TWO_COUNTIES.sum()).all()
    assert "2 units of County" in tree.attrs["decomposition"]
    features = {"c1 total": (states[:, :4].sum(axis=1), cells[..., :4].sum(axis=-1))}
    features |= {f"block {b} total": (states[:, 2 * b : 2 * b + 2].sum(axis=1), cells[..., 2 * b : 2 * b + 2].sum(-1))
                 for b in range(4)}  # fmt: skip
    features |= {f"cell {c}": (states[:, c], cells[..., c]) for c in (0, 3, 5)}
    for name, (f, x) in features.items():
        _assert_exact_mean(p, f, x, name)
    short = run(None, draws=200)["posterior"]["cells"].values
    with ThreadPoolExecutor(2) as pool:
        np.testing.assert_array_equal(run(pool, draws=200)["posterior"]["cells"].values, short)
    distributed = pytest.importorskip("distributed")
    with distributed.Client(processes=False, n_workers=1, threads_per_worker=2, dashboard_address=None) as client:
        np.testing.assert_array_equal(
            run(client.get_executor(pure=False), draws=200)["posterior"]["cells"].values, short
        )
        with pytest.raises(ValueError, match="pure=False"):  # dask's default would hash the table at every task
            run(client.get_executor(), draws=5)


def test_a_bad_decomposition_is_refused():
    from concurrent.futures import ProcessPoolExecutor

    from ppdinfer.census import Decomposition

    release = _two_counties()[0]
    for decompose, match in [
        ("County", "decompose must be a Decomposition"),
        (Decomposition("Tract"), "level 'Tract' is not one of"),
        (Decomposition("Block"), "the leaves' own"),
        (Decomposition("County", moves={"lines": 1.0}), "moves must be a PersonMoves"),
    ]:
        with pytest.raises(ValueError, match=match):
            sample_people(release, draws=5, tune=0, decompose=decompose, progressbar=False)
    with ProcessPoolExecutor(1) as pool, pytest.raises(ValueError, match="do not share this process's memory"):
        sample_people(release, draws=5, tune=0, decompose=Decomposition("County", executor=pool), progressbar=False)
    for kwargs, match in [({"sweeps": 0}, "sweeps"), ({"executor": 2}, "executor must be")]:
        with pytest.raises(ValueError, match=match):
            Decomposition("County", **kwargs)


@pytest.mark.filterwarnings("ignore::ppdinfer.inference.diagnostics.ConvergenceWarning")  # short chains
def test_two_counties_down_to_blocks_move_at_once_with_the_same_draws(tmp_path):
    """Two counties of a file (296 blocks, 11,520 people), every local move at a high rate: the counties' local
    sweeps on two threads give the draws of one after another. (A swap's first half, applied to every level before
    its second takes it back, raced with the other county's moves here: swaps are no local move.)"""
    from concurrent.futures import ThreadPoolExecutor

    from ppdinfer.census import Decomposition, file_exposure

    state = synthetic_pl94_state(["Cameron", "Forest"], random_seed=2020)
    write_nmf(tmp_path, state, random_seed=1)
    write_nmf(tmp_path, state, random_seed=2, table="unit")
    release = grouped_release(read_nmf(tmp_path, "42", state_total=int(state.persons.sum())))
    exposure = file_exposure(release, read_nmf(tmp_path, "42", table="unit"))
    local = PersonMoves(lines=1.0, exchanges=1.0, swaps=1.0, bumps=2.0)
    run = lambda executor: sample_people(  # noqa: E731
        release, draws=30, tune=30, random_seed=3, exposure=exposure, record=PERSON.coarsen({"votingage": None}),
        progressbar=False, decompose=Decomposition("County", moves=local, executor=executor),
    )["posterior"]["cells"].values  # fmt: skip
    alone = run(None)
    with ThreadPoolExecutor(2) as pool:
        np.testing.assert_array_equal(run(pool), alone)


def test_learned_shares_follow_the_cells_each_leaf_may_hold():
    """Hyperparameters learned where bounds close cells: b1 may hold h and f, b2 only h, b3 only f, each leaf's
    composition the Dirichlet-multinomial over the cells it may hold (b2's of total alpha q_h, b3's alpha q_f). No move
    between leaves, so b2 and b3 keep their cells and b1 its total; h's share moves against f's by the class move
    alone (one cell per class). The draws of log alpha, q_h and b1's h follow the exact joint posterior (b1's six
    splits x a grid of log alpha and q_h)."""
    geo = Geography(["t", "b1", "b2", "b3"], [None, "t", "t", "t"], ["Tract", "Block_Group"])
    census = census_queries(geo, TableSpec(("h", "f")), {"Block_Group": ["total", "detailed"]})
    truth = np.array([3, 2, 4, 0, 0, 5])
    mech = NoisyMeasurements(census.matrix, 1.5)
    y = mech.release(truth, random_seed=1)
    upper = np.array([[9, 9], [9, 0], [0, 9]])
    bounds = (BoundBlock(1, "leaf", np.array([0, 1]), np.zeros((3, 2), dtype=np.int64), upper),)
    base = GroupedRelease.from_census(census, mech, y)
    release = GroupedRelease(base.geography, base.table, base.blocks, base.power, base.unit_totals,
                             base.structural_zeros, bounds=bounds)  # fmt: skip
    hyper = {"alpha_prior": (0.5, 1.0), "share_prior": 1.0, "phi": 5.0, "mean": 4.0}
    moves = replace(NO_MOVES, within=2.0)
    tree = sample_people(release, draws=6000, tune=500, random_seed=3, hyperparameters=hyper, moves=moves,
                         initial=truth.reshape(3, 2), progressbar=False)  # fmt: skip
    post = tree["posterior"]
    cells = post["cells"].values.reshape(2, -1, 6)
    assert (cells[..., 2:] == truth[2:]).all() and (cells[..., :2].sum(axis=-1) == 5).all()
    log_alpha, q_h = np.log(post["alpha"].values[..., 0]), post["shares"].values[..., 0, 0]
    # the exact posterior: b1 = (j, 5 - j), log alpha and q_h on a grid (the prior flat in q_h, normal in log alpha)
    a_grid, q_grid = np.linspace(-5.0, 5.0, 801)[:, None, None], np.linspace(5e-4, 1 - 5e-4, 1000)[None, :, None]
    j = np.arange(6)[None, None, :]
    alpha, qf = np.exp(a_grid), 1.0 - q_grid
    states = np.stack([np.concatenate([[k, 5 - k], truth[2:]]) for k in range(6)])
    log = -0.5 * ((a_grid - 0.5) / 1.0) ** 2 + mech.logpdf(y, states)[None, None, :]
    log = log + gammaln(alpha) - gammaln(5 + alpha) + gammaln(j + alpha * q_grid) - gammaln(alpha * q_grid)
    log = log + gammaln(5 - j + alpha * qf) - gammaln(alpha * qf) - gammaln(j + 1) - gammaln(6 - j)
    # b2 and b3 add nothing: one cell open, their compositions are certain (Dirichlet-multinomials over all the cells
    # would make b2's 4 people in h and b3's 5 in f evidence for q_h and q_f)
    p = np.exp(log - log.max())
    p /= p.sum()
    flat = p.ravel()
    grid = np.broadcast_arrays(a_grid, q_grid, j)
    for name, f, x in (("log alpha", grid[0], log_alpha), ("q_h", grid[1], q_h), ("b1's h", grid[2], cells[..., 0])):
        _assert_exact_mean(flat, f.ravel().astype(float), x, name)


def _empty_blocks(vacant: float):
    """A block group (total exact, 3) of b1 (one housing unit, truth empty), b2 (two units) and b3 (none), cells a
    and b, blocks measured (total and cells, noise sd 2): the release, the exposure, the enumerated states and their
    posterior weights under fixed hyperparameters with the zero-inflation ``vacant``."""
    truth = np.array([0, 0, 2, 1, 0, 0])
    geo = Geography(["g", "b1", "b2", "b3"], [None, "g", "g", "g"], ["Block_Group", "Block"])
    census = census_queries(geo, TableSpec(("a", "b")), {"Block": ["total", "detailed"]})
    mech = NoisyMeasurements(census.matrix, 2.0, invariants=census.unit_invariants(["g"], [3]))
    y = mech.release(truth, random_seed=2)
    exposure = LeafExposure(np.array([1.0, 2.0, 0.0]), np.zeros((3, 0)))
    fixed = {**FIXED, "mean": 2.0, "vacant": vacant}
    states = np.zeros((20, 6), dtype=np.int64)
    states[:, :4] = _states_summing_to(3, np.arange(4), 4)
    both = states.reshape(-1, 3, 2)[:, :2]
    m = np.array([2.0, 4.0])
    log = _log_prior(both, fixed, m=m) + mech.logpdf(y, states)
    if vacant:  # N > 0: log(1 - v) + log NB(N); N = 0: log(v + (1 - v) NB(0)), the NB(0) that _log_prior left out
        nb0 = FIXED["phi"] * np.log(FIXED["phi"] / (FIXED["phi"] + m))
        N = both.sum(axis=2)
        log = log + np.where(N > 0, np.log1p(-vacant), np.logaddexp(np.log(vacant), np.log1p(-vacant) + nb0) - nb0).sum(
            1
        )
    p = np.exp(log - log.max())
    return GroupedRelease.from_census(census, mech, y), exposure, states, p / p.sum(), fixed


def test_zero_inflated_block_totals_match_enumeration():
    """With the zero-inflation v (``vacant``, fixed), a housed block is empty with probability v + (1 - v) NB(0): the
    draws of the blocks of :func:`_empty_blocks` (v = 0.4) follow the enumeration, b1's chance of being empty among
    them, which without the zero-inflation is far lower."""
    release, exposure, states, p, fixed = _empty_blocks(0.4)
    tree = sample_people(release, draws=4000, tune=300, random_seed=6, learn=False, hyperparameters=fixed,
                         exposure=exposure, progressbar=False)  # fmt: skip
    cells = tree["posterior"]["cells"].values.reshape(2, 4000, 6)
    assert (cells[..., 4:] == 0).all() and (cells.sum(axis=-1) == 3).all()
    empty = (cells[..., :2].sum(axis=-1) == 0).astype(float)
    f = (states[:, :2].sum(axis=1) == 0).astype(float)
    mcse = _assert_exact_mean(p, f, empty, "b1 empty")
    for c in range(4):
        _assert_exact_mean(p, states[:, c].astype(float), cells[..., c], f"cell {c}")
    _, _, _, plain, _ = _empty_blocks(0.0)
    assert float(p @ f) - float(plain @ f) > 10 * mcse  # the zero-inflation matters here


def test_learned_vacancy_matches_quadrature():
    """The cells held at the truth (noise sd 0.01), phi, the persons per housing unit m and the zero-inflation v
    learned (normal priors on log phi, log m and logit v): their posterior, with a zero-inflated negative binomial
    for each housed block's total, is the quadrature's on a grid of the three."""
    from scipy.special import expit, logit
    from scipy.stats import nbinom, norm

    units = np.array([4.0, 0.0, 3.0, 10.0, 1.0, 2.0, 6.0, 1.0, 2.0, 3.0])
    totals = np.array([11, 0, 0, 27, 0, 5, 14, 0, 0, 8])
    release, truth = _held_blocks(totals)
    settings = {"phi_prior": (math.log(10.0), 1.0), "mean_prior": (math.log(2.5), 1.0), "vacant": 0.2,
                "vacant_prior": (logit(0.1), 1.0)}  # fmt: skip
    tree = sample_people(release, draws=4000, tune=1000, random_seed=4,
                         hyperparameters=settings, exposure=LeafExposure(units, np.zeros((units.size, 0))),
                         initial=truth.reshape(-1, 2), progressbar=False)  # fmt: skip
    assert (tree["posterior"]["cells"].values.reshape(-1, truth.size) == truth).all()
    grid = np.linspace(-4.0, 4.0, 81)
    lp, lm, lv = np.meshgrid(grid + math.log(10.0), grid / 2 + math.log(2.5), grid + logit(0.1), indexing="ij")
    log = norm.logpdf(lp, math.log(10.0), 1.0) + norm.logpdf(lm, math.log(2.5), 1.0) + norm.logpdf(lv, logit(0.1), 1.0)
    phi, v = np.exp(lp), expit(lv)
    for n, u in zip(totals, units, strict=True):
        if u:
            nb = nbinom.logpmf(n, phi, phi / (phi + np.exp(lm) * u))
            log = log + (np.logaddexp(np.log(v), np.log1p(-v) + nb) if n == 0 else np.log1p(-v) + nb)
    w = np.exp(log - log.max())
    w /= w.sum()
    post = tree["posterior"]
    drawn = {"phi": np.log(post["phi"].values), "m": np.log(post["mean_size"].values[..., 0]),
             "v": logit(post["vacant"].values)}  # fmt: skip
    for name, grid_value in (("phi", lp), ("m", lm), ("v", lv)):
        _assert_exact_mean(w.ravel(), grid_value.ravel(), drawn[name], name)
        sd = _exact_moments(w.ravel(), grid_value.ravel())[1]
        assert abs(drawn[name].std() - sd) < 0.15 * sd, (name, drawn[name].std(), sd)


def test_a_bad_zero_inflation_is_refused():
    release, exposure, _, _, fixed = _empty_blocks(0.4)
    for bad in (1.0, -0.1, "0.2"):
        with pytest.raises(ValueError, match="vacant must be a number in"):
            sample_people(release, draws=5, tune=0, exposure=exposure, hyperparameters={**fixed, "vacant": bad},
                          progressbar=False)  # fmt: skip
    with pytest.raises(ValueError, match="need an exposure"):
        sample_people(release, draws=5, tune=0, hyperparameters={"vacant": 0.2}, progressbar=False)
    with pytest.raises(ValueError, match="vacant_prior"):
        sample_people(release, draws=5, tune=0, exposure=exposure, hyperparameters={"vacant": 0.2,
                      "vacant_prior": (0.0, -1.0)}, progressbar=False)  # fmt: skip
