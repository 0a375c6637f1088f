"""The Markdown report of the COVID-19 case study: the figures and a check of the paper's claims.

The numbers come from small functions of the synthesis results (:func:`claim_numbers` gathers
them); each of the paper's four claims (section 4.2-4.3) is then judged against a criterion
stated in the report (:func:`assess`), and :func:`write_report` writes ``report.md``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import xarray as xr

from ...mechanisms.wem import EXACT_PROPOSAL_LIMIT, MIN_SWEEPS
from .figures import (
    FLAG_LABELS,
    METHOD_DIM,
    METHOD_LABELS,
    RATE_SCALE,
    case_rates,
    contraction_frequencies,
    methods_of,
    relative_errors,
    save_all,
    synthetic_rates,
    true_rates,
)
from .results_dir import differences, table_digest
from .synthesis import DELTA_Z, EPSILONS, FLAGS, METHODS, WEM_BASE_MEASURES, wem_mechanism
from .table import CovidTable

__all__ = [
    "CONCENTRATION_LIMIT",
    "SIGNAL_LIMIT",
    "SMALL_SAMPLE",
    "WORST_QUANTILE",
    "Claim",
    "assess",
    "claim_numbers",
    "contraction_by_group",
    "error_quantiles",
    "previous_rates",
    "replicate_counts",
    "signal_correlations",
    "size_groups",
    "write_report",
]

HIGH_PRIVACY, LOW_PRIVACY = EPSILONS
#: Claim 1 holds for a method whose median absolute relative error at eps = 1 is at most this (%).
CONCENTRATION_LIMIT = 10.0
#: Claim 2: post-processing "destroys the signal" when its correlation with the truth is below this.
SIGNAL_LIMIT = 0.5
#: Claim 3 compares this quantile of the absolute relative error over the small counties.
WORST_QUANTILE = 0.95
SMALL, LARGE = "small", "large"
#: Coverage rows of the inference section resting on fewer cases than this get a caveat.
SMALL_SAMPLE = 100

CAPTIONS = {
    "figure1_case_rates": "Figure 1. Synthetic case rates per 100,000 of Allegheny, Erie and Cameron counties by "
    "month: box plots over replicates per method, one panel per county and ε (a "
    "symmetric-log axis where releases exceed ten times the largest true rate); black line: "
    "the true rates.",
    "figure2_relative_error": "Figure 2. Relative error of the case rates over all counties, months and "
    "replicates, per method and ε (symmetric-log axis, linear within ±1 %; whiskers at "
    "the 5th and 95th percentiles; triangle: maximum).",
    "figure3_contractions": "Figure 3. Share of post-processed releases with each contraction effect in the five "
    "most and five least populous counties (every county of a table of ten or fewer), by ε.",
    "figure4_correlated_counts": "Figure 4. Δ_z of correlated counts (paper section 4.4).",
}


def size_groups(table: CovidTable) -> dict[str, list[str]]:
    """The smallest and the largest third of the counties by population (at least one county each)."""
    order = np.argsort(table.population, kind="stable")
    third = max(1, table.n_counties // 3)
    return {SMALL: [table.counties[j] for j in order[:third]], LARGE: [table.counties[j] for j in order[-third:]]}


def error_quantiles(
    errors: xr.DataArray, q: float, counties: Sequence[str] | None = None
) -> dict[float, dict[str, float]]:
    """The q-quantile of the absolute relative error per epsilon and method, over ``counties`` (default all).

    Pooled over replicates, months and counties; NaN errors (no true case) are skipped.
    """
    if counties is not None:
        errors = errors.sel(county=list(counties))
    quantiles = np.abs(errors).quantile(q, dim=["replicate", "month", "county"], skipna=True)
    return {
        float(eps): {str(m): float(quantiles.sel({"epsilon": eps, METHOD_DIM: m})) for m in errors[METHOD_DIM].values}
        for eps in errors["epsilon"].values
    }


def previous_rates(table: CovidTable) -> xr.DataArray:
    """Last month's case rates (the public prior information) for each month, dims (month, county)."""
    previous = np.vstack([table.previous_cases, table.cases[:-1]])
    return case_rates(
        table,
        xr.DataArray(
            previous, coords={"month": list(table.months), "county": list(table.counties)}, dims=("month", "county")
        ),
    )


