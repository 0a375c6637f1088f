r"""A posterior sampler whose cost follows the people: moves of persons between the cells of a grouped release.

The model is that of :mod:`ppdinfer.census.sampler` (the same prior, :func:`~ppdinfer.census.sampler.hierarchical_log_prior`, with
the same hyperparameters and their priors; the likelihood of a :class:`~ppdinfer.census.grouped_release.GroupedRelease`),
so the two samplers have one posterior. What differs is how it is explored:

- :func:`~ppdinfer.census.sampler.sample_cells` visits every cell of every leaf each sweep, through a query matrix:
  a state's block groups with the 2,016-cell histogram are 20 million cells, almost all zero, and a
  billion matrix entries.
- :func:`sample_people` draws *people*: a person of a leaf, drawn uniformly (a Fenwick tree over the leaf's
  non-zero cells), moves with t - 1 others of their cell (t = 1, or 2..``max_jump``) to another cell of the leaf
  (drawn by the group's shares), to the same cell of another leaf of its invariant class (a sibling, a leaf
  nearby in the table, any, or a *mate*: a leaf that may also hold a group-quarters type few blocks hold), or out
  of the table (leaves under no invariant, where people may also arrive). Each is a Metropolis-Hastings move
  whose proposal ratio counts the people of the cells it reads (the chance to draw the reverse move), so every
  move keeps the posterior; an empty cell is only ever read as a destination. The likelihood ratio reads the one
  or two released values of each (level, query) whose sums change. A sweep makes, per leaf, ``within`` moves per person and ``within_per_cell``
  per non-zero cell of the starting table, ``exchanges`` per person with other leaves (some of them changing
  the people's cell on the way: ``turns``), ``lines`` per person (a cell's people passing between two leaves
  by an exact draw from their conditional on a window), ``relocations`` per person (a cell's people passing to
  the same cell, empty, of another leaf) and ``births`` per person in and out: its cost is
  O(people + non-zero cells) x the number of (level, query) blocks, and a leaf that can hold nobody costs
  nothing. Trades of cells between two leaves, bump trades, spreads and moves to a neighbouring cell (one
  axis changed) follow, all per person (:class:`PersonMoves`); every move is refused off the release's
  bounds (its :class:`~ppdinfer.census.grouped_release.BoundBlock`\ s: the hhgq inequalities of a file).

Nothing holds the zero cells of the leaves x K table. The start is made a chunk of leaves at a time and kept as a
sparse table; each chain's cells are a leaf-slot store (``ppdinfer.kernels.leaf_slots``): per leaf, its
non-zero cells in cell order with their counts and a Fenwick tree over them; a leaf that fills its slots is
compacted or moved to twice as many (a dense row once that would reach a quarter of the power of two >= K), the
pool repacked between moves as it fills, so that a chain holds O(non-zero cells + leaves) and draws what a dense
table would, draw for draw. The releases (int32 where they fit) and the residuals (one int32 vector per chain) are
the release's own size; the recorded table (``record``) is leaves x its cells per draw.

With an exposure (:mod:`ppdinfer.census.exposure`: each leaf's housing units and group-quarters facilities,
for blocks) a leaf's prior mean size is m_p units + sum_t c_t facilities rather than m_p. The default start
meets the leaves' bounds (people moved to siblings with room), and every fit warns
(:class:`~ppdinfer.inference.diagnostics.ConvergenceWarning`) where its leaf totals have not converged.

Where the release's leaf-level bounds close cells of a leaf (a block without a facility of some type: that type's
cells), the leaf's composition is the Dirichlet-multinomial over the cells it may hold, of total alpha_g times their
share. Truncating the Dirichlet-multinomial over all K cells instead would tilt every such leaf's total by
P(all in its open cells | N), and the shares of cells a group's leaves never hold, moved by their prior alone,
would drag alpha down (on Cameron County, which has no facility, alpha x the households' share went from 24 to 0.8
in 400 sweeps).

The hyperparameters follow each sweep: phi and the mean sizes as in :mod:`~ppdinfer.census.sampler`; each
group's alpha alone (shares kept) and its shares in pairs of one *class* (the cells no leaf-level bound tells
apart, e.g. one hhgq level: q_k and a random partner q_j, their sum kept, a random walk on log(q_k / q_j)), which
read the non-zero cells only, then each class's shares scaled against another's. Chains run in parallel threads.
"""

from __future__ import annotations

import math
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import xarray as xr
from tqdm import tqdm

from ..inference.diagnostics import check_convergence
from ..inference.parallel import resolve_cores
from ..kernels.census_people import composition_tables, open_shares, people_sweeps
from ..kernels.leaf_slots import repacked, reserve, slots_from_table
from ..rng import SeedLike, root_seed
from ..validation import non_negative_int, nonnegative_counts, positive_int
from .baselines import largest_remainder
from .decomposition import Decomposition, submit_shared
from .exposure import LeafExposure
from .grouped_release import GroupedRelease, group_sums, leaf_table
from .pl94 import Coarsening
from .sampler import CellPrior, _csr, _hyperparameters, _normal_setting, _wait

__all__ = ["PersonMoves", "sample_people"]

#: The default start keeps a cell of the finest detailed release only where it reads this many noise sds above 0.
START_SDS = 2.5
#: Leaves per chunk of the default start's dense rows (chunk x K floats at a time), and units per chunk of the
#: starting residuals.
START_CHUNK = 2048
#: A leaf's starting slots: a power of two at least this many times its non-zero cells of the start (0: as few as
#: hold them, the leaves growing as people arrive).
SLOT_HEADROOM = 2.0
#: A block's residuals are held as int16 where its largest |y| plus the most people of one of its units at the start is
#: at most this: half of int16's range, the other half room for the chains to move (a move past it is refused).
NARROW_REACH = 2**14
#: The most stored draws of the recorded table (chains x draws x leaves x recorded cells, int32) held in memory.
DRAWS_BYTES = 2**32


