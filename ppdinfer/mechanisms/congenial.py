r"""Gong & Meng's congenial mechanism: integer noise conditioned on the invariants.

An additive integer-noise mechanism M(s) = s + u (u iid discrete Laplace or discrete Gaussian)
is conditioned on its output lying in the conforming set S* = {s : A s = a, B s >= b} of
:class:`ppdinfer.invariants.LinearInvariants`:

.. math::

    p^*(y \mid s) = \frac{p(y - s) \, 1\{y \in S^*\}}{c(s)}, \qquad c(s) = P(M(s) \in S^*).

The release is exact by rejection (draw from M until the draw conforms, 1 / c(s) draws on
average) or approximate by the Metropolized independence sampler (MIS) of the paper's
Algorithm 1. The likelihood keeps c(s), which depends on s as soon as there are inequality
invariants (e.g. non-negativity): dropping it biases every posterior.
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np
from scipy.special import logsumexp

from ..invariants import LinearInvariants
from ..kernels import independence_block
from ..kernels.integer_tables import conforming
from ..rng import SeedLike, as_generator
from ..validation import integer_valued, positive_finite, positive_int
from .base import Mechanism
from .exact_integer import RandomBits
from .gaussian import DiscreteGaussian
from .guarantee import Guarantee
from .laplace import DiscreteLaplace

#: Largest conforming set enumerated for the exact c(s).
ENUMERATION_LIMIT = 50_000
#: Largest conforming set over which log_bound scans min c(s) (|S*|^2 noise evaluations).
BOUND_SCAN_LIMIT = 5_000
#: Proposals a rejection release may spend by default.
MAX_PROPOSALS = 1_000_000
#: Proposals of the pilot run with which method="auto" tries rejection when c(s) is unknown.
PILOT_PROPOSALS = 10_000
#: Per-coordinate noise mass left out when the kernel lattice {u : A u = 0} is truncated.
TRUNCATION_TAIL = 1e-15
_CHUNK = 4_000_000
#: Largest block of rejection proposals: the proposals after the accepted one are wasted, so blocks stay small.
_REJECTION_BATCH = 1 << 13
#: MIS iterations per compiled block (bounds the memory of the random words).
_MIS_BLOCK = 1 << 14
#: The MIS proposal's alias table has at most 2^_ALIAS_BITS buckets (a word keeps 53 bits for the cut);
#: a wider proposal is drawn by inverting its CDF.
_ALIAS_BITS = 11


class Congenial(Mechanism):
    r"""The congenial mechanism: ``mechanism``'s integer noise conditioned on the invariants.

    For a confidential table s in S* = {s : A s = a, B s >= b} and the noise pmf p of
    ``mechanism`` (iid over cells),

    .. math::

        p^*(y \mid s) = \frac{p(y - s) \, 1\{y \in S^*\}}{c(s)}, \qquad
        c(s) = P(M(s) \in S^*) = \sum_{t \in S^*} p(t - s).

    The invariants are facts about the confidential data, so a table x outside S* has
    likelihood zero (``logpdf`` is -inf there).

    Normalizer. c(s) is computed exactly by enumerating S* when S* is finite and holds at most
    ``enumeration_limit`` tables. With equalities only (no inequalities) c(s) = P(A u = 0) is
    the same for every conforming s; it is then the sum of the noise pmf over the kernel
    lattice {u : A u = 0} truncated to |u_k| <= K, where K leaves out at most 1e-15 of each
    coordinate's noise mass (``normalizer`` says so, with the bound on the relative error).
    In every other case ``logpdf`` refuses rather than drop c(s).

    Parameters
    ----------
    mechanism : DiscreteLaplace or DiscreteGaussian
        The unconstrained additive mechanism M.
    invariants : LinearInvariants
        The conforming set S* (its ``shape`` is the table's shape).
    enumeration_limit : int
        Largest S* enumerated for the exact c(s) (default ``ENUMERATION_LIMIT``).

    Attributes
    ----------
    last_acceptance_rate : float or None
        After a release: the acceptance rate of the method used (rejection: accepted over
        proposed draws; MIS: accepted moves over iterations).
    last_method : str or None
        After a release: "rejection" or "mis".

    See Also
    --------
    ppdinfer.privacy.congenial_gamma : Its privacy cost gamma.
    ppdinfer.projection.project_l2 : The projection it replaces.

    References
    ----------
    .. [1] R. Gong and X.-L. Meng, "Congenial differential privacy under mandated disclosure,"
        Proceedings of the 2020 ACM-IMS Foundations of Data Science Conference (FODS), 2020.

    Examples
    --------
    >>> from ppdinfer.invariants import LinearInvariants
    >>> from ppdinfer.mechanisms import Congenial, DiscreteLaplace
    >>> inv = LinearInvariants.grand_total(3, 4) & LinearInvariants.nonnegative(3)
    >>> mech = Congenial(DiscreteLaplace(1.0), inv)
    >>> y = mech.release([2, 1, 1], random_seed=0)
    >>> bool(inv.contains(y)), int(y.sum())
    (True, 4)
    >>> support = inv.enumerate()
    >>> pmf = np.exp([mech.logpdf(t, [2, 1, 1])[0] for t in support])
    >>> round(float(pmf.sum()), 12)          # p* sums to one over S*
    1.0
    >>> bool(mech.logpdf([2, 1, 1], [[2, 1, 1], [4, 0, 0]]).max() <= mech.log_bound(size=3))
    True
    """

    discrete = True

    def __init__(self, mechanism, invariants: LinearInvariants, *, enumeration_limit: int = ENUMERATION_LIMIT):
        if not isinstance(mechanism, (DiscreteLaplace, DiscreteGaussian)):
            raise ValueError(f"mechanism must be a DiscreteLaplace or DiscreteGaussian, got {mechanism!r}")
        if mechanism.coordinates is not None:
            raise ValueError(
                f"mechanism must have one noise scale for every cell (a scalar sensitivity or sigma), got "
                f"{mechanism!r}: the conditioned sampler and its compiled kernels read one rate"
            )
        if not isinstance(invariants, LinearInvariants):
            raise ValueError(f"invariants must be a LinearInvariants, got {invariants!r}")
        self.mechanism = mechanism
        self.invariants = invariants
        self.enumeration_limit = positive_int(enumeration_limit, "enumeration_limit")
        self.last_acceptance_rate: float | None = None
        self.last_method: str | None = None
        self._support_cache: tuple[np.ndarray | None, str | None] | None = None
        self._constant_cache: tuple[float, float] | None = None
        self._conformity_cache: tuple | None = None

    @property
    def n_cells(self) -> int:
        """d, the number of cells of a table."""
        return self.invariants.n_cells

    def auxiliary_release(self, x_shape, z, rng: np.random.Generator):
        """The exchange algorithm's auxiliary release: the rejection release and the noise density
        called directly (the checks of ``release`` and ``unnormalized_logpdf`` would cost more than
        the draw itself; the exchange sampler calls them only for tables inside S*)."""

        def draw_w(candidate):
            return self._rejection(candidate, rng, 1, MAX_PROPOSALS, strict=True)[0][0]

        def log_ratio(w, current, candidate):
            both = self._log_noise(w.astype(float), np.stack([current, candidate]).astype(float))
            return float(both[0] - both[1])

        return draw_w, log_ratio

    def impossible_release(self, y, z=None) -> str | None:
        """Why ``y`` cannot be a release (it breaks the invariants every release keeps), else None."""
        y = np.asarray(y)
        if y.size == self.n_cells and not self.invariants.contains(y.reshape(self.invariants.shape)):
            return "y breaks the congenial mechanism's invariants, which every release keeps"
        return None

    def _guarantee(self) -> Guarantee:
        noise = self.mechanism.guarantee()
        note = "of the noise before conditioning on the invariants; privacy.congenial_privacy gives the exact loss"
        return Guarantee(noise.definition, noise.epsilon, noise.delta, noise.rho, noise.mu, noise.sensitivity, note)

    def parameters(self) -> dict[str, float]:
        """The noise's settings (prefixed ``noise_``) and the numbers of invariants."""
        out = {f"noise_{k}": v for k, v in self.mechanism.parameters().items()}
        out["n_equalities"] = int(self.invariants.A.shape[0])
        out["n_inequalities"] = int(self.invariants.B.shape[0])
        return out

    def __repr__(self) -> str:
        return f"Congenial({self.mechanism!r}, {self.invariants!r})"

    # -- normalizer ------------------------------------------------------------------------------
    def _support(self) -> np.ndarray | None:
        """S* as (N, d), or None (the reason in ``self._support_cache[1]``)."""
        if self._support_cache is None:
            try:
                tables = self.invariants.enumerate(limit=self.enumeration_limit)
                self._support_cache = (tables.reshape(len(tables), -1), None)
            except ValueError as err:
                self._support_cache = (None, str(err))
        return self._support_cache[0]

    def _log_noise(self, y: np.ndarray, x: np.ndarray) -> np.ndarray:
        """log p(y - x) summed over cells, broadcasting (..., d)."""
        m = self.mechanism
        return y.shape[-1] * m.log_norm - m.rate * (np.abs(y - x) ** m.power).sum(axis=-1)

    def _log_c_enumerated(self, support: np.ndarray, xs: np.ndarray) -> np.ndarray:
        out = np.empty(xs.shape[0])
        step = max(1, _CHUNK // max(1, support.size))
        for start in range(0, xs.shape[0], step):
            block = xs[start : start + step]
            out[start : start + step] = logsumexp(self._log_noise(support[None], block[:, None]), axis=1)
        return out

    def _log_c_constant(self) -> tuple[float, float]:
        """(log c, relative error bound) for equalities only: c = P(A u = 0), truncated lattice sum."""
        if self._constant_cache is None:
            inv = self.invariants
            if inv.A.shape[0] == 0:
                self._constant_cache = (0.0, 0.0)  # no invariant at all: every table conforms
                return self._constant_cache
            m = self.mechanism
            k = np.arange(0, 100_000)
            log_p = m.log_norm - m.rate * k.astype(float) ** m.power
            tail = np.exp(log_p)
            tail[1:] *= 2  # P(|u| = k) for k >= 1
            remaining = 1.0 - np.cumsum(tail)
            cut = int(np.argmax(remaining <= TRUNCATION_TAIL))
            d = self.n_cells
            box = LinearInvariants(
                inv.A,
                np.zeros(inv.A.shape[0], dtype=np.int64),
                np.vstack([np.eye(d, dtype=np.int64), -np.eye(d, dtype=np.int64)]),
                np.full(2 * d, -cut, dtype=np.int64),
            )
            try:
                kernel = box.enumerate(limit=self.enumeration_limit).reshape(-1, d)
            except ValueError as err:
                raise ValueError(
                    f"c(s) = P(A u = 0) is the same for every conforming s, but the kernel lattice "
                    f"truncated to |u_k| <= {cut} is too large to sum ({err})"
                ) from None
            log_c = float(logsumexp(self._log_noise(kernel, np.zeros(d))))
            # Left out: P(A u = 0, some |u_k| > K) <= d * TRUNCATION_TAIL.
            self._constant_cache = (log_c, d * TRUNCATION_TAIL / math.exp(log_c))
        return self._constant_cache

    @property
    def normalizer(self) -> str:
        """How c(s) is computed: "enumerated", "constant (truncated kernel lattice, ...)", or why it is not.

        Examples
        --------
        >>> from ppdinfer.invariants import LinearInvariants
        >>> from ppdinfer.mechanisms import Congenial, DiscreteLaplace
        >>> Congenial(DiscreteLaplace(1.0), LinearInvariants.grand_total(3, 4)).normalizer[:8]
        'constant'
        """
        if self._support() is not None:
            return f"enumerated (exact, |S*| = {self._support().shape[0]})"
        if self.invariants.B.shape[0] == 0:
            _, error = self._log_c_constant()
            return f"constant (truncated kernel lattice sum, relative error <= {error:.1e})"
        return f"unavailable: {self._support_cache[1]}"

    def log_normalizer(self, x) -> np.ndarray:
        r"""log c(x) = log P(M(x) in S*) for each row of a batch x of conforming tables (shape (B,)).

        Raises ValueError when c cannot be computed (S* infinite or too large, with inequalities).

        Examples
        --------
        >>> from ppdinfer.invariants import LinearInvariants
        >>> from ppdinfer.mechanisms import Congenial, DiscreteLaplace
        >>> inv = LinearInvariants.grand_total(2, 2) & LinearInvariants.nonnegative(2)
        >>> c = np.exp(Congenial(DiscreteLaplace(1.0), inv).log_normalizer([[1, 1], [2, 0]]))
        >>> bool(c[0] > c[1])        # a table at the boundary of S* loses more mass to it
        True
        """
        xs = integer_valued(x, "x").reshape(-1, self.n_cells)
        support = self._support()
        if support is not None:
            return self._log_c_enumerated(support, xs)
        if self.invariants.B.shape[0] == 0:
            return np.full(xs.shape[0], self._log_c_constant()[0])
        raise ValueError(
            "c(s) = P(M(s) in S*) depends on s (there are inequality invariants) and S* cannot be "
            f"enumerated ({self._support_cache[1]}): the exact likelihood is unavailable, and "
            "dropping c(s) would bias the posterior"
        )

    # -- likelihood ------------------------------------------------------------------------------
    def logpdf(self, y, x, z=None) -> np.ndarray:
        r"""log p*(y | x) = log p(y - x) + log 1{y in S*} - log c(x) for each row of x; -inf for x outside S*.

        ``y`` is one table (its shape or flattened); ``x`` one table or a batch ``(B, *shape)`` or
        (B, d). ``z`` is not used (the invariants are fixed at construction).
        """
        out = self.unnormalized_logpdf(y, x)
        conforming = np.isfinite(out)  # the noise pmf is positive: finite exactly when x and y conform
        if np.any(conforming):
            rows = self._as_rows(x, self.n_cells)[conforming]
            unique, inverse = np.unique(rows, axis=0, return_inverse=True)
            out[conforming] -= self.log_normalizer(unique)[inverse.reshape(-1)]
        return out

    def unnormalized_logpdf(self, y, x, z=None) -> np.ndarray:
        r"""log p(y - x) + log 1{y in S*} for each row of x, without c(x); -inf for x outside S*.

        This is log p*(y | x) + log c(x): it never needs the normalizer, so it is available
        for any S* (the exchange algorithm, :func:`ppdinfer.exchange_sample`, uses it). ``y`` and
        ``x`` are as in ``logpdf``; ``z`` is not used.

        Examples
        --------
        >>> from ppdinfer.invariants import LinearInvariants
        >>> from ppdinfer.mechanisms import Congenial, DiscreteLaplace
        >>> inv = LinearInvariants.grand_total(3, 4) & LinearInvariants.nonnegative(3)
        >>> mech = Congenial(DiscreteLaplace(1.0), inv)
        >>> x = [[2, 1, 1], [4, 0, 0]]
        >>> gap = mech.unnormalized_logpdf([3, 1, 0], x) - mech.logpdf([3, 1, 0], x)
        >>> bool(np.allclose(gap, mech.log_normalizer(x)))      # the difference is log c(x)
        True
        """
        d = self.n_cells
        y = integer_valued(y, "y")
        if y.size != d:
            raise ValueError(f"y must be a table of {d} cells (shape {self.invariants.shape}), got shape {y.shape}")
        xs = self._as_rows(integer_valued(x, "x"), d)
        out = np.full(xs.shape[0], -np.inf)
        if not self.invariants.contains(y.reshape(self.invariants.shape)):
            return out
        inside = self.invariants.contains(xs.reshape(-1, *self.invariants.shape))
        out[inside] = self._log_noise(y.reshape(-1).astype(float), xs[inside].astype(float))
        return out

    def _as_rows(self, x, d: int) -> np.ndarray:
        """x (one table, flat or shaped, or a batch) as rows of shape (B, d)."""
        x = np.asarray(x)
        if x.size == d and x.shape in (self.invariants.shape, (d,)):
            return x.reshape(1, d)
        if x.ndim >= 1 and math.prod(x.shape[1:]) == d:
            return x.reshape(x.shape[0], d)
        raise ValueError(
            f"x must be a table of shape {self.invariants.shape} or a batch (B, *shape) or (B, {d}), "
            f"got shape {x.shape}"
        )

    def log_bound(self, z=None, size: int = 1) -> float:
        r"""log M = d log p(0) - min_{s in S*} log c(s), the largest p*(y | x) (reached at y = x); +inf when unknown.

        Exact when S* is enumerated (up to ``BOUND_SCAN_LIMIT`` tables), exact up to the
        truncation for equalities only (using the truncated sum, a lower bound on c, so the
        bound stays valid), and +inf otherwise, where the rejection sampler refuses.

        Examples
        --------
        >>> from ppdinfer.invariants import LinearInvariants
        >>> from ppdinfer.mechanisms import Congenial, DiscreteLaplace
        >>> inv = LinearInvariants.nonnegative(2)
        >>> Congenial(DiscreteLaplace(1.0), inv).log_bound(size=2)
        inf
        """
        size = positive_int(size, "size")
        d = self.n_cells
        if size != d:
            raise ValueError(f"size must be the number of cells, {d}, got {size}")
        peak = d * self.mechanism.log_norm
        support = self._support()
        if support is not None:
            if support.shape[0] > BOUND_SCAN_LIMIT:
                return math.inf
            return float(peak - self._log_c_enumerated(support, support).min())
        if self.invariants.B.shape[0] == 0:
            try:
                return float(peak - self._log_c_constant()[0])
            except ValueError:
                return math.inf
        return math.inf

    # -- release ---------------------------------------------------------------------------------
    def release(
        self,
        x,
        z=None,
        random_seed: SeedLike = None,
        method: str = "auto",
        *,
        size: int | None = None,
        max_proposals: int = MAX_PROPOSALS,
        free_cells=None,
        proposal_epsilon: float | None = None,
        burn_in: int = 1000,
        thin: int = 10,
    ) -> np.ndarray:
        r"""Draw y ~ p*(. | x): exactly by rejection or approximately by the MIS.

        Parameters
        ----------
        x : array_like of int
            The confidential table; it must conform to the invariants (ValueError otherwise).
        z : ignored
        random_seed : seed or Generator
        method : {"auto", "rejection", "mis"}
            "rejection": draw y = x + u until y is in S* (exact; 1 / c(x) draws on average);
            refused, naming the acceptance rate, beyond ``max_proposals`` proposals. "mis": the
            Metropolized independence sampler (Algorithm 1). "auto": rejection when the expected
            number of draws 1 / c(x) (exact when S* is enumerable) is at most a tenth of
            ``max_proposals``; when c(x) is unknown, a pilot of ``PILOT_PROPOSALS`` rejection
            proposals, whose first conforming draw is returned, and the MIS if none conforms.
            The choice may depend on x: time a release only with a fixed method.
        size : int, optional
            None: one table. n: n tables (independent for rejection; every ``thin``-th state of
            one chain after ``burn_in`` for the MIS).
        max_proposals : int
            The rejection budget per table.
        free_cells : sequence of int, optional
            MIS: the index set I of free cells (flat, row-major), |I| = d - rank(A). The other
            cells are solved from A s = a, so A[:, I^c] must be square with |det| = 1
            (unimodular: the solved cells are integers); a bad I is refused. Default: the first
            such I found, preferring to solve the last cells.
        proposal_epsilon : float, optional
            MIS: the proposal on the free cells is a product of double geometrics centred at x
            with pmf proportional to exp(-proposal_epsilon |s_i - x_i|). Default: the noise's
            rate (epsilon / sensitivity for a discrete Laplace, 1 / sigma for a discrete Gaussian).
        burn_in, thin : int
            MIS: iterations before the first returned state, and between returned states. The
            chain starts at x.

        Notes
        -----
        The MIS proposes s~ (free cells from the proposal q, the others solved), gives it target
        weight 0 when B s~ >= b fails, and accepts with probability
        min(1, p(s~ - x) q(s) / (p(s - x) q(s~))). It runs compiled, in blocks of iterations: each
        step of q comes from one 64-bit word through an alias table (mass below 2^-60 left out; by
        inverting the CDF when the table would pass 2^11 buckets), the same draws whatever the block
        size. The rejection release draws its proposals in blocks, each value by the exact, timing-safe
        sampler of the noise, and tests them against the invariants compiled, without early exit.
        """
        if method not in ("auto", "rejection", "mis"):
            raise ValueError(f"method must be 'auto', 'rejection' or 'mis', got {method!r}")
        shape = self.invariants.shape
        x = integer_valued(x, "x")
        if x.size != self.n_cells:
            raise ValueError(f"x must be a table of shape {shape}, got shape {x.shape}")
        x = x.reshape(shape)
        self.invariants.check(x, "x")
        n = 1 if size is None else positive_int(size, "size")
        max_proposals = positive_int(max_proposals, "max_proposals")
        rng = as_generator(random_seed)
        flat = np.ascontiguousarray(x.reshape(-1), dtype=np.int64)
        if method == "auto":
            support = self._support()
            if support is not None:
                rate = float(np.exp(self._log_c_enumerated(support, flat[None])[0]))
                method = "rejection" if 1.0 / rate <= max_proposals / 10 else "mis"
            else:
                draws, proposed = self._rejection(flat, rng, n, min(PILOT_PROPOSALS, max_proposals) * n, strict=False)
                if draws is not None:
                    self.last_method, self.last_acceptance_rate = "rejection", n / proposed
                    return _shaped(draws, shape, size)
                method = "mis"
        if method == "rejection":
            draws, proposed = self._rejection(flat, rng, n, max_proposals * n, strict=True)
            self.last_method, self.last_acceptance_rate = "rejection", n / proposed
            return _shaped(draws, shape, size)
        draws, rate = self._mis(flat, rng, n, free_cells, proposal_epsilon, burn_in, thin)
        self.last_method, self.last_acceptance_rate = "mis", rate
        return _shaped(draws, shape, size)

    def _conformity(self) -> tuple:
        """The invariants for the compiled conformity tests: (lower, upper, rows, targets, number of
        equalities). Inequalities on one cell become the bounds lower <= s <= upper; the equalities, then
        the other inequalities, stay dense rows."""
        if self._conformity_cache is None:
            inv, d = self.invariants, self.n_cells
            lower = np.full(d, np.iinfo(np.int64).min, dtype=np.int64)
            upper = np.full(d, np.iinfo(np.int64).max, dtype=np.int64)
            rows, targets = list(inv.A), list(inv.a)
            for row, target in zip(inv.B, inv.b):
                cells = np.flatnonzero(row)
                if cells.size != 1:
                    rows.append(row)
                    targets.append(target)
                    continue
                cell, coefficient, target = cells[0], int(row[cells[0]]), int(target)
                if coefficient > 0:  # s >= ceil(target / coefficient)
                    lower[cell] = max(lower[cell], -(-target // coefficient))
                else:  # s <= floor(target / coefficient)
                    upper[cell] = min(upper[cell], target // coefficient)
            rows = np.array(rows, dtype=np.int64).reshape(-1, d)
            self._conformity_cache = (lower, upper, rows, np.array(targets, dtype=np.int64), inv.A.shape[0])
        return self._conformity_cache

    def _rejection(self, flat, rng, n, budget, strict):
        d = self.n_cells
        found: list[np.ndarray] = []
        proposed = 0
        batch = 256
        while len(found) < n and proposed < budget:
            batch = min(batch, budget - proposed)
            y = self.mechanism._noise((batch, d), rng, False)  # becomes x + noise in the test
            hits = np.flatnonzero(conforming(y, flat, *self._conformity(), np.empty(batch, dtype=np.bool_)))
            need = n - len(found)
            if hits.size >= need:
                proposed += int(hits[need - 1]) + 1
                found.extend(y[hits[:need]])
                break
            proposed += batch
            found.extend(y[hits])
            batch = min(batch * 4, _REJECTION_BATCH)
        if len(found) < n:
            if not strict:
                return None, proposed
            rate = len(found) / proposed
            known = ""
            support = self._support()
            if support is not None:
                known = f"; the exact acceptance rate c(x) is {math.exp(self._log_c_enumerated(support, flat[None])[0]):.3g}"
            raise ValueError(
                f"rejection release: {len(found)} of {n} conforming draws in {proposed} proposals "
                f"(acceptance rate {rate:.3g}{known}), over the budget max_proposals; raise it or "
                "use method='mis'"
            )
        return np.array(found[:n]), proposed

    def free_cells(self, free_cells=None) -> np.ndarray:
        """The MIS's index set I of free cells: checked when given, else the first unimodular choice found.

        Examples
        --------
        >>> from ppdinfer.invariants import LinearInvariants
        >>> from ppdinfer.mechanisms import Congenial, DiscreteLaplace
        >>> inv = LinearInvariants.margins([2, 2], [1, 3]) & LinearInvariants.nonnegative((2, 2))
        >>> Congenial(DiscreteLaplace(1.0), inv).free_cells().tolist()   # solve the other three
        [0]
        """
        A, d = self.invariants.A, self.n_cells
        rank = int(np.linalg.matrix_rank(A)) if A.shape[0] else 0
        if rank != A.shape[0]:
            raise ValueError(
                f"the {A.shape[0]} equalities are linearly dependent (rank {rank}): drop the redundant ones for the MIS"
            )
        if free_cells is not None:
            chosen = np.unique(integer_valued(free_cells, "free_cells").reshape(-1))
            if chosen.size != d - rank or chosen.min(initial=0) < 0 or chosen.max(initial=0) >= d:
                raise ValueError(
                    f"free_cells must be {d - rank} distinct cell indices in [0, {d}), got {chosen.tolist()}"
                )
            solved = np.setdiff1d(np.arange(d), chosen)
            det = round(float(np.linalg.det(A[:, solved]))) if rank else 1
            if abs(det) != 1:
                raise ValueError(
                    f"A[:, I^c] for I^c = {solved.tolist()} has determinant {det}, not +-1: it is not "
                    "unimodular, so the solved cells need not be integers; choose other free_cells"
                )
            return chosen
        for solved in itertools.islice(itertools.combinations(range(d - 1, -1, -1), rank), 100_000):
            solved = np.sort(np.array(solved, dtype=np.int64))
            if rank == 0 or abs(round(float(np.linalg.det(A[:, solved])))) == 1:
                return np.setdiff1d(np.arange(d), solved)
        raise ValueError("found no set of cells whose columns of A are unimodular: give free_cells")

    def _mis(self, flat, rng, n, free_cells, proposal_epsilon, burn_in, thin):
        burn_in = int(burn_in)
        if burn_in < 0:
            raise ValueError(f"burn_in must be >= 0, got {burn_in}")
        thin = positive_int(thin, "thin")
        if proposal_epsilon is None:
            m = self.mechanism
            proposal_epsilon = m.rate if isinstance(m, DiscreteLaplace) else 1.0 / m.sigma
        eps_q = positive_finite(proposal_epsilon, "proposal_epsilon")
        inv, d = self.invariants, self.n_cells
        free = self.free_cells(free_cells)
        solved = np.setdiff1d(np.arange(d), free)
        # The solved cells are solve (a - A[:, I] s_I); solve = A[:, I^c]^-1 is integer as |det| = 1.
        solve = np.rint(np.linalg.inv(inv.A[:, solved])).astype(np.int64) if solved.size else np.zeros((0, 0), np.int64)
        lower, upper, rows, targets, n_equalities = self._conformity()
        noise = np.array([self.mechanism.rate, self.mechanism.power], dtype=np.float64)
        iterations = burn_in + thin * n
        kept = np.empty((n, d), dtype=np.int64)
        state = flat.copy()
        chain = np.array([0, 0.0, 0, burn_in, thin, 0], dtype=np.float64)  # the chain starts at x, weight 0
        bits = RandomBits(rng)
        for start in range(0, iterations, _MIS_BLOCK):
            words = bits(min(_MIS_BLOCK, iterations - start), free.size + 1)
            independence_block(
                flat,
                free,
                solved,
                solve,
                np.ascontiguousarray(inv.A[:, free]),
                inv.a,
                lower,
                upper,
                rows[n_equalities:],
                targets[n_equalities:],
                noise,
                eps_q,
                _alias_table(eps_q, _ALIAS_BITS),
                words,
                state,
                chain,
                kept,
            )
        return kept, float(chain[2]) / max(iterations, 1)


@functools.lru_cache(maxsize=64)
def _alias_table(epsilon: float, max_bits: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Walker's alias table (Vose's construction) of the MIS proposal step, P(k) proportional to exp(-epsilon |k|)
    on |k| <= K, the mass beyond (below 2^-60, under the resolution of a 53-bit uniform) left out: (cut, keep,
    other) over 2^bits buckets, bucket i giving keep[i] with probability cut[i] and else other[i]; empty
    arrays when more than 2^max_bits buckets would be needed."""
    reach = math.ceil(60 * math.log(2) / epsilon)
    bits = max(1, (2 * reach).bit_length())
    if bits > max_bits:
        return np.zeros(0), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    size = 1 << bits
    keep = np.zeros(size, dtype=np.int64)
    keep[: 2 * reach + 1] = np.arange(-reach, reach + 1)
    scaled = np.zeros(size)
    scaled[: 2 * reach + 1] = np.exp(-epsilon * np.abs(keep[: 2 * reach + 1]))
    scaled *= size / scaled.sum()
    cut, other = np.ones(size), keep.copy()
    small = [i for i in range(size) if scaled[i] < 1]
    large = [i for i in range(size) if scaled[i] >= 1]
    while small and large:
        below, above = small.pop(), large.pop()
        cut[below], other[below] = scaled[below], keep[above]
        scaled[above] -= 1 - scaled[below]
        (small if scaled[above] < 1 else large).append(above)
    return cut, keep, other


def _shaped(draws: np.ndarray, shape, size):
    draws = np.asarray(draws, dtype=np.int64)
    return draws[0].reshape(shape) if size is None else draws.reshape(len(draws), *shape)