def signal_correlations(table: CovidTable, results: xr.Dataset, epsilon: float) -> dict[str, dict[str, float]]:
    """Median correlation of synthetic rates with the true and with last month's rates, per method.

    The Pearson correlation is taken across counties within a month (so it ignores the month's
    level), then the median is over months and replicates; months whose last-month rates are
    all equal (the table's first month from 2020-03) are skipped.
    """
    rates = synthetic_rates(table, results).sel(epsilon=epsilon)
    references = {"true": true_rates(table), "previous": previous_rates(table)}
    return {
        str(m): {
            name: float(
                xr.corr(rates.sel({METHOD_DIM: m}), reference, dim="county").median(["replicate", "month"], skipna=True)
            )
            for name, reference in references.items()
        }
        for m in rates[METHOD_DIM].values
    }


def contraction_by_group(
    results: xr.Dataset, groups: Mapping[str, Sequence[str]]
) -> dict[str, dict[float, dict[str, float]]]:
    """Share of post-processed releases with each flag, by flag, epsilon and county group.

    The share is over the group's counties, the months and the replicates.
    """
    frequencies = contraction_frequencies(results)
    return {
        flag: {
            float(eps): {
                name: float(frequencies.sel(flag=flag, epsilon=eps, county=list(counties)).mean())
                for name, counties in groups.items()
            }
            for eps in frequencies["epsilon"].values
        }
        for flag in FLAGS
    }


def _check_complete(results: xr.Dataset) -> None:
    missing = [m for m in METHODS if m not in methods_of(results)]
    missing += [f"eps={e:g}" for e in EPSILONS if e not in results["epsilon"].values]
    if missing:
        raise ValueError(f"results lack {missing}; the claims compare every method at eps = 0.01 and 1")


def claim_numbers(table: CovidTable, results: xr.Dataset) -> dict:
    """Every number the report states, computed from ``results`` on ``table``'s months and counties.

    Returns
    -------
    dict with
    ``run``: replicates, months, counties;
    ``excluded``: county-months with no true case (no relative error);
    ``groups``: :func:`size_groups`;
    ``median_error``: {eps: {method: median |relative error| (%)}} over every county-month;
    ``signal``: {method: {"true" | "previous": correlation}} at eps = 0.01 (:func:`signal_correlations`);
    ``small_worst``: {eps: {method: 95th percentile of |relative error| (%)}} over the small counties;
    ``contractions``: {flag: {eps: {"small" | "large": share}}} (:func:`contraction_by_group`).

    Raises ValueError when ``results`` lack a method or either epsilon.
    """
    _check_complete(results)
    errors = relative_errors(table, results)
    groups = size_groups(table)
    return {
        "run": {"replicates": results.sizes["replicate"], "months": table.n_months, "counties": table.n_counties},
        "excluded": int((table.cases == 0).sum()),
        "groups": groups,
        "median_error": error_quantiles(errors, 0.5),
        "signal": signal_correlations(table, results, HIGH_PRIVACY),
        "small_worst": error_quantiles(errors, WORST_QUANTILE, groups[SMALL]),
        "contractions": contraction_by_group(results, groups),
    }


@dataclass(frozen=True)
class Claim:
    """One of the paper's claims judged on this run: its statement, verdict and evidence (Markdown)."""

    statement: str
    verdict: str
    evidence: str


def _verdict(passed: Sequence[bool]) -> str:
    return "holds" if all(passed) else "partly holds" if any(passed) else "does not hold"


def _number(value: float) -> str:
    return "n/a" if np.isnan(value) else f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def _run_size(numbers: dict) -> str:
    run = numbers["run"]
    return f"{run['replicates']} replicates, {run['months']} months, {run['counties']} counties"


