"""Releases of the Wasserstein exponential mechanism whose privacy holds as stated.

Exact samplers (their pmf is checked in test_wasserstein_mechanisms.py), the empirical privacy
audit, warnings for short chains, interruption by Ctrl-C, and run times that do not depend on x.
"""

import functools
import math
import signal
import threading
import time
import warnings
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from ppdinfer.mechanisms import exact_integer, wem
from ppdinfer.mechanisms.wem import EXACT_PROPOSAL_LIMIT, MIN_SWEEPS, ChainLengthWarning, WassersteinExponential

AUDIT_RELEASES = 100_000


def privacy_loss(draws, other, min_count=500):
    """max |log(f(y) / f'(y))| over the outputs seen at least ``min_count`` times in both equal-size samples."""
    counts = []
    for sample in (draws, other):
        values, n = np.unique(sample.reshape(len(sample), -1), axis=0, return_counts=True)
        counts.append({row.tobytes(): c for row, c in zip(values, n)})
    ratios = [
        math.log(counts[0][key] / counts[1][key])
        for key in counts[0]
        if min(counts[0][key], counts[1].get(key, 0)) >= min_count
    ]
    return max(map(abs, ratios))


# -- exact Bernoulli trials ------------------------------------------------------------------
# The kernels decide each trial U < gamma / d of a Bernoulli(exp(-gamma)) acceptance on the 53 random
# digits u of U when double precision leaves a margin; wem._accepted finishes the rest with the exact
# trials of exact_integer, gamma = root_rate sqrt(q) + linear_rate s enclosed at rising precision.


class RecordedBits(exact_integer.RandomBits):
    """Random words from a seeded Generator, each one kept in ``words``."""

    def __init__(self, seed):
        super().__init__(np.random.default_rng(seed))
        self.words = []

    def __call__(self, *shape):
        out = super().__call__(*shape)
        self.words.extend(int(w) for w in out.reshape(-1))
        return out


def enclosure(root_rate, q, linear_rate, s, d=1):
    """The trial probability gamma / d as the exact engine encloses it."""
    return functools.partial(
        exact_integer._quotient, functools.partial(exact_integer.root_plus_linear, root_rate, q, linear_rate, s), d
    )


def reference(root_rate, q, linear_rate, s, d=1):
    """gamma / d to 60 significant digits (about 199 bits), in mpmath."""
    with mpmath.workdps(60):
        return (mpmath.mpf(root_rate) * mpmath.sqrt(q) + mpmath.mpf(linear_rate) * s) / d


#: L2 envelope rate of two coordinates at rate 1/4 (as wem.lattice_l2_plan computes it): close to 1/4 / sqrt(2)
ENVELOPE = math.isqrt(2**59) / 2**32
#: (root_rate, q, linear_rate, s, d): the kernels' gammas near where double precision cannot decide
BOUNDARY_CASES = [
    (1.0, 2, 0.0, 0, 2),  # sqrt(2) / 2
    (0.25, 13, -ENVELOPE, 5, 1),  # naive L2 envelope, v = (3, -2): 0.0175
    (0.25, 13, -ENVELOPE, 5, 3),  # ... its third trial
    (0.25, 2, -ENVELOPE, 2, 1),  # v = (1, 1): root and linear cancel to 1.4e-10
    (1 / 3, 50, 0.0, 0, 6),  # congenial L2, gamma 2.36 in 3 pieces, k = 2
    (0.1, 49 * 49, 0.0, 0, 5 * 7),  # congenial L1 (q = L1^2): a rational 0.14 that no binary fraction equals
]


def test_exact_trials_draw_more_bits_only_when_needed():
    # p = sqrt(4) / 4 = (sqrt(9) - 0.5 * 2) / 4 = 1/2: decided on the first word
    for spec in [(1.0, 4, 0.0, 0, 4), (1.0, 9, -0.5, 2, 4)]:
        for prefix, expected in ((2**52 - 1, True), (2**52, False)):
            bits = RecordedBits(0)
            assert exact_integer.trial(enclosure(*spec), bits, prefix, 53) is expected
            assert len(bits.words) == 1
    # gamma = 0 exactly, however the rates round: never below, and the enclosure does not dip under 0
    zero = exact_integer.root_plus_linear(Fraction(1, 3), 9, -1, 1)
    assert zero.a == 0 and zero.b >= 0
    assert not exact_integer.trial(
        functools.partial(exact_integer.root_plus_linear, Fraction(1, 3), 9, -1, 1), RecordedBits(1)
    )


