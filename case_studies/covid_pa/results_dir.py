"""The results directory of a synthesis run: its configuration, checked files and lock.

A run's *configuration* is what its results depend on besides (method, epsilon, replicate):
the seed, the table (counties, months and a digest of its counts), the WEM sweeps and the
package version. The directory records it in ``run.json``, and every result file records it
too, with a SHA-256 checksum of its contents, so that each file can be checked on its own
(:func:`read_result`). More replicates, methods or epsilons under one configuration extend a
run; another configuration is a conflict (:func:`prepare`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
from pathlib import Path

import numpy as np
import xarray as xr

from ... import __version__
from ...mechanisms.wem import DEFAULT_SWEEPS
from .table import CovidTable

MANIFEST = "run.json"
LOCK = ".lock"
#: The names of the temporary files a run writes (and :func:`prepare` removes): ``.ppdinfer-*.tmp``.
TEMPORARY_PREFIX, TEMPORARY_SUFFIX = ".ppdinfer-", ".tmp"

log = logging.getLogger(__name__)


class ResultsError(ValueError):
    """A results directory or file that cannot be used as it is; the message names the path."""


class DamagedResult(ResultsError):
    """A result file that cannot be read or whose contents do not match its checksum."""


def table_digest(table: CovidTable) -> str:
    """SHA-256 of the table's counts and populations (the data a run depends on)."""
    digest = hashlib.sha256()
    for values in (table.cases, table.deaths, table.population, table.previous_cases, table.previous_deaths):
        digest.update(np.ascontiguousarray(values, dtype=np.int64).tobytes())
    return digest.hexdigest()


def run_config(table: CovidTable, seed: int, sweeps: int | None = None) -> dict:
    """The configuration of a synthesis of ``table`` (``sweeps=None``: the mechanism's default)."""
    if int(seed) != seed or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed}")
    return {
        "seed": int(seed),
        "sweeps": DEFAULT_SWEEPS if sweeps is None else int(sweeps),
        "counties": list(table.counties),
        "months": list(table.months),
        "data": table_digest(table),
        "version": __version__,
    }


def checksum(dataset: xr.Dataset) -> str:
    """SHA-256 of everything a result file holds: its attributes (but ``sha256``), coordinates and values."""
    attrs = {key: str(value) for key, value in dataset.attrs.items() if key != "sha256"}
    digest = hashlib.sha256(json.dumps(attrs, sort_keys=True).encode())
    for name in sorted(dataset.variables):
        values = dataset[name].values
        digest.update(name.encode())
        digest.update(
            "\x1f".join(map(str, values.ravel())).encode()
            if values.dtype.kind in "OSU"
            else np.ascontiguousarray(values).tobytes()
        )
    return digest.hexdigest()


def stamp(dataset: xr.Dataset, config: dict) -> xr.Dataset:
    """``dataset`` with ``config`` (as JSON) and then its :func:`checksum` in its attributes."""
    stamped = dataset.assign_attrs(run=json.dumps(config))
    return stamped.assign_attrs(sha256=checksum(stamped))


def read_result(path: Path) -> tuple[xr.Dataset, dict]:
    """A result file, loaded and checked, and its configuration; :class:`DamagedResult` if it is not sound."""
    try:
        with xr.open_dataset(path, engine="scipy") as opened:
            dataset = opened.load()
    except Exception as err:  # an empty, truncated or overwritten file fails in many ways
        raise DamagedResult(f"{path}: cannot read it ({type(err).__name__}: {err})") from err
    if "sha256" not in dataset.attrs or "run" not in dataset.attrs:
        raise DamagedResult(f"{path}: no configuration or checksum (an older ppdinfer's result?); start the run afresh")
    if checksum(dataset) != dataset.attrs["sha256"]:
        raise DamagedResult(f"{path}: its contents do not match its checksum")
    return dataset, json.loads(dataset.attrs["run"])


def differences(old: dict, new: dict, labels: tuple[str, str] = ("there", "now")) -> str:
    """The keys on which two configurations differ, with both values, labelled."""

    def show(value):
        if isinstance(value, list) and len(value) > 6:
            return f"{len(value)} from {value[0]} to {value[-1]}"
        if isinstance(value, list):
            return ", ".join(map(str, value))
        return f"{value[:12]}..." if isinstance(value, str) and len(value) > 16 else str(value)  # a digest

    return "; ".join(
        f"{key} {show(old.get(key))} {labels[0]}, {show(new.get(key))} {labels[1]}"
        for key in dict.fromkeys([*new, *old])
        if old.get(key) != new.get(key)
    )