def _claim1(numbers: dict) -> Claim:
    errors = numbers["median_error"]
    passed = [errors[LOW_PRIVACY][m] <= CONCENTRATION_LIMIT for m in METHODS]
    rows = [[METHOD_LABELS[m], _number(errors[LOW_PRIVACY][m]), _number(errors[HIGH_PRIVACY][m])] for m in METHODS]
    evidence = (
        f"Median absolute relative error of the case rates over every county-month and replicate "
        f"({_run_size(numbers)}); criterion: at most {CONCENTRATION_LIMIT:g} % at ε = 1 for every method "
        f"(met by {sum(passed)} of {len(METHODS)}). The ε = 0.01 column is for contrast.\n\n"
        + _table(["method", "ε = 1 (%)", "ε = 0.01 (%)"], rows)
    )
    return Claim("At ε = 1 all methods concentrate on the true rates.", _verdict(passed), evidence)


def _claim2(numbers: dict) -> Claim:
    signal = numbers["signal"]
    follows_prior = signal["wem_prior"]["previous"] > signal["wem_prior"]["true"]
    destroyed = signal["postprocess"]["true"] < SIGNAL_LIMIT
    rows = [[METHOD_LABELS[m], _number(signal[m]["true"]), _number(signal[m]["previous"])] for m in METHODS]
    evidence = (
        f"Correlation across counties, within a month, of the synthetic case rates with the true rates and "
        f"with last month's rates (the prior information), median over months and replicates, at ε = 0.01 "
        f"({_run_size(numbers)}). Criteria: the prior-congenial WEM correlates more with last month's rates "
        f"than with the truth ({'yes' if follows_prior else 'no'}); post-processing correlates with the "
        f"truth below {SIGNAL_LIMIT:g} ({'yes' if destroyed else 'no'}).\n\n"
        + _table(["method", "with true rates", "with last month's rates"], rows)
    )
    return Claim(
        "At ε = 0.01 the prior-congenial WEM follows the prior (last month's rates) while post-processing "
        "destroys the signal.",
        _verdict([follows_prior, destroyed]),
        evidence,
    )


def _claim3(numbers: dict) -> Claim:
    worst = numbers["small_worst"]
    small = numbers["groups"][SMALL]
    post, prior = worst[HIGH_PRIVACY]["postprocess"], worst[HIGH_PRIVACY]["wem_prior"]
    rows = [[METHOD_LABELS[m], _number(worst[HIGH_PRIVACY][m]), _number(worst[LOW_PRIVACY][m])] for m in METHODS]
    evidence = (
        f"At ε = 0.01 the {100 * WORST_QUANTILE:.0f}th percentile of the absolute relative error over "
        f"the small counties ({len(small)}, see Definitions), pooled over their months and the replicates, "
        f"is {_number(post)} % for post-processing and {_number(prior)} % for the prior-congenial WEM "
        f"({_run_size(numbers)}).\n\n" + _table(["method", "ε = 0.01 (%)", "ε = 1 (%)"], rows)
    )
    return Claim(
        "At ε = 0.01 the worst (small-county) errors are smaller for the WEM with an informative base "
        "measure than for post-processing.",
        _verdict([prior < post]),
        evidence,
    )


