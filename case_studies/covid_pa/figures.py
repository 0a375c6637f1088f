"""Figures 1-4 of the COVID-19 case study (paper section 4) from the synthesis results.

Every figure function takes the :class:`~.table.CovidTable` that was synthesized and the
Dataset of :func:`~.synthesis.load_results`, and returns a ``matplotlib.figure.Figure`` built
without pyplot (no display needed). :func:`save_all` writes them as PNG files.

The quantities behind the figures are public too, as the report (``report.py``) states its
numbers from them: :func:`case_rates`, :func:`true_rates`, :func:`synthetic_rates`,
:func:`relative_errors` and :func:`contraction_frequencies`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import xarray as xr
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from ...privacy import plot_correlated_counts
from .synthesis import FLAGS
from .table import CovidTable

__all__ = [
    "FIGURE1_COUNTIES",
    "FIGURES",
    "METHOD_DIM",
    "RATE_SCALE",
    "SYMLOG_FACTOR",
    "case_rates",
    "contraction_frequencies",
    "extreme_counties",
    "figure1",
    "figure2",
    "figure3",
    "figure4",
    "methods_of",
    "relative_errors",
    "save_all",
    "synthetic_rates",
    "true_rates",
]

#: The dimension of :func:`~.synthesis.load_results` that holds the method names.
METHOD_DIM = "synthesis"
#: Case rates are cases per RATE_SCALE residents.
RATE_SCALE = 100_000
#: Figure 1 draws a panel on a symmetric-log axis when its releases exceed this multiple of the largest true rate.
SYMLOG_FACTOR = 10
#: The counties of the paper's Figure 1: a large, a mid-sized and a small county.
FIGURE1_COUNTIES = ("Allegheny", "Erie", "Cameron")
METHOD_LABELS = {
    "postprocess": "post-processing",
    "wem_naive": "WEM naive",
    "wem_congenial": "WEM congenial",
    "wem_prior": "WEM prior-congenial",
}
METHOD_COLORS = {
    "postprocess": "tab:red",
    "wem_naive": "tab:orange",
    "wem_congenial": "tab:green",
    "wem_prior": "tab:blue",
}
FLAG_LABELS = {
    "contracted_case_zeros": "ContractedCaseZeros",
    "contracted_death_zeros": "ContractedDeathZeros",
    "contracted_rates": "ContractedRates",
}
EPSILON_COLORS = ("tab:purple", "tab:olive")


def methods_of(results: xr.Dataset) -> list[str]:
    """The methods of ``results`` (the values of its :data:`METHOD_DIM` dimension)."""
    return [str(method) for method in results[METHOD_DIM].values]


def case_rates(table: CovidTable, cases: xr.DataArray) -> xr.DataArray:
    """``cases`` (with a county dim) per :data:`RATE_SCALE` residents of each county of ``table``."""
    population = xr.DataArray(table.population, coords={"county": list(table.counties)}, dims="county")
    return cases / population * RATE_SCALE


def true_rates(table: CovidTable) -> xr.DataArray:
    """Confidential case rates per :data:`RATE_SCALE` residents, dims (month, county)."""
    return case_rates(table, table.to_xarray()["cases"])


def synthetic_rates(table: CovidTable, results: xr.Dataset) -> xr.DataArray:
    """Synthetic case rates, dims (synthesis, epsilon, replicate, month, county), on the table's months and counties.

    Raises KeyError when ``results`` lack a month or county of ``table``.
    """
    return case_rates(
        table, results["y"].sel(series="cases", month=list(table.months), county=list(table.counties), drop=True)
    )


def relative_errors(table: CovidTable, results: xr.Dataset) -> xr.DataArray:
    """100 (synthetic - true) / true of the case rates, NaN where the true count is 0.

    The population cancels, so this is also the relative error of the case counts. County-months
    without a confidential case have no relative error and are excluded (NaN).
    """
    truth = true_rates(table)
    return 100 * (synthetic_rates(table, results) - truth) / truth.where(truth > 0)


def contraction_frequencies(results: xr.Dataset) -> xr.DataArray:
    """Share of post-processed releases with each contraction flag, dims (flag, epsilon, county).

    The share is over replicates and months (each flag is 0 or 1 per county-month release);
    releases missing from an unfinished run are skipped.
    """
    if "postprocess" not in methods_of(results):
        raise ValueError("results hold no 'postprocess' method, whose contraction flags this needs")
    flags = results[list(FLAGS)].sel({METHOD_DIM: "postprocess"}, drop=True)
    return flags.mean(["replicate", "month"]).to_dataarray("flag")


def extreme_counties(table: CovidTable, n: int = 5) -> list[str]:
    """The ``n`` most populous then the ``n`` least populous counties, by decreasing population.

    With at most 2 n counties, every county is returned.
    """
    order = np.argsort(-table.population, kind="stable")
    picked = order if len(order) <= 2 * n else np.concatenate([order[:n], order[-n:]])
    return [table.counties[j] for j in picked]


def _boxes(ax, data: Sequence[np.ndarray], positions: Sequence[float], width: float, color: str, **kwargs) -> None:
    """Filled box plots of ``data`` (NaN skipped) at ``positions`` in ``color``."""
    ax.boxplot(
        [values[~np.isnan(values)] for values in data],
        positions=positions,
        widths=width,
        patch_artist=True,
        manage_ticks=False,
        boxprops={"facecolor": color, "alpha": 0.6, "edgecolor": color},
        medianprops={"color": "black", "linewidth": 1},
        whiskerprops={"color": color},
        capprops={"color": color},
        flierprops={"marker": ".", "markersize": 2, "markeredgecolor": color},
        **kwargs,
    )


def _method_legend(figure: Figure, methods: Sequence[str], extra: Sequence) -> None:
    handles = [Patch(facecolor=METHOD_COLORS[m], alpha=0.6, label=METHOD_LABELS[m]) for m in methods]
    figure.legend(handles=[*handles, *extra], loc="outside lower center", ncols=len(handles) + len(extra))


def _rate_axis(ax, released: np.ndarray, truth: np.ndarray) -> None:
    """Label a case-rate axis; symmetric-log when ``released`` reach beyond SYMLOG_FACTOR x max(truth)."""
    label = f"cases per {RATE_SCALE:,}"
    if np.nanmax(np.abs(released)) > SYMLOG_FACTOR * truth.max():
        ax.set_yscale("symlog", linthresh=10)
        label += " (symlog)"
    ax.set_ylabel(label)
    ax.grid(axis="y", alpha=0.3)


def _count(n: int, noun: str) -> str:
    """'1 month', '12 months'."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def figure1(table: CovidTable, results: xr.Dataset, counties: Sequence[str] = FIGURE1_COUNTIES) -> Figure:
    """Box plots over replicates of the synthetic case rates of ``counties`` by month.

    One panel per (county, epsilon), stacked; in each month one box per method; the true rates
    as a black line. The y axis is linear, or symmetric-log (linear within +-10 per 100,000) in a
    panel whose releases reach beyond :data:`SYMLOG_FACTOR` times its largest true rate, so
    that a method with a huge spread (the naive WEM at eps = 0.01 in a small county) does not
    flatten the others. Counties absent from ``table`` are skipped.
    """
    shown = [county for county in counties if county in table.counties]
    if not shown:
        raise ValueError(f"counties: none of {list(counties)} is in the table")
    rates, truth = synthetic_rates(table, results), true_rates(table)
    methods, epsilons = methods_of(results), list(rates["epsilon"].values)
    panels = [(county, eps) for county in shown for eps in epsilons]
    months = np.arange(table.n_months)
    step = 0.8 / len(methods)
    figure = Figure(figsize=(max(9.0, 2.5 + 0.55 * table.n_months), 2.4 * len(panels) + 0.8), layout="constrained")
    axes = figure.subplots(len(panels), 1, sharex=True, squeeze=False)[:, 0]
    for ax, (county, eps) in zip(axes, panels):
        for k, method in enumerate(methods):
            values = rates.sel({METHOD_DIM: method, "epsilon": eps, "county": county}).transpose("month", "replicate")
            _boxes(
                ax,
                list(values.values),
                months + (k - (len(methods) - 1) / 2) * step,
                0.85 * step,
                METHOD_COLORS[method],
            )
        (true_line,) = ax.plot(
            months, truth.sel(county=county).values, color="black", marker="o", markersize=3, label="true rate"
        )
        population = int(table.population[table.counties.index(county)])
        ax.set_title(f"{county} (population {population:,}), ε = {eps:g}", fontsize="medium")
        _rate_axis(ax, rates.sel(epsilon=eps, county=county).values, truth.sel(county=county).values)
    axes[-1].set_xticks(months, table.months, rotation=90)
    axes[-1].set_xlabel("month")
    _method_legend(figure, methods, [true_line])
    figure.suptitle(f"Synthetic case rates over {results.sizes['replicate']} replicates", fontsize="large")
    return figure


