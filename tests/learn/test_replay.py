"""Sum-tree invariants and DPER's prioritized replay (numpy only, no torch)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distrl_sdk.learn.api import EpisodeRecord, StepRecord
from distrl_sdk.learn.replay import PrioritizedReplay, SumTree


def episode(i: int, version: int = 0) -> EpisodeRecord:
    step = StepRecord(obs={"i": i}, choice={"a": 0}, log_mu=-1.0, reward=0.0,
                      policy_version=version)
    return EpisodeRecord(id=f"ep{i}", task="t", instruction="do it", steps=[step],
                         success=False, reward=0.0)


def check_tree(tree: SumTree, expected: np.ndarray) -> None:
    """Every inner node is the sum of its children; leaves are what was written."""
    raw = tree._tree
    size = len(raw) // 2
    assert np.array_equal(raw[size : size + tree.capacity], expected)
    assert np.all(raw[size + tree.capacity :] == 0)
    for node in range(1, size):
        assert raw[node] == pytest.approx(raw[2 * node] + raw[2 * node + 1], rel=1e-12, abs=1e-12)
    assert tree.total == pytest.approx(expected.sum(), rel=1e-9, abs=1e-12)


updates = st.lists(st.tuples(st.integers(0, 40), st.floats(0.0, 100.0)), max_size=60)


@settings(max_examples=80, deadline=None)
@given(capacity=st.integers(1, 41), ops=updates, batched=st.booleans())
def test_sum_tree_invariants(capacity: int, ops: list[tuple[int, float]], batched: bool) -> None:
    tree = SumTree(capacity)
    expected = np.zeros(capacity)
    ops = [(i % capacity, p) for i, p in ops]
    if batched and ops:
        idx, pri = zip(*ops, strict=True)
        tree.update_batch(list(idx), list(pri))
        for i, p in ops:  # last write wins, as for sequential updates
            expected[i] = p
    else:
        for i, p in ops:
            tree.update(i, p)
            expected[i] = p
    check_tree(tree, expected)
    if tree.total > 0:
        cum = np.concatenate([[0.0], np.cumsum(expected)])
        values = np.linspace(0, tree.total, 57, endpoint=False)
        leaves = tree.find(values)
        assert np.all(expected[leaves] > 0)  # empty leaves own no mass
        assert np.all(cum[leaves] <= values + 1e-9)
        assert np.all(values < cum[leaves + 1] + 1e-9)


@settings(max_examples=30, deadline=None)
@given(pri=st.lists(st.floats(0.0, 10.0), min_size=1, max_size=50))
def test_set_all_equals_updates(pri: list[float]) -> None:
    a, b = SumTree(len(pri)), SumTree(len(pri))
    a.set_all(pri)
    for i, p in enumerate(pri):
        b.update(i, p)
    assert np.allclose(a._tree, b._tree)


def test_sum_tree_rejects_bad_input() -> None:
    tree = SumTree(4)
    with pytest.raises(IndexError):
        tree.update(4, 1.0)
    with pytest.raises(ValueError):
        tree.update(0, -1.0)
    with pytest.raises(ValueError):
        tree.update_batch([0, 1], [1.0, float("nan")])
    with pytest.raises(ValueError, match="all zero"):
        tree.sample(3, np.random.default_rng(0))


# chi-square critical value at p = 0.001 for 9 degrees of freedom (tables)
CHI2_999_DF9 = 27.877


def chi_square(counts: np.ndarray, probs: np.ndarray) -> float:
    expected = probs * counts.sum()
    return float(((counts - expected) ** 2 / expected).sum())


@pytest.mark.parametrize("stratified", [True, False])
def test_sampling_frequencies_match_priorities(stratified: bool) -> None:
    """Counts over many draws fit P(i) = p_i^α / Σ p^α; they reject the uniform law."""
    pri = np.arange(1.0, 11.0)
    alpha = 0.7
    tree = SumTree(10)
    tree.update_batch(np.arange(10), pri**alpha)
    rng = np.random.default_rng(1234)
    draws = np.concatenate([tree.sample(64, rng, stratified=stratified) for _ in range(500)])
    counts = np.bincount(draws, minlength=10).astype(float)
    probs = pri**alpha / (pri**alpha).sum()
    assert chi_square(counts, probs) < CHI2_999_DF9
    assert chi_square(counts, np.full(10, 0.1)) > 10 * CHI2_999_DF9


def test_replay_samples_by_priority_and_weights_by_formula() -> None:
    replay = PrioritizedReplay(16, eps=0.0, seed=7)
    pri = np.array([0.5, 1.0, 2.0, 4.0, 8.0, 0.25])
    slots = [replay.add(episode(i), float(p)) for i, p in enumerate(pri)]
    assert slots == list(range(6))
    alpha, beta = 0.6, 0.4
    counts = np.zeros(6)
    for _ in range(400):
        s = replay.sample(32, alpha, beta)
        counts += np.bincount(s.indices, minlength=6)
        n, p = 6, pri**alpha / (pri**alpha).sum()
        w = (n * p[s.indices]) ** (-beta)
        assert np.allclose(s.probs, p[s.indices])
        assert np.allclose(s.weights, w / (n * p.min()) ** (-beta))  # normalised by the max
        assert s.weights.max() <= 1.0 + 1e-12
        assert [e.id for e in s.episodes] == [f"ep{i}" for i in s.indices]
    probs = pri**alpha / (pri**alpha).sum()
    df5_999 = 20.515
    assert chi_square(counts, probs) < df5_999
    # α = 0: uniform, β = 0: weights off (the DigiRL baseline's setting)
    s = replay.sample(64, 0.0, 0.0)
    assert np.allclose(s.probs, 1 / 6) and np.all(s.weights == 1.0)


def test_update_priorities_and_new_episodes_enter_at_the_max() -> None:
    replay = PrioritizedReplay(8, eps=0.0)
    a = replay.add(episode(0))
    assert a is not None and replay.priorities([a])[0] == 1.0  # first: max so far is 1
    replay.update_priorities([a], [5.0])
    b = replay.add(episode(1))
    assert b is not None and replay.priorities([b])[0] == 5.0
    replay.update_priorities([a, b], [0.0, 3.0])
    s = replay.sample(100, 1.0, 1.0)
    assert set(s.indices.tolist()) == {b}  # a zero priority is never drawn
    with pytest.raises(ValueError):
        replay.update_priorities([a], [-1.0])


def test_full_buffer_evicts_the_oldest() -> None:
    replay = PrioritizedReplay(3)
    for i in range(5):
        replay.add(episode(i), 1.0)
    assert len(replay) == 3
    assert sorted(replay.episode(int(s)).id for s in replay.filled()) == ["ep2", "ep3", "ep4"]
    assert [e.episode.id for e in replay.entries()] == ["ep2", "ep3", "ep4"]


def test_lag_bound_drop_mode() -> None:
    replay = PrioritizedReplay(10, max_lag=3, lag_mode="drop")
    assert replay.add(episode(0, version=1), current_version=5) is None  # lag 4 > 3: refused
    for i, v in enumerate([2, 3, 4, 5]):
        assert replay.add(episode(i, version=v), current_version=5) is not None
    assert sorted(replay.lags(5).tolist()) == [0, 1, 2, 3]
    assert replay.prune(7) == 2  # versions 2 and 3 are now 5 and 4 behind
    assert sorted(replay.lags(7).tolist()) == [2, 3]
    s = replay.sample(50, 0.0, 0.0, current_version=7)
    assert s.lags.max() <= 3 and np.all(s.weights == 1.0)


def test_keep_successes_spares_old_successes_from_the_lag_bound() -> None:
    """With ``keep_successes`` an old success is neither refused nor pruned (only the
    capacity removes it); old failures still are; without it both leave."""
    def won(i: int, version: int) -> EpisodeRecord:
        return dataclasses.replace(episode(i, version), success=True, reward=1.0)

    for keep in (False, True):
        replay = PrioritizedReplay(4, max_lag=3, keep_successes=keep)
        late = replay.add(won(9, version=0), current_version=10)  # lag 10 > K = 3
        assert (late is not None) == keep
        replay.add(episode(0, version=2), current_version=2)
        replay.add(won(1, version=2), current_version=2)
        assert replay.prune(10) == (2 if not keep else 1)  # the failure (and the success)
        ids = sorted(replay.episode(int(s)).id for s in replay.filled())
        assert ids == (["ep1", "ep9"] if keep else [])
        assert replay.prune(50) == 0  # a spared success is never pruned later
    for i in range(4):  # the capacity still evicts the oldest, successes included
        replay.add(episode(10 + i, version=50), current_version=50)
    assert sorted(replay.episode(int(s)).id for s in replay.filled()) == \
        ["ep10", "ep11", "ep12", "ep13"]


def test_lag_bound_downweight_mode() -> None:
    replay = PrioritizedReplay(10, max_lag=2, lag_mode="downweight", lag_decay=0.5)
    for i, v in enumerate([0, 3, 5]):
        replay.add(episode(i, version=v), 1.0, current_version=0)
    assert replay.prune(100) == 0  # down-weighting never removes
    s = replay.sample(200, 0.0, 0.0, current_version=5)
    expected = {5: 0.5**3, 2: 1.0, 0: 1.0}  # lag 5: 3 beyond K; lags 2 and 0: within
    for lag, w in zip(s.lags.tolist(), s.weights.tolist(), strict=True):
        assert w == pytest.approx(expected[lag])


def test_changing_alpha_rebuilds_the_tree() -> None:
    replay = PrioritizedReplay(4, eps=0.0)
    for i, p in enumerate([1.0, 4.0, 9.0]):
        replay.add(episode(i), p)
    assert np.allclose(replay.probabilities(0.5)[:3], np.array([1, 2, 3]) / 6)
    assert np.allclose(replay.probabilities(1.0)[:3], np.array([1, 4, 9]) / 14)
    assert replay.probabilities(1.0)[3] == 0.0


def test_stalest_and_restore_round_trip() -> None:
    replay = PrioritizedReplay(6, seed=3)
    for i in range(5):
        replay.add(episode(i), float(i + 1))
    replay.update_priorities([0, 1], [2.0, 2.0])
    assert sorted(replay.stalest(3).tolist()) == [2, 3, 4]
    copy = PrioritizedReplay(6, seed=99)
    copy.restore(list(replay.entries()), replay.state_meta())
    a, b = replay.sample(20, 0.6, 0.5), copy.sample(20, 0.6, 0.5)
    assert np.array_equal(a.indices, b.indices) and np.allclose(a.weights, b.weights)
    with pytest.raises(ValueError, match="capacity"):
        PrioritizedReplay(7).restore([], replay.state_meta())


@settings(max_examples=60, deadline=None)
@given(capacity=st.integers(1, 8),
       ops=st.lists(st.one_of(st.just(("add", 0)), st.tuples(st.just("remove"),
                                                              st.integers(0, 7))),
                    max_size=40))
def test_add_remove_keep_a_consistent_circular_buffer(capacity: int,
                                                      ops: list[tuple[str, int]]) -> None:
    """Against a plain model: free slots are reused lowest first; when full the oldest
    stored episode is evicted; len, filled slots and the tree's mass agree."""
    replay = PrioritizedReplay(capacity, eps=0.0)
    model: dict[int, int] = {}  # slot → episode number
    n = 0
    for op, arg in ops:
        if op == "add":
            free = [s for s in range(capacity) if s not in model]
            expect = min(free) if free else min(model, key=lambda s: model[s])
            assert replay.add(episode(n), 1.0) == expect
            model[expect] = n
            n += 1
        else:
            replay.remove([arg % capacity])
            model.pop(arg % capacity, None)
        assert len(replay) == len(model)
        assert sorted(replay.filled().tolist()) == sorted(model)
        assert {s: replay.episode(s).id for s in model} == {s: f"ep{i}" for s, i in model.items()}
        assert replay._tree.total == pytest.approx(len(model))