def _claim4(numbers: dict) -> Claim:
    shares = numbers["contractions"]
    rows, passed = [], []
    for flag in FLAGS:
        cells = {(group, eps): shares[flag][eps][group] for eps in EPSILONS for group in (SMALL, LARGE)}
        top = cells[(SMALL, HIGH_PRIVACY)]
        passed.append(top > 0 and all(top > value for key, value in cells.items() if key != (SMALL, HIGH_PRIVACY)))
        rows.append(
            [
                FLAG_LABELS[flag],
                *(f"{100 * cells[(group, eps)]:.3g}" for eps in EPSILONS for group in (SMALL, LARGE)),
                "yes" if passed[-1] else "no",
            ]
        )
    groups = numbers["groups"]
    header = [
        "effect",
        *(f"{group}, ε = {eps:g} (%)" for eps in EPSILONS for group in (SMALL, LARGE)),
        "largest for small counties at ε = 0.01",
    ]
    evidence = (
        f"Share of post-processed county-month releases with each effect, over replicates, months and the "
        f"small ({len(groups[SMALL])}) or large ({len(groups[LARGE])}) counties (see Definitions) "
        f"({_run_size(numbers)}). Criterion per effect: the share for small counties at "
        f"ε = 0.01 is positive and larger than the three others.\n\n" + _table(header, rows)
    )
    return Claim(
        "The contraction effects of post-processing hit small counties and small ε most.", _verdict(passed), evidence
    )


def assess(numbers: dict) -> list[Claim]:
    """The paper's four claims judged on :func:`claim_numbers`' output, in order."""
    return [judge(numbers) for judge in (_claim1, _claim2, _claim3, _claim4)]


def _check_table(table: CovidTable, results: xr.Dataset) -> None:
    """ValueError unless ``results`` (from :func:`~.synthesis.load_results`) were made on ``table``."""
    if "seed" not in results.attrs:
        raise ValueError("results carry no run configuration: load them with load_results")
    made_on = {key: results.attrs[key] for key in ("counties", "months", "data")}
    given = {"counties": list(table.counties), "months": list(table.months), "data": table_digest(table)}
    if made_on != given:
        raise ValueError(
            f"the results were made on another table ({differences(made_on, given, ('in the results', 'given'))})"
        )


def replicate_counts(results: xr.Dataset) -> dict[tuple[str, float], int]:
    """The number of replicates with results, per (method, epsilon)."""
    present = results["y"].notnull().any(["month", "series", "county"]).sum("replicate")
    return {
        (str(m), float(e)): int(present.sel({METHOD_DIM: m, "epsilon": e}))
        for m in results[METHOD_DIM].values
        for e in results["epsilon"].values
    }


def _replicates(results: xr.Dataset) -> tuple[str, str]:
    """The replicates row of the inputs table, and a note when some (method, epsilon) have fewer."""
    counts = replicate_counts(results)
    most = max(counts.values())
    fewer = [f"{METHOD_LABELS[m]} at ε = {e:g}: {n}" for (m, e), n in counts.items() if n < most]
    if not fewer:
        return f"{most} per method and ε", ""
    return (
        f"{most} per method and ε, except {'; '.join(fewer)}",
        f"**Unequal replicates.** Some method and ε have fewer replicates than the others ({'; '.join(fewer)}, "
        f"of {most}): their numbers rest on fewer releases. `ppdinfer covid synthesize` with the run's "
        "arguments completes the run.",
    )


def _inputs(table: CovidTable, results: xr.Dataset) -> str:
    replicates, note = _replicates(results)
    rows = [
        ["months", f"{table.months[0]} .. {table.months[-1]} ({table.n_months})"],
        [
            "counties",
            f"{table.n_counties}: {', '.join(table.counties)}" if table.n_counties <= 10 else str(table.n_counties),
        ],
        ["methods", ", ".join(METHOD_LABELS[m] for m in methods_of(results))],
        ["ε", ", ".join(f"{e:g}" for e in results["epsilon"].values)],
        ["replicates", replicates],
        ["seed", str(results.attrs["seed"])],
        ["WEM release", _wem_release(table, results)],
        ["Δ_Z", f"{DELTA_Z:g}"],
        ["ppdinfer", results.attrs["version"]],
    ]
    return "\n\n".join(filter(None, [_table(["input", "value"], rows), note, _chain_guarantee(table, results)]))


def _exact_months(table: CovidTable, method: str, epsilon: float) -> int:
    """How many of the table's months the WEM method releases exactly at ``epsilon`` (a function of z and J)."""
    mechanism = wem_mechanism(method, epsilon)
    return sum(
        mechanism.exact_proposals(table.z(t), table.n_counties) <= EXACT_PROPOSAL_LIMIT for t in range(table.n_months)
    )


