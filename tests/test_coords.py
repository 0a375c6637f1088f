"""Coordinates on results: PPDModel(coords=...) and pandas data label every sampler's dims (issue 23)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import special

import ppdinfer as pp
from ppdinfer import generators, mechanisms, priors
from ppdinfer.pymc import sample_model

pytestmark = pytest.mark.filterwarnings("ignore:Numba will use object mode", "ignore::ppdinfer.ImportanceWarning")
HOSPITALS = ["Mercy", "St Luke", "General"]
EXPOSURE = np.array([1.0, 2.0, 3.0])


def rates_model(**kwargs):
    return pp.PPDModel(
        priors.Gamma(2.0, 1.0, size=3), generators.Poisson(EXPOSURE), mechanisms.Laplace(1.0), names="rate", **kwargs
    )


def assert_labelled(result, dim, labels, variables=("rate", "x"), observed=True):
    posterior = result["posterior"]
    for name in variables:
        assert dim in posterior[name].dims, (name, posterior[name].dims)
    assert posterior[dim].values.tolist() == list(labels)
    if observed:
        assert result["observed_data"]["y"].dims == (dim,)
        assert result["observed_data"][dim].values.tolist() == list(labels)


def test_model_coords_label_the_rejection_sampler():
    model = rates_model(dims={"rate": "hospital", "x": "hospital"}, coords={"hospital": HOSPITALS})
    result = pp.rejection_sample(model, [2.1, 3.9, 6.2], draws=100, random_seed=0, progressbar=False)
    assert_labelled(result, "hospital", HOSPITALS)
    assert result["sample_stats"]["acceptance_rate"]["hospital"].values.tolist() == HOSPITALS
    # the labels follow the units: unit "General" is the one with exposure 3
    assert float(result["posterior"]["x"].sel(hospital="General").mean()) > float(
        result["posterior"]["x"].sel(hospital="Mercy").mean()
    )


def test_a_pandas_y_labels_importance_results_with_its_index():
    y = pd.Series([2.1, 3.9, 6.2], index=pd.Index(HOSPITALS, name="county"))
    result = pp.importance_sample(rates_model(), y, draws=200, random_seed=0)
    assert_labelled(result, "county", HOSPITALS)  # the index name names the dim
    assert result["proposal"]["rate"].dims[-1] == "county"
    unnamed = pp.importance_sample(
        rates_model(dims={"x": "hospital"}), pd.Series([2.1, 3.9, 6.2], index=HOSPITALS), draws=50, random_seed=0
    )
    assert_labelled(unnamed, "hospital", HOSPITALS)  # dims name it when the index has no name


def test_a_pandas_dataframe_labels_both_axes_of_exact_results():
    table = pd.DataFrame(
        [[2.2, 1.1], [0.7, 2.0]],
        index=pd.Index(["urban", "rural"], name="area"),
        columns=pd.Index(["yes", "no"], name="answer"),
    )
    z = {"row_totals": [3, 3], "col_totals": [3, 3]}
    model = pp.PPDModel(
        priors.Gamma(2.0, 2.0),
        generators.AssociationTable(),
        mechanisms.Laplace(1.0),
        names="association",
        x_name="table",
    )
    result = pp.exact_posterior(model, table, z, theta_grid=np.linspace(-3, 3, 61), draws=100, random_seed=0)
    assert result["posterior"]["table"].dims == ("chain", "draw", "area", "answer")
    assert result["posterior"]["area"].values.tolist() == ["urban", "rural"]
    assert result["posterior"]["answer"].values.tolist() == ["yes", "no"]
    assert result["exact"]["x_support"].dims == ("support", "area", "answer")
    assert result["observed_data"]["y"].sel(area="rural", answer="no").item() == 2.0


def test_exact_posterior_with_a_shared_p_over_units_of_several_sizes():
    # a shared p over Binomial(n_k) units: summed on the grid, labelled by the model's coords
    model = pp.PPDModel(
        priors.Beta(2.0, 2.0),
        generators.Binomial([3, 4]),
        mechanisms.DiscreteLaplace(1.0),
        names="p",
        dims={"x": "ward"},
        coords={"ward": ["A", "B"]},
    )
    result = pp.exact_posterior(model, [2, 3], draws=50, random_seed=0)
    assert result["posterior"]["ward"].values.tolist() == ["A", "B"]
    # closed form: given x, p ~ Beta(2 + x1 + x2, 2 + 7 - x1 - x2), and
    # p(x) = C(3, x1) C(4, x2) B(2 + x1 + x2, 2 + 7 - x1 - x2) / B(2, 2)
    support = result["exact"]["x_support"].values
    total = support.sum(axis=1)
    log_prior = (
        np.log(special.comb(3, support[:, 0]))
        + np.log(special.comb(4, support[:, 1]))
        + special.betaln(2 + total, 9 - total)
        - special.betaln(2, 2)
    )
    log_post = log_prior + model.mechanism.logpdf(np.array([2, 3]), support)
    pmf = np.exp(log_post - special.logsumexp(log_post))
    np.testing.assert_allclose(result["exact"]["x_pmf"].values, pmf, atol=1e-4)
    assert abs(float(result["exact"]["theta_mean"][0]) - pmf @ ((2.0 + total) / 11)) < 1e-4


def test_a_pandas_value_in_z_labels_x():
    regions = pd.Index(["north", "south", "east"], name="region")
    z = {"previous": pd.Series([8, 0, 2], index=regions), "total": 12}
    model = pp.PPDModel(
        priors.Dirichlet.centered("previous", 10.0),
        generators.MultinomialTotal("total"),
        mechanisms.DiscreteLaplace(1.0),
        names="share",
    )
    result = pp.rejection_sample(model, np.array([7, 1, 4]), z, draws=50, random_seed=0, progressbar=False)
    assert result["posterior"]["x"].dims == ("chain", "draw", "region")
    assert result["posterior"]["region"].values.tolist() == ["north", "south", "east"]


def test_sample_model_keeps_the_pandas_index():
    y = pd.Series([2.1, 3.9, 6.2], index=pd.Index(HOSPITALS, name="hospital"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = sample_model(
            rates_model(),
            y,
            draws=50,
            tune=50,
            chains=1,
            random_seed=1,
            progressbar=False,
            compute_convergence_checks=False,
        )
    # the posterior's dims; the observed release takes the dims from_model passes to its Release line
    assert_labelled(idata, "hospital", HOSPITALS, observed=False)


def test_bad_coords_are_refused():
    with pytest.raises(ValueError, match="coords must be a mapping"):
        rates_model(coords=["a", "b", "c"])
    with pytest.raises(ValueError, match=r"coords\['hospital'\] must be one distinct label per position"):
        rates_model(coords={"hospital": ["a", "a", "b"]})
    model = rates_model(dims={"x": "hospital"}, coords={"hospital": ["a", "b"]})
    with pytest.raises(ValueError, match=r"coords\['hospital'\] has 2 labels but dimension 'hospital' of x has size 3"):
        model.prepare([1.0, 2.0, 3.0], None)


def test_summary_rows_are_labelled_by_the_coordinates():
    """pp.summary labels rows like arviz.summary: rate[Mercy], not rate[0]."""
    model = rates_model(dims={"rate": "hospital", "x": "hospital"}, coords={"hospital": HOSPITALS})
    result = pp.rejection_sample(model, [2.1, 3.9, 6.2], draws=100, random_seed=0, progressbar=False)
    table = pp.summary(result)
    assert list(table.index) == [f"{name}[{h}]" for name in ("rate", "x") for h in HOSPITALS]
    assert table.loc["x[General]", "mean"] == pytest.approx(
        float(result["posterior"]["x"].sel(hospital="General").mean())
    )
    draws = pp.summary(  # two dims: the coordinates joined by a comma
        result["posterior"]["x"].expand_dims(year=[2020, 2021], axis=-1).rename("cases")
    )
    assert list(draws.index)[:2] == ["cases[Mercy,2020]", "cases[Mercy,2021]"]
