"""The accept/reject pass of a Metropolized independence sampler over precomputed weights."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def independence_chain(log_weight, log_uniform, burn_in, thin, n):
    """Run the chain's accept/reject steps; return the kept states' proposal indices and the acceptances.

    Step t moves to proposal t when log_uniform[t] <= log_weight[t] - log_weight[current]; the
    chain starts at a state of weight 0 (index -1). States after ``burn_in`` steps are kept every
    ``thin`` steps, ``n`` in all.
    """
    kept = np.empty(n, dtype=np.int64)
    current, current_weight, accepted = -1, 0.0, 0
    for t in range(log_weight.size):
        if log_uniform[t] <= log_weight[t] - current_weight:
            current, current_weight = t, log_weight[t]
            accepted += 1
        if t >= burn_in and (t - burn_in + 1) % thin == 0:
            kept[(t - burn_in) // thin] = current
    return kept, accepted
