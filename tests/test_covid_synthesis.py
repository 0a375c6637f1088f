"""The case study's synthesis: constraints, resume after an interrupt, executors."""

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import xarray as xr

from ppdinfer.case_studies.covid_pa import load_monthly, synthesis
from ppdinfer.case_studies.covid_pa.synthesis import load_results, run_synthesis
from ppdinfer.datasets import COVID_PA_DATA

DATA = COVID_PA_DATA  # the table shipped with the package

RUN = {"replicates": 2, "sweeps": 30, "seed": 7, "progressbar": False}


@pytest.fixture(scope="module")
def table():
    return load_monthly(DATA).subset(
        counties=["Allegheny", "Erie", "Cameron", "Forest"], months=["2020-11", "2020-12", "2021-01"]
    )


@pytest.fixture(scope="module")
def reference(table, tmp_path_factory):
    out = tmp_path_factory.mktemp("reference")
    run_synthesis(table, out, executor=ThreadPoolExecutor(1), **RUN)
    return load_results(out)


def test_every_release_respects_its_constraints(table, reference):
    y = reference["y"]
    totals = xr.DataArray(
        [table.z(t)["total"] for t in range(table.n_months)], dims="month", coords={"month": list(table.months)}
    )
    congenial = y.sel(synthesis=["postprocess", "wem_congenial", "wem_prior"])
    assert (congenial.sel(series="cases").sum("county") == totals).all()
    assert (congenial.sel(series="cases") >= congenial.sel(series="deaths")).all()
    assert (congenial.sel(series="deaths") >= 0).all()
    assert reference.sizes["replicate"] == 2 and reference.sizes["synthesis"] == 4
    flags = reference["contracted_case_zeros"]
    assert flags.sel(synthesis="postprocess").notnull().all() and flags.sel(synthesis="wem_naive").isnull().all()
    # the noise is real: releases differ from the truth and between replicates
    truth = np.stack([table.x(t) for t in range(table.n_months)])
    assert (y.sel(synthesis="wem_naive", epsilon=0.01).values != truth).any()
    assert (y.isel(replicate=0) != y.isel(replicate=1)).any()


def test_interrupted_run_resumes_to_identical_results(table, reference, tmp_path, monkeypatch):
    calls = {"n": 0}
    original = synthesis._run_task

    def interrupt_on_fifth(*args):
        calls["n"] += 1
        if calls["n"] >= 5:  # and after: the pool's thread may start the sixth before the interrupt lands
            raise KeyboardInterrupt
        return original(*args)

    monkeypatch.setattr(synthesis, "_run_task", interrupt_on_fifth)
    with pytest.raises(KeyboardInterrupt):
        run_synthesis(table, tmp_path, executor=ThreadPoolExecutor(1), **RUN)
    assert len(list(tmp_path.glob("*.nc"))) == 4  # finished work is kept
    monkeypatch.setattr(synthesis, "_run_task", original)
    resumed = run_synthesis(table, tmp_path, executor=ThreadPoolExecutor(1), **RUN)
    assert len(resumed) == 16 - 4
    xr.testing.assert_identical(load_results(tmp_path), reference)


def test_dask_local_cluster_gives_the_same_results(table, reference, tmp_path):
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster,
        distributed.Client(cluster) as client,
    ):
        run_synthesis(table, tmp_path, methods=["postprocess", "wem_prior"], executor=client.get_executor(), **RUN)
    got = load_results(tmp_path)
    xr.testing.assert_identical(got["y"], reference["y"].sel(synthesis=["postprocess", "wem_prior"]))


def test_result_files_are_written_without_xarrays_file_lock(tmp_path, monkeypatch):
    """Given a file name, xarray takes a write lock per file: on a dask worker a distributed lock,
    a round trip to the scheduler per file (90 ms, nine times the write itself)."""
    import xarray.backends.scipy_ as scipy_backend

    def no_lock(key):
        raise AssertionError(f"write_result asked xarray for a lock on {key}")

    monkeypatch.setattr(scipy_backend, "get_write_lock", no_lock)
    dataset = xr.Dataset({"y": (("county",), np.arange(4, dtype=np.int32))}, attrs={"epsilon": 0.5})
    synthesis.write_result(dataset, tmp_path / "one.nc")
    with xr.open_dataset(tmp_path / "one.nc", engine="scipy") as written:
        xr.testing.assert_identical(written.load(), dataset)
    assert [path.name for path in tmp_path.iterdir()] == ["one.nc"]  # no temporary file left


def test_the_papers_delta_z_is_an_l2_sensitivity_so_the_per_count_laplace_loses_2_eps():
    """A person counted as a case and a death moves from county 0 to county 1: four counts change by 1."""
    from ppdinfer.mechanisms import DiscreteLaplace

    epsilon = 0.5
    x = np.array([40, 7, 5, 1, 30, 3])  # cases of 3 counties, then their deaths
    moved = x + np.array([-1, 1, 0, -1, 1, 0])
    assert np.linalg.norm(moved - x, 2) == synthesis.DELTA_Z  # the WEM's sensitivity: loss <= eps
    laplace = DiscreteLaplace(epsilon, synthesis.DELTA_Z)
    releases = np.stack([x, moved, x + np.array([2, -3, 0, 1, -2, 0])])
    losses = np.array([laplace.logpdf(y, np.stack([x, moved])) @ [1, -1] for y in releases])
    # the log ratio is (eps / 2) (|y - moved|_1 - |y - x|_1), at most (eps / 2) * 4 = 2 eps, attained at y = x
    assert np.isclose(np.abs(losses).max(), 2 * epsilon) and np.isclose(losses[0], 2 * epsilon)


def test_bad_arguments(table, tmp_path):
    with pytest.raises(ValueError, match="methods"):
        run_synthesis(table, tmp_path, methods=["nope"])
    with pytest.raises(ValueError, match="epsilons"):
        run_synthesis(table, tmp_path, epsilons=[0.5])
    with pytest.raises(ValueError, match="replicates"):
        run_synthesis(table, tmp_path, replicates=0)
    with pytest.raises(FileNotFoundError, match="no synthesis results"):
        load_results(tmp_path)
