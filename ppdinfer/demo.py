"""The built-in example behind ``ppdinfer demo``: five synthetic counties, three samplers."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd

from .inference import exact_posterior, importance_sample, rejection_sample, summary


def run_demo(
    output: Path, epsilon: float = 1.0, total: int = 30, draws: int = 2000, seed: int = 2026, progressbar: bool = True
) -> pd.DataFrame:
    """Release y for five synthetic counties, fit the posterior three ways, print and plot.

    Returns the comparison table (posterior mean and 90% interval of each county's share).
    """
    from .models import county_counts  # the gallery's model: the command line may use the gallery, the library not

    previous, current = county_counts.synthetic_month(5, total, random_seed=seed)
    z = county_counts.public_information(previous, total)
    model = county_counts.model(epsilon=epsilon, concentration=50.0)
    y = model.mechanism.release(current, random_seed=seed + 1)
    print(f"Five counties. Public: last month {previous.tolist()}, this month's total {total}.")
    print(f"Confidential x = {current.tolist()}; released y = {y.tolist()} ({model.mechanism!r}).\n")

    results, seconds = {}, {}
    for name, run in [
        ("rejection", lambda: rejection_sample(model, y, z, draws=draws, random_seed=seed, progressbar=progressbar)),
        ("importance", lambda: importance_sample(model, y, z, draws=50 * draws, random_seed=seed)),
        ("exact", lambda: exact_posterior(model, y, z, random_seed=seed)),
    ]:
        start = time.perf_counter()
        results[name] = run()
        seconds[name] = time.perf_counter() - start

    table = pd.concat(
        {
            name: summary(result, prob=0.9, include_x=False)[["mean", "lower", "upper"]]
            for name, result in results.items()
        },
        axis=1,
    )
    rejection_stats = results["rejection"]["sample_stats"]
    importance_stats = results["importance"]["sample_stats"]
    print("Posterior of each county's share of this month's cases: mean and 90% interval")
    print(table.round(3).to_string())
    print(
        f"\nrejection: {draws} exact draws from {int(rejection_stats['total_proposals'])} proposals "
        f"(acceptance {float(rejection_stats['acceptance_rate']):.2e}) in {seconds['rejection']:.2f} s"
    )
    pareto_k = float(importance_stats["pareto_k"])
    k_text = f"{pareto_k:.2f}" if np.isfinite(pareto_k) else "undefined (the largest weights are tied)"
    print(
        f"importance: {50 * draws} weighted draws, ESS {float(importance_stats['ess']):.0f}, "
        f"Pareto k {k_text}, in {seconds['importance']:.2f} s"
    )
    print(
        f"exact: {results['exact']['exact'].sizes['support']} splits of the total enumerated in {seconds['exact']:.2f} s"
    )

    output.mkdir(parents=True, exist_ok=True)
    figure = output / "demo_posteriors.png"
    plot_comparison(results, current, figure)
    print(f"\nFigure: {figure}")
    return table


def plot_comparison(results, truth, path: Path) -> None:
    """One panel per county: exact density, rejection and importance histograms, the truth."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    exact = results["exact"]["exact"]
    rejection = results["rejection"]["posterior"]["share"].values.reshape(-1, truth.size)
    proposals = results["importance"]["proposal"]
    importance = proposals["share"].values.reshape(-1, truth.size)
    weights = np.exp(proposals["log_weight"].values.reshape(-1))
    true_share = truth / truth.sum()
    fig, axes = plt.subplots(1, truth.size, figsize=(3.2 * truth.size, 3.2), sharey=False)
    for j, ax in enumerate(axes):
        grid = exact["theta_grid"].values[:, j]
        low, high = np.interp([0.0005, 0.9995], exact["theta_cdf"].values[:, j], grid)
        bins = np.linspace(low, high, 40)
        ax.hist(rejection[:, j], bins=bins, density=True, alpha=0.45, label="rejection")
        ax.hist(importance[:, j], bins=bins, weights=weights, density=True, histtype="step", lw=1.5, label="importance")
        ax.plot(grid, exact["theta_density"].values[:, j], color="black", lw=1.5, label="exact")
        ax.axvline(true_share[j], color="tab:red", ls="--", lw=1, label="x / total")
        ax.set_xlim(low, high)
        ax.set_title(f"county {j}")
        ax.set_xlabel("share of cases")
    axes[0].set_ylabel("posterior density")
    axes[-1].legend(fontsize=8)
    fig.suptitle("Posterior of county shares given the noisy counts and the public total")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
