r"""Posterior predictive checks of a release: replicated releases, p-values and their plot.

A partially-private-data model is checked where the data are, at the release. Given posterior
draws (theta_i, x_i) from any sampler, the mechanism itself draws a replicated release for
each draw,

.. math::

    y^{\mathrm{rep}}_i \sim \pi(y \mid x_i, z), \qquad (\theta_i, x_i) \sim \pi(\theta, x \mid y, z),

so the y_rep follow the posterior predictive distribution of a new release of the same
confidential data. A test statistic T(y, x) (a function of the release alone, or a discrepancy
that involves x too) is compared at the observed and the replicated releases, draw by draw:

.. math::

    p = P\bigl(T(y^{\mathrm{rep}}, x) > T(y, x) \mid y\bigr)
        + \tfrac12 P\bigl(T(y^{\mathrm{rep}}, x) = T(y, x) \mid y\bigr),

the posterior predictive p-value (Gelman, Meng & Stern 1996; the half weight of ties keeps
integer statistics from piling p at 1). A p-value near 0 or 1 says that the model, the noise
included, does not reproduce that feature of the release.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd
import xarray as xr

from ..mechanisms.base import Mechanism
from ..rng import SeedLike, as_generator
from ..validation import positive_int, probability
from .model import PPDModel

GROUP = "posterior_predictive"


def posterior_predictive(
    result: xr.DataTree,
    mechanism_or_model: Mechanism | PPDModel,
    z=None,
    *,
    random_seed: SeedLike = None,
    x_name: str | None = None,
    y=None,
) -> xr.DataTree:
    r"""Replicated releases y_rep, one per posterior draw of x, drawn by the mechanism itself.

    For each draw x_i of the result's ``posterior`` group, ``mechanism.release(x_i, z)`` draws
    y_rep_i ~ pi(y | x_i, z). Every sampler's result works: rejection, exact and MCMC draws, the
    equal-weight ``posterior`` resample of an importance result, and a census fit of
    :func:`ppdinfer.census.sampler.sample_cells` with its ``NoisyMeasurements`` mechanism (each draw's
    ``cells`` (unit, cell) flattened in C order, the mechanism's cell vector). A draw the mechanism does
    not take as stored is flattened so where the mechanism takes a vector of its size.

    Parameters
    ----------
    result : xarray.DataTree
        A result whose ``posterior`` holds draws of x with dims (chain, draw, ...).
    mechanism_or_model : Mechanism or PPDModel
        The release mechanism the model assumes (a model's ``mechanism``; a census fit records
        only its repr, so pass the mechanism that made the release).
    z : dict, optional
        The public information for the mechanism; by default the result's ``constant_data``
        less its ``mechanism_*`` entries, as the samplers record it (none if it has no such entry).
    random_seed : int, Generator or None
        The seed of the releases.
    x_name : str, optional
        The name of x in the posterior: by default the result's ``x_name`` attribute, else the
        model's ``x_name``, else ``"x"``.
    y : array_like, optional
        The observed release, for a result without an ``observed_data`` group (a PyMC model whose
        release enters as a potential); it is stored as ``observed_data``.

    Returns
    -------
    xarray.DataTree
        A copy of the result with a ``posterior_predictive`` group (ArviZ's layout): y_rep under
        the observed variable's name (``y`` for the samplers' results) with x's dims, or the observed
        release's dims where a release has another shape than x (a census fit's ``query``).

    Examples
    --------
    >>> import ppdinfer as pp
    >>> from ppdinfer import generators, mechanisms, priors
    >>> model = pp.PPDModel(priors.Beta(1, 1), generators.Binomial(100), mechanisms.DiscreteLaplace(0.5), names="p")
    >>> result = pp.exact_posterior(model, 40, draws=1000, random_seed=1)
    >>> checked = pp.posterior_predictive(result, model, random_seed=2)
    >>> checked["posterior_predictive"]["y"].dims
    ('chain', 'draw')
    >>> pp.posterior_predictive_pvalue(checked, model).round(2).to_dict()
    {'sum': 0.5, 'discrepancy': 0.5}
    """
    if not isinstance(result, xr.DataTree):
        raise ValueError(f"result must be an xarray.DataTree, got {type(result).__name__}")
    mechanism, model_x_name = _mechanism(mechanism_or_model)
    x_draws = _x_draws(result, x_name or result.attrs.get("x_name") or model_x_name or "x")
    x_shape = _mechanism_shape(mechanism, x_draws)
    y_shape = tuple(mechanism.release_shape(x_shape))
    z = _public_information(result, z)
    tree = result.copy()
    if y is not None:
        if "observed_data" in result.children:
            raise ValueError("y must be left out: the result has an observed_data group")
        y = np.asarray(y)
        if y.shape != y_shape:
            raise ValueError(f"y has shape {y.shape} but a release of one draw of x has shape {y_shape}")
        dims = x_draws.dims[2:] if y_shape == x_draws.shape[2:] else tuple(f"y_dim_{i}" for i in range(y.ndim))
        tree["observed_data"] = xr.DataTree(xr.Dataset({"y": (dims, y)}))
    name = _observed_name(tree)
    rng = as_generator(random_seed)
    flat = x_draws.values.reshape(-1, *x_shape)
    if mechanism.additive_noise is not None:  # iid noise per coordinate: one call for all draws
        replicated = np.asarray(mechanism.release(flat, z, rng))
    else:
        replicated = np.stack([np.asarray(mechanism.release(row, z, rng)) for row in flat])
    replicated = replicated.reshape(*x_draws.shape[:2], *y_shape)
    if y_shape == x_draws.shape[2:]:
        replicated = xr.DataArray(replicated, dims=x_draws.dims, coords=x_draws.coords)
    else:  # a release of another shape than x (a noisy-measurement file's queries): the observed release's dims
        observed = tree["observed_data"][name]
        if observed.shape != y_shape:
            raise ValueError(f"result's observed {name!r} has shape {observed.shape}, not a release's {y_shape}")
        coords = {**{dim: x_draws[dim] for dim in x_draws.dims[:2]}, **observed.coords}
        replicated = xr.DataArray(replicated, dims=x_draws.dims[:2] + observed.dims, coords=coords)
    tree[GROUP] = xr.DataTree(xr.Dataset({name: replicated}, attrs={"mechanism": repr(mechanism)}))
    return tree


def posterior_predictive_pvalue(
    result: xr.DataTree, mechanism_or_model: Mechanism | PPDModel, statistics=None, z=None, *, x_name: str | None = None
) -> pd.Series:
    r"""Posterior predictive p-values of test statistics, from a result with a posterior predictive.

    For each statistic T, the share of draws with T(y_rep_i, x_i) > T(y, x_i), ties counting
    one half (the formula in the module docstring).

    Parameters
    ----------
    result : xarray.DataTree
        The output of :func:`posterior_predictive`.
    mechanism_or_model : Mechanism or PPDModel
        The mechanism the model assumes (the default discrepancy is its log density).
    statistics : callable or dict of callables, optional
        ``T(y, x) -> float`` for one release y and one draw x (x as the mechanism takes it); a statistic
        of the release alone ignores x. A dict names them; a callable is named by its
        ``__name__``. Default: ``sum``, the sum of the release's coordinates, and
        ``discrepancy``, -log pi(y | x, z), the realized discrepancy of the mechanism. Each
        must return one real number (infinities are fine): NaN or an array is refused.
    z : dict, optional
        The public information for the discrepancy (default as in :func:`posterior_predictive`).
    x_name : str, optional
        The name of x in the posterior (default as in :func:`posterior_predictive`).

    Returns
    -------
    pandas.Series
        The p-value of each statistic, indexed by its name.

    Examples
    --------
    >>> import numpy as np
    >>> import ppdinfer as pp
    >>> from ppdinfer import generators, mechanisms, priors
    >>> model = pp.PPDModel(priors.Dirichlet([5.0, 5.0, 5.0]), generators.MultinomialTotal("total"),
    ...                     mechanisms.DiscreteLaplace(1.0), names="share")
    >>> result = pp.exact_posterior(model, [9, 14, 16], {"total": 30}, draws=1000, random_seed=1)
    >>> checked = pp.posterior_predictive(result, model, random_seed=2)
    >>> def spread(y, x):
    ...     return float(np.max(y) - np.min(y))
    >>> p = pp.posterior_predictive_pvalue(checked, model, {"spread": spread, "total": lambda y, x: y.sum()})
    >>> p.round(3).to_dict()        # the released counts sum to 39, not 30: the noise is too large
    {'spread': 0.508, 'total': 0.0}
    """
    return pd.Series(
        {
            name: _p_value(observed, replicated)
            for name, (observed, replicated) in _statistic_draws(
                result, mechanism_or_model, statistics, z, x_name
            ).items()
        },
        name="p_value",
        dtype=float,
    )


def plot_posterior_predictive(
    result: xr.DataTree,
    mechanism_or_model: Mechanism | PPDModel,
    statistics=None,
    z=None,
    *,
    x_name: str | None = None,
    prob: float = 0.9,
    max_coordinates: int = 100,
):
    """Plot the observed release against the replicated ones.

    The first panel shows, per coordinate of the release, the central ``prob`` interval and the
    median of y_rep with the observed y marked. One panel per statistic follows: for a
    statistic of y alone, the histogram of T(y_rep) with T(y) marked; for a discrepancy
    T(y, x), the realized T(y, x_i) against the replicated T(y_rep_i, x_i) with the diagonal
    (the p-value is the share of points above it). Each title gives the p-value of
    :func:`posterior_predictive_pvalue`. The figure is built without pyplot (matplotlib is
    imported here only), so it needs no display.

    Parameters
    ----------
    result, mechanism_or_model, statistics, z, x_name
        As for :func:`posterior_predictive_pvalue`.
    prob : float
        The probability of the intervals, in (0, 1).
    max_coordinates : int
        At most this many coordinates (the first ones) in the first panel.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import ppdinfer as pp
    >>> from ppdinfer import generators, mechanisms, priors
    >>> model = pp.PPDModel(priors.Beta(1, 1), generators.Binomial(100), mechanisms.DiscreteLaplace(0.5), names="p")
    >>> checked = pp.posterior_predictive(pp.exact_posterior(model, 40, draws=500, random_seed=1), model,
    ...                                   random_seed=2)
    >>> figure = pp.plot_posterior_predictive(checked, model)
    >>> [axis.get_title() for axis in figure.axes]
    ['y: 90% intervals of y_rep', 'sum: p = 0.468', 'discrepancy: p = 0.505']
    >>> figure.savefig("posterior_predictive.png")           # doctest: +SKIP
    """
    from matplotlib.figure import Figure

    prob = probability(prob, "prob")
    max_coordinates = positive_int(max_coordinates, "max_coordinates")
    draws = _statistic_draws(result, mechanism_or_model, statistics, z, x_name)
    name = _observed_name(result)
    observed = result["observed_data"][name].values.reshape(-1)[:max_coordinates]
    replicated = result[GROUP][name].values
    replicated = replicated.reshape(replicated.shape[0] * replicated.shape[1], -1)[:, :max_coordinates]
    figure = Figure(figsize=(4.2 * (1 + len(draws)), 3.8), layout="constrained")
    axes = figure.subplots(1, 1 + len(draws), squeeze=False)[0]
    positions = np.arange(observed.size)
    tail = (1 - prob) / 2
    lower, median, upper = np.quantile(replicated, [tail, 0.5, 1 - tail], axis=0)
    axes[0].vlines(positions, lower, upper, color="tab:blue", linewidth=2, label=f"{prob:.0%} of y_rep")
    axes[0].plot(positions, median, "o", color="tab:blue", markersize=3)
    axes[0].plot(positions, observed, "x", color="tab:red", markersize=7, label="observed")
    axes[0].set(title=f"{name}: {prob:.0%} intervals of y_rep", xlabel="coordinate", ylabel=name)
    ticks = _coordinate_labels(result["observed_data"][name])
    if ticks is not None:  # the coordinates' names (the counties, the hospitals) rather than 0, 1, ...
        axes[0].set_xticks(
            positions, ticks[:max_coordinates], rotation=90 if positions.size > 8 else 0, fontsize="small"
        )
        axes[0].set_xlabel(" x ".join(map(str, result["observed_data"][name].dims)))
    axes[0].legend(loc="best", fontsize="small")
    for ax, (label, (t_observed, t_replicated)) in zip(axes[1:], draws.items()):
        if np.all(t_observed == t_observed[0]):  # a statistic of y alone
            ax.hist(t_replicated[np.isfinite(t_replicated)], bins=30, color="tab:blue", alpha=0.7)
            ax.axvline(t_observed[0], color="tab:red", linewidth=2, label="T(y)")
            ax.set(xlabel="T(y_rep)", ylabel="draws")
        else:
            ax.plot(t_observed, t_replicated, ".", color="tab:blue", alpha=0.3, markersize=3)
            finite = np.concatenate([t_observed, t_replicated])
            finite = finite[np.isfinite(finite)]
            ax.plot([finite.min(), finite.max()], [finite.min(), finite.max()], color="tab:red", linewidth=1.5)
            ax.set(xlabel="T(y, x)", ylabel="T(y_rep, x)")
        ax.set_title(f"{label}: p = {_p_value(t_observed, t_replicated):.3f}")
    return figure


def _coordinate_labels(observed: xr.DataArray) -> list[str] | None:
    """The labels of the release's coordinates in flattened order, or None where no dim has a coordinate."""
    if not observed.dims or not any(dim in observed.coords for dim in observed.dims):
        return None
    ticks = [
        [str(v) for v in observed.coords[dim].values] if dim in observed.coords else [str(i) for i in range(size)]
        for dim, size in observed.sizes.items()
    ]
    return [",".join(tick[i] for tick, i in zip(ticks, index)) for index in np.ndindex(*observed.shape)]