def _wem_release(table: CovidTable, results: xr.Dataset) -> str:
    """Per WEM method: exact releases, or a Metropolis chain of the run's sweeps."""
    cells = []
    for method in [m for m in methods_of(results) if m in WEM_BASE_MEASURES]:
        exact = sum(_exact_months(table, method, float(e)) for e in results["epsilon"].values)
        total = table.n_months * results.sizes["epsilon"]
        kind = (
            "exact"
            if exact == total
            else f"chain of {results.attrs['sweeps']} sweeps"
            if exact == 0
            else f"exact in {exact} of {total} (month, ε), else a chain of {results.attrs['sweeps']} sweeps"
        )
        cells.append(f"{METHOD_LABELS[method]}: {kind}")
    return "; ".join(cells)


def _chain_guarantee(table: CovidTable, results: xr.Dataset) -> str:
    """What a finite chain guarantees, when some release came from one."""
    if not any(
        _exact_months(table, m, float(e)) < table.n_months
        for m in methods_of(results)
        if m in WEM_BASE_MEASURES
        for e in results["epsilon"].values
    ):
        return ""
    return (
        f"**WEM releases by a chain.** No exact sampler is affordable for these releases, so they come from "
        f"Metropolis chains of {results.attrs['sweeps']} sweeps. A finite chain is (ε, (1 + e^ε) δ)-TP, where δ "
        f"is its total-variation distance from Theorem 9's pmf; δ is checked empirically (chains of "
        f"{MIN_SWEEPS} sweeps or more are indistinguishable from 8000-sweep ones on the January 2021 table: "
        "`benchmarks/wem_release.py --mixing`; on one-county tables the measured privacy loss is within ε "
        "from 5 sweeps on: `--audit`), not bounded."
        + (
            f" This run used fewer than {MIN_SWEEPS} sweeps: below the checked minimum."
            if results.attrs["sweeps"] < MIN_SWEEPS
            else ""
        )
    )


def _definitions(table: CovidTable, numbers: dict) -> str:
    groups = numbers["groups"]
    return "\n".join(
        [
            f"- Case rate: cases per {RATE_SCALE:,} residents.",
            "- Relative error: 100 (synthetic - true) / true of the case rate (equal to that of the case count). "
            f"County-months with no true case have none and are excluded: {numbers['excluded']} of "
            f"{table.n_months * table.n_counties}.",
            f"- Small counties: the smallest third by population ({len(groups[SMALL])}: {', '.join(groups[SMALL])}); "
            f"large counties: the largest third ({len(groups[LARGE])}: {', '.join(groups[LARGE])}).",
        ]
    )


def _claims_section(claims: Sequence[Claim]) -> str:
    return "\n\n".join(
        f"### Claim {k}: {claim.statement}\n\n**Verdict: {claim.verdict}.** {claim.evidence}"
        for k, claim in enumerate(claims, start=1)
    )


def _figures_section(figures: Mapping[str, Path], out_dir: Path) -> str:
    return "\n\n".join(
        f"![{name}]({Path(os.path.relpath(path, out_dir)).as_posix()})\n\n{CAPTIONS[name]}"
        for name, path in figures.items()
    )


def _inference_run(config: Mapping) -> str:
    counties = config["counties"]
    return (
        f"Run: month {config['month']}, seed {config['seed']}, {config['replicates']} replicates, "
        f"ε = {', '.join(f'{e:g}' for e in config['epsilons'])}, prior concentration {config['concentration']:g}, "
        f"{len(counties)} counties"
        + (f" ({', '.join(counties)})" if len(counties) <= 10 else "")
        + f"; check month {config['check_month']}; ppdinfer {config['version']}."
    )


