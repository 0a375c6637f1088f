"""numba-compiled kernels: log densities and inner loops, nothing else."""

from .additive import additive_noise_loglik, select_accepted
from .independence import independence_block
from .resampling import sorted_search

__all__ = ["additive_noise_loglik", "independence_block", "select_accepted", "sorted_search"]