def _mechanism(mechanism_or_model) -> tuple[Mechanism, str | None]:
    """The mechanism, and the model's x_name when a model is given."""
    if isinstance(mechanism_or_model, PPDModel):
        return mechanism_or_model.mechanism, mechanism_or_model.x_name
    if isinstance(mechanism_or_model, Mechanism):
        return mechanism_or_model, None
    raise ValueError(f"mechanism_or_model must be a ppdinfer Mechanism or PPDModel, got {mechanism_or_model!r}")


def _x_draws(result: xr.DataTree, x_name: str) -> xr.DataArray:
    if "posterior" not in result.children:
        raise ValueError("result has no posterior group")
    if x_name not in result["posterior"].data_vars:
        raise ValueError(
            f"result's posterior has no draws of x named {x_name!r} (it holds "
            f"{list(result['posterior'].data_vars)}): pass x_name, or sample a model that keeps x"
        )
    draws = result["posterior"][x_name]
    if draws.dims[:2] != ("chain", "draw"):
        raise ValueError(f"result: the posterior draws of {x_name!r} have dims {draws.dims}, not (chain, draw, ...)")
    return draws


def _mechanism_shape(mechanism: Mechanism, x_draws: xr.DataArray) -> tuple[int, ...]:
    """The shape in which the mechanism takes one draw of x: as stored, or flattened in C order where it takes a
    vector only (a census fit's ``cells`` (unit, cell) for a noisy-measurement file's cell vector)."""
    shape, flat = x_draws.shape[2:], (int(np.prod(x_draws.shape[2:])),)
    try:
        mechanism.release_shape(shape)
        return shape
    except ValueError as error:
        stored = error
    try:
        mechanism.release_shape(flat)
    except ValueError:
        raise ValueError(
            f"result: a posterior draw of {x_draws.name!r} (shape {shape}, dims {x_draws.dims[2:]}) is not an x of "
            f"the mechanism, as stored or flattened: {stored}"
        ) from None
    return flat


