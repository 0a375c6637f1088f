"""``warm_up``: compile the PyMC layer's numba kernels into numba's on-disk cache, once, ahead of the first fit."""

from __future__ import annotations

import logging
import time

import numpy as np
import pymc as pm

from ..kernels import augmentation as kernels
from ..kernels import windows
from ..kernels.resampling import draw_columns
from ..mechanisms import Gaussian
from .release import Release
from .sampling import assign_steps


def warm_up() -> dict:
    """Compile the data-augmentation kernels (``ppdinfer.kernels.augmentation``, ``child_sweeps`` included), and those of summed-out latents
    (``draw_columns``, ``ppdinfer.kernels.windows``), so that the first
    :func:`ppdinfer.pymc.sample` in any later process loads them from numba's cache instead of compiling.

    The kernels are compiled with ``cache=True`` and one specialisation serves every latent family
    (Poisson, binomial, multinomial; collapsed or not) and every release, so one tiny fit (two Poisson
    counts with Gamma rates released with Gaussian noise, one draw) compiles all of them: about 28 s on a
    fresh install of a busy 2-core machine, about 1 s when the cache already holds them (numba then loads
    rather than compiles). ``make demo`` and ``make test`` run it once, after installing (``ppdinfer
    warmup``); the first ``ppdinfer.pymc.sample`` of the 50-hospital model (one core) then takes about 9 s
    instead of 35 s on that machine.

    Returns
    -------
    dict
        ``seconds`` (wall time) and ``kernels``: the number of compiled (or loaded) specialisations of each
        kernel, by name.

    Examples
    --------
    >>> from ppdinfer.pymc import warm_up
    >>> report = warm_up()
    >>> report["kernels"]["augmentation_sweeps"]
    1
    """
    start = time.perf_counter()
    with pm.Model() as model:
        rate = pm.Gamma("rate", 2.0, 1.0, shape=2)
        x = pm.Poisson("x", rate * 10.0, initval=np.array([10, 20]))
        Release("y", Gaussian(2.0), x, observed=[10.3, 19.1])
    logger = logging.getLogger("pymc")
    level = logger.level
    logger.setLevel(logging.ERROR)  # one draw: PyMC's notes on short chains say nothing here
    try:
        with model:
            pm.sample(
                step=assign_steps(model),
                draws=1,
                tune=1,
                chains=1,
                cores=1,
                random_seed=0,
                progressbar=False,
                compute_convergence_checks=False,
            )
    finally:
        logger.setLevel(level)
    # a latent with other children (ppdinfer.pymc.children): the same sweeps with their terms
    one = np.ones((1, 2))
    kernels.child_sweeps(
        kernels.POISSON,
        np.array([10, 20]),
        np.array([10.3, 19.1]),
        np.array([[10.0], [20.0]]),
        0.125,
        2,
        False,
        np.ones(2),
        np.array([10.3, 19.1]),
        np.ones(3),
        1,
        0,
        np.zeros(1, dtype=np.int64),
        one,
        one,
        one,
        one,
    )
    # where the latents are summed out: their draws, and the gamma-Poisson window's sums by recurrence
    draw_columns(np.zeros((2, 1)), np.array([0.5]))
    window = (np.ones(1), np.zeros(1), np.zeros(1, dtype=np.int64), np.ones((1, 1)), np.zeros(1, dtype=np.int64))
    windows.gamma_poisson_window(*window, np.zeros(1))
    windows.gamma_poisson_window_value(*window, np.zeros(1))
    windows.gamma_poisson_window_draws(
        np.ones((1, 1)), np.zeros((1, 1)), *window[2:], np.zeros((2, 1)), np.zeros((1, 1))
    )
    windows.window_edge_mass(np.zeros((3, 1)), np.zeros(1, dtype=np.int64), np.full(1, np.inf))
    compiled = {
        name: len(function.signatures)
        for name, function in (*vars(kernels).items(), *vars(windows).items(), ("draw_columns", draw_columns))
        if hasattr(function, "signatures") and function.signatures
    }
    return {"seconds": time.perf_counter() - start, "kernels": compiled}
