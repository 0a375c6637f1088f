"""The Semi-DP reproduction (case_studies/semidp_tables) in its quick variant."""

import math

import numpy as np
import xarray as xr

from ppdinfer.case_studies.semidp_tables import CASE_STUDY
from ppdinfer.case_studies.semidp_tables.experiments import expected_gaussian_cost, gaussian_designs, knorm_designs
from ppdinfer.case_studies.semidp_tables.report import assess


def test_quick_reproduction_writes_the_report_and_every_claim_holds(tmp_path):
    report = CASE_STUDY.run(tmp_path, True, False)
    text = report.read_text()
    assert "**no**" not in text and "40.95057" in text and "17.91528" in text
    # The authors clamp the release at zero in their Gaussian script (Figure 2) only, not in their K-norm script.
    assert "Gaussian script (Figure 2) clamps" in text and "K-norm script (Figure 3) does not clamp" in text
    assert "the authors' code clamps the release" not in text
    for name in ["figure2_gaussian", "figure3_knorm"]:
        assert (tmp_path / f"{name}.png").stat().st_size > 10_000
    fig2 = xr.load_dataset(tmp_path / "figure2_costs.nc")
    fig3 = xr.load_dataset(tmp_path / "figure3_costs.nc")
    assert dict(fig3.sizes) == {"model": 2, "k": 2, "level": 3, "design": 5}
    assert all(claim.holds for claim in assess(fig2, fig3))
    # The claims can fail: swap the Semi-DP and naive Gaussian costs and claim 1 no longer holds.
    swapped = fig2.copy(deep=True)
    swapped["cost"].loc[{"design": "naive"}], swapped["cost"].loc[{"design": "semidp_rectangles"}] = (
        fig2["cost"].sel(design="semidp_rectangles").values,
        fig2["cost"].sel(design="naive").values,
    )
    assert not assess(swapped, fig3)[0].holds


def test_designs_are_calibrated_as_the_paper_states():
    gaussians = gaussian_designs(3, mu=0.1)
    assert math.isclose(gaussians["semidp_rectangles"].sigma, 2 / 0.1)
    assert math.isclose(gaussians["semidp_enumerated"].sigma, math.sqrt(6) / 0.1)  # the 3-cycles (erratum)
    assert math.isclose(gaussians["naive"].sigma, 3 * math.sqrt(2) / 0.1)
    knorms = knorm_designs(2, epsilon=1.0)
    assert knorms["naive_l1"].epsilon == knorms["naive_l2"].epsilon == 1.0 / 3
    # E||N(0, I_s)|| for s = 1 is sqrt(2 / pi).
    assert np.isclose(expected_gaussian_cost(1.0, 1), math.sqrt(2 / math.pi))
