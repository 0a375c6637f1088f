"""The exact samplers on several cores: the same draws as on one, whatever the cores or batches."""

import multiprocessing
import os
import signal
import threading
import time
import warnings
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np
import pytest

import ppdinfer as pp
from ppdinfer.inference.parallel import LOOKAHEAD_PER_WORKER, BlockPool, available_cores, resolve_cores
from ppdinfer.inference.rejection import BLOCK_SIZE
from ppdinfer.models import beta_binomial

MODEL = beta_binomial.model(n=200, epsilon=0.5)


def rejection(**kwargs):
    options = dict(draws=300, random_seed=7, progressbar=False) | kwargs
    return pp.rejection_sample(MODEL, 80, **options)


def test_rejection_draws_do_not_depend_on_cores_batch_size_or_executor():
    reference = rejection(cores=1)
    variants = [rejection(cores=2), rejection(cores=3, batch_size=3 * BLOCK_SIZE), rejection(cores=2, batch_size=1)]
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        variants.append(rejection(executor=pool))
    for result in variants:
        np.testing.assert_array_equal(result["posterior"]["p"].values, reference["posterior"]["p"].values)
        np.testing.assert_array_equal(result["posterior"]["x"].values, reference["posterior"]["x"].values)
        np.testing.assert_array_equal(
            result["sample_stats"]["proposals"].values, reference["sample_stats"]["proposals"].values
        )


def test_a_proposal_budget_stops_at_the_same_draws_on_any_number_of_cores():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pp.BudgetWarning)
        one, two = (rejection(draws=10_000, max_proposals=50_000, cores=c) for c in (1, 2))
    assert not one.attrs["complete"] and 0 < one["posterior"].sizes["draw"] < 10_000
    np.testing.assert_array_equal(one["posterior"]["x"].values, two["posterior"]["x"].values)
    assert int(one["sample_stats"]["total_proposals"]) == int(two["sample_stats"]["total_proposals"]) == 50_000


def test_importance_draws_do_not_depend_on_cores_or_executor():
    def run(**kwargs):
        return pp.importance_sample(MODEL, 80, draws=10_000, random_seed=3, **kwargs)

    reference = run(cores=1)
    # processes return their blocks, threads (the sampler's or a user's) write them in place
    with (
        ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool,
        ThreadPoolExecutor(3) as threads,
    ):
        variants = [run(cores=2), run(cores=4), run(executor=pool), run(executor=threads)]
    for result in variants:
        for group, name in [("proposal", "log_weight"), ("proposal", "psis_log_weight"), ("posterior", "x")]:
            np.testing.assert_array_equal(result[group][name].values, reference[group][name].values)
        np.testing.assert_array_equal(result["posterior"]["p"].values, reference["posterior"]["p"].values)
        assert float(result["sample_stats"]["ess"]) == float(reference["sample_stats"]["ess"])
    # the blocked importance sampler still targets the exact posterior
    exact = pp.exact_posterior(MODEL, 80)
    mean, sd = float(exact["exact"]["theta_mean"][0]), float(exact["exact"]["theta_sd"][0])
    ess = float(reference["sample_stats"]["ess"])
    assert abs(float(pp.weighted_mean(reference)["p"]) - mean) < 4 * sd / np.sqrt(ess)


def test_ctrl_c_on_several_cores_returns_the_draws_so_far():
    hard = beta_binomial.model(n=5000, epsilon=2.0)  # acceptance about 1e-3: many batches
    timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))
    start = time.perf_counter()
    timer.start()
    try:
        with pytest.warns(pp.BudgetWarning, match="interrupt"):
            result = pp.rejection_sample(hard, 2000, draws=10**7, random_seed=1, progressbar=False, cores=2)
    finally:
        timer.cancel()
    assert time.perf_counter() - start < 3.0
    assert result.attrs["stopped_by"] == "an interrupt" and not result.attrs["complete"]
    assert result["posterior"].sizes["draw"] > 0


def test_block_pool_keeps_block_order_and_uses_threads():
    def which_thread(block):
        time.sleep(0.002 * (40 - block))  # later blocks finish first
        return np.array([block]), np.array([threading.current_thread().name])

    with BlockPool(cores=3) as pool:
        chunks = list(pool.map(which_thread, pool.even_chunks(range(40))))
    blocks, names = (np.concatenate(part) for part in zip(*(parts for _, parts in chunks)))
    assert blocks.tolist() == list(range(40)) and len(chunks) > 3
    assert [block for chunk, _ in chunks for block in chunk] == list(range(40))
    assert len(set(names)) > 1 and all(name.startswith("ppdinfer-block") for name in names)
    with BlockPool(cores=1) as pool:
        ((chunk, (blocks, names)),) = pool.map(which_thread, pool.even_chunks(range(3)))
    assert chunk == range(3) and blocks.tolist() == [0, 1, 2] and set(names) == {threading.current_thread().name}


def test_block_pool_reads_chunks_lazily_and_cancels_the_rest():
    submitted = []

    def chunks():
        for block in range(1000):
            submitted.append(block)
            yield range(block, block + 1)

    with BlockPool(cores=2) as pool:
        for chunk, _ in pool.map(lambda block: (np.array([block]),), chunks()):
            if chunk.start == 5:
                break
    # the chunk being collected and at most LOOKAHEAD_PER_WORKER per worker ahead of it
    assert len(submitted) <= 6 + LOOKAHEAD_PER_WORKER * 2


def test_default_cores_are_all_at_the_top_level_and_one_inside_a_worker():
    assert resolve_cores(None) == available_cores() >= 1
    with ThreadPoolExecutor(1) as threads:
        assert threads.submit(resolve_cores, None).result() == 1
        assert threads.submit(resolve_cores, 2).result() == 2  # an explicit request holds
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as processes:
        assert processes.submit(resolve_cores, None).result() == 1


def test_cores_must_be_a_positive_integer():
    assert resolve_cores(None) == available_cores() >= 1
    with pytest.raises(ValueError, match="cores"):
        rejection(cores=0)