def figure2(table: CovidTable, results: xr.Dataset) -> Figure:
    """Distribution of the relative error of case rates over all counties, months and replicates.

    One panel per epsilon, one box per method: quartiles, whiskers at the 5th and 95th
    percentiles, a triangle at the maximum; symmetric-log y axis (linear within +-1 %).
    County-months with no true case are excluded (see :func:`relative_errors`).
    """
    errors = relative_errors(table, results)
    methods, epsilons = methods_of(results), list(errors["epsilon"].values)
    positions = np.arange(len(methods))
    figure = Figure(figsize=(1.2 + 2.6 * len(epsilons) + 0.9 * len(methods) * len(epsilons), 5.0), layout="constrained")
    axes = figure.subplots(1, len(epsilons), sharey=True, squeeze=False)[0]
    for ax, eps in zip(axes, epsilons):
        for position, method in zip(positions, methods):
            values = errors.sel({METHOD_DIM: method, "epsilon": eps}).values.ravel()
            _boxes(ax, [values], [position], 0.6, METHOD_COLORS[method], whis=(5, 95), showfliers=False)
            ax.plot(position, np.nanmax(values), marker="^", color=METHOD_COLORS[method], markeredgecolor="black")
        ax.axhline(0, color="black", linewidth=0.8)
        ax.set_yscale("symlog", linthresh=1)
        ax.set_xticks(positions, [METHOD_LABELS[m] for m in methods], rotation=20, ha="right")
        ax.set_title(f"ε = {eps:g}")
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("relative error of the case rate (%, symlog)")
    excluded = int((true_rates(table) == 0).sum())
    figure.suptitle(
        "Relative error 100 (synthetic - true) / true of county case rates\n"
        f"{table.n_counties} counties x {table.n_months} months x {results.sizes['replicate']} "
        f"replicates ({excluded} county-months without cases excluded); box: quartiles, "
        "whiskers: 5th-95th percentiles, ▲: maximum",
        fontsize="medium",
    )
    return figure


