"""The first ``ppdinfer.pymc.sample`` on a fresh install, with and without ``ppdinfer warmup`` (issue 34, part 3).

A fresh install is simulated with empty caches: numba's (``NUMBA_CACHE_DIR``, where ppdinfer's ``cache=True``
kernels go) and PyTensor's (``PYTENSOR_FLAGS=compiledir=...``), both temporary folders. Each step runs in its own
Python process, one after the other:

1. cold: the first ``ppdinfer.pymc.sample`` of the 50-hospital model (``benchmarks/hospitals_pymc.py``: Poisson
   counts, Gamma rates, Gaussian release at (1, 1e-6); 2 chains x (1000 + 1000), ``--cores`` (1), seed 2023),
   its time split into numba compilation of ppdinfer's kernels (numba's compile events, outermost only, in
   this process: with ``--cores 2`` the chains' processes compile, and this reads 0), the rest of
   ``pm.sample``'s sampling and the set-up before it; ``--method`` is passed to ``ppdinfer.pymc.sample``
   (``augment``: the data-augmentation kernels; by default ``auto`` sums the 50 counts out instead);
2. ``ppdinfer warmup`` on the emptied caches (the warm-up's own cost, process wall time included);
3. the same first fit as 1 in a new process after the warm-up.

Target: 3 within 10 s. Timings on a shared machine are noisy: the load average is printed beside each step.
Run: ``.venv/bin/python benchmarks/first_run_pymc.py [--cores 2] [--method augment]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

FIT = r"""
import sys, time
start = time.perf_counter()
from numba.core import event
compiled = [0.0, 0]
class Outermost(event.Listener):
    depth = 0
    def on_start(self, ev):
        self.depth += 1
        if self.depth == 1:
            self.began = time.perf_counter()
    def on_end(self, ev):
        self.depth -= 1
        if self.depth == 0 and (ev.data["dispatcher"].py_func.__module__ or "").startswith("ppdinfer"):
            compiled[0] += time.perf_counter() - self.began
            compiled[1] += 1
event.register("numba:compile", Outermost())
sys.path.insert(0, "benchmarks")
import ppdinfer.pymc as ppm
from hospitals_pymc import hierarchical_model, synthetic_hospitals
imported = time.perf_counter() - start
exposure, x, y, sigma = synthetic_hospitals(50, 2023)
model = hierarchical_model(exposure, y, sigma, plain=False)
kwargs = {} if sys.argv[2] == "-" else {"method": sys.argv[2]}
began = time.perf_counter()
with model:
    idata = ppm.sample(draws=1000, tune=1000, chains=2, cores=int(sys.argv[1]), random_seed=2023,
                       progressbar=False, compute_convergence_checks=False, **kwargs)
total = time.perf_counter() - began
sampling = float(idata["sample_stats"].attrs.get("sampling_time", idata["posterior"].attrs.get("sampling_time", float("nan"))))
print(f"import {imported:.1f} s; first ppdinfer.pymc.sample {total:.1f} s = set-up {total - sampling:.1f} s + "
      f"pm.sample's sampling {sampling:.1f} s, of which numba compiling ppdinfer's kernels {compiled[0]:.1f} s "
      f"({compiled[1]} top-level specialisations)")
"""


def load() -> str:
    return f"load average {os.getloadavg()[0]:.1f}"


def run(command, env) -> None:
    start = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    if done.returncode:
        raise SystemExit(done.stderr[-3000:])
    print(f"   {lines[-1] if lines else ''}\n   (process wall {time.perf_counter() - start:.1f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cores", type=int, default=1)
    parser.add_argument("--method", default="-", help="ppdinfer.pymc.sample's method, if it has one ('-': none)")
    args = parser.parse_args()
    fit = [sys.executable, "-c", FIT, str(args.cores), args.method]
    warmup = [str(Path(sys.executable).parent / "ppdinfer"), "warmup"]
    with tempfile.TemporaryDirectory() as folder:
        env = {
            **os.environ,
            "NUMBA_CACHE_DIR": f"{folder}/numba",
            "PYTENSOR_FLAGS": f"compiledir={folder}/pytensor",
        }
        print(f"1. cold first fit, empty caches ({load()}):")
        run(fit, env)
        for name in ("numba", "pytensor"):
            subprocess.run(["rm", "-rf", f"{folder}/{name}"], check=True)
        print(f"2. ppdinfer warmup on empty caches ({load()}):")
        run(warmup, env)
        print(f"3. first fit after the warm-up ({load()}):")
        run(fit, env)


if __name__ == "__main__":
    main()
