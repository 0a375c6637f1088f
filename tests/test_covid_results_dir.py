"""The case study's results directory: configuration, damaged files, temporary files, lock, pool workers."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import xarray as xr

from ppdinfer.case_studies.covid_pa import load_monthly
from ppdinfer.case_studies.covid_pa.pipeline import infer_step, report_step
from ppdinfer.case_studies.covid_pa.results_dir import TEMPORARY_PREFIX, TEMPORARY_SUFFIX, ResultsError, table_digest
from ppdinfer.case_studies.covid_pa.synthesis import load_results, run_synthesis
from ppdinfer.datasets import COVID_PA_DATA

DATA = COVID_PA_DATA  # the table shipped with the package

RUN = {
    "methods": ["postprocess", "wem_naive"],
    "epsilons": [1.0],
    "replicates": 1,
    "sweeps": 5,
    "seed": 3,
    "progressbar": False,
}


@pytest.fixture(scope="module")
def full():
    return load_monthly(DATA)


@pytest.fixture(scope="module")
def table(full):
    return full.subset(counties=["Cameron", "Forest"], months=["2020-12", "2021-01"])


def _run(table, out, **changes):
    return run_synthesis(table, out, executor=ThreadPoolExecutor(1), **{**RUN, **changes})


@pytest.fixture(scope="module")
def reference(table, tmp_path_factory):
    out = tmp_path_factory.mktemp("reference")
    _run(table, out)
    return out


@pytest.fixture
def results(reference, tmp_path):
    out = tmp_path / "results"
    shutil.copytree(reference, out)
    return out


@pytest.mark.parametrize(
    "change, message",
    [
        ({"seed": 4}, "seed 3 there, 4 now"),
        ({"sweeps": 6}, "sweeps 5 there, 6 now"),
        ({"counties": ["Cameron", "Sullivan"]}, "counties Cameron, Forest there, Cameron, Sullivan now"),
        ({"months": ["2020-11", "2020-12"]}, "months 2020-12, 2021-01 there, 2020-11, 2020-12 now"),
    ],
)
def test_another_configuration_is_refused_unless_fresh(full, table, results, change, message):
    change = dict(change)
    table = full.subset(counties=change.pop("counties", table.counties), months=change.pop("months", table.months))
    before = {path.name: path.read_bytes() for path in results.glob("*.nc")}
    with pytest.raises(ResultsError, match=f"another configuration \\({message}.*--fresh"):
        _run(table, results, **change)
    assert {path.name: path.read_bytes() for path in results.glob("*.nc")} == before  # nothing touched
    assert len(_run(table, results, fresh=True, **change)) == 2
    loaded = load_results(results)
    assert [loaded.attrs[key] for key in ("seed", "sweeps", "counties", "months")] == [
        change.get("seed", 3),
        change.get("sweeps", 5),
        list(table.counties),
        list(table.months),
    ]


def test_more_replicates_methods_or_epsilons_extend_a_run(table, results):
    assert len(_run(table, results, replicates=2)) == 2
    assert len(_run(table, results, methods=["postprocess"], epsilons=[0.01, 1.0])) == 1
    assert load_results(results).sizes == {
        "synthesis": 2,
        "epsilon": 2,
        "replicate": 2,
        "month": 2,
        "series": 2,
        "county": 2,
    }


def test_results_without_a_manifest_are_refused(table, results):
    (results / "run.json").unlink()
    with pytest.raises(ResultsError, match="without run.json"):
        _run(table, results)


def _damage(path, how):
    data = path.read_bytes()
    if how == "empty":
        path.write_bytes(b"")
    elif how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif how == "overwritten values":  # the last bytes are y's or a flag's
        path.write_bytes(data[:-8] + bytes(255 - b for b in data[-8:]))
    else:  # the recorded seed: a damaged file, not one of another configuration
        assert data.count(b'"seed": 3') == 1
        path.write_bytes(data.replace(b'"seed": 3', b'"seed": 4'))


@pytest.mark.parametrize("how", ["empty", "truncated", "overwritten values", "overwritten attribute"])
def test_a_damaged_file_is_named_by_load_results_and_redone_on_resume(reference, results, table, how, caplog):
    path = results / "wem_naive_eps1_rep000.nc"
    _damage(path, how)
    with pytest.raises(ResultsError, match=f"{path}: (cannot read it|its contents do not match its checksum)"):
        load_results(results)
    assert _run(table, results) and "redoing a damaged result" in caplog.text
    xr.testing.assert_identical(load_results(results), load_results(reference))


def test_load_results_refuses_mixed_configurations(table, results, tmp_path):
    other = tmp_path / "other"
    _run(table, other, seed=4, replicates=2)
    shutil.copy(other / "postprocess_eps1_rep001.nc", results)
    with pytest.raises(ResultsError, match="mixes results of 2 configurations.*seed 3 in the first, 4 in the second"):
        load_results(results)


def test_temporary_files_of_an_interrupted_write_are_removed_and_a_users_are_kept(table, results):
    (results / f"{TEMPORARY_PREFIX}k3j2_x{TEMPORARY_SUFFIX}").write_bytes(b"half a netCDF")
    (results / "my_notes.tmp").write_text("mine")
    assert _run(table, results) == []
    assert [path.name for path in results.glob("*.tmp")] == ["my_notes.tmp"]
    assert not list(results.glob(".*.tmp"))


def _fake_study(monkeypatch, refuse=False):
    """infer_step's computations replaced by tiny stand-ins (or a refusal), to test its bookkeeping."""
    import pandas as pd

    from ppdinfer.case_studies.covid_pa import inference

    def study(*args, **kwargs):
        if refuse:
            raise ResultsError("tasks hold a study of another configuration")
        return pd.DataFrame({"county": ["Cameron"], "covered": [1]})

    monkeypatch.setattr(inference, "coverage_study", study)
    monkeypatch.setattr(inference, "coverage_summary", lambda frame: pd.DataFrame({"coverage": [0.9]}))
    monkeypatch.setattr(inference, "enumerable_counties", lambda table, month: ["Cameron"])
    monkeypatch.setattr(inference, "subproblem_check", lambda *args, **kwargs: pd.DataFrame({"exact": [1.0]}))


