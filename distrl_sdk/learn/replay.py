"""Replay over whole episodes: a sum-tree and DPER's prioritized replay.

``SumTree`` keeps priorities in the leaves of a complete binary tree whose inner nodes
hold the sums of their children, so updating one priority and drawing one sample are
both O(log n). Batches are drawn with numpy: the descent runs level by level over the
whole batch at once (≈ log₂ n vectorised steps per batch, not per sample).

``PrioritizedReplay`` is DPER's buffer (Schaul et al. 2016, as DistRL uses it over
trajectories): episode τ is drawn with probability

    P(τ) = p(τ)^α / Σ_τ' p(τ')^α

and carries the importance weight w(τ) = (N·P(τ))^−β / max_τ' w(τ'), which undoes the
bias of non-uniform sampling as β → 1 (normalising by the buffer-wide maximum keeps
every weight ≤ 1, so priorities only ever scale updates down; the least likely
episode comes from a min-tree, O(1) to read). New episodes enter at the highest
*measured* priority now in replay (a max-tree over scored episodes), so each is
replayed soon; once the learner scores it, it keeps its own value. The entry level
follows the buffer: when the episode that set it is re-scored lower or leaves, new
episodes enter lower (not at the run's all-time maximum). The buffer is circular:
when full, the oldest episode leaves.

Policy lag (the learner's version minus the oldest version that acted in an episode)
is bounded by ``max_lag`` = K: in ``"drop"`` mode older episodes are refused on
``add`` and removed by ``prune``; in ``"downweight"`` mode they stay but their weights
are multiplied by ``lag_decay ** (lag − K)``. With ``keep_successes`` the bound spares
successful episodes: they are neither refused nor pruned for their age (only the
circular capacity removes them), since a success teaches whoever collected it.

Every bookkeeping operation is O(log n) or better per episode touched: pruning pops a
version heap, the mean priority is a running sum, the stalest episodes are the front
of a scoring-order list, the smallest and largest priorities are tree roots. Only
numpy here: torch is not needed.
"""

from __future__ import annotations

import heapq
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from distrl_sdk.learn.api import EpisodeRecord

__all__ = ["ExtremumTree", "LagMode", "PrioritizedReplay", "ReplayEntry", "ReplaySample",
           "SumTree"]

LagMode = Literal["drop", "downweight"]
FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