def _public_information(result: xr.DataTree, z) -> dict | None:
    """z as given, or rebuilt from the result's constant_data (less the mechanism's parameters)."""
    if z is not None:
        if not isinstance(z, Mapping):
            raise ValueError(f"z must be a dict of public information or None, got {z!r}")
        return dict(z)
    if "constant_data" not in result.children:
        return None
    data = result["constant_data"]
    z = {
        key: (value.values.item() if value.ndim == 0 else value.values)
        for key, value in data.data_vars.items()
        if not key.startswith("mechanism_")
    }
    return z or None


def _observed_name(result: xr.DataTree) -> str:
    """The name of the observed release: the only variable of observed_data, else ``y``."""
    if "observed_data" not in result.children:
        raise ValueError("result has no observed_data group: pass the observed release as y")
    names = list(result["observed_data"].data_vars)
    if len(names) == 1:
        return names[0]
    if "y" in names:
        return "y"
    raise ValueError(f"result's observed_data holds {names}: keep only the release of x (or name it 'y')")


def _statistics(statistics, mechanism: Mechanism, z) -> dict[str, Callable]:
    if statistics is None:

        def discrepancy(y, x):
            return -float(mechanism.logpdf(y, np.asarray(x)[None], z)[0])

        return {"sum": lambda y, x: float(np.sum(y)), "discrepancy": discrepancy}
    if callable(statistics):
        statistics = {getattr(statistics, "__name__", "statistic"): statistics}
    if (
        not isinstance(statistics, Mapping)
        or not statistics
        or not all(isinstance(key, str) and callable(value) for key, value in statistics.items())
    ):
        raise ValueError(f"statistics must be a callable T(y, x) or a dict of them by name, got {statistics!r}")
    return dict(statistics)