def test_infer_records_the_data_digest_and_a_refused_infer_keeps_the_finished_study(table, tmp_path, monkeypatch):
    _fake_study(monkeypatch)
    out = infer_step(table, tmp_path, replicates=1, month="2021-01", check_month="2020-12", progressbar=False)
    recorded = json.loads((out / "run.json").read_text())
    assert recorded["data"] == table_digest(table) and recorded["months"] == list(table.months)
    _fake_study(monkeypatch, refuse=True)
    with pytest.raises(ResultsError, match="another configuration"):
        infer_step(table, tmp_path, replicates=1, month="2021-01", check_month="2020-12", progressbar=False)
    assert json.loads((out / "run.json").read_text()) == recorded  # the finished study stays in the report


def test_report_refuses_inference_made_on_other_data(table, results):
    (results / "inference").mkdir()
    config = {"counties": list(table.counties), "months": list(table.months), "data": "0" * 64}
    (results / "inference" / "run.json").write_text(json.dumps(config))
    with pytest.raises(
        ResultsError,
        match=r"inference was made on other data than the report's \(data 000000000000"
        r"\.\.\. there, [0-9a-f]{12}\.\.\. now\)",
    ):
        report_step(results, data=DATA)
    (results / "inference" / "run.json").write_text(json.dumps({**config, "data": table_digest(table)}))
    with pytest.raises(FileNotFoundError, match="coverage_summary.csv"):  # past the check, to the study's files
        report_step(results, data=DATA)


_HOLD_LOCK = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX)
os.write(fd, str(os.getpid()).encode())
print("locked", flush=True)
time.sleep(60)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="flock")
def test_a_second_run_at_once_is_refused_and_a_dead_runs_lock_does_not_block(table, results):
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_LOCK, str(results / ".lock")], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline() == "locked\n"
        with pytest.raises(ResultsError, match=f"in use by another run \\(pid {holder.pid}\\)"):
            _run(table, results, replicates=2)
    finally:
        holder.kill()
        holder.wait()
    assert (results / ".lock").read_text() == str(holder.pid)  # a stale lock file
    assert len(_run(table, results, replicates=2)) == 2


#: Seconds for a spawned worker to import ppdinfer and run its initializer (generous on a busy machine).
WORKER_START = 8


def _children(pid):
    """Live (not zombie) child pids of ``pid``, from /proc."""
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        for child in (task / "children").read_text().split():
            stat = Path(f"/proc/{child}/stat")
            if stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] != "Z":
                found.append(int(child))
    return found


def _alive(pid):
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads /proc")
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGINT], ids=["SIGKILL", "SIGINT"])
def test_pool_workers_do_not_outlive_the_command(tmp_path, how):
    """SIGKILL: nothing in the parent can clean up (SIGTERM's default action is the same); SIGINT to
    the parent alone (as `kill -INT`): the command ends at once rather than after the running tasks.
    The prior-congenial WEM releases by an MCMC chain: with 10^8 sweeps its tasks run until stopped."""
    command = [
        sys.executable,
        "-m",
        "ppdinfer.cli",
        "covid",
        "synthesize",
        "--data",
        str(DATA),
        "--results",
        str(tmp_path),
        "--counties",
        "Allegheny",
        "Erie",
        "--months",
        "2021-01",
        "--methods",
        "wem_prior",
        "--replicates",
        "4",
        "--sweeps",
        "100000000",
        "--workers",
        "2",
        "--no-progress",
    ]
    parent = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers = []
    try:
        deadline = time.monotonic() + 60
        while len(workers) < 2:
            assert time.monotonic() < deadline and parent.poll() is None, "the pool did not start"
            time.sleep(0.2)
            workers = [p for p in _children(parent.pid) if b"spawn_main" in Path(f"/proc/{p}/cmdline").read_bytes()]
        time.sleep(WORKER_START)
        parent.send_signal(how)
        # tasks never end (10^8 sweeps): only the stop does; 60 s allows for a parent busy in C code on a loaded machine
        assert parent.wait(60) == (130 if how == signal.SIGINT else -how)
        start = time.monotonic()
        while any(map(_alive, workers)) and time.monotonic() < start + 10:
            time.sleep(0.1)
        assert not [p for p in workers if _alive(p)]
    finally:
        parent.kill()
        parent.wait()
        for p in filter(_alive, workers):
            os.kill(p, signal.SIGKILL)
