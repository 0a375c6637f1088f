"""Built-in data models pi(x | theta, z).

A data model is called as ``simulate(theta, z, rng)`` with a batch of theta (shape (B,) or
(B, k)) and returns x with ``x.shape[0] == B``. The classes here also report
``logpmf(x, theta, z)`` and, for :func:`ppdinfer.exact_posterior`, the finite ``support(z)``
of x, so they serve the exact enumeration as well as the samplers.
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np
from scipy import special

from .kernels.special import poisson_draws
from .validation import MAX_INTEGER, nonnegative_counts, positive_finite, positive_int, summarize, unit_parameter


class DataModel:
    """Base class of the data models pi(x | theta, z): ``__call__(theta, z, rng)`` draws x;
    ``logpmf`` and ``support`` serve enumeration.

    Examples
    --------
    >>> import numpy as np
    >>> from ppdinfer.generators import Binomial, DataModel
    >>> model = Binomial(10)
    >>> isinstance(model, DataModel)
    True
    >>> x = model(np.array([0.2, 0.9, 1.0]), None, np.random.default_rng(0))   # one x per theta
    >>> x.shape, int(x[2])
    ((3,), 10)
    """

    def __call__(self, theta, z, rng) -> np.ndarray:
        raise NotImplementedError

    def logpmf(self, x, theta, z=None) -> np.ndarray:
        """log pi(x | theta, z) for every pair: x (S, ...) and theta (G, ...) give shape (G, S)."""
        raise NotImplementedError

    def support(self, z=None, theta_dim: int = 1) -> np.ndarray:
        """Every x with positive probability given z (and the length of theta), shape (S, ...)."""
        raise NotImplementedError

    def check_z(self, z) -> None:
        """Raise ValueError when no x can satisfy z."""

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"{type(self).__name__}({args})"


def _column(theta) -> np.ndarray:
    theta = np.asarray(theta, dtype=float)
    return theta.reshape(theta.shape[0]) if theta.ndim > 1 else theta


class _UnitCounts(DataModel):
    """Independent counts x_k, one per unit k, with a known per-unit parameter (n_k or exposure e_k)
    and either one shared theta or one theta per unit: the machinery of Binomial and Poisson."""

    _known: str  # the name of the per-unit parameter

    @property
    def units(self) -> int | None:
        """The number of units the data model fixes (the length of its vector parameter), or None."""
        known = getattr(self, self._known)
        return known.size if np.ndim(known) else None

    def unit(self, index: int) -> _UnitCounts:
        """The data model of unit ``index`` alone (its own n or exposure)."""
        known = getattr(self, self._known)
        return type(self)(known[index].item() if np.ndim(known) else known)

    def _per_unit(self, theta) -> np.ndarray:
        """theta as (B, 1) (one shared value) or (B, H) (one per unit), checked against the units."""
        theta = np.asarray(theta, dtype=float)
        theta = theta.reshape(theta.shape[0], -1) if theta.ndim else theta.reshape(1, 1)
        if theta.shape[1] > 1 and self.units is not None and theta.shape[1] != self.units:
            raise ValueError(
                f"theta has {theta.shape[1]} values per draw (one per unit) but {self._known} has "
                f"{self.units} entries: the prior and the data model disagree on the number of units"
            )
        return theta

    def _draw(self, theta, draw) -> np.ndarray:
        """x from ``draw(theta (B, 1 or H))``; (B,) when theta and the known parameter are both shared."""
        theta = self._per_unit(theta)
        x = draw(theta)
        return x[:, 0] if x.shape[1] == 1 and self.units is None else x

    def logpmf(self, x, theta, z=None):
        theta = self._per_unit(theta)
        d = self.units or theta.shape[1]
        x = np.asarray(x, dtype=float).reshape(-1, d)
        return self._log_terms(x[None, :, :], theta[:, None, :]).sum(axis=-1)

    def __repr__(self) -> str:
        known = getattr(self, self._known)
        return f"{type(self).__name__}({self._known}={summarize(known) if np.ndim(known) else repr(known)})"


class Binomial(_UnitCounts):
    r"""x ~ Binomial(n, theta): a count of successes among n confidential records.

    .. math::

        \pi(x \mid \theta) = \binom{n}{x} \theta^x (1 - \theta)^{n - x}, \qquad x = 0, \dots, n.

    Per unit: ``n`` a vector (n_1, ..., n_H) and x_k ~ Binomial(n_k, theta_k) independently, with
    theta of shape (B, H) (one probability per unit) or (B,) (one shared); a scalar ``n`` with
    theta (B, H) gives H units of the same size.

    Examples
    --------
    >>> import numpy as np
    >>> from ppdinfer.generators import Binomial
    >>> model = Binomial(10)
    >>> model.logpmf([2, 3], [0.2]).round(3)     # rows: theta, columns: x
    array([[-1.197, -1.603]])
    >>> model.support()
    array([ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10])
    >>> units = Binomial([3, 5])                     # two hospitals of 3 and 5 patients
    >>> units(np.array([[0.0, 1.0]]), None, np.random.default_rng(0))   # p_k per unit
    array([[0, 5]])
    >>> np.exp(units.logpmf([[1, 5]], [[0.5, 1.0]])).round(3)            # 3/8 * 1
    array([[0.375]])
    >>> units.support().shape                        # (3 + 1) * (5 + 1) pairs
    (24, 2)
    """

    _known = "n"
    #: The range of theta, a probability: a prior beyond it is refused when the model is made.
    theta_bounds = (0.0, 1.0)

    def __init__(self, n):
        self.n = unit_parameter(n, "n", positive_int, "positive integer")

    def __call__(self, theta, z, rng):
        return self._draw(theta, lambda p: rng.binomial(self.n, p))

    def _log_terms(self, x, p):
        n = self.n if self.units is None else self.n.astype(float)
        log_choose = special.gammaln(n + 1) - special.gammaln(x + 1) - special.gammaln(n - x + 1)
        return log_choose + special.xlogy(x, p) + special.xlog1py(n - x, -p)

    def support(self, z=None, theta_dim=1):
        if self.units is None and theta_dim == 1:
            return np.arange(self.n + 1)
        sizes = np.broadcast_to(self.n, (self.units or theta_dim,))
        count = math.prod(int(n) + 1 for n in sizes)
        if count > 5_000_000:
            raise ValueError(f"{count} count vectors for n = {summarize(sizes)}: too many to enumerate")
        return np.array(list(itertools.product(*(range(int(n) + 1) for n in sizes))), dtype=np.int64)


#: The mean from which :func:`poisson_counts` draws exactly (``ppdinfer.kernels.special.poisson_draw``) rather than
#: by NumPy's generator, whose rounding moves a log probability by about 1e-16 mean log mean: 3e-3 here, 16 at 4e15.
NUMPY_POISSON_LIMIT = 1e12


def poisson_counts(rng: np.random.Generator, mean) -> np.ndarray:
    """Poisson(mean) draws from ``rng``: NumPy's generator below ``NUMPY_POISSON_LIMIT``, exact draws from it on.

    NumPy's generator subtracts log-gammas of about mean log mean, which float64 rounds: at a mean of 4e15 its
    draws have a standard deviation of 1.23 sqrt(mean) and ten times the normal tails. Means beyond 2^53 are
    refused (their counts are not carried exactly as integers).

    Examples
    --------
    >>> import numpy as np
    >>> from ppdinfer.generators import poisson_counts
    >>> z = (poisson_counts(np.random.default_rng(0), np.full(4000, 4e15)) - 4e15) / np.sqrt(4e15)
    >>> bool(abs(z.std() - 1.0) < 0.05)
    True
    >>> bool(np.all(poisson_counts(np.random.default_rng(1), [3.0, 5.0]) == np.random.default_rng(1).poisson([3.0, 5.0])))
    True
    """
    mean = np.asarray(mean, dtype=float)
    big = mean >= NUMPY_POISSON_LIMIT
    if not big.any():
        return rng.poisson(mean)
    if np.any(mean > MAX_INTEGER):
        raise ValueError(
            f"a Poisson mean of {np.max(mean):.3g} exceeds 2^53: its counts cannot be carried exactly as integers"
        )
    out = np.empty(mean.shape, dtype=np.int64)
    out[~big] = rng.poisson(mean[~big])
    out[big] = poisson_draws(mean[big], int(rng.integers(2**32)))
    return out


class Poisson(_UnitCounts):
    r"""x_k ~ Poisson(exposure_k * theta_k) independently; ``exposure`` is a scalar or a vector.

    .. math::

        \pi(x \mid \theta) = \prod_k \frac{(e_k \theta_k)^{x_k} e^{-e_k \theta_k}}{x_k!}.

    theta is one rate shared by every unit (shape (B,)) or one rate per unit (shape (B, H),
    with ``exposure`` of length H or a scalar).

    Its support is unbounded, so :func:`ppdinfer.exact_posterior` refuses it; the samplers take it.

    Examples
    --------
    >>> import numpy as np
    >>> from ppdinfer.generators import Poisson
    >>> model = Poisson(exposure=[100.0, 200.0])     # e.g. person-years of two regions
    >>> model(np.array([0.01, 0.02]), None, np.random.default_rng(0)).shape
    (2, 2)
    >>> model.logpmf(np.array([[1, 2]]), [0.01]).round(3)
    array([[-2.307]])
    >>> model(np.array([[0.01, 0.05]]), None, np.random.default_rng(0)).shape   # a rate per region
    (1, 2)
    """

    _known = "exposure"

    def __init__(self, exposure=1.0):
        self.exposure = unit_parameter(exposure, "exposure", positive_finite, "positive finite number")

    def __call__(self, theta, z, rng):
        return self._draw(theta, lambda rate: poisson_counts(rng, rate * self.exposure))

    def _log_terms(self, x, rate):
        mean = rate * self.exposure
        return special.xlogy(x, mean) - mean - special.gammaln(x + 1)

    def support(self, z=None, theta_dim=1):
        raise ValueError("a Poisson count has unbounded support: exact_posterior needs a finite support")


class MultinomialTotal(DataModel):
    r"""x ~ Multinomial(z[key], theta): cell counts given their public total.

    theta is a probability vector per row (shape (B, K)); the total s comes from z.

    .. math::

        \pi(x \mid \theta, z) = \frac{s!}{\prod_k x_k!} \prod_k \theta_k^{x_k}, \qquad \sum_k x_k = s.

    Examples
    --------
    >>> import numpy as np
    >>> from ppdinfer.generators import MultinomialTotal
    >>> model = MultinomialTotal("total")
    >>> z = {"total": 5}
    >>> x = model(np.array([[0.5, 0.3, 0.2]]), z, np.random.default_rng(0))
    >>> int(x.sum())                                 # the public total holds
    5
    >>> model.support(z, 3).shape                    # every split of 5 over 3 cells
    (21, 3)
    """

    def __init__(self, key: str = "total"):
        self.key = key

    def total(self, z) -> int:
        """The public total z[key], checked to be one count."""
        if z is None or self.key not in z:
            raise ValueError(f"z must contain the public total z[{self.key!r}]")
        total = nonnegative_counts(z[self.key], f"z[{self.key!r}]")
        if total.ndim != 0:
            raise ValueError(f"z[{self.key!r}] must be a single count, got {z[self.key]!r}")
        return int(total)

    def check_z(self, z):
        self.total(z)

    def __call__(self, theta, z, rng):
        return rng.multinomial(self.total(z), np.asarray(theta, dtype=float))

    def logpmf(self, x, theta, z=None):
        x = np.asarray(x, dtype=float)
        n = self.total(z)
        log_coef = special.gammaln(n + 1) - special.gammaln(x + 1).sum(axis=-1)
        theta = np.atleast_2d(theta)
        return log_coef[None, :] + special.xlogy(x[None, :, :], theta[:, None, :]).sum(axis=-1)

    def support(self, z=None, theta_dim=1):
        return compositions(self.total(z), theta_dim)


def compositions(total: int, parts: int, limit: int = 5_000_000) -> np.ndarray:
    """All vectors of ``parts`` non-negative integers summing to ``total``, shape (S, parts).

    Stars and bars: each choice of ``parts - 1`` bar positions among ``total + parts - 1``
    slots is one composition, so S = C(total + parts - 1, parts - 1).

    Examples
    --------
    >>> from ppdinfer.generators import compositions
    >>> compositions(2, 3)
    array([[0, 0, 2],
           [0, 1, 1],
           [0, 2, 0],
           [1, 0, 1],
           [1, 1, 0],
           [2, 0, 0]])
    """
    count = math.comb(total + parts - 1, parts - 1)
    if count > limit:
        raise ValueError(f"{count} ways to split a total of {total} over {parts} cells: too many to enumerate")
    slots = total + parts - 1
    bars = np.fromiter(
        itertools.chain.from_iterable(itertools.combinations(range(slots), parts - 1)),
        dtype=np.int64,
        count=count * (parts - 1),
    ).reshape(count, parts - 1)
    edges = np.column_stack([np.full(count, -1), bars, np.full(count, slots)])
    return np.diff(edges, axis=1) - 1


class FisherTable2x2(DataModel):
    """The free cell x = n11 of a 2 x 2 table with public margins, given the odds ratio theta.

    z holds ``row_totals`` (n1., n2.) and ``col_total`` (n.1). Given the margins, n11 follows
    Fisher's noncentral hypergeometric distribution:
    P(n11 = k) proportional to C(n1., k) C(n2., n.1 - k) theta^k on
    max(0, n.1 - n2.) <= k <= min(n1., n.1).

    Examples
    --------
    >>> import numpy as np
    >>> from ppdinfer.generators import FisherTable2x2
    >>> model = FisherTable2x2()
    >>> z = {"row_totals": [5, 7], "col_total": 6}
    >>> model.support(z)
    array([0, 1, 2, 3, 4, 5])
    >>> np.exp(model.logpmf(model.support(z), [1.0], z)).round(3)   # odds ratio 1: hypergeometric
    array([[0.008, 0.114, 0.379, 0.379, 0.114, 0.008]])
    """

    def margins(self, z) -> tuple[int, int, int]:
        """The public margins (n1., n2., n.1) from z, checked to admit a table."""
        if z is None or "row_totals" not in z or "col_total" not in z:
            raise ValueError("z must contain the public margins 'row_totals' (n1., n2.) and 'col_total' (n.1)")
        rows = nonnegative_counts(z["row_totals"], "z['row_totals']")
        col = nonnegative_counts(z["col_total"], "z['col_total']")
        if rows.shape != (2,) or col.ndim != 0:
            raise ValueError("z['row_totals'] must hold two counts and z['col_total'] one count")
        if col > rows.sum():
            raise ValueError(
                f"z['col_total'] = {int(col)} exceeds the table total {int(rows.sum())}: no table has these margins"
            )
        return int(rows[0]), int(rows[1]), int(col)

    def check_z(self, z):
        self.margins(z)

    def support(self, z=None, theta_dim=1):
        n1, n2, m1 = self.margins(z)
        return np.arange(max(0, m1 - n2), min(n1, m1) + 1)

    def logpmf(self, x, theta, z=None):
        n1, n2, m1 = self.margins(z)
        support = self.support(z)
        log_psi = np.log(_column(theta))[:, None]
        log_base = _log_choose(n1, support) + _log_choose(n2, m1 - support)
        log_all = log_base[None, :] + log_psi * support[None, :]
        log_norm = special.logsumexp(log_all, axis=1, keepdims=True)
        x = np.asarray(x).reshape(-1)
        inside = (x >= support[0]) & (x <= support[-1])
        index = np.clip(x - support[0], 0, support.size - 1)
        return np.where(inside[None, :], log_all[:, index] - log_norm, -np.inf)

    def __call__(self, theta, z, rng):
        support = self.support(z)
        return draw_from_support(support, self.logpmf(support, theta, z), rng)


class AssociationTable(DataModel):
    r"""An r x c table with public one-way margins, given a uniform association theta (a log odds ratio).

    z holds ``row_totals`` (r counts) and ``col_totals`` (c counts, the same sum n). Given the
    margins, the table follows the linear-by-linear (uniform) association model with unit-spaced
    scores, i.e. a multinomial table conditioned on its margins:

    .. math::

        \pi(x \mid \theta, z) = \frac{1}{C(\theta, z)} \,
            \frac{\exp\bigl(\theta \sum_{i,j} i \, j \, x_{ij}\bigr)}{\prod_{i,j} x_{ij}!},
        \qquad x \in \mathcal{T}(z) = \{x \in \mathbb{Z}_{\ge 0}^{r \times c} :
            \text{row and column sums } z\},

    so every local odds ratio x_ij x_{i+1,j+1} / (x_{i,j+1} x_{i+1,j}) has log expectation
    theta: theta = 0 is independence. For a 2 x 2 table this is
    :class:`FisherTable2x2` in the odds ratio e^theta. The support T(z) is enumerated (small
    tables only: :meth:`ppdinfer.invariants.LinearInvariants.enumerate` refuses past its limit),
    and C(theta, z) is the sum over it.

    Examples
    --------
    >>> import numpy as np
    >>> from ppdinfer.generators import AssociationTable
    >>> model = AssociationTable()
    >>> z = {"row_totals": [3, 2], "col_totals": [2, 3]}
    >>> model.support(z).shape                       # three 2 x 2 tables have these margins
    (3, 2, 2)
    >>> x = model(np.array([0.0, 2.0]), z, np.random.default_rng(1))   # one table per theta
    >>> x.shape, x.sum(axis=2).tolist()
    ((2, 2, 2), [[3, 2], [3, 2]])
    >>> np.exp(model.logpmf(model.support(z), [0.0], z)).round(3)   # theta = 0: hypergeometric
    array([[0.1, 0.6, 0.3]])
    """

    def margins(self, z) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The public margins from z, checked to hold counts with one common total."""
        if z is None or "row_totals" not in z or "col_totals" not in z:
            raise ValueError("z must contain the public margins 'row_totals' and 'col_totals'")
        rows = nonnegative_counts(z["row_totals"], "z['row_totals']")
        cols = nonnegative_counts(z["col_totals"], "z['col_totals']")
        if rows.ndim != 1 or cols.ndim != 1 or rows.size < 2 or cols.size < 2:
            raise ValueError("z['row_totals'] and z['col_totals'] must each hold at least two counts")
        if rows.sum() != cols.sum():
            raise ValueError(
                f"z['row_totals'] sum to {int(rows.sum())} but z['col_totals'] to {int(cols.sum())}: "
                "no table has these margins"
            )
        return tuple(int(v) for v in rows), tuple(int(v) for v in cols)

    def check_z(self, z):
        self.margins(z)

    def support(self, z=None, theta_dim=1):
        return _tables_with_margins(*self.margins(z))

    def logpmf(self, x, theta, z=None):
        rows, cols = self.margins(z)
        support = _tables_with_margins(rows, cols)
        theta = _column(theta)[:, None]
        log_norm = special.logsumexp(_association_terms(support, theta), axis=1, keepdims=True)
        x = np.asarray(x).reshape(-1, len(rows), len(cols))
        conforming = (
            (x >= 0).all(axis=(1, 2)) & (x.sum(axis=2) == rows).all(axis=1) & (x.sum(axis=1) == cols).all(axis=1)
        )
        safe = np.where(conforming[:, None, None], x, support[0])
        return np.where(conforming[None, :], _association_terms(safe, theta) - log_norm, -np.inf)

    def __call__(self, theta, z, rng):
        support = self.support(z)
        return draw_from_support(support, self.logpmf(support, theta, z), rng)