def _inference_section(summary, check, config: Mapping) -> str:
    """Coverage of Bayes vs plug-in intervals, with binomial intervals, and the few-county agreement check."""
    rows = [
        [
            release,
            f"{eps:g}",
            size,
            method,
            f"{row.coverage:.3f}",
            f"{row.coverage_low:.2f} to {row.coverage_high:.2f}",
            f"{int(row.n)}",
            _number(row.mean_width),
        ]
        for (release, eps, size, method), row in summary.iterrows()
    ]
    fewest = int(summary["n"].min())
    caveat = (
        f"**Few cases.** Some coverages rest on only {fewest} cases (fewer than {SMALL_SAMPLE}): their "
        "intervals are wide, and a coverage that differs from 0.9, or from another, by less than they allow "
        "is not evidence of a difference. Run `ppdinfer covid infer` with more replicates to narrow them."
        if fewest < SMALL_SAMPLE
        else ""
    )
    methods = [c for c in check.columns if c not in ("true", "release")]
    check_rows = [
        [county, *(f"{check.loc[county, c]:.3g}" for c in ["true", "release", *methods])] for county in check.index
    ]
    return "\n\n".join(
        filter(
            None,
            [
                "Posterior of the county case counts of one month given the public z (last month's counts, this month's "
                "total) and either the raw discrete Laplace release (Delta_Z = 2; release `laplace`) or the naive-base "
                "L2 Wasserstein exponential mechanism on the case counts (release `wem_naive`), with the county-count "
                "model's PyMC twin (interval `bayes`), versus the plug-in interval: the post-processed Y* (laplace) or y "
                "itself (wem_naive) +- the noise's 90% quantile (interval `plugin`). Coverage of the true case rate by "
                "nominal 90% intervals over n cases (county-replicates of the group), its 95 % Wilson interval (which "
                "treats the cases as independent; the counties of a replicate share a release, so it is if anything too "
                "narrow), and mean width in cases per 100,000.",
                _inference_run(config),
                _table(
                    ["release", "epsilon", "counties", "interval", "coverage", "95 % interval", "n", "mean width"], rows
                ),
                caveat,
                "Check on the least populous counties of an early month (small enough to enumerate): posterior means of "
                "the counts by "
                "the exact posterior, the rejection and importance samplers and the PyMC fit, for one release:",
                _table(["county", "true", "release", *methods], check_rows),
            ],
        )
    )


def write_report(
    table: CovidTable,
    results: xr.Dataset,
    out_dir: str | Path,
    figures: Mapping[str, Path] | None = None,
    *,
    inference=None,
) -> Path:
    """Write ``out_dir/report.md``: inputs, definitions, the four claims with numbers, the figures.

    Parameters
    ----------
    table, results : the synthesized table and :func:`~.synthesis.load_results` of its run, with
        every method and both epsilons; the seed, sweeps and replicates reported are the results'.
    figures : figure name (a key of :data:`~.figures.FIGURES`) -> PNG path, embedded by paths
        relative to ``out_dir``; default: :func:`~.figures.save_all` into ``out_dir``.
    inference : optional (coverage summary, subproblem check, configuration) from
        :mod:`~.inference`, reported in a section on posterior inference.

    Raises ValueError when ``results`` were made on another table or lack a method or epsilon.
    """
    _check_table(table, results)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    numbers = claim_numbers(table, results)
    figures = save_all(table, results, out_dir) if figures is None else figures
    text = "\n\n".join(
        [
            "# COVID-19 case study: synthetic county case rates and the paper's claims",
            "The data are public JHU CSSE county counts for Pennsylvania, aggregated to months "
            f"(`{table.source}`), with Census population estimates; they are not the Pennsylvania Department of "
            "Health table the paper used, so the numbers differ from the paper's.",
            "## Inputs",
            _inputs(table, results),
            "## Definitions",
            _definitions(table, numbers),
            "## The paper's claims on this run",
            _claims_section(assess(numbers)),
            "## Figures",
            _figures_section(figures, out_dir),
            *(["## Inference the paper could not do", _inference_section(*inference)] if inference else []),
        ]
    )
    path = out_dir / "report.md"
    path.write_text(text + "\n", encoding="utf-8")
    return path
