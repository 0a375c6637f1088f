"""Per-leaf sparse cell counts of the person sampler (ppdinfer.census.people): sorted slots with a Fenwick tree.

A store is the tuple ``(ptr, cap, used, keys, vals, fen)``: leaf l's slots are the pool positions
ptr[l] .. ptr[l] + cap[l] - 1 (cap a power of two), the first used[l] holding cells in ascending order (keys) with
their counts (vals; a count may be 0: an emptied cell keeps its slot until its leaf is full and compacted), the rest
count 0; ``fen`` holds over the same positions each leaf's Fenwick tree of its slots' counts. A person of a leaf is
drawn uniformly in O(log cap), and since the slots are in cell order, person number t of a leaf is in the same cell
as in a dense row. A count is read by bisection; a cell new to its leaf is inserted in order (O(cap)). A full leaf is
compacted (its empty slots dropped) or, more than half of it in use, moved to twice its capacity at the top of an
allocation range ``alloc`` = (top, end); a leaf whose capacity would reach a quarter of P (the power of two >= K)
becomes a *dense row*: cap P, slot k holding cell k, read in O(1). Memory is O(non-zero cells + leaves); the pool
grows outside the kernels (:func:`repacked`): a kernel that finds less than :func:`reserve` free positions in its
range stops at the boundary of a move, so that no move is ever refused for room.
"""

from __future__ import annotations

import numpy as np
from numba import njit


