"""The coverage study as checkpointed tasks: the same frame on any executor, resume, configuration."""

from concurrent.futures import ThreadPoolExecutor

import pandas as pd
import pytest

from ppdinfer.case_studies.covid_pa import inference, load_monthly
from ppdinfer.case_studies.covid_pa.inference import coverage_study
from ppdinfer.case_studies.covid_pa.results_dir import ResultsError
from ppdinfer.case_studies.covid_pa.synthesis import LocalPool, share
from ppdinfer.datasets import COVID_PA_DATA

DATA = COVID_PA_DATA  # the table shipped with the package
pytestmark = pytest.mark.filterwarnings("ignore:Numba will use object mode")

# 2 releases x 1 epsilon x 2 replicates = 4 tiny fits
RUN = {"epsilons": [1.0], "replicates": 2, "draws": 40, "tune": 40, "chains": 1, "seed": 3, "progressbar": False}
MONTH = "2021-01"


@pytest.fixture(scope="module")
def table():
    return load_monthly(DATA).subset(counties=["Allegheny", "Erie", "Cameron", "Forest"], months=["2020-12", "2021-01"])


@pytest.fixture(scope="module")
def reference(table, tmp_path_factory):
    return coverage_study(
        table, MONTH, results_dir=tmp_path_factory.mktemp("reference"), executor=ThreadPoolExecutor(1), **RUN
    )


def test_the_frame_is_one_row_per_task_and_county_in_task_order(table, reference):
    assert len(reference) == 2 * 1 * 2 * 4
    keys = reference[["release", "epsilon", "replicate"]].drop_duplicates().itertuples(index=False)
    assert [tuple(k) for k in keys] == [
        ("laplace", 1.0, 0),
        ("laplace", 1.0, 1),
        ("wem_naive", 1.0, 0),
        ("wem_naive", 1.0, 1),
    ]
    assert list(reference["county"][:4]) == list(table.counties)
    # replicates differ: each task has its own stream
    first, second = (reference[(reference["release"] == "laplace") & (reference["replicate"] == r)] for r in (0, 1))
    assert (first["plugin"].to_numpy() != second["plugin"].to_numpy()).any()


@pytest.mark.parametrize("workers", [1, 2])
def test_local_pools_give_the_same_frame(table, reference, tmp_path, workers):
    with LocalPool(workers) as pool:
        got = coverage_study(table, MONTH, results_dir=tmp_path, executor=pool, **RUN)
    pd.testing.assert_frame_equal(got, reference)


def test_dask_local_cluster_gives_the_same_frame_and_gets_the_table_once(table, reference, tmp_path):
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster,
        distributed.Client(cluster) as client,
    ):
        executor = client.get_executor()
        scattered = share(executor, table)
        assert isinstance(scattered, distributed.Future) and scattered.result().counties == table.counties
        got = coverage_study(table, MONTH, results_dir=tmp_path, executor=executor, **RUN)
    pd.testing.assert_frame_equal(got, reference)
    assert share(ThreadPoolExecutor(1), table) is table  # elsewhere the value itself


def test_an_interrupted_study_resumes_to_the_same_frame(table, reference, tmp_path, monkeypatch):
    calls = []
    original = inference._run_coverage_task

    def interrupt_on_third(table, task, *args):
        calls.append(task)
        if len(calls) >= 3:
            raise KeyboardInterrupt
        return original(table, task, *args)

    monkeypatch.setattr(inference, "_run_coverage_task", interrupt_on_third)
    with pytest.raises(KeyboardInterrupt):
        coverage_study(table, MONTH, results_dir=tmp_path, executor=ThreadPoolExecutor(1), **RUN)
    assert len(list(tmp_path.glob("*.nc"))) == 2  # finished fits are kept
    calls.clear()
    resumed = coverage_study(
        table, MONTH, results_dir=tmp_path, executor=ThreadPoolExecutor(1), **{**RUN, "releases": ["laplace"]}
    )  # the finished part: nothing to fit
    assert calls == [] and len(resumed) == 2 * 4
    monkeypatch.setattr(inference, "_run_coverage_task", original)
    pd.testing.assert_frame_equal(
        coverage_study(table, MONTH, results_dir=tmp_path, executor=ThreadPoolExecutor(1), **RUN), reference
    )


def test_another_configuration_is_refused_unless_fresh(table, reference, tmp_path):
    one = {**RUN, "replicates": 1, "epsilons": [0.5], "releases": ["laplace"]}
    coverage_study(table, MONTH, results_dir=tmp_path, executor=ThreadPoolExecutor(1), **one)
    with pytest.raises(ResultsError, match="another configuration.*seed 3 there, 4 now"):
        coverage_study(table, MONTH, results_dir=tmp_path, executor=ThreadPoolExecutor(1), **{**one, "seed": 4})
    fresh = coverage_study(
        table, MONTH, results_dir=tmp_path, executor=ThreadPoolExecutor(1), fresh=True, **{**one, "seed": 4}
    )
    assert len(list(tmp_path.glob("*.nc"))) == 1 and len(fresh) == 4


def test_a_task_stream_does_not_depend_on_the_other_epsilons(table, reference, tmp_path):
    both = coverage_study(
        table,
        MONTH,
        results_dir=tmp_path,
        executor=ThreadPoolExecutor(1),
        **{**RUN, "epsilons": [0.5, 1.0], "releases": ["laplace"], "replicates": 1},
    )
    alone = reference[(reference["release"] == "laplace") & (reference["replicate"] == 0)]
    pd.testing.assert_frame_equal(both[both["epsilon"] == 1.0].reset_index(drop=True), alone.reset_index(drop=True))


def test_bad_arguments(table, tmp_path):
    for bad, match in [
        ({"releases": ["nope"]}, "releases"),
        ({"epsilons": [-1.0]}, "epsilons"),
        ({"replicates": 0}, "replicates"),
        ({"draws": 0}, "draws"),
        ({"prob": 1.0}, "prob"),
    ]:
        with pytest.raises(ValueError, match=match):
            coverage_study(table, MONTH, results_dir=tmp_path, **{**RUN, **bad})
    with pytest.raises(ValueError, match="month"):
        coverage_study(table, "1999-01", results_dir=tmp_path, **RUN)


def test_the_infer_command_passes_workers_and_fresh(tmp_path, monkeypatch):
    from ppdinfer.case_studies.covid_pa import pipeline
    from ppdinfer.cli import main

    seen = {}
    monkeypatch.setattr(pipeline, "infer_step", lambda table, results, **kwargs: seen.update(kwargs))
    assert (
        main(
            [
                "covid",
                "infer",
                "--data",
                str(DATA),
                "--results",
                str(tmp_path),
                "--counties",
                "Cameron",
                "Forest",
                "--workers",
                "2",
                "--fresh",
                "--no-progress",
            ]
        )
        == 0
    )
    assert (seen["workers"], seen["executor"], seen["fresh"], seen["progressbar"]) == (2, None, True, False)


def test_an_interrupted_infer_says_how_to_resume(tmp_path, capsys, monkeypatch):
    from ppdinfer.cli import main

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(inference, "coverage_study", interrupted)
    assert (
        main(
            [
                "covid",
                "infer",
                "--data",
                str(DATA),
                "--results",
                str(tmp_path),
                "--counties",
                "Cameron",
                "Forest",
                "--workers",
                "1",
            ]
        )
        == 130
    )
    assert capsys.readouterr().err == (
        f"ppdinfer: interrupted: finished tasks are kept in {tmp_path}/inference/tasks; "
        "run the same command to resume\n"
    )