@dataclass(frozen=True)
class PersonMoves:
    """The moves of :func:`sample_people` per sweep (its tuning, like a PyMC step's); a rate of 0 turns a move off.

    Attributes
    ----------
    within, within_per_cell : float
        Moves inside a leaf per person and per non-zero cell of the starting table (at least one per leaf
        with people).
    exchanges, turns, turn_axis : float, float, int
        Moves with another leaf of the invariant class per person of the starting table (plus one per leaf), and
        the probability that the people of an exchange or a relocation change cell on the way (*turn*): the level
        of one axis changes, on axis ``turn_axis`` or (-1) on an axis drawn uniformly, to a level drawn uniformly
        among those the receiving leaf may hold (not a structural zero, no bound capping it at 0; the proposal
        ratio counts them both ways). E.g. from a facility's cell to the household cell of the same age and race,
        which moves inside one leaf cannot reach where a block has no housing unit: ``turn_axis=0`` (PL94's
        ``hhgq``) turns only there, and a block with housing units and no facility has one level to turn to.
    lines, line_window, line_turns : float, int, float
        *Line draws* per person of the starting table (plus one per leaf): people of a drawn person's cell pass
        between the leaf and another of its class by an exact draw from their conditional on a window of
        ``line_window`` + 1 values placed at random, corrected for the choice of the cell: a leaf's total moves by
        several people at once, as the measurements allow. With probability ``line_turns`` the other leaf's cell is
        a turn of it (as for ``turns``): a facility's people and a household sibling's of the same age and race
        trade places by the measurements' exact conditional, the move that changes a block group's split between
        households and a group-quarters type with its total kept.
    rare_lines : float
        Line draws that always turn, with a mate (probability ``mates``) or else a sibling, per person of the
        starting table (plus one) of each leaf that may hold a *rare* group (below: a block with a group-quarters
        facility), besides ``lines``: a block group's split between households and a facility's type, and the
        facilities' shares of their type, the slowest quantities of a county's block-level fit, get them where
        they change and nowhere else. Where the other leaf has no level to turn to (a facility-only mate), the
        draw passes the people to the same cell.
    second_turns, second_axis : float, int
        The probability that a line draw's turn (``line_turns``, rare lines) changes a second axis too,
        ``second_axis`` (or, where it is -1 or the turn's own, one drawn uniformly among the others), to a cell drawn
        uniformly among those so changed that the other leaf may hold (the proposal ratio counts them both ways):
        e.g. a facility's adults and a household sibling's children of the same race trade places, the block group's
        total, its household adults and its other facilities kept (the direction a facility-only block's adults mix
        along, the slowest of a county's blocks).
    swaps : float
        Trades per person of the starting table: t people of cell i of a leaf and t of cell j of another
        (a sibling, a leaf nearby or any) trade cells, both leaves' totals kept; between siblings, every
        value above them is kept too, so only the leaves' own measurements judge the trade.
    births : float
        Moves in or out per person (plus one), for leaves under no exact total.
    partners : (float, float)
        The probabilities that an exchange's other leaf is a sibling, or a leaf at most ``near`` places away;
        the rest, any leaf of the class.
    near : int
    mates, mate_near : float, int
        For a leaf that may hold a *rare* group of cells (one the leaf-level bounds cap at 0 in at least half of the
        leaves: a group-quarters type, where blocks hold facilities), the probability that the other leaf of an
        exchange, line draw or relocation is a *mate*: a leaf at most ``mate_near`` places away from it in the list of
        the leaves that may hold that group. A facility's people can pass only to another facility of its type or,
        by turns, into households, which the measurements of the GQ type above the blocks price; siblings and near
        leaves seldom hold one (Adams County: 31 of 2,660 blocks hold a non-institutional facility), so without
        mates the facility-only blocks' totals mixed slowest.
    jump, max_jump : float, int
        The probability that a move takes t people, t uniform in 2..max_jump, rather than one.
    bumps, spreads, bump_max : float, float, int
        *Bump trades* and *spreads* per person of the starting table (at least one per leaf that can hold people).
        A bump trade moves all n (1..bump_max) people of a drawn person's cell of a leaf or its partner to that
        cell, empty, of the other, one person of each of n cells drawn by the shares coming back: a rare
        category's people pass between two leaves in one move (the posterior's slowest mode), both totals kept.
        A spread, inside a leaf, scatters the n people of a drawn person's cell into n drawn cells, or gathers one
        person of each of m drawn cells into an empty one.
    flips : float
        Moves per person to a *neighbouring* cell (one axis of the release's ``shape`` changed, e.g. voting age,
        drawn uniformly: a symmetric proposal) of one person, or of all of their cell's people (up to bump_max)
        into an empty neighbour: two small cells of one race that differ in age trade people, which moves drawn
        by the shares seldom propose.
    relocations : float
        *Relocations* per person of the starting table (plus one per leaf) with another leaf of its class (a partner
        as for exchanges): all the people of a drawn person's cell pass to the same cell, empty, of the other leaf,
        so both totals move by a whole cluster at once. Blocks' compositions are clustered (a small alpha: a block's
        people fill a few cells, as households do), so a block's total moves little by people of one cell at a
        time, which must find a partner holding that cell; a relocation moves it by a household-like cluster, which
        the prior prices like the cluster it leaves (the block totals' slowest mode without it).
    floor : float
        A destination cell is drawn with probability proportional to its group's share + ``floor``.
    hyper_rounds : int
        Hyperparameter updates per sweep: each a random-walk step of every hyperparameter, cheap beside the moves
        of people (Cameron County at block level: the composition's concentration alpha's bulk ESS 4.5 over 600
        sweeps with one round, 330 with ten, at 7 % more time per sweep).
    narrow_residuals : bool
        Hold the residuals y - v of the (level, query) blocks whose values start well inside int16 (|y| plus the
        most people of a unit at most 2^14: a state's block-level values) as int16, half the memory of int32 (a
        state's decomposed fit, two chains: peak 9.0 GiB against 12.2). A move that would take one past int16 is
        refused and counted (``residual_refusals``, with a warning: the draws then are not exactly the posterior's);
        where none is, the draws are those of ``False`` (every residual int32), draw for draw.

    Examples
    --------
    >>> PersonMoves(within=2.0).within, PersonMoves().partners
    (2.0, (0.6, 0.25))
    """

    within: float = 1.0
    within_per_cell: float = 2.0
    exchanges: float = 0.25
    turns: float = 0.25
    turn_axis: int = -1
    lines: float = 0.25
    line_window: int = 8
    line_turns: float = 0.0
    rare_lines: float = 0.0
    second_turns: float = 0.0
    second_axis: int = -1
    swaps: float = 0.5
    births: float = 0.25
    partners: tuple = (0.6, 0.25)
    near: int = 64
    mates: float = 0.5
    mate_near: int = 8
    jump: float = 0.3
    max_jump: int = 4
    bumps: float = 1.0
    spreads: float = 1.0
    flips: float = 1.0
    bump_max: int = 8
    relocations: float = 1.0
    floor: float = 1e-4
    hyper_rounds: int = 10
    narrow_residuals: bool = True

    def __post_init__(self):
        for name in ("within", "within_per_cell", "exchanges", "lines", "rare_lines", "swaps", "bumps", "spreads",
                     "flips", "births", "relocations"):  # fmt: skip
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < math.inf:
                raise ValueError(f"PersonMoves: {name} must be a finite number >= 0, got {value!r}")
        try:
            p_sibling, p_near = (float(p) for p in self.partners)
        except (TypeError, ValueError):
            raise ValueError(f"PersonMoves: partners must be two probabilities, got {self.partners!r}") from None
        if not (0 <= p_sibling and 0 <= p_near and p_sibling + p_near <= 1):
            raise ValueError(
                f"PersonMoves: partners must be two probabilities summing to at most 1, got {self.partners!r}"
            )
        for name in ("jump", "turns", "line_turns", "second_turns", "mates"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"PersonMoves: {name} must be a probability, got {getattr(self, name)!r}")
        positive_int(self.near, "PersonMoves: near")
        positive_int(self.mate_near, "PersonMoves: mate_near")
        positive_int(self.line_window, "PersonMoves: line_window")
        positive_int(self.max_jump, "PersonMoves: max_jump")
        positive_int(self.bump_max, "PersonMoves: bump_max")
        for name in ("turn_axis", "second_axis"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < -1:
                raise ValueError(f"PersonMoves: {name} must be an axis (an int >= 0) or -1 (any), got {value!r}")
        positive_int(self.hyper_rounds, "PersonMoves: hyper_rounds")
        if not isinstance(self.narrow_residuals, bool | np.bool_):
            raise ValueError(f"PersonMoves: narrow_residuals must be True or False, got {self.narrow_residuals!r}")
        if not 0 < self.floor < math.inf:
            raise ValueError(f"PersonMoves: floor must be a finite number > 0, got {self.floor!r}")


#: The relative cost of each move, for the sweeps' chunk size (a line draw reads a window of values).
_WORK = {"within": 1, "exchanges": 1, "lines": 4, "rare_lines": 4, "swaps": 2, "births": 1, "relocations": 1}


def _move_counts(moves: PersonMoves, cells0: sp.csr_array, in_class: np.ndarray, free, closed, rare) -> dict:
    """The moves per leaf and sweep of each kind (a dict of int64 arrays), by the starting table's people (``rare``:
    whether each leaf may hold a rare group)."""
    people, nonzero = cells0.sum(axis=1), np.diff(cells0.indptr)
    per = lambda rate, extra=0: np.ceil(rate * people).astype(np.int64) + extra  # noqa: E731
    counts = {
        "within": np.ceil(moves.within * people + moves.within_per_cell * nonzero).astype(np.int64),
        "exchanges": np.where(in_class, per(moves.exchanges, moves.exchanges > 0), 0),
        "lines": np.where(in_class, per(moves.lines, moves.lines > 0), 0),
        "rare_lines": np.where(in_class & rare, per(moves.rare_lines, moves.rare_lines > 0), 0),
        "swaps": per(moves.swaps) if len(people) > 1 else np.zeros(len(people), dtype=np.int64),
        "births": np.where(free, per(moves.births, moves.births > 0), 0),
        "relocations": np.where(in_class, per(moves.relocations, moves.relocations > 0), 0),
    }
    for name in ("bumps", "spreads", "flips"):
        counts[name] = np.ceil(getattr(moves, name) * np.maximum(people, 1)).astype(np.int64)
    for count in counts.values():
        count[closed] = 0  # leaves that can hold nobody cost nothing
    return counts


def _local_moves(decompose, release, cells0, in_class, free, closed, rare):
    """A decomposition's unit spans, local PersonMoves and move counts (those that keep cells' sums over a unit)."""
    if decompose is None:
        return np.zeros((0, 2), dtype=np.int64), PersonMoves(), None
    spans = decompose.spans(release)
    decompose.check_executor()
    moves = PersonMoves(lines=1.0) if decompose.moves is None else decompose.moves
    if not isinstance(moves, PersonMoves):
        raise ValueError(f"Decomposition: moves must be a PersonMoves, got {type(moves).__name__}")
    counts = _move_counts(moves, cells0, in_class, free, closed, rare)
    for name in ("within", "births", "spreads", "flips", "swaps", "rare_lines"):  # they change cells' sums over the
        # unit (a swap transiently: its first half is applied to every level before the second takes it back)
        counts[name][:] = 0
    return spans, moves, counts


def _rng_state(seed: np.random.SeedSequence) -> np.ndarray:
    """The compiled kernels' xoshiro state from a seed sequence (never all zero)."""
    state = seed.generate_state(4, np.uint64)
    if not state.any():
        state[0] = 1
    return state


def _scratch(rng_state, buffer: int, size: int, window: int) -> dict:
    """A random stream and the scratch arrays of one thread of people_sweeps (its allocation range and resume point
    set by the caller)."""
    return dict(alloc=np.zeros(2, dtype=np.int64), resume=_resume(), refused=np.zeros(1, dtype=np.int64),
        rng=rng_state, bidx=np.zeros(buffer, dtype=np.int64), bdelta=np.zeros(buffer, dtype=np.int64),
        touched=np.zeros(size, dtype=np.int64), dr=np.zeros(size, dtype=np.int64), sign=np.zeros(size, dtype=np.int64),
        weight=np.zeros(size), logp=np.zeros(window + 1),
    )  # fmt: skip


def _resume() -> np.ndarray:
    """A resume point of people_sweeps (sweep, leaf, kind, move, attempted, accepted; sweep -1: none)."""
    return np.array([-1, 0, 0, 0, 0, 0], dtype=np.int64)


def _spare(slots: int, room: int) -> int:
    """The free positions a pool of ``slots`` leaf slots gets: half as many, at least four moves' room."""
    return max(4 * room, int(slots) // 2)


def _share_room(s: dict, scratches: list, room: int) -> None:
    """Split the free range of chain state s among the units of a local round (``scratches``: their allocation
    ranges set), repacking the pool first where each would get less than four moves' room."""
    n = len(scratches)
    if (s["alloc"][1] - s["alloc"][0]) // n < 4 * room:
        s["store"], s["alloc"] = repacked(s["store"], s["alloc"], max(_spare(s["store"][1].sum(), room), 8 * room * n))
    top, end = (int(v) for v in s["alloc"])
    part = (end - top) // n
    for u, scratch in enumerate(scratches):
        scratch["alloc"][:] = top + u * part, top + (u + 1) * part if u < n - 1 else end


def _residuals(release: GroupedRelease, cells: sp.csr_array, narrow: bool):
    """The blocks' flat arrays and the residuals y - v of ``cells``: a narrow array (int16) of the blocks whose values
    start within :data:`NARROW_REACH` (where ``narrow``) and a wide one (int32 where it fits) of the others; a wide
    block's offset is stored as -1 - its offset in the wide array (the kernel's residual codes)."""
    blocks = release.blocks
    sizes = np.array([b.y.size for b in blocks], dtype=np.int64)
    totals = np.asarray(cells.sum(axis=1)).ravel().astype(float)
    y_max = [int(np.abs(b.y).max(initial=0)) for b in blocks]
    unit_max = [int(np.bincount(release.ancestors[b.level], weights=totals).max(initial=0)) for b in blocks]
    # |y - v| <= |y| + v, v at most the people of the value's unit
    in_narrow = np.array([narrow and y + v <= NARROW_REACH for y, v in zip(y_max, unit_max, strict=True)], dtype=bool)
    ends = [np.cumsum(np.where(in_narrow == side, sizes, 0)) for side in (True, False)]
    offsets = np.where(in_narrow, ends[0] - sizes, -1 - (ends[1] - sizes)).astype(np.int64)
    rate_sizes = np.array([b.rate.size for b in blocks], dtype=np.int64)
    rate_offsets = np.concatenate([[0], np.cumsum(rate_sizes)[:-1]]).astype(np.int64)
    reach = max(y_max, default=0) + int(cells.sum())
    stores = (np.empty(int(ends[0][-1]) if blocks else 0, dtype=np.int16),
              np.empty(int(ends[1][-1]) if blocks else 0, dtype=np.int32 if reach < 2**30 else np.int64))  # fmt: skip
    for b, off in zip(blocks, offsets, strict=True):
        store, at = (stores[0], off) if off >= 0 else (stores[1], -1 - off)
        n_units = b.y.shape[0]
        for start in range(0, n_units, START_CHUNK):  # a chunk of units at a time: no table of the release's size
            stop = min(n_units, start + START_CHUNK)
            part = b.y[start:stop] - release.level_sums(cells, b.level, b.groups, b.n_values, (start, stop))
            store[at + start * b.n_values : at + stop * b.n_values] = part.ravel()
    scale_sizes = np.array([b.n_values for b in blocks], dtype=np.int64)
    return (
        stores,
        np.concatenate([b.rate for b in blocks]),
        np.concatenate([b.scale for b in blocks]),
        np.concatenate([[0], np.cumsum(scale_sizes)[:-1]]).astype(np.int64),
        np.array([b.level for b in blocks], dtype=np.int64),
        offsets,
        np.array([b.n_values for b in blocks], dtype=np.int64),
        rate_offsets,
        np.stack([b.groups for b in blocks]).astype(np.int32),
    )


def _flat(arrays, dtype) -> np.ndarray:
    """The arrays raveled and joined (empty for none)."""
    return np.concatenate([np.ravel(a) for a in arrays]).astype(dtype) if arrays else np.zeros(0, dtype)


def _bound_arrays(release: GroupedRelease, cells: sp.csr_array):
    """The bound blocks as the kernel's tuple (levels, offsets, values per unit, groups, lower, upper: flat) and the
    bounded values of ``cells``."""
    K = release.table.n_cells
    blocks = release.bounds
    sizes = np.array([b.lower.size for b in blocks], dtype=np.int64)
    bnd = (
        np.array([b.level for b in blocks], dtype=np.int64),
        np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64) if blocks else np.zeros(0, np.int64),
        np.array([b.n_values for b in blocks], dtype=np.int64),
        np.stack([b.groups for b in blocks]).astype(np.int32) if blocks else np.zeros((0, K), np.int32),
        _flat([b.lower for b in blocks], np.int64),
        _flat([b.upper for b in blocks], np.int64),
    )
    return bnd, _flat(release.bound_values(cells), np.int64)


def _leaf_bounds(release: GroupedRelease) -> list:
    """The leaf level's bound blocks, those of one grouping merged: (groups, lower, upper) with the tightest bounds."""
    merged = {}
    for b in (b for b in release.bounds if b.level == release.geography.n_levels - 1):
        key = b.groups.tobytes()
        if key in merged:
            groups, lower, upper = merged[key]
            merged[key] = (groups, np.maximum(lower, b.lower), np.minimum(upper, b.upper))
        else:
            merged[key] = (b.groups, b.lower.copy(), b.upper.copy())
    return list(merged.values())


def _rare_groups(release: GroupedRelease) -> tuple:
    """The leaf-level bounds' *rare* groups (open, upper bound > 0, in 2 to L / 2 of the L leaves, with a cell that is
    not a structural zero) as two CSR pairs: per leaf, the rare groups it may hold (ptr, groups), and per rare group,
    the leaves that may hold it in order (ptr, leaves): the partners of :class:`PersonMoves`' ``mates``."""
    L = release.geography.n_leaves
    allowed = ~release.structural_zeros
    lists = []
    for groups, _, upper in _leaf_bounds(release):
        for v in range(upper.shape[1]):
            held = np.flatnonzero(upper[:, v] > 0)
            if 2 <= held.size <= L // 2 and (allowed & (groups == v)).any():
                lists.append(held)
    sizes = np.array([h.size for h in lists], dtype=np.int64)
    rare_leaves = _flat(lists, np.int64)
    group_of = np.repeat(np.arange(sizes.size, dtype=np.int64), sizes)
    order = np.argsort(rare_leaves, kind="stable")
    leaf_ptr = np.searchsorted(rare_leaves[order], np.arange(L + 1)).astype(np.int64)
    rare_ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    return leaf_ptr, group_of[order], rare_ptr, rare_leaves


def _cell_classes(release: GroupedRelease, closed: np.ndarray) -> tuple:
    """The composition's classes: the allowed cells (not structural zeros) that no leaf-level bound tells apart (for
    PL94's hhgq bounds, the 8 hhgq levels), and per leaf the classes it may hold (every group of the class's cells
    with an upper bound above 0; none in a ``closed`` leaf). Returns the allowed cells ordered by class (cats), the
    classes' pointers into them, each cat's class, each leaf's kind (its set of open classes) and the kinds' open
    classes (kinds x classes, 0 or 1); without a leaf-level bound, one class that every leaf may hold."""
    cats = np.flatnonzero(~release.structural_zeros).astype(np.int64)
    bounds = _leaf_bounds(release)
    L = release.geography.n_leaves
    if not bounds:
        return (
            cats,
            np.array([0, cats.size], np.int64),
            np.zeros(cats.size, np.int64),
            np.zeros(L, np.int64),
            np.ones((1, 1)),
        )
    keys, cat_class = np.unique(np.stack([g[cats] for g, _, _ in bounds], axis=1), axis=0, return_inverse=True)
    cat_class = cat_class.ravel()
    order = np.argsort(cat_class, kind="stable")
    cats, cat_class = cats[order], cat_class[order].astype(np.int64)
    class_ptr = np.searchsorted(cat_class, np.arange(keys.shape[0] + 1)).astype(np.int64)
    held = np.ones((L, keys.shape[0]), dtype=bool)
    for (_, _, upper), column in zip(bounds, keys.T, strict=True):
        grouped = column >= 0
        held[:, grouped] &= upper[:, column[grouped]] > 0
    held[closed] = False
    kinds, leaf_kind = np.unique(held, axis=0, return_inverse=True)
    return cats, class_ptr, cat_class, leaf_kind.ravel().astype(np.int64), kinds.astype(float)


def closed_leaves(release: GroupedRelease) -> np.ndarray:
    """Whether each leaf can hold nobody: a leaf-level bound caps at 0 every group of cells, and every allowed cell
    is in a group (e.g. a block with no housing unit and no group-quarters facility)."""
    allowed = ~release.structural_zeros
    closed = np.zeros(release.geography.n_leaves, dtype=bool)
    for groups, _, upper in _leaf_bounds(release):
        if (groups[allowed] >= 0).all():
            closed |= (upper <= 0).all(axis=1)
    return closed


def _met_bounds(release: GroupedRelease, cells: sp.csr_array) -> sp.csr_array:
    """``cells`` (sparse) changed to meet the leaf level's bounds, every exact total kept: a group over its upper
    bound gives people to the same cell of a sibling with room (else to another group of its leaf, else to a leaf of
    its invariant class), a group under its lower bound takes them in the same order (only the rows of the leaves
    changed are held dense)."""
    allowed = ~release.structural_zeros
    lo, hi, _, sib_lo, sib_hi = _classes(release)
    rows: dict = {}  # leaf -> its dense row, for the leaves changed

    def row(leaf):
        if leaf not in rows:
            rows[leaf] = cells[[leaf]].toarray()[0]
        return rows[leaf]

    for groups, lower, upper in _leaf_bounds(release):
        members = [np.flatnonzero((groups == v) & allowed) for v in range(lower.shape[1])]
        sums = group_sums(cells, groups, lower.shape[1])
        for leaf in rows:  # the leaves changed by an earlier grouping's bounds
            sums[leaf] = group_sums(rows[leaf][None], groups, lower.shape[1])[0]
        for leaf in np.flatnonzero(((sums < lower) | (sums > upper)).any(axis=1)):
            mates = np.arange(lo[leaf], hi[leaf])
            mates = mates[(mates != leaf) & (lo[mates] == lo[leaf]) & (hi[mates] == hi[leaf])]
            siblings = mates[(mates >= sib_lo[leaf]) & (mates < sib_hi[leaf])]
            for v in range(lower.shape[1]):
                while sums[leaf, v] > upper[leaf, v] or sums[leaf, v] < lower[leaf, v]:
                    short = sums[leaf, v] < lower[leaf, v]
                    gap = (lower[leaf, v] - sums[leaf, v]) if short else (sums[leaf, v] - upper[leaf, v])
                    other, w, slack = _bound_partner(sums, lower, upper, short, leaf, v, siblings, mates)
                    if other < 0:
                        raise ValueError(
                            f"bounds: leaf {leaf}'s bounds cannot be met with the exact totals; pass initial"
                        )
                    src, g_src, dst, g_dst = (other, w, leaf, v) if short else (leaf, v, other, w)
                    have = members[g_src][row(src)[members[g_src]] > 0]
                    k_src = have[np.argmax(row(src)[have])]
                    if g_src == g_dst:
                        k_dst = k_src
                    else:
                        k_dst = members[g_dst][np.argmax(row(dst)[members[g_dst]])]
                    count = int(min(gap, slack, row(src)[k_src]))
                    row(src)[k_src] -= count
                    row(dst)[k_dst] += count
                    sums[src, g_src] -= count
                    sums[dst, g_dst] += count
    if not rows:
        return cells
    changed = np.fromiter(rows, dtype=np.int64, count=len(rows))
    delta = sp.csr_array(np.stack([rows[leaf] for leaf in changed]) - cells[changed].toarray())
    shift = sp.csr_array((np.ones(changed.size, dtype=np.int64), (changed, np.arange(changed.size))),
                         shape=(cells.shape[0], changed.size))  # fmt: skip
    return leaf_table(cells + shift @ delta)


def _bound_partner(sums, lower, upper, short: bool, leaf: int, v: int, siblings, mates) -> tuple[int, int, int]:
    """The (leaf, group) with the most slack (people to give above its lower bound when ``short``, else room below
    its upper bound) to trade with group v of ``leaf``, and that slack: the same group of a sibling, else another
    group of the leaf, else the same group of an invariant-class mate, else any group of one ((-1, -1, 0): none)."""

    def slack(rows):
        return np.minimum(sums[rows] - lower[rows], sums[rows]) if short else upper[rows] - sums[rows]

    for pool in (siblings, mates):
        if pool.size:
            room = slack(pool)[:, v]
            if room.max() > 0:
                return int(pool[np.argmax(room)]), v, int(room.max())
        if pool is siblings:
            own = slack(np.array([leaf]))[0]
            own[v] = 0
            if own.max() > 0:
                return leaf, int(np.argmax(own)), int(own.max())
    if mates.size:
        room = slack(mates)
        if room.max() > 0:
            at = int(np.argmax(room))
            return int(mates[at // room.shape[1]]), at % room.shape[1], int(room.max())
    return -1, -1, 0


def _classes(release: GroupedRelease):
    """Per leaf: the leaf range of its invariant class, whether it is under no exact total (free), and its
    siblings' range.

    A class is a run of consecutive leaves with the same deepest exact-total unit above or at them (or under
    none): people moving inside it keep every exact total. A unit whose leaves outside its exact-total subunits
    are not one run (an exact subunit between them) is refused, since no move could change how its people split
    between the runs."""
    geo = release.geography
    deepest = np.full(geo.n_leaves, -1)
    for u in sorted(release.unit_totals, key=lambda u: geo.depth[u]):  # deeper units override
        deepest[geo.leaf_start[u] : geo.leaf_stop[u]] = u
    breaks = np.flatnonzero(np.diff(deepest) != 0) + 1
    starts, stops = np.concatenate([[0], breaks]), np.concatenate([breaks, [geo.n_leaves]])
    owners = deepest[starts]
    split = np.unique(owners[owners >= 0], return_counts=True)
    if np.any(split[1] > 1):
        u = int(split[0][split[1] > 1][0])
        raise ValueError(
            f"release: unit {geo.ids[u]!s} has an exact total, and its leaves outside its own exact-total subunits "
            "are not consecutive (an exact-total subunit lies between them): give every subunit at that level an "
            "exact total or none"
        )
    run = np.repeat(np.arange(starts.size), stops - starts)
    lo, hi, free = starts[run], stops[run], deepest < 0
    parent = np.where(geo.parent[geo.leaves] >= 0, geo.parent[geo.leaves], geo.leaves)
    return lo.astype(np.int64), hi.astype(np.int64), free, geo.leaf_start[parent], geo.leaf_stop[parent]


def _initial_cells(release: GroupedRelease, closed: np.ndarray, exposure: LeafExposure | None) -> sp.csr_array:
    """A start (a sparse leaves x K table): the finest level's detailed releases (those ``START_SDS`` noise sds
    above 0, else 0; split evenly over its unit's leaves), scaled to each leaf's released total where a leaf-level
    total is measured; with an exposure, the level above's, split over the leaves by their housing units (household
    cells) and facilities (each GQ type's cells); then the exact totals and the leaves' bounds met, nobody in a
    ``closed`` leaf (for Laplace noise the threshold reads its rate as a Gaussian's: a rough start only). The rows
    are made ``START_CHUNK`` leaves at a time, so a state's start holds its non-zero cells, not leaves x K."""
    geo, K = release.geography, release.table.n_cells
    allowed = ~release.structural_zeros
    rows = _start_rows(release, exposure)
    parts = []
    for a in range(0, geo.n_leaves, START_CHUNK):
        b = min(geo.n_leaves, a + START_CHUNK)
        cells = np.zeros((b - a, K)) if rows is None else rows(a, b)
        cells[:, ~allowed] = 0
        cells[closed[a:b]] = 0
        out = np.zeros((b - a, K), dtype=np.int64)
        for leaf in range(b - a):
            total = int(round(cells[leaf].sum()))
            if total > 0:
                out[leaf] = largest_remainder(cells[leaf], total)
        parts.append(sp.csr_array(out))
    out = _met_bounds(release, _met_totals(release, leaf_table(sp.vstack(parts, format="csr")), closed))
    if out.sum(axis=1)[closed].any():
        raise ValueError("the default start could not keep every leaf that holds nobody empty: pass initial")
    if not release.meets_bounds(out):
        raise ValueError("the default start meets the exact totals but not every bound above the leaves: pass initial")
    return out


def _start_rows(release: GroupedRelease, exposure: LeafExposure | None):
    """The default start's real-valued rows before rounding, as a function of a leaf range (a, b) -> (b - a, K)
    (None without a detailed release)."""
    geo, K = release.geography, release.table.n_cells
    detailed = [b for b in release.blocks if b.n_values == K and np.array_equal(np.sort(b.groups), np.arange(K))]
    if exposure is not None and geo.n_levels > 1:
        detailed = [b for b in detailed if b.level < geo.n_levels - 1] or detailed
    if not detailed:
        return None
    b = max(detailed, key=lambda b: b.level)
    units = release.level_units[b.level]
    # a cell whose release is within START_SDS noise sds of 0 starts empty (most such cells are zero)
    sd = np.sqrt(1.0 / (2.0 * np.maximum(b.rate, 1e-300)))[:, None] / np.sqrt(b.scale)[None, :]
    share = np.where(b.y > START_SDS * sd, b.y, 0).astype(float)
    share = np.where(share.sum(axis=1, keepdims=True) > 0, share, np.maximum(b.y, 0))
    share /= np.maximum(share.sum(axis=1, keepdims=True), 1.0)
    size = np.maximum(b.y, 0).sum(axis=1)
    totals = [t for t in release.blocks if t.n_values == 1 and t.level == b.level and (t.groups == 0).all()]
    if totals:
        size = np.maximum(totals[0].y[:, 0], 0)
    n_leaves = geo.leaf_stop[units] - geo.leaf_start[units]
    per_unit = share * (size / n_leaves)[:, None]
    unit = release.ancestors[b.level]
    weighted = exposure is not None and b.level < geo.n_levels - 1
    if weighted:
        kind, weight = _cell_weights(release, exposure)
        sums = np.zeros((units.size, weight.shape[1]))
        np.add.at(sums, unit, weight)

    def rows(a, z):
        cells = per_unit[unit[a:z]][:, b.groups]
        if weighted:
            w = np.where(kind >= 0, weight[a:z][:, np.maximum(kind, 0)], 0.0)
            total = np.where(kind >= 0, sums[unit[a:z]][:, np.maximum(kind, 0)], 0.0)
            split = np.where(total > 0, w / np.where(total > 0, total, 1.0), 0.0)
            cells = cells * np.where(total > 0, split * n_leaves[unit[a:z]][:, None], 1.0)
        return cells

    return rows


def _cell_weights(release: GroupedRelease, exposure: LeafExposure) -> tuple[np.ndarray, np.ndarray]:
    """Each cell's kind (K, -1: none) and each leaf's weight per kind (leaves x kinds), a leaf's weight of a cell
    being its share of its parent's people in that cell: housing units for household cells, facilities of the type
    for a GQ type's cells (by the leaf level's hhgq bound groups); without such a grouping, one kind for every cell,
    weighed by units + facilities."""
    weight = np.column_stack([exposure.units, exposure.facilities])
    for groups, _, _ in _leaf_bounds(release):
        if groups.max() + 1 == weight.shape[1]:
            return groups, weight
    return np.zeros(release.table.n_cells, dtype=np.int64), weight.sum(axis=1, keepdims=True)


def _met_totals(release: GroupedRelease, cells: sp.csr_array, closed: np.ndarray) -> sp.csr_array:
    """``cells`` (sparse) changed to meet the exact unit totals, deepest first, each by cells of its leaves not under
    a deeper total and not ``closed`` (added in proportion to count + 1, taken in proportion to count:
    :func:`_apportioned`)."""
    geo = release.geography
    allowed = np.flatnonzero(~release.structural_zeros)
    fixed = np.zeros(geo.n_leaves, dtype=bool)
    for u in sorted(release.unit_totals, key=lambda u: -geo.depth[u]):
        a, b = geo.leaf_start[u], geo.leaf_stop[u]
        residual = release.unit_totals[u] - int(cells[a:b].sum())
        free = np.flatnonzero(~fixed[a:b] & ~closed[a:b]) + a
        if residual and free.size == 0:
            raise ValueError(f"unit_totals: unit {geo.ids[u]!s}'s total cannot be met given the totals nested in it")
        if residual:
            change = _apportioned(leaf_table(cells[free][:, allowed]), residual, geo.ids[u])
            rows = np.repeat(free, np.diff(change.indptr))
            cells = leaf_table(cells + sp.csr_array((change.data, (rows, allowed[change.indices])), shape=cells.shape))
        fixed[a:b] = True
    return cells


def _apportioned(block: sp.csr_array, residual: int, unit) -> sp.csr_array:
    """The change of ``block`` (sparse rows x columns) by ``residual`` people: added (> 0) in proportion to count + 1
    over every cell, taken (< 0) in proportion to count, by the largest remainder (each share floored, the rest one
    by one to the largest fractional parts, ties to the first in row-major order: those of
    :func:`~ppdinfer.census.baselines.largest_remainder`, here in exact integer arithmetic, the empty cells, all of
    weight 1, never listed one by one beyond those that gain)."""
    n_rows, n_cols = block.shape
    row = np.repeat(np.arange(n_rows), np.diff(block.indptr))
    pos, count = row * n_cols + block.indices, block.data
    total = abs(int(residual))
    weight = count + 1 if residual > 0 else count
    S = int(weight.sum()) + (n_rows * n_cols - count.size if residual > 0 else 0)
    if S == 0 or (residual < 0 and total > count.sum()):
        raise ValueError(f"unit_totals: unit {unit!s}'s total cannot be met by the cells of its leaves")
    floor, rem = np.divmod(weight * total, S)
    empty_floor, empty_rem = divmod(total, S) if residual > 0 else (0, -1)
    n_empty = n_rows * n_cols - count.size if residual > 0 else 0
    short = total - int(floor.sum()) - n_empty * empty_floor
    order = np.lexsort((pos, -rem))
    above = order[rem[order] > empty_rem]
    floor[above[:short]] += 1
    short -= min(short, above.size)
    empty_gain = np.zeros(0, dtype=np.int64)  # the positions of the empty cells that gain empty_floor + 1
    if short and n_empty:  # the ties of the empty cells' remainder, in row-major order
        tie = np.zeros(pos.size, dtype=bool)
        tie[order[rem[order] == empty_rem]] = True
        per_row = n_cols - np.diff(block.indptr) + np.bincount(row[tie], minlength=n_rows)
        last = int(np.searchsorted(np.cumsum(per_row), min(short, per_row.sum())))
        listed = np.zeros((last + 1) * n_cols, dtype=bool)
        listed[pos[pos < listed.size]] = True
        listed[pos[tie & (pos < listed.size)]] = False
        members = np.flatnonzero(~listed)[:short]
        is_tie = np.isin(members, pos[tie])
        floor[np.searchsorted(pos, members[is_tie])] += 1
        empty_gain = members[~is_tie]
        short -= members.size
    if short:  # below the empty cells' remainder
        below = order[rem[order] < empty_rem]
        floor[below[:short]] += 1
    values, where = [floor], [pos]
    if empty_floor:  # every empty cell gains (a start far below the total)
        empty = np.ones(n_rows * n_cols, dtype=bool)
        empty[pos] = False
        empty = np.flatnonzero(empty)
        values.append(np.full(empty.size, empty_floor) + np.isin(empty, empty_gain))
        where.append(empty)
    elif empty_gain.size:
        values.append(np.ones(empty_gain.size, dtype=np.int64))
        where.append(empty_gain)
    values, where = np.concatenate(values), np.concatenate(where)
    sign = 1 if residual > 0 else -1
    return leaf_table(sp.csr_array((sign * values, (where // n_cols, where % n_cols)), shape=block.shape))


def _checked_initial(release: GroupedRelease, initial) -> np.ndarray:
    geo, K = release.geography, release.table.n_cells
    cells = nonnegative_counts(initial, "initial")
    if cells.size != geo.n_leaves * K:
        raise ValueError(f"initial must hold {geo.n_leaves} x {K} counts, got {cells.size}")
    cells = leaf_table(cells.reshape(geo.n_leaves, K))
    if cells[:, release.structural_zeros].count_nonzero():
        raise ValueError("initial has people in structural zeros")
    for u, total in release.unit_totals.items():
        if cells[geo.leaf_start[u] : geo.leaf_stop[u]].sum() != total:
            raise ValueError(f"initial breaks the exact total {total} of unit {geo.ids[u]!s}")
    if not release.meets_bounds(cells):
        raise ValueError("initial breaks a bound of the release (release.meets_bounds)")
    return cells


#: The hyperparameters' keys that only an exposure reads.
EXPOSURE_KEYS = ("gq_size", "gq_prior", "vacant", "vacant_prior")
#: The default (mu, sd) of the zero-inflation's logit's normal prior: v about 5 % (0.3 % to 50 % within 2 sds).
VACANT_PRIOR = (math.log(0.05 / 0.95), 1.5)


def _split_gq(hyperparameters):
    """The hyperparameters without the exposure's keys (:data:`EXPOSURE_KEYS`), and those keys."""
    if not isinstance(hyperparameters, dict):
        return hyperparameters, {}
    gq = {k: hyperparameters[k] for k in EXPOSURE_KEYS if k in hyperparameters}
    return {k: v for k, v in hyperparameters.items() if k not in gq}, gq


def _exposure_model(exposure, gq_given: dict, given, learn: bool, prior: CellPrior, cells0, mean0, prior_vec):
    """The leaves' housing units, the GQ types' starting sizes and their leaves (CSR: ptr, leaves, counts), the
    parents' starting means per unit, the prior settings with the GQ sizes' and the zero-inflation's appended, and the
    zero-inflation v (``vacant``: 0, none, unless given; all neutral without an exposure: one unit per leaf, no
    facility)."""
    L = cells0.shape[0]
    if exposure is None:
        if gq_given:
            raise ValueError(f"hyperparameters: {sorted(gq_given)} need an exposure (exposure=LeafExposure(...))")
        empty = (np.zeros(1, np.int64), np.zeros(0, np.int64), np.zeros(0))
        return np.ones(L), np.zeros(0), empty, mean0, np.concatenate([prior_vec, [0.0, 1.0, *VACANT_PRIOR]]), 0.0
    vacant = gq_given.get("vacant", 0.0)
    if not isinstance(vacant, (int, float)) or not 0.0 <= vacant < 1.0:
        raise ValueError(f"hyperparameters: vacant must be a number in [0, 1), got {vacant!r}")
    fac, totals = exposure.facilities, cells0.sum(axis=1).astype(float)
    T = fac.shape[1]
    ptr = np.concatenate([[0], np.cumsum((fac > 0).sum(axis=0))]).astype(np.int64)
    leaves = np.concatenate([np.flatnonzero(fac[:, t] > 0) for t in range(T)]).astype(np.int64) if T else ptr[:0]
    counts = np.concatenate([fac[fac[:, t] > 0, t] for t in range(T)]) if T else np.zeros(0)
    if "gq_size" in gq_given:
        size = np.broadcast_to(np.asarray(gq_given["gq_size"], dtype=float), (T,)).copy()
        if not np.all(np.isfinite(size) & (size > 0)):
            raise ValueError(f"hyperparameters: gq_size must be {T} finite values > 0, got {gq_given['gq_size']!r}")
    elif not learn and T:
        raise ValueError("learn=False keeps the hyperparameters fixed: give gq_size (persons per facility per type)")
    else:  # the people of the leaves holding a type's facilities, per facility
        size = np.array([max(totals[fac[:, t] > 0].sum() / max(fac[:, t].sum(), 1.0), 1.0) for t in range(T)])
    gq_prior = _normal_setting(gq_given.get("gq_prior", (math.log(50.0), 2.0)), "gq_prior")
    vacant_prior = _normal_setting(gq_given.get("vacant_prior", VACANT_PRIOR), "vacant_prior")
    prior_vec = np.concatenate([prior_vec, gq_prior, vacant_prior])
    household = np.maximum(totals - fac @ size, 0.0)
    per_parent = np.bincount(prior.leaf_parent, household, prior.n_parents)
    units_per_parent = np.bincount(prior.leaf_parent, exposure.units, prior.n_parents)
    if "mean" not in (given or {}):
        mean0 = np.maximum(per_parent, 0.5) / np.maximum(units_per_parent, 1.0)
    if "mean_prior" not in (given or {}):
        prior_vec[4:6] = math.log(max(household.sum(), 1.0) / max(exposure.units.sum(), 1.0)), 1.5
    return exposure.units, size, (ptr, leaves, counts), mean0, prior_vec, float(vacant)


def _facility_means(gq_csr, sizes: np.ndarray, L: int) -> np.ndarray:
    """Per leaf, sum over GQ types of size x facilities."""
    ptr, leaves, counts = gq_csr
    out = np.zeros(L)
    for t in range(sizes.size):
        np.add.at(out, leaves[ptr[t] : ptr[t + 1]], sizes[t] * counts[ptr[t] : ptr[t + 1]])
    return out


def _recorded(release: GroupedRelease, record) -> tuple[np.ndarray, tuple]:
    if record is None:
        return np.arange(release.table.n_cells, dtype=np.int64), release.table.labels
    if not isinstance(record, Coarsening) or record.cell_of.size != release.table.n_cells:
        raise ValueError(
            f"record must be None or a Coarsening of the release's {release.table.n_cells} cells "
            f"(schema.coarsen(...)), got {record!r}"
        )
    return record.cell_of.astype(np.int64), record.table.labels


def sample_people(
    release: GroupedRelease,
    *,
    draws: int = 500,
    tune: int = 500,
    thin: int = 1,
    chains: int = 2,
    cores: int | None = None,
    random_seed: SeedLike = None,
    learn: bool = True,
    hyperparameters=None,
    share_level: str | None = None,
    moves: PersonMoves | None = None,
    record: Coarsening | None = None,
    initial=None,
    exposure: LeafExposure | None = None,
    decompose: Decomposition | None = None,
    progressbar: bool = True,
) -> xr.DataTree:
    """Posterior draws of a grouped release's cells by moves of people (module docstring).

    Parameters
    ----------
    release : GroupedRelease
        From :func:`~ppdinfer.census.grouped_release.grouped_release` (a file) or ``GroupedRelease.from_census``.
    draws, tune, thin, chains, cores, random_seed, learn, hyperparameters, share_level
        As in :func:`~ppdinfer.census.sampler.sample_cells` (the same prior and hyperparameters; default shares give
        structural zeros none). With an ``exposure``, ``mean`` is the persons per housing unit of each parent and
        four more keys are read: ``gq_size`` (persons per facility, one per GQ type) and ``gq_prior`` ((mu, sd) of
        its log's normal prior, default (log 50, 2)); ``vacant`` (default 0: none), the zero-inflation v of the
        leaves' totals, each leaf with a positive mean empty with probability v + (1 - v) NB(0) (every housing
        unit vacant), else negative binomial (learned from that start unless ``learn=False``), and ``vacant_prior``
        ((mu, sd) of its logit's normal prior, default (logit 0.05, 1.5)).
    moves : PersonMoves, optional
        The moves per sweep.
    record : Coarsening, optional
        The table stored per draw: by default the release's cells; a coarsening of them (e.g. voting age x
        Hispanic origin x 7 race groups) for a state's full histogram, whose draws would not fit in memory.
    initial : array_like, optional
        Starting cells (leaves x K), meeting the exact totals; default: the finest detailed releases.
    exposure : LeafExposure, optional
        The leaves' housing units and facilities (:func:`~ppdinfer.census.exposure.file_exposure`): each leaf's
        prior mean size becomes m_p units + sum_t c_t facilities (:mod:`ppdinfer.census.exposure`); a leaf with
        neither holds nobody. Default: mean m_p for every leaf.
    decompose : Decomposition, optional
        Before each sweep, local sweeps of the units of a level (e.g. counties) in parallel, the posterior still
        exactly the whole table's (:mod:`ppdinfer.census.decomposition`).
    progressbar : bool
        A tqdm bar over sweeps; Ctrl-C stops the chains after their current sweep, keeping the draws done.

    Returns
    -------
    xarray.DataTree
        posterior: ``cells`` (chain, draw, unit, cell) of the recorded table, ``alpha`` (chain, draw, group),
        ``phi``, ``mean_size`` (chain, draw, parent), ``shares`` (chain, draw, group, cell), the recorded cells'
        shares, with an exposure ``gq_size`` (chain, draw, gq_type); sample_stats: ``accept``; attrs: the
        settings, ``sampling_seconds``, ``interrupted``.

    Examples
    --------
    >>> import numpy as np
    >>> from ppdinfer.census import Geography, TableSpec, census_queries, GroupedRelease
    >>> from ppdinfer.mechanisms import NoisyMeasurements
    >>> geo = Geography(["t", "b1", "b2"], [None, "t", "t"])
    >>> q = census_queries(geo, TableSpec(("a", "b")), {"level1": ["total", "detailed"]})
    >>> mech = NoisyMeasurements(q.matrix, 1.0, invariants=q.unit_invariants(["t"], [40]))
    >>> release = GroupedRelease.from_census(q, mech, mech.release([10, 5, 15, 10], random_seed=1))
    >>> tree = sample_people(release, draws=50, tune=50, random_seed=2, progressbar=False)
    >>> tree["posterior"]["cells"].shape
    (2, 50, 2, 2)
    >>> bool((tree["posterior"]["cells"].sum(("unit", "cell")) == 40).all())    # the exact total, every draw
    True
    """
    if not isinstance(release, GroupedRelease):
        raise ValueError(f"release must be a GroupedRelease, got {type(release).__name__}")
    moves = PersonMoves() if moves is None else moves
    if not isinstance(moves, PersonMoves):
        raise ValueError(f"moves must be a PersonMoves, got {type(moves).__name__}")
    draws, chains, thin = (positive_int(v, n) for v, n in ((draws, "draws"), (chains, "chains"), (thin, "thin")))
    tune = non_negative_int(tune, "tune")
    if not isinstance(learn, bool | np.bool_):
        raise ValueError(f"learn must be True or False, got {learn!r}")
    geo, K = release.geography, release.table.n_cells
    L = geo.n_leaves
    cmap, labels = _recorded(release, record)
    R = len(labels)
    if chains * draws * L * R * 4 > DRAWS_BYTES:
        raise ValueError(
            f"the stored draws ({chains} chains x {draws} draws x {L} leaves x {R} cells, int32) would take "
            f"{chains * draws * L * R * 4 / 2**30:.1f} GiB: record a coarser table (record=schema.coarsen(...)), "
            "fewer draws or a larger thin"
        )
    if decompose is not None and not isinstance(decompose, Decomposition):
        raise ValueError(f"decompose must be a Decomposition, got {type(decompose).__name__}")
    if exposure is not None and (not isinstance(exposure, LeafExposure) or exposure.n_leaves != L):
        raise ValueError(f"exposure must be a LeafExposure of the release's {L} leaves, got {exposure!r}")
    closed = closed_leaves(release) | (exposure.empty if exposure is not None else False)
    cells0 = _initial_cells(release, closed, exposure) if initial is None else _checked_initial(release, initial)
    if exposure is not None and cells0.sum(axis=1)[exposure.empty].any():
        raise ValueError("initial has people in a leaf with no housing unit and no facility (exposure.empty)")
    prior = CellPrior(release, share_level)
    given, gq_given = _split_gq(hyperparameters)
    alpha0, phi0, mean0, shares0, prior_vec, filled = _hyperparameters(given, prior, learn, cells0.astype(float))
    units, gq_size0, gq_csr, mean0, prior_vec, vacant0 = _exposure_model(
        exposure, gq_given, given, learn, prior, cells0, mean0, prior_vec
    )
    allowed = ~release.structural_zeros
    shares0[:, ~allowed] = 0.0
    shares0 /= shares0.sum(axis=1, keepdims=True)
    cats, class_ptr, cat_class, leaf_kind, kind_open = _cell_classes(release, closed)
    resid0, rates, scales, blk_scale, blk_level, blk_off, blk_nv, blk_rate, blk_groups = _residuals(
        release, cells0, moves.narrow_residuals
    )
    bnd, bval0 = _bound_arrays(release, cells0)
    buffer = (moves.bump_max + 2) * 2 * len(release.bounds) + 4
    lo, hi, free, sib_lo, sib_hi = _classes(release)
    rare = _rare_groups(release)
    rare_leaves = np.diff(rare[0]) > 0
    counts = _move_counts(moves, cells0, hi - lo >= 2, free, closed, rare_leaves)
    spans, local_moves, local = _local_moves(decompose, release, cells0, hi - lo >= 2, free, closed, rare_leaves)
    T = gq_size0.size
    axes = np.asarray(release.shape, dtype=np.int64)
    for m in (moves, local_moves):
        for name in ("turn_axis", "second_axis"):
            if getattr(m, name) >= len(axes):
                raise ValueError(
                    f"moves: {name} {getattr(m, name)} is not an axis of the release's {len(axes)}-axis table"
                )
    strides = np.concatenate([np.cumprod(axes[::-1])[::-1][1:], [1]]).astype(np.int64)
    P = 1 << max(int(K - 1).bit_length(), 0)
    parent_ptr, parent_leaves = _csr(prior.leaf_parent, prior.n_parents)
    group_ptr, group_leaves = _csr(prior.leaf_group, prior.n_groups)
    seeds = root_seed(random_seed).spawn(chains)
    scratch_size = 4 * len(release.blocks) + 4
    room = reserve(P)
    n_sweeps = tune + draws * thin
    states, outputs = [], []
    for c in range(chains):
        stream = np.random.default_rng(seeds[c])
        rng_state = _rng_state(seeds[c])
        jitter = 0.3 if learn else 0.0
        store, alloc = slots_from_table(
            cells0.indptr, cells0.indices, cells0.data, P, SLOT_HEADROOM, _spare(cells0.nnz, room)
        )
        rec = group_sums(cells0, cmap, R)
        states.append(
            dict(
                store=store, totals=cells0.sum(axis=1).astype(np.int64), rec=rec,
                resid=resid0 if c == chains - 1 else tuple(r.copy() for r in resid0),
                log_phi=np.array([math.log(phi0) + jitter * stream.normal()]),
                log_mean=np.log(mean0) + jitter * stream.normal(size=prior.n_parents),
                log_alpha=np.log(alpha0) + jitter * stream.normal(size=prior.n_groups),
                shares=shares0.copy(), log_gq=np.log(gq_size0) + jitter * stream.normal(size=T),
                steps=np.concatenate([[0.1], np.full(prior.n_parents, 0.1), np.full(prior.n_groups, 0.1),
                                      np.full(prior.n_groups, 0.3), np.full(prior.n_groups, 0.3), [0.3], np.full(T, 0.1)]),
                bval=bval0.copy(), **_scratch(rng_state, buffer, scratch_size, moves.line_window),
            )
        )  # fmt: skip
        states[-1]["alloc"] = alloc
        unit_seeds = seeds[c].spawn(len(spans)) if len(spans) else []
        states[-1]["local"] = [
            _scratch(_rng_state(u), buffer, scratch_size, local_moves.line_window) for u in unit_seeds
        ]
        outputs.append(
            dict(
                rec=np.zeros((draws, L, R), dtype=np.int32), phi=np.zeros(draws), mean=np.zeros((draws, prior.n_parents)),
                alpha=np.zeros((draws, prior.n_groups)), shares=np.zeros((draws, prior.n_groups, R)),
                accept=np.zeros(draws), gq=np.zeros((draws, T)), vacant=np.zeros(draws),
            )
        )  # fmt: skip
        s = states[-1]
        s["mu"] = np.exp(s["log_mean"])[prior.leaf_parent] * units + _facility_means(gq_csr, np.exp(s["log_gq"]), L)
        s["vacancy"] = np.array([vacant0])
        s["composition"] = (leaf_kind, kind_open, np.empty((prior.n_groups, kind_open.shape[0])), class_ptr, cat_class)
        open_shares(s["shares"], cats, s["composition"], 0, prior.n_groups)
        # the sweeps' per-group tables, once per chain (not per call: a state's tracts x 2,016 cells are 52 MB each)
        s["tables"] = (np.empty((prior.n_groups, K)), np.full((prior.n_groups, K), -np.inf),
                       np.empty((prior.n_groups, cats.size)), np.zeros(prior.n_groups * K + 1, dtype=np.int64))  # fmt: skip
    workers = min(chains, resolve_cores(cores))
    done = [0] * chains
    stop = threading.Event()
    work = float(sum(counts[k].sum() * w for k, w in _WORK.items())) * len(release.blocks)
    chunk = max(1, min(50, int(5e7 // max(work, 1.0))))
    bar = tqdm(total=n_sweeps * chains, desc="census people", unit="sweep", disable=not progressbar, leave=False)
    lock = threading.Lock()
    all_leaves = np.arange(L, dtype=np.int64)
    leaf_parent, leaf_group = prior.leaf_parent.astype(np.int64), prior.leaf_group.astype(np.int64)
    p_sibling, p_near = (float(p) for p in moves.partners)

    def sweeps(s, o, start, count, n_tune, k, m, span, scratch, whole, learn_) -> bool:
        """people_sweeps of chain state s with move counts k and settings m over the leaves of span, in the allocation
        range of ``scratch``, a sweep of the whole table (with turns, its tables its own) or a unit's local sweep:
        whether they are done (else they stopped for room, to be resumed)."""
        return people_sweeps(
            start, count, n_tune, thin, (s["store"], P, scratch["alloc"]), s["totals"], s["rec"], cmap, (*s["resid"], scratch["refused"]), rates,
            scales, blk_scale, release.power, blk_level, blk_off, blk_nv, blk_rate, blk_groups, release.ancestors,
            k["within"], k["exchanges"], k["swaps"], k["births"], lo, hi, sib_lo, sib_hi, m.near, p_sibling, p_near,
            m.jump, m.max_jump, k["bumps"], k["spreads"], k["flips"], axes, strides, m.bump_max, m.floor,
            cats, leaf_parent, leaf_group, parent_ptr, parent_leaves, group_ptr, group_leaves, all_leaves,
            s["log_phi"], s["log_mean"], s["log_alpha"], s["shares"], learn_, moves.hyper_rounds, s["steps"],
            prior_vec, scratch["rng"], bnd, s["bval"], scratch["bidx"], scratch["bdelta"], scratch["touched"],
            scratch["dr"], o["rec"], o["phi"], o["mean"], o["alpha"], o["shares"], o["accept"], s["mu"], units,
            *gq_csr, s["log_gq"], o["gq"], k["lines"], m.line_window, scratch["sign"], scratch["weight"],
            scratch["logp"], m.turns if whole else 0.0, span[0], span[1], scratch["resume"], room, k["relocations"],
            m.turn_axis, (*rare, float(m.mates), int(m.mate_near)), m.line_turns if whole else 0.0, s["tables"], whole,
            k["rare_lines"], (float(m.second_turns), int(m.second_axis)), s["composition"], (s["vacancy"], o["vacant"]),
        ) == 0  # fmt: skip

    def local_round(s, o):
        """Every unit's local sweeps (no turns, hyperparameters held, nothing stored: tune past the sweeps), each in
        its own part of the pool's free range; those that stop for room resume after the pool is repacked."""
        m = local_moves
        composition_tables(s["log_alpha"], s["shares"], cats, m.floor, 0, prior.n_groups, s["tables"])
        jobs = [(s, o, 0, decompose.sweeps, decompose.sweeps, local, m, span, scratch, False, False)
                for span, scratch in zip(spans, s["local"], strict=True)]  # fmt: skip
        while jobs:
            _share_room(s, [job[8] for job in jobs], room)
            if decompose.executor is None:
                done_ = [sweeps(*job) for job in jobs]
            else:
                done_ = [f.result() for f in [submit_shared(decompose.executor, sweeps, *job) for job in jobs]]
            s["alloc"][0] = max(job[8]["alloc"][0] for job in jobs)
            jobs = [job for job, ok in zip(jobs, done_, strict=True) if not ok]

    def run(c):
        s, o = states[c], outputs[c]
        while done[c] < n_sweeps and not stop.is_set():
            count = min(chunk, n_sweeps - done[c])
            if len(spans):
                count = 1
                local_round(s, o)
            while not sweeps(s, o, done[c], count, tune, counts, moves, (0, L), s, True, learn):
                s["store"], s["alloc"] = repacked(s["store"], s["alloc"], _spare(s["store"][1].sum(), room))
            done[c] += count
            with lock:
                bar.update(count)

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        interrupted = _wait([pool.submit(run, c) for c in range(chains)], stop)
    bar.close()
    kept = min(max(0, d - tune) // thin for d in done)
    moves_per_sweep = int(sum(a.sum() for a in counts.values()))
    attrs = {"sampler": "census people (compiled Metropolis-Hastings moves of persons)",
             "sampling_seconds": time.perf_counter() - started, "interrupted": int(interrupted), "tune": tune,
             "thin": thin, "learn": int(learn), "hyperparameters_filled": ", ".join(filled),
             "moves_per_sweep": moves_per_sweep, "moves": repr(moves),
             "residuals": f"{resid0[0].size} int16, {resid0[1].size} {resid0[1].dtype}"}  # fmt: skip
    refused = int(sum(x["refused"][0] for st in states for x in (st, *st["local"])))
    if refused:
        attrs["residual_refusals"] = refused
        warnings.warn(
            f"{refused} proposals were refused because they would take an int16 residual y - v past its range: the draws "
            "are not exactly the posterior's (such a state is far from the measurements); rerun with "
            "PersonMoves(narrow_residuals=False)",
            RuntimeWarning,
            stacklevel=2,
        )
    if decompose is not None:
        attrs.update(decomposition=f"{len(spans)} units of {decompose.level}, {decompose.sweeps} local sweeps per "
                     f"sweep: {local_moves!r}", local_moves_per_sweep=int(sum(a.sum() for a in local.values())))  # fmt: skip
    tree = _tree(geo, prior, labels, outputs, kept, attrs)
    totals = np.stack([o["rec"][:kept].sum(axis=2) for o in outputs])
    check_convergence(np.concatenate([totals, np.log(tree["posterior"]["phi"].values)[..., None]], axis=2),
                      "leaf totals and phi", tree.attrs)  # fmt: skip
    if exposure is not None:
        tree.attrs["exposure"] = f"{exposure.units.sum():.0f} housing units, {exposure.facilities.sum():.0f} facilities"
        gq_size = np.exp(np.stack([o["gq"][:kept] for o in outputs]))
        tree["posterior"] = (
            tree["posterior"]
            .to_dataset()
            .assign(gq_size=(("chain", "draw", "gq_type"), gq_size))
            .assign_coords(gq_type=list(exposure.types))
        )
        if vacant0 > 0.0:
            vacant = np.stack([o["vacant"][:kept] for o in outputs])
            tree["posterior"] = tree["posterior"].to_dataset().assign(vacant=(("chain", "draw"), vacant))
    return tree


def _tree(geo, prior: CellPrior, labels, outputs, kept: int, attrs) -> xr.DataTree:
    stack = lambda key: np.stack([o[key][:kept] for o in outputs])  # noqa: E731
    chain, draw = np.arange(len(outputs)), np.arange(kept)
    posterior = xr.Dataset(
        {
            "cells": (("chain", "draw", "unit", "cell"), stack("rec")),
            "alpha": (("chain", "draw", "group"), np.exp(stack("alpha"))),
            "phi": (("chain", "draw"), np.exp(stack("phi"))),
            "mean_size": (("chain", "draw", "parent"), np.exp(stack("mean"))),
            "shares": (("chain", "draw", "group", "cell"), stack("shares")),
        },
        coords={"chain": chain, "draw": draw, "unit": np.array([str(v) for v in geo.ids[geo.leaves]]),
                "cell": list(labels), "parent": prior.parent_ids, "group": prior.group_ids},
    )  # fmt: skip
    stats = xr.Dataset({"accept": (("chain", "draw"), stack("accept"))}, coords={"chain": chain, "draw": draw})
    tree = xr.DataTree.from_dict({"posterior": posterior, "sample_stats": stats})
    tree.attrs.update(attrs)
    return tree
