"""The NUTS backends of PyMC's ``fast`` extra (nutpie, NumPyro) that a benchmark can add rows for, where installed.

``installed()`` names those importable in this process and prints, once, a line for each one missing (its row is
then skipped); ``min_bulk_ess`` is the smallest bulk ESS over every variable of a posterior (or over ``names``).
"""

from __future__ import annotations

import importlib.util

import arviz as az

BACKENDS = ("nutpie", "numpyro")


def installed() -> list[str]:
    """The backends of :data:`BACKENDS` that import here; a message for each that does not."""
    found = []
    for name in BACKENDS:
        if importlib.util.find_spec(name) is None:
            print(f"({name} is not installed: its rows are skipped; pip install {name})")
        else:
            found.append(name)
    return found


def min_bulk_ess(idata, names=None) -> float:
    """The smallest bulk ESS over every coordinate of the posterior's variables (or of ``names``)."""
    ess = az.ess(idata, method="bulk", var_names=names)
    return min(float(ess[name].min()) for name in ess.data_vars)
