"""The arguments of :func:`ppdinfer.pymc.sample`, checked before PyMC sees them.

PyMC's own messages for ``draws=0``, ``chains=0``, ``random_seed='abc'`` or ``step='nuts'`` come
from deep inside its sampler; these checks name the argument and say what it takes.
"""

from __future__ import annotations

import numbers

import numpy as np
from pymc.step_methods.compound import BlockedStep, CompoundStep

from ..validation import positive_int


def _check_sample_arguments(conjugate, kwargs: dict) -> None:
    """Refuse an argument of ``sample`` (``conjugate``, or one bound for ``pm.sample`` in ``kwargs``)
    that PyMC would reject late or misread, with a ValueError naming it.

    Examples
    --------
    >>> from ppdinfer.pymc._arguments import _check_sample_arguments
    >>> _check_sample_arguments(True, {"draws": 100, "chains": 2, "random_seed": 1})
    >>> _check_sample_arguments("no", {})
    Traceback (most recent call last):
    ...
    ValueError: conjugate must be True or False, got 'no'
    """
    if not isinstance(conjugate, bool | np.bool_):
        raise ValueError(f"conjugate must be True or False, got {conjugate!r}")
    for name in ("draws", "chains", "cores"):
        if kwargs.get(name) is not None:
            positive_int(kwargs[name], name)
    tune = kwargs.get("tune")
    if tune is not None and (
        isinstance(tune, bool | np.bool_) or not isinstance(tune, numbers.Integral | np.integer) or tune < 0
    ):
        raise ValueError(f"tune must be a whole number >= 0 (tuning steps per chain), got {tune!r}")
    seed = kwargs.get("random_seed")
    seeds = list(seed) if isinstance(seed, list | tuple) else [seed]
    for entry in seeds:
        if entry is None or isinstance(entry, np.random.Generator | np.random.SeedSequence):
            continue
        if isinstance(entry, bool | np.bool_) or not isinstance(entry, numbers.Integral | np.integer) or entry < 0:
            raise ValueError(
                "random_seed must be None, a non-negative int, a numpy Generator or SeedSequence, or a list "
                f"of them (one per chain), got {seed!r}"
            )
    step = kwargs.get("step")
    steps = list(step) if isinstance(step, list | tuple) else [] if step is None else [step]
    for entry in steps:
        if not isinstance(entry, BlockedStep | CompoundStep):
            raise ValueError(
                f"step must be a PyMC step method or a list of them (e.g. pm.NUTS([theta]), pm.Metropolis([x])), "
                f"got {entry!r}; ppdinfer.pymc.sample assigns the privacy steps itself and NUTS to the rest"
            )
