"""PyTensor's BLAS warning, silenced only where it does not apply.

PyTensor warns that it "could not link to a BLAS installation" when its C backend reads its BLAS flags. A pip
install has none, but PyTensor's default linker (numba) calls scipy's BLAS and never reads them; PyMC still
compiles a few small functions on the C linker (the initial point of a model with an LKJ prior: a scan), which
print the warning once per process though the sampler's own functions never run there. :func:`quiet_blas_warning`
ignores it while the default linker is numba, and lets it through where the user chose the C backend
(``PYTENSOR_FLAGS=linker=cvm``), where it is true.
"""

from __future__ import annotations

import contextlib
import warnings

from pytensor.compile.mode import get_default_mode
from pytensor.link.numba.linker import NumbaLinker

__all__ = ["quiet_blas_warning"]

BLAS_WARNING = "PyTensor could not link to a BLAS installation"


@contextlib.contextmanager
def quiet_blas_warning():
    """A context in which PyTensor's BLAS warning is ignored if the default linker is numba (module docstring).

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     with quiet_blas_warning():
    ...         warnings.warn(BLAS_WARNING + ". Operations that might benefit from BLAS will be severely degraded.")
    >>> len(caught)          # the default linker is numba: nothing shown
    0
    """
    with warnings.catch_warnings():
        if isinstance(get_default_mode().linker, NumbaLinker):
            warnings.filterwarnings("ignore", message=BLAS_WARNING)
        yield
