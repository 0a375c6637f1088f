r"""Semi-DP release mechanisms with invariants (Cho & Awan), and the naive baselines they beat.

With invariants t = T(X) public, neighbouring conforming datasets move a statistic by a vector
of the sensitivity space S (:class:`ppdinfer.privacy.SensitivitySpace`), whose span has rank s
below the dimension d. Noise confined to span(S) keeps the invariants exactly:

- :class:`~ppdinfer.mechanisms.SemiDPGaussian` (Algorithm 1): y = x + N(0, sigma^2 P),
  sigma = Delta_2 / mu, mu-GDP;
- :class:`~ppdinfer.mechanisms.KNormMechanism` (Algorithms 2-3): noise density proportional to
  exp(-eps ||v||_K) on span(S), K = conv(S), eps-DP (the optimal K-norm mechanism).

Both are degenerate in R^d: a release lies in the affine subspace x + span(S). Their
``logpdf`` is the density with respect to Lebesgue measure on that subspace, written in the
orthonormal basis coordinates w = B^T (y - x), and -inf when y - x leaves span(S). For a fixed
release y, the x with finite likelihood are exactly the x with the same invariants as y, so the
likelihood is the right one for posteriors over conforming tables.

The baselines of Appendix B ignore the invariants and noise all d coordinates:
:class:`~ppdinfer.mechanisms.NormBallMechanism` (the l1, l2 and l_inf mechanisms) and
:func:`~ppdinfer.mechanisms.naive_gaussian` (Figure 2's Gaussian with group privacy).

Errata followed here (see the project notes): the K-norm radius is Gamma(s + 1), not Gamma(s)
as in the authors' code, and the l_inf radius Gamma(d + 1); only then is the density
proportional to exp(-eps ||v||), and the mean L2 error of a 2 x 2 table is 2 / eps, not 1 / eps.
"""

from __future__ import annotations

import math

import numpy as np

from ..geometry import SensitivitySpace
from ..rng import SeedLike, as_generator
from ..validation import finite_array, positive_finite, positive_int
from .base import Mechanism
from .gaussian import Gaussian
from .guarantee import Guarantee

__all__ = ["KNormMechanism", "NormBallMechanism", "SemiDPGaussian", "naive_gaussian"]

#: Box candidates drawn for one batch of directions uniform in K before giving up.
MAX_DIRECTION_CANDIDATES = 50_000_000
#: Relative slack of the necessary test of a candidate against Delta_inf and Delta_1 (rounding only).
OUTER_SLACK = 1e-9
#: Box candidates tested at once (each is compared with every facet of K, so memory grows with both).
CANDIDATE_CHUNK = 16_384
#: The largest noise standard deviation SemiDPGaussian accepts: its squares (in the density) stay finite.
MAX_SIGMA = 1e150


