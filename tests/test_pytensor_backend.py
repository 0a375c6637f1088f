"""PyTensor's backend in a fresh install: the numba linker, and no BLAS warning on any ppdinfer PyMC path (issue 44).

PyTensor warns that it "could not link to a BLAS installation" only when its C backend reads its BLAS flags; its
default linker (numba) calls scipy's BLAS and never reads them. The test runs a fit in a fresh interpreter with
every warning shown, so a PyTensor whose default moved back to the C backend without a BLAS fails it.
"""

import os
import subprocess
import sys

SCRIPT = """
import warnings
warnings.simplefilter("always")
import numpy as np
import pymc as pm
import pytensor
from pytensor.compile.mode import get_default_mode
import ppdinfer as pp
import ppdinfer.pymc as ppm

print("linker", type(get_default_mode().linker).__name__)
with pm.Model() as model:
    rate = pm.Gamma("rate", 2.0, 0.1)
    x = pm.Poisson("x", rate, shape=3)
    ppm.Release("y", pp.mechanisms.DiscreteGaussian(2.0), x, observed=np.array([18, 25, 21]))
    beta = pm.Normal("beta", 0.0, 1.0, shape=4)
    pm.Normal("z", pm.math.dot(np.ones((50, 4)), beta), 1.0, observed=np.zeros(50))
    tree = ppm.sample(draws=30, tune=30, chains=1, random_seed=1, progressbar=False)
print("method", tree.posterior.attrs["ppdinfer_method"])
with pm.Model():  # a user's own LKJ model through ppdinfer.pymc.sample: PyMC's initial point compiles a scan on
    # the C linker, which warns once per process: first here, then in the gallery model's fit
    chol, _, _ = pm.LKJCholeskyCov("chol", n=2, eta=2.0, sd_dist=pm.HalfNormal.dist(1.0, size=2))
    pm.MvNormal("w", mu=np.zeros(2), chol=chol, observed=np.zeros((10, 2)))
    ppm.sample(draws=20, tune=20, chains=1, random_seed=1, progressbar=False, compute_convergence_checks=False)
from ppdinfer.models import linear_regression as lr
regression = lr.model(n=200, epsilon=1.0)  # an LKJ prior: PyMC's initial point compiles a scan on the C linker
x, y = lr.synthetic_records(200, random_seed=0)
regression.fit(regression.release(x, y, random_seed=1), draws=20, tune=20, chains=1, random_seed=1)
print("done")
"""


def test_a_fit_uses_the_numba_linker_and_prints_no_blas_warning():
    fresh = {k: v for k, v in os.environ.items() if k != "PYTENSOR_FLAGS"}  # PyTensor's defaults, not a user's flags
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=600, env=fresh)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "linker NumbaLinker" in done.stdout, done.stdout
    assert "method augment" in done.stdout or "method marginalize" in done.stdout, done.stdout
    assert "BLAS" not in done.stderr, done.stderr[-3000:]


CHECK = """
import warnings
from ppdinfer.pymc._backend_warnings import BLAS_WARNING, quiet_blas_warning
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    with quiet_blas_warning():
        warnings.warn(BLAS_WARNING + ". Operations that might benefit from BLAS will be severely degraded.")
print("shown", len(caught))
"""


def test_the_blas_warning_stays_where_the_user_chose_the_c_backend():
    """``quiet_blas_warning`` checks its assumption: under ``linker=cvm`` the warning is true and is shown."""
    for flags, shown in [("linker=cvm", 1), ("", 0)]:
        env = {**os.environ, "PYTENSOR_FLAGS": flags}
        done = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=300, env=env)
        assert done.returncode == 0, done.stderr[-3000:]
        assert f"shown {shown}" in done.stdout, (flags, done.stdout)
