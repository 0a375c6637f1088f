"""numba-compiled kernels: log densities and inner loops, nothing else."""

from .additive import additive_noise_loglik, select_accepted

__all__ = ["additive_noise_loglik", "select_accepted"]