class _SubspaceMechanism(Mechanism):
    """Additive noise on span(S): the shape checks, the basis coordinates and the -inf off the span.

    Subclasses provide ``_coordinate_noise(size, rng)`` (noise in basis coordinates, shape
    (size, s)) and ``_log_density(w)`` (the log density of coordinates w, shape (B, s)).
    """

    discrete = False

    def __init__(self, space):
        if not isinstance(space, SensitivitySpace):
            raise ValueError(f"space must be a ppdinfer.privacy.SensitivitySpace, got {space!r}")
        self.space = space

    def noise(self, size: int = 1, random_seed: SeedLike = None) -> np.ndarray:
        """``size`` noise draws in R^d, shape (size, d): each lies in span(S)."""
        size = positive_int(size, "size")
        return self._coordinate_noise(size, as_generator(random_seed)) @ self.space.basis.T

    def release(self, x, z=None, random_seed: SeedLike = None) -> np.ndarray:
        """The release x + noise, with x of the space's shape (or flat, of its dimension d)."""
        x = finite_array(x, "x")
        if x.shape not in (self.space.shape, (self.space.dim,)):
            raise ValueError(
                f"x has shape {x.shape} but the sensitivity space is for statistics of shape {self.space.shape}"
            )
        return x + self.noise(1, random_seed).reshape(x.shape)

    def logpdf(self, y, x, z=None) -> np.ndarray:
        """log pi(y | x) for one x or a batch (B, ...) of x: the density on x + span(S), -inf off it."""
        offsets = self._offsets(y, x)
        values = self._log_density(self.space.coordinates(offsets))
        values[~self.space.in_span(offsets)] = -np.inf
        return values

    def log_bound(self, z=None, size: int = 1) -> float:
        """log M: the density at y = x, its largest value; ``size`` must be the dimension d."""
        if size != self.space.dim:
            raise ValueError(f"size must be the dimension {self.space.dim} of the statistic, got {size}")
        return float(self._log_density(np.zeros((1, self.space.rank)))[0])

    def __eq__(self, other) -> bool:
        return (
            super().__eq__(other)
            and self.space.shape == other.space.shape
            and np.array_equal(self.space.vectors, other.space.vectors)
        )

    def __hash__(self) -> int:
        return hash((super().__hash__(), self.space.shape, self.space.vectors.tobytes()))

    def _offsets(self, y, x) -> np.ndarray:
        """y - x as rows of length d, after checking y is one statistic and x one or a batch."""
        y = finite_array(y, "y")
        d, shape = self.space.dim, self.space.shape
        if y.shape not in (shape, (d,)):
            raise ValueError(f"y must be one statistic of shape {shape} (or flat, ({d},)), got shape {y.shape}")
        x = finite_array(x, "x")
        if x.shape == y.shape:
            return (y - x).reshape(1, d)
        if x.ndim >= 2 and x.shape[1:] in (shape, (d,)):
            return y.reshape(1, d) - x.reshape(x.shape[0], d)
        raise ValueError(
            f"x must be one statistic of shape {y.shape} or a batch of shape (B, *{shape}), got shape {x.shape}"
        )

    def _coordinate_noise(self, size: int, rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError

    def _log_density(self, w: np.ndarray) -> np.ndarray:
        raise NotImplementedError


class SemiDPGaussian(_SubspaceMechanism):
    r"""Algorithm 1: y = x + N(0, sigma^2 P) with sigma = Delta_2 / mu and P the projection onto span(S).

    A degenerate Gaussian in R^d: its covariance sigma^2 P has rank s, so it has no density on
    R^d. ``logpdf`` is the density with respect to Lebesgue measure on the affine subspace
    x + span(S), in orthonormal basis coordinates w = B^T (y - x):

    .. math::

        \log \pi(y \mid x) = -\frac{s}{2} \log(2 \pi \sigma^2) - \frac{\lVert B^\top (y - x) \rVert_2^2}{2 \sigma^2}
        \quad \text{if } y - x \in \operatorname{span}(S), \qquad -\infty \text{ otherwise.}

    Two conforming datasets whose statistics differ by u in S give releases whose tradeoff
    function is G with parameter ||u||_2 / sigma, at most mu: the release is mu-GDP for
    neighbours under Semi-DP (Proposition 28).

    Parameters
    ----------
    mu : float
        The GDP parameter, > 0.
    space : SensitivitySpace
        The sensitivity space S of the statistic under its invariants.

    See Also
    --------
    ppdinfer.mechanisms.KNormMechanism : The optimal K-norm mechanism on span(S).
    ppdinfer.mechanisms.naive_gaussian : The naive Gaussian baseline.

    References
    ----------
    .. [1] Y. H. Cho and J. Awan, "Formal privacy guarantees with invariant statistics." Algorithm 1.

    Examples
    --------
    >>> import numpy as np
    >>> from ppdinfer.privacy import SensitivitySpace
    >>> from ppdinfer.mechanisms.semidp import SemiDPGaussian
    >>> space = SensitivitySpace([[1, -1, -1, 1]], shape=(2, 2))   # 2 x 2 table, public margins
    >>> mechanism = SemiDPGaussian(mu=1.0, space=space)             # sigma = Delta_2 / mu = 2
    >>> x = np.array([[30, 10], [20, 40]])
    >>> y = mechanism.release(x, random_seed=0)
    >>> np.allclose(y.sum(axis=0), x.sum(axis=0)), np.allclose(y.sum(axis=1), x.sum(axis=1))
    (True, True)
    >>> other = x + np.array([[1, 0], [0, 0]])                     # other margins: impossible
    >>> mechanism.logpdf(x, [x, other]).round(4)
    array([-1.6121,   -inf])
    """

    def __init__(self, mu: float, space):
        self.mu = positive_finite(mu, "mu")
        super().__init__(space)
        self.sigma = space.l2 / self.mu
        if not self.sigma <= MAX_SIGMA:
            raise ValueError(
                f"mu: sigma = Delta_2 / mu = {space.l2!r} / {self.mu!r} = {self.sigma:.3g} exceeds "
                f"{MAX_SIGMA:.0e}: the noise and its square overflow double precision"
            )

    @property
    def covariance(self) -> np.ndarray:
        r"""The noise covariance sigma^2 P in R^d (rank s).

        Examples
        --------
        >>> from ppdinfer.privacy import SensitivitySpace
        >>> SemiDPGaussian(2.0, SensitivitySpace([[1, -1, -1, 1]])).covariance.round(2)
        array([[ 0.25, -0.25, -0.25,  0.25],
               [-0.25,  0.25,  0.25, -0.25],
               [-0.25,  0.25,  0.25, -0.25],
               [ 0.25, -0.25, -0.25,  0.25]])
        """
        return self.sigma**2 * self.space.projection

    def _guarantee(self) -> Guarantee:
        return Guarantee("semi-dp", mu=self.mu, note="mu-GDP on the sensitivity space (Algorithm 1)")

    def parameters(self) -> dict[str, float]:
        """mu, sigma and the rank s of the space."""
        return {"mu": self.mu, "sigma": self.sigma, "rank": float(self.space.rank)}

    def _coordinate_noise(self, size, rng):
        return rng.normal(0.0, self.sigma, size=(size, self.space.rank))

    def _log_density(self, w):
        s = self.space.rank
        return -0.5 * s * math.log(2 * math.pi * self.sigma**2) - (w**2).sum(axis=1) / (2 * self.sigma**2)


class KNormMechanism(_SubspaceMechanism):
    r"""Algorithms 2-3: the optimal K-norm mechanism on span(S), K = conv(S), Delta_K = 1.

    The noise has density proportional to exp(-eps ||v||_K) on span(S). In basis coordinates
    w = B^T (y - x), with respect to Lebesgue measure on x + span(S),

    .. math::

        \log \pi(y \mid x) = s \log \epsilon - \log \Gamma(s + 1) - \log \operatorname{vol}_s(K)
        - \epsilon \lVert w \rVert_K, \qquad -\infty \text{ off the span,}

    eps-DP under Semi-DP (Theorem 31) since ||v||_K - ||v - u||_K <= ||u||_K <= 1 for u in S. Release
    (Algorithm 3): r ~ Gamma(shape s + 1, rate eps) and V uniform in K, drawn by rejection from
    the box :meth:`ppdinfer.privacy.SensitivitySpace.box` in basis coordinates (accepted with probability
    ``acceptance_rate`` = vol(K) / vol(box)); the noise is r B V. The shape is s + 1: r V
    then has the density above and ||r V||_K ~ Gamma(shape s, rate eps). (The authors' code
    draws Gamma(shape s), which gives a density unbounded at 0, not eps-DP.) vol_s(K) is exact:
    the interval's length for s = 1, Qhull's volume for s >= 2.

    Cost: the box acceptance falls about tenfold per dimension for tables (0.16 for 3 x 3,
    s = 4; 8e-4 for 4 x 4, s = 9), and each surviving candidate is tested against every facet
    of K (866 for 4 x 4), after a cheap necessary test (the l_inf and l1 sensitivities) that
    removes most candidates. Beyond s of about 10, Qhull's facets and the rejection from the
    box are out of reach: a space whose predicted hull cost
    (:attr:`ppdinfer.privacy.SensitivitySpace.hull_cost`, m^(s/2) for m vectors) exceeds
    ``HULL_COST_LIMIT`` is refused at once with a ValueError naming its size (a 5 x 5 table
    under two changes, s = 16, or a 4 x 4 table under three, s = 9 with 264 vectors), where
    Qhull would otherwise run for many minutes, deaf to Ctrl-C.

    Parameters
    ----------
    epsilon : float
        The privacy parameter, > 0.
    space : SensitivitySpace
        The sensitivity space S of the statistic under its invariants.

    See Also
    --------
    ppdinfer.mechanisms.SemiDPGaussian : The Semi-DP Gaussian mechanism.
    ppdinfer.mechanisms.NormBallMechanism : The l1, l2 and l_inf baselines.

    References
    ----------
    .. [1] Y. H. Cho and J. Awan, "Formal privacy guarantees with invariant statistics." Algorithms 2-3.
    .. [2] M. Hardt and K. Talwar, "On the geometry of differential privacy," STOC 2010.

    Examples
    --------
    >>> import numpy as np
    >>> from ppdinfer.privacy import SensitivitySpace
    >>> from ppdinfer.mechanisms.semidp import KNormMechanism
    >>> space = SensitivitySpace([[1, -1, -1, 1]], shape=(2, 2))
    >>> mechanism = KNormMechanism(epsilon=1.0, space=space)     # K: the segment from -v to v
    >>> round(mechanism.log_volume, 4), mechanism.acceptance_rate  # length 4 = 2 ||v||_2
    (1.3863, 1.0)
    >>> x = np.array([[30, 10], [20, 40]])
    >>> y = mechanism.release(x, random_seed=0)
    >>> np.allclose(y.sum(axis=0), x.sum(axis=0))
    True
    >>> mechanism.logpdf(x + np.array([[1, -1], [-1, 1]]), x).round(4)   # ||v||_K = 1
    array([-2.3863])
    """

    def __init__(self, epsilon: float, space):
        self.epsilon = positive_finite(epsilon, "epsilon")
        super().__init__(space)
        try:
            volume = space.volume  # builds the hull, or refuses one too large to build (hull_cost)
        except ValueError as err:
            raise ValueError(f"space: {err}") from None
        self.log_volume = math.log(volume)
        self.half_widths = space.box()
        self._outer_bounds = (space.linf * (1 + OUTER_SLACK), space.l1 * (1 + OUTER_SLACK))
        self._acceptance_rate = math.exp(self.log_volume - float(np.log(2 * self.half_widths).sum()))

    @property
    def acceptance_rate(self) -> float:
        """vol(K) / vol(box): the chance that one box candidate is a direction in K.

        Examples
        --------
        >>> import itertools
        >>> from ppdinfer.privacy import SensitivitySpace
        >>> rectangles = []                                    # 3 x 3 table, public margins
        >>> for (i, k), (j, l) in itertools.product(itertools.combinations(range(3), 2),
        ...                                         itertools.permutations(range(3), 2)):
        ...     v = np.zeros((3, 3)); v[i, j] = v[k, l] = 1; v[i, l] = v[k, j] = -1
        ...     rectangles.append(v.ravel())
        >>> rate = KNormMechanism(1.0, SensitivitySpace(rectangles, (3, 3))).acceptance_rate
        >>> bool(0.05 < rate < 0.5)      # about 0.16 (the box depends on the basis SVD returns)
        True
        """
        return self._acceptance_rate

    def uniform_in_hull(self, size: int = 1, random_seed: SeedLike = None) -> np.ndarray:
        """``size`` points uniform in K, in basis coordinates (shape (size, s)), by rejection from the box.

        Candidates are drawn in batches; at most ``MAX_DIRECTION_CANDIDATES`` in all, beyond
        which a RuntimeError reports the acceptance rate.

        Examples
        --------
        >>> from ppdinfer.privacy import SensitivitySpace
        >>> mechanism = KNormMechanism(1.0, SensitivitySpace([[1, -1, -1, 1]]))
        >>> w = mechanism.uniform_in_hull(1000, random_seed=1)
        >>> w.shape, bool(np.abs(w).max() <= 2)
        ((1000, 1), True)
        """
        size = positive_int(size, "size")
        return self._uniform_in_hull(size, as_generator(random_seed))

    def _guarantee(self) -> Guarantee:
        return Guarantee("semi-dp", epsilon=self.epsilon, note="epsilon-DP on the sensitivity space (Algorithms 2-3)")

    def parameters(self) -> dict[str, float]:
        """epsilon and the rank s of the space."""
        return {"epsilon": self.epsilon, "rank": float(self.space.rank)}

    def _uniform_in_hull(self, size: int, rng: np.random.Generator) -> np.ndarray:
        s, kept, found, drawn = self.space.rank, [], 0, 0
        while found < size:
            if drawn >= MAX_DIRECTION_CANDIDATES:
                raise RuntimeError(
                    f"only {found} of {size} directions uniform in K after {drawn:,} box candidates "
                    f"(acceptance rate vol(K) / vol(box) = {self.acceptance_rate:.3g}): the rejection "
                    f"budget MAX_DIRECTION_CANDIDATES is spent"
                )
            wanted = math.ceil(1.2 * (size - found) / self.acceptance_rate) + 16
            batch = min(wanted, CANDIDATE_CHUNK, MAX_DIRECTION_CANDIDATES - drawn)
            candidates = rng.uniform(-1.0, 1.0, size=(batch, s)) * self.half_widths
            candidates = candidates[self._may_be_in_hull(candidates)]
            inside = candidates[self.space.gauge_coordinates(candidates) <= 1.0]
            kept.append(inside)
            found += inside.shape[0]
            drawn += batch
        return np.concatenate(kept)[:size]

    def _may_be_in_hull(self, w: np.ndarray) -> np.ndarray:
        """A cheap necessary test of w in K: ||B w||_inf <= Delta_inf and ||B w||_1 <= Delta_1.

        Both norms are convex, so on K = conv(S) they are largest at a vector of S. The test
        costs d products per candidate instead of one per facet of K, and rejects most
        candidates when K has many facets (all but 0.16% of the box for a 4 x 4 table).
        """
        magnitudes = np.abs(w @ self.space.basis.T)
        return (magnitudes.max(axis=1) <= self._outer_bounds[0]) & (magnitudes.sum(axis=1) <= self._outer_bounds[1])

    def _coordinate_noise(self, size, rng):
        radius = rng.gamma(self.space.rank + 1, 1.0 / self.epsilon, size=(size, 1))
        return radius * self._uniform_in_hull(size, rng)

    def _log_density(self, w):
        s = self.space.rank
        log_norm = s * math.log(self.epsilon) - math.lgamma(s + 1) - self.log_volume
        return log_norm - self.epsilon * self.space.gauge_coordinates(w)


#: log vol of the unit ball of the l1, l2 and l_inf norms in R^d.
_LOG_UNIT_BALL = {
    1.0: lambda d: d * math.log(2) - math.lgamma(d + 1),
    2.0: lambda d: d / 2 * math.log(math.pi) - math.lgamma(d / 2 + 1),
    math.inf: lambda d: d * math.log(2),
}


class NormBallMechanism(Mechanism):
    r"""The l1, l2 or l_inf mechanism of Appendix B: noise density proportional to exp(-eps ||v||_q / Delta) on R^d.

    With rate a = eps / Delta and B_q the unit ball of the norm, the polar decomposition
    v = r V (r >= 0, V uniform in B_q, r ~ Gamma(d + 1, a)) gives the density

    .. math::

        \log \pi(y \mid x) = d \log a - \log \Gamma(d + 1) - \log \operatorname{vol}(B_q)
        - a \lVert y - x \rVert_q,

    with vol(B_1) = 2^d / d!, vol(B_2) = pi^(d/2) / Gamma(d/2 + 1), vol(B_inf) = 2^d, and
    a ||v||_q ~ Gamma(d, 1). eps-DP when Delta is the q-sensitivity. The samplers are those of
    Appendix B: iid Laplace(Delta / eps) for q = 1 (the same law as
    :class:`~ppdinfer.mechanisms.Laplace`), r Z / ||Z||_2 with Z ~ N(0, I) and r ~ Gamma(d, a)
    for q = 2, and r U with U uniform in [-1, 1]^d and r ~ Gamma(d + 1, a) for q = inf (the
    authors' code draws Gamma(d), which is not this density).

    Parameters
    ----------
    epsilon : float
    sensitivity : float
        Delta_q, the largest q-norm of a change of the statistic between neighbours.
    norm : {1, 2, inf}
        q.

    See Also
    --------
    ppdinfer.mechanisms.KNormMechanism : The optimal K-norm mechanism.

    References
    ----------
    .. [1] Y. H. Cho and J. Awan, "Formal privacy guarantees with invariant statistics." Appendix B.
    .. [2] M. Hardt and K. Talwar, "On the geometry of differential privacy," STOC 2010.

    Examples
    --------
    >>> import numpy as np
    >>> from ppdinfer.mechanisms.semidp import NormBallMechanism
    >>> mechanism = NormBallMechanism(epsilon=1.0, sensitivity=np.sqrt(2), norm=2)
    >>> y = mechanism.release([[30, 10], [20, 40]], random_seed=0)
    >>> y.shape
    (2, 2)
    >>> mechanism.logpdf([1.0, 1.0], [[1.0, 1.0], [0.0, 1.0]]).round(4)   # d = 2: the peak, then 1 / sqrt 2 lower
    array([-2.531 , -3.2381])
    >>> round(mechanism.log_bound(size=2), 4)
    -2.531
    >>> NormBallMechanism.naive_group(epsilon=1.0, norm=1)    # Figure 3: eps / 3, Delta_1 = 2
    NormBallMechanism(epsilon=0.3333333333333333, sensitivity=2.0, norm=1.0)
    """

    discrete = False

    #: Sensitivities of a contingency table under one record change (a +1 and a -1 cell).
    TABLE_SENSITIVITY = {1.0: 2.0, 2.0: math.sqrt(2), math.inf: 1.0}

    def __init__(self, epsilon: float, sensitivity: float = 1.0, norm=2):
        self.epsilon = positive_finite(epsilon, "epsilon")
        self.sensitivity = positive_finite(sensitivity, "sensitivity")
        self.norm = _norm_order(norm)
        self.rate = self.epsilon / self.sensitivity

    @classmethod
    def naive_group(cls, epsilon: float, norm, group_size: int = 3) -> NormBallMechanism:
        """Figure 3's naive baseline for a table: eps / a(t) with the one-change sensitivity (2, sqrt 2, 1).

        Group privacy over a(t) = ``group_size`` record changes (3 in the paper) makes the
        plain DP mechanism at eps / a(t) an eps-DP one under Semi-DP.

        Examples
        --------
        >>> NormBallMechanism.naive_group(0.5, norm="inf").parameters()
        {'epsilon': 0.16666666666666666, 'sensitivity': 1.0, 'norm': inf}
        """
        order = _norm_order(norm)
        epsilon = positive_finite(epsilon, "epsilon")
        return cls(epsilon / positive_int(group_size, "group_size"), cls.TABLE_SENSITIVITY[order], order)

    def _guarantee(self) -> Guarantee:
        return Guarantee("pure", epsilon=self.epsilon, sensitivity=self.sensitivity)

    def parameters(self) -> dict[str, float]:
        """epsilon, the sensitivity and the norm's order q."""
        return {"epsilon": self.epsilon, "sensitivity": self.sensitivity, "norm": self.norm}

    def noise(self, size: int = 1, dim: int = 1, random_seed: SeedLike = None) -> np.ndarray:
        """``size`` noise vectors in R^dim (shape (size, dim)) by the sampler of Appendix B.

        Examples
        --------
        >>> NormBallMechanism(1.0, norm=np.inf).noise(5, dim=3, random_seed=0).shape
        (5, 3)
        """
        size, dim = positive_int(size, "size"), positive_int(dim, "dim")
        rng = as_generator(random_seed)
        scale = 1.0 / self.rate
        if self.norm == 1.0:
            return rng.laplace(0.0, scale, size=(size, dim))
        if self.norm == 2.0:
            z = rng.standard_normal((size, dim))
            return rng.gamma(dim, scale, size=(size, 1)) * z / np.linalg.norm(z, axis=1, keepdims=True)
        return rng.gamma(dim + 1, scale, size=(size, 1)) * rng.uniform(-1.0, 1.0, size=(size, dim))

    def release(self, x, z=None, random_seed: SeedLike = None) -> np.ndarray:
        """The release x + noise, every coordinate noisy (the invariants are not kept)."""
        x = finite_array(x, "x")
        return x + self.noise(1, x.size, random_seed).reshape(x.shape)

    def logpdf(self, y, x, z=None) -> np.ndarray:
        """log pi(y | x) for one x or a batch ``(B, *y.shape)`` of x."""
        y = finite_array(y, "y")
        x = finite_array(x, "x")
        d = y.size
        if x.shape == y.shape:
            x = x.reshape(1, d)
        elif x.ndim >= 1 and x.shape[1:] == y.shape:
            x = x.reshape(x.shape[0], d)
        else:
            raise ValueError(f"x must have the shape {y.shape} of y or be a batch (B, *{y.shape}), got shape {x.shape}")
        distance = np.linalg.norm(y.reshape(1, d) - x, ord=self.norm, axis=1)
        return self._log_norm(d) - self.rate * distance

    def log_bound(self, z=None, size: int = 1) -> float:
        """log M: the density at y = x for a release of ``size`` coordinates."""
        return self._log_norm(positive_int(size, "size"))

    def _log_norm(self, d: int) -> float:
        return d * math.log(self.rate) - math.lgamma(d + 1) - _LOG_UNIT_BALL[self.norm](d)


def _norm_order(norm) -> float:
    """1, 2 or inf (also "inf") as a float; anything else is a ValueError."""
    order = math.inf if isinstance(norm, str) and norm.lower() == "inf" else norm
    if isinstance(order, bool) or order not in (1, 2, math.inf):
        raise ValueError(f"norm must be 1, 2 or inf, got {norm!r}")
    return float(order)


def naive_gaussian(mu: float, group_size: int = 3, sensitivity: float = math.sqrt(2)) -> Gaussian:
    r"""Figure 2's naive Gaussian: every cell noisy, y = x + N(0, sigma^2 I) with group privacy.

    .. math::

        \sigma = a(t) \, \Delta_2 / \mu,

    with Delta_2 = sqrt 2 for a table under one record change and a(t) = ``group_size`` (3 in
    the paper and its code): mu-GDP under Semi-DP, by group privacy of a (Delta_2 / sigma)-GDP
    release. It is :class:`~ppdinfer.mechanisms.Gaussian`, returned calibrated.

    See Also
    --------
    ppdinfer.mechanisms.SemiDPGaussian : Noise on span(S) only.

    References
    ----------
    .. [1] Y. H. Cho and J. Awan, "Formal privacy guarantees with invariant statistics." Figure 2.

    Examples
    --------
    >>> from ppdinfer.mechanisms.semidp import naive_gaussian
    >>> round(naive_gaussian(mu=1.0).sigma, 4)     # 3 sqrt 2
    4.2426
    """
    mu = positive_finite(mu, "mu")
    return Gaussian(positive_int(group_size, "group_size") * positive_finite(sensitivity, "sensitivity") / mu)
