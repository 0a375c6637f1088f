"""PyTensor's backends on two PyMC models: the numba linker (the default) against the C linker without a BLAS.

A pip install of PyTensor finds no BLAS for its C backend and warns that it is "severely degraded"; its default
linker is numba, which calls scipy's BLAS and never reads the C backend's flags (issue 44). Each fit runs in a
fresh interpreter with ``PYTENSOR_FLAGS`` unset (numba) or ``linker=cvm`` (C), the same seed:

- the hospital model of ``hospitals_pymc.py`` (200 hospitals; ``ppdinfer.pymc.sample``, method auto: NUTS on
  the two hyperparameters, the latents summed out and drawn exactly);
- a dense linear regression in plain PyMC (n = 2,000 records, 5 coefficients and a noise scale; NUTS), whose
  log density is a matrix-vector product, where a BLAS matters most.

Reported per backend: wall time (compilation included), the smallest bulk ESS, whether the BLAS warning was
printed. Run: ``.venv/bin/python benchmarks/pytensor_backends.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

FIT = r"""
import json, sys, time, warnings
warnings.simplefilter("always")
import arviz as az
import numpy as np
import pymc as pm
sys.path.insert(0, {here!r})
start = time.perf_counter()
if {model!r} == "hospitals":
    import ppdinfer.pymc as ppm
    from hospitals_pymc import hierarchical_model, synthetic_hospitals
    warnings.simplefilter("always")  # hospitals_pymc silences warnings on import
    exposure, x, y, sigma = synthetic_hospitals(200, 2023)
    with hierarchical_model(exposure, y, sigma, plain=False):
        tree = ppm.sample(draws=1000, tune=1000, chains=2, cores=1, random_seed=1, progressbar=False)
    names = ["a", "m"]
else:
    rng = np.random.default_rng(7)
    X = rng.normal(size=(2000, 5))
    yobs = X @ np.array([1.0, -0.5, 0.25, 0.0, 2.0]) + rng.normal(size=2000)
    with pm.Model():
        beta = pm.Normal("beta", 0.0, 10.0, shape=5)
        noise = pm.HalfNormal("noise", 5.0)
        pm.Normal("y", pm.math.dot(X, beta), noise, observed=yobs)
        tree = pm.sample(draws=1000, tune=1000, chains=2, cores=1, random_seed=1, progressbar=False)
    names = ["beta", "noise"]
seconds = time.perf_counter() - start
ess = az.ess(tree, var_names=names, method="bulk")
print(json.dumps({{"seconds": seconds, "min_ess": float(min(float(ess[v].min()) for v in names))}}))
"""


def run(model: str, flags: str | None) -> dict:
    """One fit in a fresh interpreter: its seconds, smallest bulk ESS and whether the BLAS warning showed."""
    env = {k: v for k, v in os.environ.items() if k != "PYTENSOR_FLAGS"}
    if flags:
        env["PYTENSOR_FLAGS"] = flags
    here = str(Path(__file__).resolve().parent)
    done = subprocess.run(
        [sys.executable, "-c", FIT.format(here=here, model=model)], capture_output=True, text=True, env=env
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["blas_warning"] = "BLAS" in done.stderr
    return result


def main() -> None:
    """Both models on both backends, one table."""
    print(f"{'model':<12}{'backend':<22}{'seconds':>9}{'min ESS':>9}  BLAS warning")
    for model in ("hospitals", "regression"):
        for backend, flags in (("numba (default)", None), ("C, no BLAS", "linker=cvm")):
            r = run(model, flags)
            print(f"{model:<12}{backend:<22}{r['seconds']:>9.1f}{r['min_ess']:>9.0f}  {r['blas_warning']}")


if __name__ == "__main__":
    main()