@functools.lru_cache(maxsize=32)
def _tables_with_margins(rows: tuple[int, ...], cols: tuple[int, ...]) -> np.ndarray:
    from .invariants import LinearInvariants

    invariants = LinearInvariants.margins(rows, cols) & LinearInvariants.nonnegative((len(rows), len(cols)))
    tables = invariants.enumerate()
    tables.setflags(write=False)
    return tables


def _association_terms(tables: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """theta * sum_ij i j x_ij - sum_ij log x_ij! for tables (S, r, c) and theta (G, 1): shape (G, S)."""
    r, c = tables.shape[1:]
    scores = np.outer(np.arange(r), np.arange(c))
    score = (tables * scores).sum(axis=(1, 2))
    log_base = -special.gammaln(tables + 1.0).sum(axis=(1, 2))
    return log_base[None, :] + theta * score[None, :]


def draw_from_support(support: np.ndarray, log_p: np.ndarray, rng) -> np.ndarray:
    """One x per row of log_p (G, S), drawn from the pmf proportional to exp(log_p) over ``support``.

    For data models with a finite support: ``support`` holds the S values of x (rows), ``log_p`` one
    unnormalized log pmf over them per draw.

    Examples
    --------
    >>> support = np.array([[0], [1], [2]])
    >>> log_p = np.array([[0.0, -np.inf, -np.inf], [-np.inf, -np.inf, 0.0]])    # all mass on 0, then on 2
    >>> draw_from_support(support, log_p, np.random.default_rng(0)).ravel()
    array([0, 2])
    """
    cdf = np.cumsum(np.exp(log_p - log_p.max(axis=1, keepdims=True)), axis=1)
    u = rng.random(cdf.shape[0]) * cdf[:, -1]
    index = (cdf < u[:, None]).sum(axis=1)
    return support[np.minimum(index, support.shape[0] - 1)]


def _log_choose(n, k):
    k = np.asarray(k, dtype=float)
    return special.gammaln(n + 1) - special.gammaln(k + 1) - special.gammaln(n - k + 1)