def figure3(table: CovidTable, results: xr.Dataset, n: int = 5) -> Figure:
    """Frequency of the post-processing contractions in the ``n`` most and least populous counties.

    One panel per flag (see :mod:`ppdinfer.postprocessing`), one bar per (county, epsilon):
    the percentage of the county's post-processed monthly releases, over replicates, with the flag.
    """
    counties = extreme_counties(table, n)
    frequencies = 100 * contraction_frequencies(results).sel(county=counties)
    epsilons = list(frequencies["epsilon"].values)
    x = np.arange(len(counties))
    width = 0.8 / len(epsilons)
    labels = [f"{c}\n{table.population[table.counties.index(c)]:,}" for c in counties]
    figure = Figure(figsize=(2.0 + 0.9 * len(counties), 2.6 * len(FLAGS) + 1.0), layout="constrained")
    axes = figure.subplots(len(FLAGS), 1, sharex=True, squeeze=False)[:, 0]
    for ax, flag in zip(axes, FLAGS):
        for k, (eps, color) in enumerate(zip(epsilons, EPSILON_COLORS)):
            ax.bar(
                x + (k - (len(epsilons) - 1) / 2) * width,
                frequencies.sel(flag=flag, epsilon=eps).values,
                width,
                color=color,
                label=f"ε = {eps:g}",
            )
        if len(counties) == 2 * n:
            ax.axvline(n - 0.5, color="gray", linestyle="--", linewidth=1)
        ax.set_title(FLAG_LABELS[flag], fontsize="medium")
        ax.set_ylabel("releases flagged (%)")
        ax.set_ylim(0, 100)
        ax.grid(axis="y", alpha=0.3)
    axes[-1].set_xticks(x, labels, fontsize="small")
    axes[-1].set_xlabel("county and population (most populous left, least populous right)")
    axes[0].legend(loc="upper left")
    figure.suptitle(
        "Post-processing contractions by county and privacy budget\n"
        f"share of {_count(table.n_months, 'month')} x {_count(results.sizes['replicate'], 'replicate')}",
        fontsize="large",
    )
    return figure


def figure4(table: CovidTable, results: xr.Dataset) -> Figure:
    """The paper's Figure 4, Delta_z of correlated counts (:func:`ppdinfer.privacy.plot_correlated_counts`).

    It depends on neither argument; they keep the signature of the other figures.
    """
    return plot_correlated_counts()


#: file stem -> figure function, in the paper's order.
FIGURES: dict[str, Callable[[CovidTable, xr.Dataset], Figure]] = {
    "figure1_case_rates": figure1,
    "figure2_relative_error": figure2,
    "figure3_contractions": figure3,
    "figure4_correlated_counts": figure4,
}


def save_all(table: CovidTable, results: xr.Dataset, out_dir: str | Path, dpi: int = 110) -> dict[str, Path]:
    """Write every figure of :data:`FIGURES` as ``out_dir/<name>.png``; return the paths by name."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, make in FIGURES.items():
        paths[name] = out_dir / f"{name}.png"
        make(table, results).savefig(paths[name], dpi=dpi)
    return paths