class SumTree:
    """Sums of non-negative priorities over ``capacity`` leaves; O(log n) update/find."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"SumTree capacity must be ≥ 1, got {capacity}")
        self.capacity = capacity
        self._size = 1 << max(0, (capacity - 1).bit_length())  # leaves, a power of two
        self._depth = self._size.bit_length() - 1
        self._tree: FloatArray = np.zeros(2 * self._size, dtype=np.float64)

    @property
    def total(self) -> float:
        return float(self._tree[1])

    def leaves(self) -> FloatArray:
        """A read-only view of the ``capacity`` leaf priorities."""
        view = self._tree[self._size : self._size + self.capacity]
        view.flags.writeable = False
        return view

    def __getitem__(self, index: int) -> float:
        return float(self._tree[self._size + index])

    def update(self, index: int, priority: float) -> None:
        """Set one leaf and fix the log₂ n sums above it."""
        if not 0 <= index < self.capacity:
            raise IndexError(f"leaf {index} outside 0..{self.capacity - 1}")
        if not priority >= 0.0 or not np.isfinite(priority):
            raise ValueError(f"priority must be finite and ≥ 0, got {priority}")
        node = self._size + index
        tree = self._tree
        tree[node] = priority
        node >>= 1
        while node:
            tree[node] = tree[2 * node] + tree[2 * node + 1]
            node >>= 1

    def update_batch(self, indices: npt.ArrayLike, priorities: npt.ArrayLike) -> None:
        """Set many leaves (the last write wins for repeats), then recompute the
        affected ancestors level by level: O(k log n) with k vectorised."""
        idx = np.asarray(indices, dtype=np.int64).ravel()
        pri = np.broadcast_to(np.asarray(priorities, dtype=np.float64), idx.shape)
        if idx.size == 0:
            return
        if idx.min() < 0 or idx.max() >= self.capacity:
            raise IndexError(f"leaf indices must lie in 0..{self.capacity - 1}")
        if not np.all(np.isfinite(pri)) or np.any(pri < 0):
            raise ValueError("priorities must be finite and ≥ 0")
        tree = self._tree
        tree[self._size + idx] = pri  # repeats: numpy keeps the last write
        nodes = (self._size + idx) >> 1
        for _ in range(self._depth):  # repeated nodes just write the same sum twice
            tree[nodes] = tree[2 * nodes] + tree[2 * nodes + 1]
            nodes >>= 1

    def set_all(self, priorities: npt.ArrayLike) -> None:
        """Replace every leaf and rebuild all sums in O(n) (used when α changes)."""
        pri = np.asarray(priorities, dtype=np.float64)
        if pri.shape != (self.capacity,):
            raise ValueError(f"expected {self.capacity} priorities, got shape {pri.shape}")
        if not np.all(np.isfinite(pri)) or np.any(pri < 0):
            raise ValueError("priorities must be finite and ≥ 0")
        tree = self._tree
        tree[:] = 0.0
        tree[self._size : self._size + self.capacity] = pri
        lo = self._size
        while lo > 1:
            hi, lo = lo, lo // 2
            tree[lo:hi] = tree[2 * lo : 2 * hi : 2] + tree[2 * lo + 1 : 2 * hi : 2]

    def find(self, values: npt.ArrayLike) -> IntArray:
        """Leaf i with prefix(i) ≤ v < prefix(i+1) for each v in [0, total), vectorised.

        Zero-priority leaves own an empty interval, so they are never returned."""
        v = np.array(values, dtype=np.float64, copy=True).ravel()
        tree = self._tree
        node = np.ones(v.shape, dtype=np.int64)
        for _ in range(self._depth):
            left = 2 * node
            left_sum = tree[left]
            right = v >= left_sum
            v -= np.where(right, left_sum, 0.0)
            node = left + right
        leaf = node - self._size
        # float rounding at a boundary can land on an empty leaf: redo those exactly
        bad = (tree[node] <= 0.0) | (leaf >= self.capacity)
        if np.any(bad):
            cum = np.cumsum(tree[self._size : self._size + self.capacity])
            vals = np.asarray(values, dtype=np.float64).ravel()[bad]
            fixed = np.searchsorted(cum, np.minimum(vals, np.nextafter(cum[-1], 0)), "right")
            leaf[bad] = np.minimum(fixed, self.capacity - 1)
        return leaf

    def sample(self, n: int, rng: np.random.Generator, *, stratified: bool = True) -> IntArray:
        """``n`` leaves drawn with probability ∝ priority (with replacement).

        Stratified (one draw per 1/n of the total mass, as in Schaul et al.) keeps
        each leaf's expected count exact and lowers the batch's variance."""
        total = self.total
        if n < 1:
            raise ValueError(f"sample size must be ≥ 1, got {n}")
        if not total > 0.0:
            raise ValueError("cannot sample from a sum-tree whose priorities are all zero")
        u = rng.random(n)
        values = (np.arange(n) + u) * (total / n) if stratified else u * total
        return self.find(np.minimum(values, np.nextafter(total, 0.0)))


class ExtremumTree:
    """Minimum (or maximum) of ``capacity`` leaves; O(log n) update, O(1) root.

    Empty leaves hold the identity (+inf for a min-tree, −inf for a max-tree)."""

    def __init__(self, capacity: int, *, largest: bool = False) -> None:
        if capacity < 1:
            raise ValueError(f"tree capacity must be ≥ 1, got {capacity}")
        self.capacity = capacity
        self._size = 1 << max(0, (capacity - 1).bit_length())
        self._depth = self._size.bit_length() - 1
        self._largest = largest
        self._op: Callable[..., Any] = np.maximum if largest else np.minimum
        self.identity = -np.inf if largest else np.inf
        self._tree: FloatArray = np.full(2 * self._size, self.identity, dtype=np.float64)

    @property
    def root(self) -> float:
        """The extremum over all leaves (the identity when every leaf is empty)."""
        return float(self._tree[1])

    def update_batch(self, indices: npt.ArrayLike, values: npt.ArrayLike) -> None:
        """Set leaves (last write wins), then fix each affected ancestor once per level."""
        idx = np.asarray(indices, dtype=np.int64).ravel()
        if idx.size == 0:
            return
        tree, op = self._tree, self._op
        if idx.size == 1:  # a plain walk beats numpy's per-call cost for one leaf
            node = self._size + int(idx[0])
            tree[node] = float(np.asarray(values, dtype=np.float64).ravel()[0])
            pick = max if self._largest else min
            for _ in range(self._depth):
                node >>= 1
                tree[node] = pick(tree[2 * node], tree[2 * node + 1])
            return
        tree[self._size + idx] = np.broadcast_to(np.asarray(values, dtype=np.float64), idx.shape)
        nodes = (self._size + idx) >> 1
        for _ in range(self._depth):  # repeated nodes just write the same value twice
            tree[nodes] = op(tree[2 * nodes], tree[2 * nodes + 1])
            nodes >>= 1

    def set_all(self, values: npt.ArrayLike) -> None:
        """Replace every leaf and rebuild in O(n)."""
        val = np.asarray(values, dtype=np.float64)
        tree, op = self._tree, self._op
        tree[:] = self.identity
        tree[self._size : self._size + self.capacity] = val
        lo = self._size
        while lo > 1:
            hi, lo = lo, lo // 2
            tree[lo:hi] = op(tree[2 * lo : 2 * hi : 2], tree[2 * lo + 1 : 2 * hi : 2])


@dataclass(frozen=True)
class ReplaySample:
    """A prioritized batch of episodes."""

    indices: IntArray  # replay slots, for update_priorities
    episodes: list[EpisodeRecord]
    weights: FloatArray  # IS weights (N·P)^−β / max w, times the lag down-weighting
    probs: FloatArray  # P(τ) each was drawn with
    lags: IntArray  # policy lag of each episode at sampling time


@dataclass(frozen=True)
class ReplayEntry:
    """One stored episode with its bookkeeping, for checkpoints."""

    slot: int
    episode: EpisodeRecord
    priority: float  # raw p(τ), before the α exponent
    seq: int  # insertion order (eviction is oldest-first)
    scored_at: int  # the counter value when its priority was last set (refresh order)
    measured: bool = True  # False while it holds the entry priority, not its own score


class PrioritizedReplay:
    """DPER over episodes: circular, sum-tree sampled, lag bounded (module docstring)."""

    def __init__(self, capacity: int, *, max_lag: int | None = None,
                 lag_mode: LagMode = "drop", lag_decay: float = 0.5, eps: float = 1e-6,
                 keep_successes: bool = False, seed: int = 0) -> None:
        if capacity < 1:
            raise ValueError(f"replay capacity must be ≥ 1, got {capacity}")
        if lag_mode not in ("drop", "downweight"):
            raise ValueError(f"lag_mode must be 'drop' or 'downweight', got {lag_mode!r}")
        if max_lag is not None and max_lag < 0:
            raise ValueError(f"max_lag must be ≥ 0 or None, got {max_lag}")
        self.capacity, self.max_lag, self.lag_mode = capacity, max_lag, lag_mode
        self.lag_decay, self.eps, self.keep_successes = lag_decay, eps, keep_successes
        self.rng = np.random.default_rng(seed)
        self._tree = SumTree(capacity)
        self._min_tree = ExtremumTree(capacity)  # min of p^α over stored: IS normalisation
        self._max_measured = ExtremumTree(capacity, largest=True)  # entry priority
        self._alpha = 1.0  # the exponent the tree's leaves are raised to
        self._episodes: list[EpisodeRecord | None] = [None] * capacity
        self._priority: FloatArray = np.zeros(capacity)  # raw p(τ); 0 where empty
        self._version: IntArray = np.zeros(capacity, dtype=np.int64)
        self._seq: IntArray = np.full(capacity, -1, dtype=np.int64)  # -1: empty slot
        self._scored_at: IntArray = np.zeros(capacity, dtype=np.int64)
        self._measured = np.zeros(capacity, dtype=bool)
        self._next_seq = 0
        self._free: list[int] = list(range(capacity))  # a heap: lowest free slot first
        self._order: deque[tuple[int, int]] = deque()  # (seq, slot) in insertion order
        self._by_version: list[tuple[int, int, int]] = []  # heap of (version, seq, slot)
        self._score_order: OrderedDict[int, None] = OrderedDict()  # slots, stalest first
        self._count = 0
        self._psum = 0.0  # Σ raw priorities of stored episodes (mean_priority)
        self._clock = 0  # bumped by every priority write: orders refreshes
        self._initial_priority = 1.0  # entry priority while nothing has been measured

    # -- bookkeeping ------------------------------------------------------------
    def __len__(self) -> int:
        return self._count

    def filled(self) -> IntArray:
        """Slots holding an episode."""
        return np.flatnonzero(self._seq >= 0).astype(np.int64)

    def episode(self, slot: int) -> EpisodeRecord:
        ep = self._episodes[slot]
        if ep is None:
            raise KeyError(f"replay slot {slot} is empty")
        return ep

    def priorities(self, slots: npt.ArrayLike) -> FloatArray:
        return self._priority[np.asarray(slots, dtype=np.int64)].copy()

    @property
    def max_priority(self) -> float:
        """The priority a new episode enters at: the highest measured priority now in
        replay (``initial`` 1.0 while none is measured)."""
        top = self._max_measured.root
        return top if np.isfinite(top) else self._initial_priority

    def mean_priority(self) -> float:
        """Mean raw priority over stored episodes, O(1) (a running sum)."""
        return max(self._psum, 0.0) / self._count if self._count else 0.0

    def measured(self, slots: npt.ArrayLike) -> npt.NDArray[np.bool_]:
        """Whether each slot's priority is its own score (not the entry priority)."""
        return self._measured[np.asarray(slots, dtype=np.int64)].copy()

    def lags(self, current_version: int, slots: npt.ArrayLike | None = None) -> IntArray:
        """Policy lag of the episodes in ``slots`` (default: all stored)."""
        s = self.filled() if slots is None else np.asarray(slots, dtype=np.int64)
        return np.maximum(current_version - self._version[s], 0)

    def random_slots(self, n: int) -> IntArray:
        """All stored slots if there are at most ``n``, else ``n`` of them drawn uniformly
        (with replacement): O(n) while the buffer is at least a quarter full."""
        if self._count <= n:
            return self.filled()
        if 4 * self._count >= self.capacity:  # rejection sampling over slots
            out: list[int] = []
            while len(out) < n:
                cand = self.rng.integers(0, self.capacity, size=2 * (n - len(out)))
                out.extend(cand[self._seq[cand] >= 0][: n - len(out)].tolist())
            return np.asarray(out, dtype=np.int64)
        return self.rng.choice(self.filled(), size=n)

    def stalest(self, n: int) -> IntArray:
        """Up to ``n`` stored slots whose priority was set longest ago (rolling refresh),
        stalest first; O(n) in the slots returned, not in the buffer."""
        return np.fromiter(islice(self._score_order, max(0, n)), dtype=np.int64)

    def entries(self) -> Iterator[ReplayEntry]:
        """Stored episodes in insertion order, for checkpoints."""
        s = self.filled()
        for slot in s[np.argsort(self._seq[s], kind="stable")]:
            i = int(slot)
            yield ReplayEntry(i, self.episode(i), float(self._priority[i]),
                              int(self._seq[i]), int(self._scored_at[i]),
                              bool(self._measured[i]))

    def state_meta(self) -> dict[str, Any]:
        """JSON-able counters and the sampling RNG (episodes travel separately)."""
        return {"capacity": self.capacity, "alpha": self._alpha, "next_seq": self._next_seq,
                "clock": self._clock, "max_priority": self.max_priority,
                "rng": self.rng.bit_generator.state}

    def restore(self, entries: Sequence[ReplayEntry], meta: dict[str, Any]) -> None:
        """Refill from :meth:`entries` + :meth:`state_meta` of a same-capacity buffer."""
        if int(meta["capacity"]) != self.capacity:
            raise ValueError(f"checkpointed replay has capacity {meta['capacity']}, "
                             f"this one {self.capacity}")
        self.clear()
        for e in entries:
            self._episodes[e.slot] = e.episode
            self._priority[e.slot] = e.priority
            self._version[e.slot] = e.episode.policy_version
            self._seq[e.slot] = e.seq
            self._scored_at[e.slot] = e.scored_at
            self._measured[e.slot] = e.measured
        self._next_seq, self._clock = int(meta["next_seq"]), int(meta["clock"])
        self._alpha = float(meta["alpha"])
        self._reindex()
        self._rebuild()
        self.rng.bit_generator.state = meta["rng"]

    def clear(self) -> None:
        self._episodes = [None] * self.capacity
        self._priority[:] = 0.0
        self._seq[:] = -1
        self._measured[:] = False
        self._reindex()
        self._rebuild()

    def _reindex(self) -> None:
        """Free-slot heap, insertion queue, version heap, scoring order, count and
        priority sum from the slot arrays (O(n log n): restore and clear only)."""
        s = self.filled()
        self._free = np.flatnonzero(self._seq < 0).tolist()  # sorted, so already a heap
        self._order = deque((int(self._seq[i]), int(i)) for i in s[np.argsort(self._seq[s])])
        self._by_version = [(int(self._version[i]), int(self._seq[i]), int(i)) for i in s]
        heapq.heapify(self._by_version)
        self._score_order = OrderedDict(
            (int(i), None) for i in s[np.argsort(self._scored_at[s], kind="stable")])
        self._count = int(s.size)
        self._psum = float(self._priority[s].sum())

    # -- writing ----------------------------------------------------------------
    def add(self, episode: EpisodeRecord, priority: float | None = None, *,
            current_version: int | None = None) -> int | None:
        """Store ``episode`` (at the highest priority so far unless given); returns its
        slot, or None when the lag bound refuses it (``"drop"`` mode)."""
        if (self.max_lag is not None and self.lag_mode == "drop" and current_version is not None
                and current_version - episode.policy_version > self.max_lag
                and not self._spared(episode)):
            return None
        if self._free:
            slot = heapq.heappop(self._free)
            self._count += 1
        else:  # full: evict the oldest (queue entries of removed episodes are stale)
            while True:
                seq, slot = self._order.popleft()
                if self._seq[slot] == seq:
                    break
        if self._seq[slot] >= 0:  # the evicted episode's mass leaves the running sum
            self._psum -= float(self._priority[slot])
        p = self.max_priority if priority is None else float(priority)
        self._episodes[slot] = episode
        self._version[slot] = episode.policy_version
        self._seq[slot] = self._next_seq
        self._order.append((self._next_seq, slot))
        heapq.heappush(self._by_version, (episode.policy_version, self._next_seq, slot))
        if len(self._by_version) > 2 * self.capacity + 64:  # drop entries of evicted ones
            self._by_version = [e for e in self._by_version if self._seq[e[2]] == e[1]]
            heapq.heapify(self._by_version)
        self._next_seq += 1
        self._write(np.array([slot]), np.array([p]), measured=priority is not None)
        return slot

    def update_priorities(self, slots: npt.ArrayLike, priorities: npt.ArrayLike) -> None:
        """New raw priorities p(τ) for stored episodes (stale slots are skipped)."""
        s = np.asarray(slots, dtype=np.int64).ravel()
        p = np.broadcast_to(np.asarray(priorities, dtype=np.float64), s.shape)
        if not np.all(np.isfinite(p)) or np.any(p < 0):
            raise ValueError("priorities must be finite and ≥ 0")
        keep = self._seq[s] >= 0
        s, p = s[keep], p[keep]
        if s.size:  # repeats: the last write wins, as in the trees
            last = s.size - 1 - np.unique(s[::-1], return_index=True)[1]
            s, p = s[last], p[last]
        self._psum -= float(self._priority[s].sum())
        self._write(s, p, measured=True)

    def remove(self, slots: npt.ArrayLike) -> None:
        s = np.unique(np.asarray(slots, dtype=np.int64).ravel())
        s = s[self._seq[s] >= 0]
        for i in s.tolist():
            self._episodes[i] = None
            heapq.heappush(self._free, i)
            self._score_order.pop(i, None)
        self._count -= int(s.size)
        self._psum -= float(self._priority[s].sum())
        self._priority[s] = 0.0
        self._seq[s] = -1
        self._measured[s] = False
        self._tree.update_batch(s, 0.0)
        self._min_tree.update_batch(s, self._min_tree.identity)
        self._max_measured.update_batch(s, self._max_measured.identity)

    def _spared(self, episode: EpisodeRecord | None) -> bool:
        """Whether the lag bounds must leave this episode alone (``keep_successes``)."""
        return self.keep_successes and episode is not None and episode.success

    def unspared(self, slots: npt.ArrayLike) -> IntArray:
        """The stored ``slots`` that a lag bound may remove (spared successes left out):
        what a caller's own staleness bound evicts through."""
        s = np.unique(np.asarray(slots, dtype=np.int64).ravel())
        keep = [i for i in s.tolist() if self._seq[i] >= 0 and not self._spared(self._episodes[i])]
        return np.asarray(keep, dtype=np.int64)

    def prune(self, current_version: int) -> int:
        """In ``"drop"`` mode remove episodes older than the lag bound; returns how many.
        Pops a version-ordered heap: O(log n) per episode removed, not a scan; a spared
        success leaves the heap too (it is never pruned later)."""
        if self.max_lag is None or self.lag_mode != "drop":
            return 0
        heap, old = self._by_version, []
        while heap and current_version - heap[0][0] > self.max_lag:
            _, seq, slot = heapq.heappop(heap)
            if self._seq[slot] != seq:  # already evicted or removed
                continue
            if not self._spared(self._episodes[slot]):
                old.append(slot)
        if old:
            self.remove(old)
        return len(old)

    def _write(self, slots: IntArray, priorities: FloatArray, *, measured: bool) -> None:
        """Slots must be distinct and stored, and their old mass already out of _psum."""
        p = np.maximum(priorities, 0.0) + self.eps  # ε: nothing becomes unsampleable
        self._priority[slots] = p
        self._psum += float(p.sum())
        self._clock += 1
        self._scored_at[slots] = self._clock
        for i in slots.tolist():  # newest score last: the front is the stalest
            self._score_order[i] = None
            self._score_order.move_to_end(i)
        self._measured[slots] = measured
        pa = p**self._alpha
        if slots.size == 1:  # the common add(): a plain walk beats numpy's per-call cost
            self._tree.update(int(slots[0]), float(pa[0]))
        else:
            self._tree.update_batch(slots, pa)
        self._min_tree.update_batch(slots, np.where(pa > 0, pa, np.inf))  # 0: never drawn
        self._max_measured.update_batch(slots, p if measured else self._max_measured.identity)

    def _rebuild(self) -> None:
        stored = self._seq >= 0
        pa = np.where(stored, self._priority**self._alpha, 0.0)
        self._tree.set_all(pa)
        self._min_tree.set_all(np.where(stored & (pa > 0), pa, np.inf))
        self._max_measured.set_all(np.where(stored & self._measured, self._priority, -np.inf))

    # -- sampling ---------------------------------------------------------------
    def probabilities(self, alpha: float) -> FloatArray:
        """P(τ) for every slot under exponent ``alpha`` (0 for empty slots)."""
        self._set_alpha(alpha)
        return np.asarray(self._tree.leaves()) / self._tree.total

    def sample(self, batch: int, alpha: float, beta: float, *,
               current_version: int | None = None) -> ReplaySample:
        """``batch`` episodes drawn ∝ p^α with IS weights for exponent ``beta``.

        α = 0 is uniform sampling (the DigiRL baseline), β = 0 turns weights off."""
        n = len(self)
        if n == 0:
            raise ValueError("cannot sample from an empty replay buffer")
        self._set_alpha(alpha)
        slots = self._tree.sample(batch, self.rng)
        total = self._tree.total
        probs = self._priority[slots] ** alpha / total
        p_min = self._min_tree.root / total  # the least likely drawable episode
        weights = (probs / p_min) ** (-beta)  # = (N·P)^−β / max (N·P)^−β
        version = self._version[slots].max() if current_version is None else current_version
        lags = np.maximum(version - self._version[slots], 0)
        if self.max_lag is not None and self.lag_mode == "downweight":
            weights = weights * self.lag_decay ** np.maximum(lags - self.max_lag, 0)
        return ReplaySample(slots, [self.episode(int(i)) for i in slots], weights, probs,
                            lags.astype(np.int64))

    def _set_alpha(self, alpha: float) -> None:
        if not alpha >= 0.0:
            raise ValueError(f"priority exponent α must be ≥ 0, got {alpha}")
        if alpha != self._alpha:
            self._alpha = alpha
            self._rebuild()
