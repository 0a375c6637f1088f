"""Time the exact Laplace audits of the Kantorovich mechanism: `privacy_loss` and `smallest_laplace_scale`.

What is measured
----------------
For K support points (the integers 0..K-1) and two beta-binomial pmfs, P(X | s_i) =
BetaBinomial(K - 1, 2, 3) and P(X | s_j) = BetaBinomial(K - 1, 3, 2) (no zeros; the plan moves
mass over a fifth of the support), and Theorem 1's calibration at eps = 1:

1. ``privacy_loss``: the exact loss, now O(K) (two passes in log space over the sorted support,
   then the 16 largest log ratios evaluated again directly);
2. ``smallest_laplace_scale``: the bisection for the least scale whose loss is at most eps = 1
   (some 60 audits);
3. the same two with the previous audit, O(K^2) (every support point against every other, in
   blocks of 1,024, the library's code before this change, copied below): the loss up to
   ``--old-loss-max`` points (default 20,000, some 20 s), the search up to ``--old-max``
   (default 2,000, some 5-30 s; some 60 times the loss).

Each row gives the seconds (best of ``--repeats`` for the new audits, one run for the old ones),
the results, and the largest difference between old and new where both ran.

Run with ``.venv/bin/python benchmarks/privacy_audit.py [--sizes 2000,20000,200000]
[--old-loss-max 20000] [--old-max 2000] [--repeats 3]`` (about a minute with the defaults).
"""

from __future__ import annotations

import argparse
import contextlib
import time

import numpy as np
from scipy import special, stats

import ppdinfer.privacy.kantorovich as kantorovich
from ppdinfer.mechanisms import Laplace


def previous_laplace_loss(plan, scale: float) -> float:
    """The O(K^2) audit the library used before: logsumexp over every pair, in blocks of 1,024 points."""
    support = plan.support
    with np.errstate(divide="ignore"):
        log_p, log_q = np.log(plan.p), np.log(plan.q)
    worst = 0.0
    for start in range(0, support.size, 1024):
        y = support[start : start + 1024, None]
        kernel = -np.abs(y - support[None, :]) / scale
        difference = special.logsumexp(kernel + log_p, axis=1) - special.logsumexp(kernel + log_q, axis=1)
        worst = max(worst, float(np.max(np.abs(difference))))
    return worst


@contextlib.contextmanager
def previous_audit():
    """Run the library's searches with the previous loss (the bisection itself is unchanged)."""
    current = kantorovich._laplace_loss
    kantorovich._laplace_loss = previous_laplace_loss
    try:
        yield
    finally:
        kantorovich._laplace_loss = current


def timed(function, repeats: int):
    """(best seconds over ``repeats`` calls, the last result)."""
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    return best, result


def run_size(size: int, old_loss_max: int, old_max: int, repeats: int) -> dict[str, str]:
    points = np.arange(size)
    p = stats.betabinom(size - 1, 2, 3).pmf(points)
    q = stats.betabinom(size - 1, 3, 2).pmf(points)
    plan = kantorovich.kantorovich_plan(p / p.sum(), q / q.sum(), points.astype(np.float64), tie_tolerance=1e-12)
    mechanism = kantorovich.kantorovich_laplace(plan, 1.0)
    loss_time, loss = timed(lambda: kantorovich.privacy_loss(plan, mechanism), repeats)
    scale_time, scale = timed(lambda: kantorovich.smallest_laplace_scale(plan, 1.0), repeats)
    row = {
        "K": f"{size:,}",
        "sensitivity": f"{plan.sensitivity:g}",
        "loss (s)": f"{loss_time:.4f}",
        "loss": f"{loss:.12f}",
        "smallest scale (s)": f"{scale_time:.3f}",
        "smallest scale": f"{scale:.10g}",
    }
    row.update(dict.fromkeys(("old loss (s)", "abs(loss - old)", "old smallest scale (s)", "rel(scale - old)"), "-"))
    with previous_audit():
        if size <= old_loss_max:
            old_loss_time, old_loss = timed(lambda: kantorovich.privacy_loss(plan, mechanism), 1)
            row.update({"old loss (s)": f"{old_loss_time:.3f}", "abs(loss - old)": f"{abs(loss - old_loss):.1e}"})
        if size <= old_max:
            old_scale_time, old_scale = timed(lambda: kantorovich.smallest_laplace_scale(plan, 1.0), 1)
            row.update(
                {
                    "old smallest scale (s)": f"{old_scale_time:.2f}",
                    "rel(scale - old)": f"{abs(scale - old_scale) / old_scale:.1e}",
                }
            )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="2000,20000,200000")
    parser.add_argument("--old-loss-max", type=int, default=20000, help="largest K for the previous O(K^2) loss")
    parser.add_argument("--old-max", type=int, default=2000, help="largest K for the search with the previous loss")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    warm_up = kantorovich.kantorovich_plan([0.5, 0.5], [0.25, 0.75], [0.0, 1.0])
    kantorovich.privacy_loss(warm_up, Laplace(1.0))  # compile the kernel outside the timings
    rows = [run_size(int(size), args.old_loss_max, args.old_max, args.repeats) for size in args.sizes.split(",")]
    header = list(rows[0])
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row[key] for key in header) + " |")


if __name__ == "__main__":
    main()