def reserve(P: int) -> int:
    """Positions enough for any one move's growth: at most two leaves gain cells in a move, and a leaf's slots grow
    in one move by less than 5 P / 4 however many cells it gains (each growth doubles them, below a quarter of P,
    then at most once to a dense row of P).

    Examples
    --------
    >>> reserve(2048)
    5120
    """
    return 2 * (P + P // 4)


def capacity(nonzero: np.ndarray, P: int, headroom: float) -> np.ndarray:
    """Each leaf's starting capacity: the power of two >= headroom x its non-zero cells (at least those cells and 1),
    P (a dense row) from a quarter of P.

    Examples
    --------
    >>> capacity(np.array([0, 3, 200]), 2048, 2.0).tolist(), capacity(np.array([0, 3, 4]), 2048, 0.0).tolist()
    ([1, 8, 2048], [1, 4, 4])
    """
    nonzero = np.asarray(nonzero, dtype=np.int64)
    want = np.maximum(np.maximum(np.ceil(headroom * nonzero), nonzero), 1).astype(np.int64)
    cap = np.left_shift(1, np.ceil(np.log2(want)).astype(np.int64))
    return np.where(cap >= max(P // 4, 1), P, cap).astype(np.int64)


def slots_from_table(indptr, indices, data, P: int, headroom: float, spare: int):
    """A store of a CSR table (leaves x K: indptr, indices sorted per row, data > 0), with ``spare`` free positions
    past the leaves' slots; returns the store and its allocation range.

    Examples
    --------
    >>> store, alloc = slots_from_table(np.array([0, 1, 1]), np.array([2]), np.array([5]), 16, 2.0, 3)
    >>> store[1].tolist(), alloc.tolist()    # capacities, the allocation range (top, end)
    ([2, 1], [3, 6])
    """
    nonzero = np.diff(indptr)
    cap = capacity(nonzero, P, headroom)
    ptr = np.concatenate([[0], np.cumsum(cap)[:-1]]).astype(np.int64)
    top = int(cap.sum())
    size = top + int(spare)
    keys, vals, fen = np.full(size, -1, np.int32), np.zeros(size, np.int32), np.zeros(size, np.int32)
    used = np.where(cap == P, P, nonzero).astype(np.int64)
    _fill(ptr, cap, used, keys, vals, fen, np.asarray(indptr, np.int64), np.asarray(indices, np.int64),
          np.asarray(data, np.int64), P)  # fmt: skip
    return (ptr, cap, used, keys, vals, fen), np.array([top, size], dtype=np.int64)


@njit(cache=True, nogil=True)
def _fill(ptr, cap, used, keys, vals, fen, indptr, indices, data, P):
    for leaf in range(ptr.size):
        p = ptr[leaf]
        if cap[leaf] == P:
            for k in range(P):
                keys[p + k] = k
            for e in range(indptr[leaf], indptr[leaf + 1]):
                vals[p + indices[e]] = data[e]
        else:
            for s, e in enumerate(range(indptr[leaf], indptr[leaf + 1])):
                keys[p + s] = indices[e]
                vals[p + s] = data[e]
        _rebuild(fen, vals, p, cap[leaf])


def repacked(store, alloc, spare: int):
    """The store moved to a new pool holding every leaf's slots side by side and ``spare`` free positions (the
    garbage of moved leaves dropped); returns it and its allocation range.

    Examples
    --------
    >>> store, alloc = slots_from_table(np.array([0, 1, 1]), np.array([2]), np.array([5]), 16, 2.0, 0)
    >>> new, alloc = repacked(store, alloc, 10)
    >>> new[3].size, alloc.tolist()
    (13, [3, 13])
    """
    ptr, cap, used, keys, vals, fen = store
    new_ptr = np.concatenate([[0], np.cumsum(cap)[:-1]]).astype(np.int64)
    top = int(cap.sum())
    size = top + int(spare)
    out = np.full(size, -1, np.int32), np.zeros(size, np.int32), np.zeros(size, np.int32)
    _copy(ptr, cap, new_ptr, (keys, vals, fen), out)
    return (new_ptr, cap, used, *out), np.array([top, size], dtype=np.int64)


@njit(cache=True, nogil=True)
def _copy(ptr, cap, new_ptr, old, new):
    for leaf in range(ptr.size):
        a, b = ptr[leaf], new_ptr[leaf]
        for s in range(cap[leaf]):
            new[0][b + s] = old[0][a + s]
            new[1][b + s] = old[1][a + s]
            new[2][b + s] = old[2][a + s]


@njit(cache=True, nogil=True)
def _rebuild(fen, vals, p, c):
    """The Fenwick tree of vals[p : p + c] in fen[p : p + c] (1-based node i at p + i - 1)."""
    for i in range(c):
        fen[p + i] = vals[p + i]
    for i in range(1, c + 1):
        j = i + (i & -i)
        if j <= c:
            fen[p + j - 1] += fen[p + i - 1]


@njit(cache=True, nogil=True)
def slot_of(store, leaf, k, P):
    """The pool position of cell k of ``leaf``, or -1 where it has no slot."""
    ptr, cap, used, keys = store[0], store[1], store[2], store[3]
    p = ptr[leaf]
    if cap[leaf] == P:
        return p + k
    lo, hi = p, p + used[leaf]
    while lo < hi:
        mid = (lo + hi) >> 1
        if keys[mid] < k:
            lo = mid + 1
        else:
            hi = mid
    if lo < p + used[leaf] and keys[lo] == k:
        return lo
    return -1


@njit(cache=True, nogil=True)
def count_of(store, leaf, k, P):
    """The people of cell k of ``leaf``."""
    s = slot_of(store, leaf, k, P)
    return store[4][s] if s >= 0 else 0


@njit(cache=True, nogil=True)
def find_person(store, leaf, target):
    """The cell of person number ``target`` of ``leaf`` (0 <= target < its total), in cell order."""
    p, c, fen = store[0][leaf], store[1][leaf], store[5]
    pos = 0
    bit = c
    while bit > 0:
        nxt = pos + bit
        if nxt <= c and fen[p + nxt - 1] <= target:
            pos = nxt
            target -= fen[p + nxt - 1]
        bit >>= 1
    return store[3][p + pos]


@njit(cache=True, nogil=True)
def _fen_add(fen, p, c, i, d):
    i += 1
    while i <= c:
        fen[p + i - 1] += d
        i += i & -i


@njit(cache=True, nogil=True)
def add_people(store, leaf, k, d, P, alloc):
    """Cell k of ``leaf`` gains d people (d < 0: loses; a cell without a slot is inserted, d > 0)."""
    s = slot_of(store, leaf, k, P)
    if s < 0:
        _insert(store, leaf, k, d, P, alloc)
        return
    store[4][s] += d
    _fen_add(store[5], store[0][leaf], store[1][leaf], s - store[0][leaf], d)


@njit(cache=True, nogil=True)
def _insert(store, leaf, k, d, P, alloc):
    ptr, cap, used, keys, vals, fen = store
    if used[leaf] == cap[leaf]:
        _make_room(store, leaf, P, alloc)
        if cap[leaf] == P:  # now a dense row
            vals[ptr[leaf] + k] += d
            _fen_add(fen, ptr[leaf], P, k, d)
            return
    p, n = ptr[leaf], used[leaf]
    q = p + n
    while q > p and keys[q - 1] > k:
        keys[q] = keys[q - 1]
        vals[q] = vals[q - 1]
        q -= 1
    keys[q] = k
    vals[q] = d
    used[leaf] = n + 1
    _rebuild(fen, vals, p, cap[leaf])


@njit(cache=True, nogil=True)
def _make_room(store, leaf, P, alloc):
    """Compact a full leaf; where more than half of it stays in use, move it to twice its capacity (a dense row from
    a quarter of P) at the top of ``alloc``."""
    ptr, cap, used, keys, vals, fen = store
    p, c = ptr[leaf], cap[leaf]
    n = 0
    for s in range(p, p + used[leaf]):
        if vals[s] != 0:
            keys[p + n] = keys[s]
            vals[p + n] = vals[s]
            n += 1
    for s in range(p + n, p + c):
        keys[s] = -1
        vals[s] = 0
    used[leaf] = n
    if 2 * n <= c:
        _rebuild(fen, vals, p, c)
        return
    new_c = 2 * c
    if new_c >= max(P // 4, 1):
        new_c = P
    top = alloc[0]
    if top + new_c > alloc[1]:
        raise RuntimeError("leaf slots: the allocation range is spent (a reserve too small)")
    for s in range(new_c):
        keys[top + s] = s if new_c == P else -1
        vals[top + s] = 0
    for s in range(n):
        if new_c == P:
            vals[top + keys[p + s]] = vals[p + s]
        else:
            keys[top + s] = keys[p + s]
            vals[top + s] = vals[p + s]
    ptr[leaf], cap[leaf] = top, new_c
    used[leaf] = P if new_c == P else n
    alloc[0] = top + new_c
    _rebuild(fen, vals, top, new_c)


@njit(cache=True, nogil=True)
def group_counts(store, leaf_group, G, K, gk_ptr):
    """The non-zero counts of each (group, cell) over the leaves, grouped: counts[gk_ptr[g K + k]:gk_ptr[g K + k + 1]]
    (O(slots))."""
    ptr, used, keys, vals = store[0], store[2], store[3], store[4]
    L = ptr.size
    gk_ptr[:] = 0
    for leaf in range(L):
        base = leaf_group[leaf] * K + 1
        for s in range(ptr[leaf], ptr[leaf] + used[leaf]):
            if vals[s] > 0:
                gk_ptr[base + keys[s]] += 1
    for s in range(1, gk_ptr.size):
        gk_ptr[s] += gk_ptr[s - 1]
    out = np.empty(gk_ptr[gk_ptr.size - 1], dtype=np.int64)
    fill = gk_ptr[:-1].copy()
    for leaf in range(L):
        base = leaf_group[leaf] * K
        for s in range(ptr[leaf], ptr[leaf] + used[leaf]):
            if vals[s] > 0:
                out[fill[base + keys[s]]] = vals[s]
                fill[base + keys[s]] += 1
    return out


def to_table(store, K: int):
    """The store's counts as a (leaves x K) scipy CSR table (its non-zero cells).

    Examples
    --------
    >>> store, _ = slots_from_table(np.array([0, 1, 1]), np.array([2]), np.array([5]), 16, 2.0, 0)
    >>> to_table(store, 3).toarray().tolist()
    [[0, 0, 5], [0, 0, 0]]
    """
    import scipy.sparse as sp

    ptr, cap, used, keys, vals, _ = store
    positions = np.concatenate([np.arange(p, p + u) for p, u in zip(ptr, used, strict=True)]).astype(np.int64)
    rows = np.repeat(np.arange(ptr.size), used)
    keep = (vals[positions] != 0) & (keys[positions] < K)
    table = sp.csr_array((vals[positions][keep].astype(np.int64), (rows[keep], keys[positions][keep])),
                         shape=(ptr.size, K))  # fmt: skip
    table.sum_duplicates()
    return table
