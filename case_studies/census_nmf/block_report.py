"""The report's section on blocks: claims, tables and figures of the block fit and the block coverage study."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from ...reproduce import markdown_table
from .blocks import BLOCK_CLASSES, block_errors, district_errors

__all__ = ["block_claims", "block_section"]

#: The targets of issue 43: coverage, RMSE against GLS, and the chains' mixing.
COVERAGE_TARGET = (0.88, 0.92)
RATIO_TARGET = 0.8
ESS_TARGET = 400
RHAT_TARGET = 1.01
ESTIMATORS = {"post_mean": ("posterior", "C0"), "gls": ("GLS", "C1"), "topdown": ("TopDown", "C2")}


def _verdict(held: bool) -> str:
    return "met" if held else "not met"


def _mixing(diagnostics: dict, coverage: pd.DataFrame) -> list[dict]:
    """The ESS and R-hat claims: block totals, the blocks' VAP cells and the districts of the block fit, and the
    block totals over the coverage study's replicates."""
    parts = {"block totals": diagnostics["block_totals"], "blocks' VAP by Hispanic origin x race":
             diagnostics["block_vap_cells"], "district totals": diagnostics["districts"]}  # fmt: skip
    where = "; ".join(f"{name} {d['ess_min']:.1f} (median {d['ess_median']:.1f})" for name, d in parts.items())
    replicate = coverage.attrs
    rows = [
        {"claim": f"smallest bulk ESS at least {ESS_TARGET} (every block total, every block's VAP by Hispanic "
         "origin x race, every district)",
         "measured": f"{where} in the block file; block totals {replicate['ess_min']:.1f} (median of the "
         f"replicates' medians {replicate['ess_median']:.1f}) over the coverage study",
         "verdict": _verdict(min(d["ess_min"] for d in parts.values()) >= ESS_TARGET
                             and replicate["ess_min"] >= ESS_TARGET)},
        {"claim": f"largest R-hat at most {RHAT_TARGET} (the same quantities)",
         "measured": "; ".join(f"{name} {d['rhat_max']:.3f}" for name, d in parts.items())
         + f" in the block file; block totals {replicate['rhat_max']:.3f} over the coverage study",
         "verdict": _verdict(max(d["rhat_max"] for d in parts.values()) <= RHAT_TARGET
                             and replicate["rhat_max"] <= RHAT_TARGET)},
    ]  # fmt: skip
    return rows