@pytest.mark.parametrize("spec", BOUNDARY_CASES)
@pytest.mark.parametrize("known", [53, 64])
def test_exact_trials_agree_with_mpmath_near_the_boundary(spec, known):
    # U's first ``known`` digits tie with p's: 53 as the kernels hand a trial over (the first word's last
    # 11 digits usually decide), 64 where every decision needs decide()'s further words
    p = reference(*spec)
    with mpmath.workdps(60):
        prefix = int(mpmath.floor(p * 2**known))
        frac = float(p * 2**known - prefix)
    assert prefix > 0 and 1e-6 < frac < 1 - 1e-6
    # the neighbouring prefixes are decided whatever the further digits
    assert exact_integer.trial(enclosure(*spec), RecordedBits(0), prefix - 1, known)
    assert not exact_integer.trial(enclosure(*spec), RecordedBits(0), prefix + 1, known)
    hits, n = 0, 400
    for seed in range(n):
        bits = RecordedBits(seed)
        decided = exact_integer.trial(enclosure(*spec), bits, prefix, known)
        # V's digits as drawn: the prefix, the rest of the first word, then decide()'s whole words
        digits = 64 * len(bits.words)
        assert digits <= 192  # within the reference's 199 bits (another round has probability 2^-64)
        v = (prefix << (64 - known)) | (bits.words[0] >> known)
        for word in bits.words[1:]:
            v = (v << 64) | word
        with mpmath.workdps(60):
            below, above = mpmath.mpf(v) / 2**digits, mpmath.mpf(v + 1) / 2**digits
            assert p < below or above <= p, "the digits drawn cannot decide, yet a decision was made"
            assert decided is bool(above <= p)
        hits += decided
    # and U < p has the probability frac(p 2^known) given its first digits
    assert abs(hits / n - frac) < 4.5 * math.sqrt(frac * (1 - frac) / n)


@pytest.mark.parametrize("spec", [(0.3, 7, 0.0, 0), (1.0, 2, -0.25, 3), (0.7, 50, 0.0, 0)])
def test_finished_acceptances_are_bernoulli_exp_minus(spec):
    # every trial handed over at its first counter, with uniform 53 digits: the acceptance is then
    # Bernoulli(exp(-gamma)) whatever the kernel would have decided
    root_rate, q, linear_rate, s = spec
    gamma = root_rate * math.sqrt(q) + linear_rate * s
    pieces = max(1, math.ceil(gamma))
    rng = np.random.default_rng(1)
    n = 3000
    state = np.zeros((n, 4))
    state[:] = 1, pieces, 0, pieces
    state[:, 2] = rng.integers(2**53, size=n)
    accepted = wem._accepted(np.full(n, -1), state, rng, lambda i: spec)
    p = math.exp(-gamma)
    assert abs(accepted.mean() - p) < 4.5 * math.sqrt(p * (1 - p) / n)
    # a decided proposal is left as the kernel decided it, and draws no bits
    decided = np.array([1, 0, 1])
    before = rng.bit_generator.state
    assert wem._accepted(decided, np.zeros((3, 4)), rng, lambda i: spec).tolist() == [True, False, True]
    assert rng.bit_generator.state == before


# -- privacy audit ---------------------------------------------------------------------------

AUDIT = {  # neighbouring tables: Delta_z = sigma = 2 apart in one count
    "naive": (None, np.array([[5], [2]]), np.array([[7], [2]])),
    "congenial": ({"total": 8}, np.array([[8], [3]]), np.array([[8], [5]])),
}


@pytest.mark.parametrize("base_measure", AUDIT)
def test_default_releases_pass_the_privacy_audit(base_measure):
    z, x, neighbour = AUDIT[base_measure]
    mechanism = WassersteinExponential(1.0, 2.0, base_measure=base_measure)
    for sweeps in (None, 1):  # the exact release ignores the chain length
        draws = [
            mechanism.release(t, z, random_seed=seed, sweeps=sweeps, replicates=AUDIT_RELEASES)
            for seed, t in enumerate((x, neighbour))
        ]
        # below epsilon = 1: the ideal mechanism's largest log ratio is 0.5 here, plus sampling noise
        assert privacy_loss(*draws) < 0.75
    # the audit has power: a one-sweep chain stays near its start and leaks
    with pytest.warns(ChainLengthWarning):
        draws = [
            mechanism.release(t, z, random_seed=seed, sweeps=1, replicates=AUDIT_RELEASES, method="mcmc")
            for seed, t in enumerate((x, neighbour))
        ]
    assert privacy_loss(*draws) > 2 * mechanism.epsilon


# -- methods and chain length ----------------------------------------------------------------


