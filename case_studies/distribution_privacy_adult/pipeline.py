"""The whole reproduction: subsets and fitted laws, Table 2, the Delta_p sweep, the attack, figures, report."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from tqdm import tqdm

from ...datasets import adult_path, load_adult
from ...privacy import plot_prior_posterior_odds
from .attack import ATTACKERS, attack_table, bayesian_log_odds
from .data import income_pools, record_features, record_sensitivities
from .experiments import (
    DISTRIBUTION_MECHANISMS,
    build_mechanisms,
    fit_family,
    noise_covariance,
    secret_queries,
    utility,
)
from .figures import figure2, figure3, figure4, figure5
from .report import write_report

__all__ = ["FULL", "QUICK", "adult_files", "reproduce"]

#: 1000 subsets per secret, 50 repetitions, Delta_p = 0.1 for Table 2; the attack on 100 + 100 shadow
#: and 100 + 100 test subsets per repetition (the paper's 200 and 200), 50 repetitions.
FULL = {
    "seed": 2024,
    "delta": 1e-3,
    "gap": 0.1,
    "subsets": 1000,
    "repetitions": 50,
    "epsilons": [0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0],
    "gaps": [0.02, 0.05, 0.08, 0.1, 0.12, 0.14, 0.16, 0.2, 0.3, 0.4],
    "gap_epsilon": 1.0,
    "attack_epsilons": [0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0],
    "table3_epsilons": [0.2, 1.0, 5.0],
    "table3_deltas": [1e-4, 1e-2],
    "per_class": (100, 100),
    "attack_repetitions": 50,
}
QUICK = {
    **FULL,
    "subsets": 300,
    "repetitions": 20,
    "epsilons": [0.2, 1.0, 5.0, 10.0],
    "gaps": [0.05, 0.1, 0.15, 0.2],
    "attack_epsilons": [0.1, 1.0, 5.0],
    "table3_deltas": [],
    "attack_repetitions": 4,
}
#: The Bayesian attacker (not in the paper): releases of F under each share, no defense and DauM(G), analytic.
BAYES = {"epsilon": 1.0, "releases": 4000}


def _attack_settings(plan) -> list[tuple[str, str, float, float]]:
    settings = [
        (mechanism, calibration, epsilon, plan["delta"])
        for mechanism in DISTRIBUTION_MECHANISMS
        for calibration in ("classical", "analytic")
        for epsilon in plan["attack_epsilons"]
    ]
    settings += [("GroupDP(G)", "classical", epsilon, plan["delta"]) for epsilon in plan["attack_epsilons"]]
    settings += [
        (mechanism, "classical", epsilon, delta)
        for mechanism in DISTRIBUTION_MECHANISMS
        for epsilon in plan["table3_epsilons"]
        for delta in plan["table3_deltas"]
    ]
    return settings


def bayesian_attacker(family, delta: float, record_l2: float, seed) -> dict[str, np.ndarray]:
    """Log posterior odds factors of the Bayesian attacker over ``BAYES`` releases, with no noise and with the
    analytic DauM(G) at ``BAYES["epsilon"]``."""
    daum = build_mechanisms(family, BAYES["epsilon"], delta, "analytic", record_l2)["DauM(G)"]
    return {
        name: bayesian_log_odds(family, covariance, BAYES["releases"], seed)
        for name, covariance in (
            ("no defense", np.zeros((family.dim, family.dim))),
            ("DauM(G)", noise_covariance(daum, family.dim)),
        )
    }


def adult_files() -> list[Path]:
    """adult.data and adult.test (the paper's 45,222 complete records) when both are here, else adult.data alone.

    A local copy of adult.data (``$PPDINFER_ADULT_DATA`` or ``../shared/data/adult``) is used with the
    adult.test beside it or in the cache, if any; without a local copy both files are downloaded into
    the cache (:func:`ppdinfer.datasets.adult_path`), adult.data alone when adult.test cannot be fetched.

    Examples
    --------
    >>> import os, pathlib, tempfile
    >>> from unittest import mock
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "adult.data").write_text("")
    >>> with mock.patch.dict(os.environ, {"PPDINFER_ADULT_DATA": str(folder), "PPDINFER_CACHE": str(folder)}):
    ...     [path.name for path in adult_files()]
    ['adult.data']
    """
    try:
        files, fetch = [adult_path("adult.data", download=False)], False
    except FileNotFoundError:
        files, fetch = [adult_path("adult.data")], True
    try:
        files.append(adult_path("adult.test", download=fetch))
    except OSError:  # not here, or the download failed: adult.data alone, as the report says
        pass
    return files


def reproduce(results: Path, quick: bool = False, progressbar: bool = True, data: Path | None = None) -> Path:
    """Run the plan ``FULL`` (or ``QUICK``) on UCI Adult into ``results``.

    ``data``: an Adult file, or a list of them; by default ``adult_files()`` (adult.data and adult.test
    when both are here). The report names the files used.

    Returns the path of ``report.md``.

    Examples
    --------
    >>> {key: QUICK[key] for key in ("subsets", "repetitions", "attack_repetitions")}   # the quick plan
    {'subsets': 300, 'repetitions': 20, 'attack_repetitions': 4}
    """
    plan = QUICK if quick else FULL
    results = Path(results)
    results.mkdir(parents=True, exist_ok=True)
    seeds = np.random.SeedSequence(plan["seed"]).spawn(4 + len(plan["gaps"]))
    with tqdm(total=4, desc="distribution_privacy_adult", unit="step", disable=not progressbar) as bar:
        frame = load_adult(adult_files() if data is None else data, drop_missing=True)
        pools = income_pools(frame)
        sensitivities = record_sensitivities(record_features(frame))
        record_l2 = float(np.linalg.norm(sensitivities))
        queries = secret_queries(pools, plan["gap"], plan["subsets"], seeds[0])
        family = fit_family(queries)
        table2 = utility(pools, family, plan["epsilons"], plan["delta"], record_l2, plan["repetitions"], seeds[1])
        bar.update()
        sweep = []
        for gap, seed in zip(plan["gaps"], seeds[4:]):
            gap_seeds = seed.spawn(2)
            gap_family = fit_family(secret_queries(pools, gap, plan["subsets"], gap_seeds[0]))
            sweep.append(
                utility(
                    pools,
                    gap_family,
                    [plan["gap_epsilon"]],
                    plan["delta"],
                    record_l2,
                    plan["repetitions"],
                    gap_seeds[1],
                ).assign(gap=gap)
            )
        sweep = pd.concat(sweep, ignore_index=True)
        bar.update()
        bayes = bayesian_attacker(family, plan["delta"], record_l2, seeds[3])
        auxiliary, test = pools.split(seeds[2])
        attack = pd.concat(
            [
                attack_table(
                    auxiliary,
                    test,
                    family,
                    _attack_settings(plan),
                    record_l2,
                    plan["per_class"],
                    plan["attack_repetitions"],
                    seeds[3],
                    attacker,
                )
                for attacker in ATTACKERS
            ],
            ignore_index=True,
        )
        bar.update()
        for name, frame_out in (("table2_errors", table2), ("figure3_gap_sweep", sweep), ("attack_accuracy", attack)):
            frame_out.to_csv(results / f"{name}.csv", index=False)
        figures = {}
        for name, figure in (
            ("figure2_error_vs_epsilon", figure2(table2)),
            ("figure3_error_vs_gap", figure3(sweep)),
            ("figure4_attack", figure4(attack)),
            ("figure5_gaussian_fits", figure5(queries)),
            ("bayes_odds_daum", plot_prior_posterior_odds(np.exp(bayes["DauM(G)"]), BAYES["epsilon"], max_lines=500)),
        ):
            figures[name] = results / f"{name}.png"
            figure.savefig(figures[name], dpi=110)
        bar.update()
    facts = {
        "files": frame.attrs["files"],
        "records": len(frame),
        "positive": len(pools.positive),
        "sensitivities": sensitivities,
        "record_l2": record_l2,
        "family": family,
        "queries": queries,
        "bayes": bayes,
        "bayes_epsilon": BAYES["epsilon"],
    }
    return write_report(table2, sweep, attack, facts, figures, results, plan)