def block_claims(errors: pd.DataFrame, districts: pd.DataFrame, coverage: pd.DataFrame, diagnostics: dict):
    """The block-level claims (issue 43's targets) beside what was measured: a frame of claim, measured, verdict.

    ``errors``: :func:`.blocks.block_errors` of the block file; ``districts``: :func:`.blocks.district_errors`;
    ``coverage``: :func:`.block_coverage.block_coverage_summary`; ``diagnostics``: the block fit's.

    Examples
    --------
    >>> sizes = [*BLOCK_CLASSES, "all"]
    >>> errors = pd.DataFrame({"rmse_post_mean": 1.0, "rmse_gls": 2.0, "ratio_post_mean": 0.5}, index=sizes)
    >>> coverage = pd.DataFrame({"blocks": 5.0, "replicates": 3.0, "coverage_randomized": 0.9,
    ...     "se_binomial_randomized": 0.01, "se_replicate_randomized": 0.01, "ratio": 0.5, "se_ratio": 0.1},
    ...     index=sizes)
    >>> coverage.attrs.update(ess_min=10.0, ess_median=50.0, rhat_max=1.2)
    >>> districts = pd.DataFrame({"rmse_total": [1.0, 2.0], "rmse_share": [0.01, 0.02]}, index=["posterior", "gls"])
    >>> mixing = {"ess_min": 500.0, "ess_median": 900.0, "rhat_max": 1.0}
    >>> table = block_claims(errors, districts, coverage, dict.fromkeys(["block_totals", "block_vap_cells",
    ...                                                                  "districts"], mixing))
    >>> table["verdict"].value_counts().to_dict()
    {'met': 11, 'not met': 2}
    """
    rows = []
    for size in (*BLOCK_CLASSES, "all"):
        if size not in errors.index or size not in coverage.index or not np.isfinite(errors.loc[size, "rmse_gls"]):
            continue
        e, c = errors.loc[size], coverage.loc[size]
        where = "all blocks" if size == "all" else f"blocks of {size} persons"
        rows.append(
            {"claim": f"block posterior-mean RMSE at most {RATIO_TARGET} x GLS (block totals, {where})",
             "measured": f"ratio {e['ratio_post_mean']:.3f} in the block file ({e['rmse_post_mean']:.2f} vs "
             f"{e['rmse_gls']:.2f} persons); {c['ratio']:.3f} (replicate se {c['se_ratio']:.3f}) over the coverage "
             "study",
             "verdict": _verdict(e["ratio_post_mean"] <= RATIO_TARGET and c["ratio"] <= RATIO_TARGET)}
        )  # fmt: skip
    for size in BLOCK_CLASSES:
        if size not in coverage.index:
            continue
        c = coverage.loc[size]
        p = c["coverage_randomized"]
        rows.append(
            {"claim": f"randomized 90 % intervals of block totals cover {COVERAGE_TARGET[0]:.0%}-"
             f"{COVERAGE_TARGET[1]:.0%} (blocks of {size} persons)",
             "measured": f"{p:.3f} (binomial se {c['se_binomial_randomized']:.3f}, replicate se "
             f"{c['se_replicate_randomized']:.3f}; {int(c['replicates'])} files x {int(c['blocks'])} blocks)",
             "verdict": _verdict(COVERAGE_TARGET[0] <= p <= COVERAGE_TARGET[1])}
        )  # fmt: skip
    post, gls = districts.loc["posterior"], districts.loc["gls"]
    for column, name, scale, unit in (("rmse_total", "totals", 1, "persons"),
                                      ("rmse_share", "voting-age shares", 100, "percentage points")):  # fmt: skip
        rows.append(
            {"claim": f"district {name}: posterior-mean RMSE at or below GLS's",
             "measured": f"{scale * post[column]:.3f} vs {scale * gls[column]:.3f} {unit}",
             "verdict": _verdict(post[column] <= gls[column])}
        )  # fmt: skip
    return pd.DataFrame(rows + _mixing(diagnostics, coverage))


def _figures(blocks: pd.DataFrame, districts: pd.DataFrame, coverage: pd.DataFrame, folder: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    errors = block_errors(blocks)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8))
    x = np.arange(len(BLOCK_CLASSES))
    for shift, (column, (label, color)) in zip((-0.25, 0.0, 0.25), ESTIMATORS.items()):
        left.bar(x + shift, errors.loc[list(BLOCK_CLASSES), f"rmse_{column}"], 0.25, color=color, label=label)
    left.set_yscale("log")
    left.set_xticks(x, [f"{s}\n({int(errors.loc[s, 'blocks'])} blocks)" for s in BLOCK_CLASSES])
    left.set_xlabel("true block total (persons)")
    left.set_ylabel("RMSE of the block total (persons)")
    left.set_title("One block file", fontsize=10)
    left.legend(fontsize=8)
    keys = [s for s in BLOCK_CLASSES if s in coverage.index]
    x = np.arange(len(keys))
    for shift, name, label, color in ((-0.12, "randomized", "posterior (randomized)", "C0"),
                                      (0.12, "gls", "GLS (normal)", "C1")):  # fmt: skip
        values = coverage.loc[keys, f"coverage_{name}"].to_numpy(float)
        bars = 2 * coverage.loc[keys, f"se_binomial_{name}"].to_numpy(float)
        right.errorbar(x + shift, values, yerr=bars, fmt="o", color=color, capsize=3, label=label)
    right.axhspan(*COVERAGE_TARGET, color="0.85", label="88-92 %")
    right.axhline(0.9, color="k", lw=0.8)
    right.set_xticks(x, keys)
    right.set_xlabel("true block total (persons)")
    right.set_ylabel("coverage of 90 % intervals (+- 2 binomial se)")
    right.set_title(f"{int(coverage['replicates'].iloc[0])} replicate files", fontsize=10)
    right.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(folder / "block_errors.png", dpi=110)
    plt.close(fig)

    order = districts.sort_values("truth").reset_index(drop=True)
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    for ax, (mean, lo, hi, truth, points, scale, label) in zip(axes, (
        ("post_mean", "post_lo", "post_hi", "truth", ("gls", "topdown"), 1, "district total - truth (persons)"),
        ("post_share_mean", "post_share_lo", "post_share_hi", "truth_share", ("gls_share", "topdown_share"), 100,
         "voting-age share - truth (pp)"),
    )):  # fmt: skip
        x = np.arange(len(order))
        t = order[truth].to_numpy(float)
        ax.errorbar(x, scale * (order[mean] - t), yerr=scale * np.stack([order[mean] - order[lo], order[hi] - order[mean]]),
                    fmt="o", ms=3, color="C0", lw=0.8, label="posterior, 90 % interval")  # fmt: skip
        for column, color, name in zip(points, ("C1", "C2"), ("GLS", "TopDown")):
            ax.plot(x, scale * (order[column] - t), "x", ms=4, color=color, label=name)
        ax.axhline(0, color="k", lw=0.8)
        ax.set_xlabel("district (by true total)")
        ax.set_ylabel(label)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"{len(order)} districts of consecutive blocks", fontsize=10)
    fig.tight_layout()
    fig.savefig(folder / "district_intervals.png", dpi=110)
    plt.close(fig)
    return ["block_errors.png", "district_intervals.png"]