def write_atomically(path: Path, content: bytes) -> None:
    """Write ``content`` to ``path`` atomically: to a temporary file of the run's own naming
    (``.ppdinfer-*.tmp``, which :func:`prepare` clears after an interruption) in its folder, then a rename."""
    handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=TEMPORARY_PREFIX, suffix=TEMPORARY_SUFFIX)
    with os.fdopen(handle, "wb") as file:
        file.write(content)
    os.replace(tmp, path)


def write_json(path: Path, data: dict) -> None:
    """Write ``data`` to ``path`` atomically (:func:`write_atomically`)."""
    write_atomically(path, json.dumps(data, indent=1).encode("utf-8"))


def read_json(path: Path) -> dict:
    """A JSON file written by :func:`write_json`; :class:`ResultsError` naming it if it is unreadable."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ResultsError(f"{path}: cannot read it ({err})") from err


@contextlib.contextmanager
def locked(results_dir: Path):
    """Hold ``results_dir``'s lock for the block; :class:`ResultsError` if another process holds it.

    The lock is an ``flock`` on a file holding the owner's pid: the system releases it when its
    process ends, however it ends, so a lock left by a dead process never blocks. (Not taken
    where ``fcntl`` is missing, i.e. on Windows.)
    """
    try:
        import fcntl
    except ImportError:
        yield
        return
    fd = os.open(results_dir / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            raise ResultsError(
                f"{results_dir} is in use by another run (pid {owner}); wait for it to end or stop it"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
    finally:
        os.close(fd)  # releases the lock


@contextlib.contextmanager
def task_folder(results_dir: Path | str | None, config: dict, fresh: bool, prefix: str):
    """The folder of a run's task files for the block: ``results_dir`` (created if needed) or, when it
    is None, a temporary folder named ``prefix...``, held :func:`locked` and :func:`prepare`-d for
    ``config``."""
    with contextlib.ExitStack() as stack:
        if results_dir is None:
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix=prefix)))
        else:
            folder = Path(results_dir)
            folder.mkdir(parents=True, exist_ok=True)
        stack.enter_context(locked(folder))
        prepare(folder, config, fresh)
        yield folder


def prepare(results_dir: Path, config: dict, fresh: bool = False) -> None:
    """Make ``results_dir`` ready for a run of ``config``; call it holding :func:`locked`.

    Removes the temporary files of interrupted writes (the run's own, ``.ppdinfer-*.tmp``: a
    user's files are left alone). A directory of another configuration
    (or with results but no ``run.json``) raises :class:`ResultsError`, unless ``fresh``: then
    its results are deleted first.
    """
    for path in results_dir.glob(f"{TEMPORARY_PREFIX}*{TEMPORARY_SUFFIX}"):
        path.unlink()
    manifest = results_dir / MANIFEST
    if fresh:
        for path in [*results_dir.glob("*.nc"), manifest]:
            path.unlink(missing_ok=True)
    if manifest.exists():
        recorded = read_json(manifest)
        if recorded != config:
            raise ResultsError(
                f"{results_dir} holds a run of another configuration ({differences(recorded, config)}); "
                "choose another results folder, or start afresh with --fresh (fresh=True), "
                "which deletes its results"
            )
    elif any(results_dir.glob("*.nc")):
        raise ResultsError(
            f"{results_dir} holds results without {MANIFEST} (an older ppdinfer's?); choose another "
            "results folder, or start afresh with --fresh (fresh=True), which deletes them"
        )
    else:
        write_json(manifest, config)


def usable(path: Path, config: dict) -> bool:
    """Whether ``path`` holds a sound result of ``config``: False if absent or damaged (a damaged
    file is deleted, to be redone); :class:`ResultsError` if it is of another configuration."""
    if not path.exists():
        return False
    try:
        _, recorded = read_result(path)
    except DamagedResult as err:
        log.warning("redoing a damaged result: %s", err)
        path.unlink()
        return False
    if recorded != config:
        raise ResultsError(f"{path} is of another configuration than its folder ({differences(recorded, config)})")
    return True