def test_short_chains_warn_and_exact_refuses_what_it_cannot_do():
    x, z = np.array([[300, 100], [10, 0]]), {"total": 400}  # 1.1e7 tables: beyond enumeration, the chain runs
    congenial = WassersteinExponential(1.0, 2.0, base_measure="congenial")
    with pytest.warns(ChainLengthWarning, match="below MIN_SWEEPS"):
        congenial.release(x, z, sweeps=MIN_SWEEPS - 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        congenial.release(x, z, sweeps=MIN_SWEEPS)
        congenial.release(np.array([[3, 1], [1, 0]]), {"total": 4}, sweeps=1)  # exact: the chain length does not matter
    with pytest.raises(ValueError, match="ENUMERATION_LIMIT"):
        congenial.release(x, z, method="exact")
    large = np.full((2, 67), 10)
    naive = WassersteinExponential(1.0, 2.0)
    assert naive.exact_proposals(None, 67) > EXACT_PROPOSAL_LIMIT >= naive.exact_proposals(None, 18)
    with pytest.raises(ValueError, match="EXACT_PROPOSAL_LIMIT"):
        naive.release(large, method="exact")
    with pytest.warns(ChainLengthWarning):  # "auto" falls back to the chain
        assert naive.release(large, random_seed=0, sweeps=2).shape == (2, 67)


# -- run time and interruption ---------------------------------------------------------------


@pytest.mark.parametrize("base_measure", ["congenial", "prior_congenial"])
def test_exact_congenial_acceptance_rate_does_not_depend_on_x(base_measure, monkeypatch):
    z = {"total": 6, "previous_cases": [3, 9]}
    mechanism = WassersteinExponential(1.0, 2.0, base_measure=base_measure)
    statuses = []

    def counting(index, status, *args):
        kernel(index, status, *args)
        statuses.append(status)

    kernel = wem.congenial_proposals
    monkeypatch.setattr(wem, "congenial_proposals", counting)
    rate = 1 / mechanism.exact_proposals(z, 2)
    for x in ([[6, 0], [0, 0]], [[6, 0], [6, 0]], [[3, 3], [1, 2]]):  # two vertices of the support, an interior table
        statuses.clear()
        mechanism.release(x, z, random_seed=2, replicates=4000)
        status = np.concatenate(statuses)
        assert abs(np.mean(status == 1) - rate) < 4.5 * math.sqrt(rate * (1 - rate) / status.size)


def test_chain_time_does_not_depend_on_x():
    """A chain at a corner of the support, whose moves mostly leave it, runs as long as one inside
    (0.67-0.76 times as long before the chain did the same work for every move)."""
    n_counties, total = 30, 900
    corner = np.zeros((2, n_counties), dtype=np.int64)
    corner[0, 0] = total
    inside = np.array([[30] * n_counties, [15] * n_counties])
    mechanism = WassersteinExponential(10.0, 2.0, base_measure="congenial")  # 30 counties: the chain runs
    mechanism.release(inside, {"total": total}, sweeps=MIN_SWEEPS)  # compile
    ratios = []
    for _ in range(3):  # a busy machine can upset one measurement; the old chain failed every one
        seconds = {"corner": [], "inside": []}
        for _ in range(9):
            for name, x in (("corner", corner), ("inside", inside)):
                start = time.thread_time()
                mechanism.release(x, {"total": total}, random_seed=1, sweeps=MIN_SWEEPS, replicates=20)
                seconds[name].append(time.thread_time() - start)
        ratios.append(np.median(seconds["corner"]) / np.median(seconds["inside"]))
        if 0.85 < ratios[-1] < 1.18:
            break
    assert 0.85 < ratios[-1] < 1.18, f"corner / inside run time {[round(r, 2) for r in ratios]}"


def seconds_to_stop(release, delay=0.3):
    """Seconds from a SIGINT sent to this (main) thread ``delay`` seconds into ``release()`` to the
    KeyboardInterrupt it raises there."""
    sent = []

    def interrupt():
        sent.append(time.perf_counter())
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

    timer = threading.Timer(delay, interrupt)
    timer.start()
    try:
        release()
    except KeyboardInterrupt:
        return time.perf_counter() - sent[0]
    finally:
        timer.cancel()
    return math.inf


def test_ctrl_c_interrupts_a_release_within_a_second():
    large, small, z = np.full((2, 67), 10), np.array([[3, 2, 1], [1, 0, 1]]), {"total": 6}
    naive, congenial = WassersteinExponential(1.0, 2.0), WassersteinExponential(1.0, 2.0, base_measure="congenial")
    naive.release(large), naive.release(small), congenial.release(small, z)  # compile
    assert seconds_to_stop(lambda: naive.release(large, sweeps=10**6)) < 1.0  # 67 counties: the chain
    assert seconds_to_stop(lambda: naive.release(small, replicates=10**9)) < 1.0  # exact samplers
    assert seconds_to_stop(lambda: congenial.release(small, z, replicates=10**9)) < 1.0


def test_wasserstein_naive_draws_are_exact_in_small_dimensions():
    # One coordinate: exp(-rate |k|) is the discrete Laplace pmf; the draws come from the exact release.
    from scipy import stats

    from ppdinfer.pymc.distributions import lattice_l2_draws

    rate = 1.0 / (2 * 2.0)
    draws = lattice_l2_draws(np.full((20_000, 1), 7), 1.0, 2.0, None, np.random.default_rng(3))[:, 0] - 7
    a = np.exp(-rate)
    support = np.arange(-12, 13)
    pmf = (1 - a) / (1 + a) * a ** np.abs(support)
    observed = np.array([(draws == k).sum() for k in support] + [(np.abs(draws) > 12).sum()])
    expected = np.append(pmf, 1 - pmf.sum()) * draws.size
    assert stats.chisquare(observed, expected).pvalue > 1e-4