def test_new_episodes_enter_at_the_highest_measured_priority_which_decays() -> None:
    """The entry level is the max over scored episodes now stored — it falls when the
    episode that set it is re-scored lower or leaves, unlike an all-time maximum."""
    replay = PrioritizedReplay(8, eps=0.0)
    a, b = replay.add(episode(0)), replay.add(episode(1))
    assert replay.max_priority == 1.0 and not replay.measured([a, b]).any()
    replay.update_priorities([a, b], [9.0, 2.0])
    assert replay.max_priority == 9.0
    c = replay.add(episode(2))
    assert replay.priorities([c])[0] == 9.0 and not replay.measured([c])[0]
    replay.update_priorities([a], [0.5])  # measured lower: the entry level follows
    assert replay.max_priority == 2.0  # c's unmeasured 9.0 does not hold it up
    replay.remove([b])
    assert replay.max_priority == 0.5
    d = replay.add(episode(3))
    assert replay.priorities([d])[0] == 0.5


@settings(max_examples=60, deadline=None)
@given(ops=st.lists(st.one_of(
    st.tuples(st.just("add"), st.integers(0, 9), st.none()),
    st.tuples(st.just("score"), st.integers(0, 5), st.floats(0.0, 20.0)),
    st.tuples(st.just("remove"), st.integers(0, 5), st.none()),
    st.tuples(st.just("prune"), st.integers(0, 12), st.none())), max_size=50))