def block_section(results, out: Path, replicates: int) -> tuple[pd.DataFrame, list[str]]:
    """Read ``results/blocks`` and ``results/coverage_blocks`` (its first ``replicates``), write the tables and
    figures into ``out``; return the block claims and the section's markdown lines.

    Examples
    --------
    >>> import tempfile, concurrent.futures
    >>> from ppdinfer.case_studies.census_nmf.pipeline import QUICK, block_coverage_step, blocks_step
    >>> plan = dict(QUICK, block_draws=10, block_tune=10, block_districts=4, block_replicates=2,
    ...             block_coverage_draws=10, block_coverage_tune=10)
    >>> with tempfile.TemporaryDirectory() as folder, concurrent.futures.ThreadPoolExecutor(1) as pool:
    ...     _ = blocks_step(folder, plan), block_coverage_step(folder, plan, executor=pool, progressbar=False)
    ...     claims, lines = block_section(folder, Path(folder), 2)
    >>> lines[0], len(claims)
    ('## Down to blocks', 13)
    """
    from .block_coverage import block_coverage_summary
    from .coverage import load_replicates

    results = Path(results)
    blocks = pd.read_csv(results / "blocks" / "blocks.csv.gz")
    districts = pd.read_csv(results / "blocks" / "districts.csv")
    info = json.loads((results / "blocks" / "info.json").read_text())
    data, config = load_replicates(results / "coverage_blocks", replicates)
    coverage = block_coverage_summary(data, config)
    errors = block_errors(blocks)
    district_table = district_errors(districts)
    errors.to_csv(out / "block_errors.csv")
    coverage.to_csv(out / "block_coverage.csv")
    district_table.to_csv(out / "block_districts.csv")
    claims = block_claims(errors, district_table, coverage, info["diagnostics"])
    figures = _figures(blocks, districts, coverage, out)
    error_rows = [[size, str(int(r["blocks"])), *(f"{r[f'rmse_{c}']:.2f}" for c in ESTIMATORS),
                   *(f"{r[f'rmse_vap_{c}']:.2f}" for c in ESTIMATORS), f"{r['ratio_post_mean']:.3f}",
                   f"{r['ratio_topdown']:.3f}"] for size, r in errors.iterrows() if r["blocks"] > 0]  # fmt: skip
    cover = lambda r, k: f"{r[f'coverage_{k}']:.3f} ({r[f'se_binomial_{k}']:.3f}, {r[f'se_replicate_{k}']:.3f})"  # noqa: E731
    coverage_rows = [[size, str(int(r["blocks"])), cover(r, "randomized"), cover(r, "closed"), cover(r, "gls"),
                      f"{r['rmse_post_mean']:.2f}", f"{r['rmse_gls']:.2f}", f"{r['ratio']:.3f} ({r['se_ratio']:.3f})"]
                     for size, r in coverage.iterrows()]  # fmt: skip
    d = district_table
    district_rows = [[name, f"{r['rmse_total']:.2f}", f"{100 * r['rmse_share']:.3f}"] for name, r in d.iterrows()]
    c = info["config"]
    counties = ", ".join(c["counties"])
    return claims, [
        "## Down to blocks",
        "",
        f"One Noisy Measurement File of {counties} ({info['people']:,} people, {info['blocks']:,} blocks, "
        f"{info['empty_blocks']} of them empty, {info['blocks_without_housing']} with no housing unit and no "
        "facility), person and housing-unit files written by `write_nmf` and read back to the Block level. The "
        "posterior is `ppdinfer.census.sample_people` over the full 2,016-cell histogram of every block, each "
        "block's prior size following its housing units and group-quarters facilities (`file_exposure`), its draws "
        f"recorded over the 28 cells ({c['draws']} draws x 2 chains after {c['tune']} tuning sweeps: "
        f"{info['posterior_s']:.0f} s, acceptance {info['accept']:.2f}); GLS ({info['gls_s']:.1f} s) and TopDown "
        f"({info['topdown_s']:.1f} s) read the same measurements over the 28 cells at every level to the Block "
        "(GLS's block interval is its normal one). Block totals against the truth, by true block size; VAP is the "
        "voting-age population (persons):",
        "",
        markdown_table(
            [
                "true block total",
                "blocks",
                "RMSE posterior",
                "RMSE GLS",
                "RMSE TopDown",
                "VAP RMSE posterior",
                "VAP RMSE GLS",
                "VAP RMSE TopDown",
                "ratio posterior / GLS",
                "ratio TopDown / GLS",
            ],
            error_rows,
        ),  # fmt: skip
        "",
        f"**Coverage** over {int(coverage['replicates'].iloc[0])} replicate files of "
        f"{', '.join(config['counties'])} (each written with its own noise and read back; {config['draws']} draws x 2 "
        f"chains after {config['tune']} tuning sweeps, {coverage.attrs['seconds']:.0f} s of sampling each): the "
        "posterior's randomized 90 % interval (its chance of covering, from the truth's randomized PIT: exactly 90 % "
        "posterior mass, so a block that holds nobody in every draw and in truth counts 0.9), its closed interval "
        "[5 %, 95 % quantile] and GLS's normal interval (binomial se, replicate se):",
        "",
        markdown_table(
            [
                "true block total",
                "blocks",
                "posterior randomized",
                "posterior closed",
                "GLS",
                "RMSE posterior",
                "RMSE GLS",
                "ratio (replicate se)",
            ],
            coverage_rows,
        ),  # fmt: skip
        "",
        f"![block errors and coverage]({figures[0]})",
        "",
        f"**Districts**: {len(districts)} runs of {min(c['district_sizes'])} to {max(c['district_sizes'])} "
        "consecutive blocks in the file's order (across block-group and tract lines), summed draw by draw "
        "(`ppdinfer.census.aggregate`). RMSE of their totals (persons) and voting-age shares (percentage points; "
        "a point estimate's share clipped to [0, 1]); the posterior's randomized intervals of the totals cover "
        f"{d.loc['posterior', 'coverage_total']:.3f} (binomial se {d.loc['posterior', 'se_total']:.3f}), its closed "
        f"intervals of the shares {d.loc['posterior', 'coverage_share']:.3f}:",
        "",
        markdown_table(["estimator", "RMSE total", "RMSE voting-age share (pp)"], district_rows),
        "",
        f"![district intervals]({figures[1]})",
        "",
        "**Mixing.** The block chains mix slowly: the claims table gives the smallest and median bulk ESS and the "
        "largest R-hat beside the targets (ESS at least 400, R-hat at most 1.01). Where they are not met the "
        "intervals above rest on chains that have not converged, and their coverage is not yet to be trusted.",
        "",
    ]