def _statistic_draws(result, mechanism_or_model, statistics, z, x_name) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """For each statistic: T(y, x_i) and T(y_rep_i, x_i) over the draws i."""
    if not isinstance(result, xr.DataTree) or GROUP not in result.children:
        raise ValueError("result has no posterior_predictive group: call ppdinfer.posterior_predictive first")
    mechanism, model_x_name = _mechanism(mechanism_or_model)
    x = _x_draws(result, x_name or result.attrs.get("x_name") or model_x_name or "x")
    statistics = _statistics(statistics, mechanism, _public_information(result, z))
    name = _observed_name(result)
    observed = result["observed_data"][name].values
    replicated = result[GROUP][name].values.reshape(-1, *observed.shape)
    x = x.values.reshape(-1, *_mechanism_shape(mechanism, x))
    draws = {}
    for label, statistic in statistics.items():
        draws[label] = (
            np.array([_number(label, statistic(observed, row), "y", i) for i, row in enumerate(x)]),
            np.array(
                [_number(label, statistic(y_rep, row), "y_rep", i) for i, (y_rep, row) in enumerate(zip(replicated, x))]
            ),
        )
    return draws


def _number(label: str, value, release: str, draw: int) -> float:
    """One statistic's value as a float, or a ValueError naming the statistic and what it returned.

    A NaN or an array would make the p-value meaningless (NaN compares false: p = 0) or quietly
    wrong, so both are refused; infinities order as usual and are kept.
    """
    array = np.asarray(value)
    if array.ndim != 0 or array.dtype.kind not in "biuf":
        shape = f"an array of shape {array.shape}" if array.ndim else f"a {type(value).__name__}"
        raise ValueError(
            f"statistics: {label!r} must return one real number, but returned {shape} ({value!r:.80}) "
            f"for T({release}, x) at draw {draw}"
        )
    if np.isnan(array):
        raise ValueError(
            f"statistics: {label!r} returned NaN for T({release}, x) at draw {draw}; a p-value needs numbers"
        )
    return float(array)


def _p_value(observed: np.ndarray, replicated: np.ndarray) -> float:
    return float(np.mean(replicated > observed) + 0.5 * np.mean(replicated == observed))