def test_log_n_bookkeeping_matches_a_brute_force_scan(
        ops: list[tuple[str, int, float | None]]) -> None:
    """Running sum, min/max trees, version heap and scoring order against O(n) scans."""
    replay = PrioritizedReplay(6, eps=0.0, max_lag=3)
    n = 0
    for op, arg, val in ops:
        if op == "add":
            replay.add(episode(n, version=arg))
            n += 1
        elif op == "score" and arg < 6 and replay.filled().size:
            slot = int(replay.filled()[arg % replay.filled().size])
            replay.update_priorities([slot], [val])
        elif op == "remove":
            replay.remove([arg])
        elif op == "prune":
            s = replay.filled()
            expect = int((arg - replay._version[s] > 3).sum())
            assert replay.prune(arg) == expect
        s = replay.filled()
        pri = replay.priorities(s)
        assert replay.mean_priority() == pytest.approx(pri.mean() if s.size else 0.0)
        scored = pri[replay.measured(s)]
        assert replay.max_priority == (scored.max() if scored.size else 1.0)
        order = s[np.argsort(replay._scored_at[s], kind="stable")]
        assert replay.stalest(3).tolist() == order[:3].tolist()
        if s.size and pri.max() > 0:
            smp = replay.sample(4, 1.0, 1.0)
            positive = pri[pri > 0]
            assert np.allclose(smp.weights, (replay.priorities(smp.indices) / positive.min())
                               ** -1.0)


def test_random_slots_are_stored_slots() -> None:
    replay = PrioritizedReplay(40, seed=1)
    for i in range(30):
        replay.add(episode(i))
    replay.remove([0, 5, 7])
    assert sorted(replay.random_slots(100).tolist()) == replay.filled().tolist()  # ≤ n: all
    drawn = replay.random_slots(10)
    assert drawn.size == 10 and set(drawn.tolist()) <= set(replay.filled().tolist())
