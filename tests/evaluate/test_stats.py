"""Wilson intervals and the suite mean, against values computed independently."""

from __future__ import annotations

import math

import pytest

from farm.evaluate.stats import Tally, TaskScore, suite_mean, wilson


def test_wilson_matches_published_values() -> None:
    # Newcombe (1998), Table I, method 3: 81/263 → 0.2553–0.3662; 15/148 → 0.0624–0.1605
    lo, hi = wilson(81, 263)
    assert (round(lo, 4), round(hi, 4)) == (0.2553, 0.3662)
    lo, hi = wilson(15, 148)
    assert (round(lo, 4), round(hi, 4)) == (0.0624, 0.1605)
    # 0/10 and 10/10: one end exactly at the bound, the other at z²/(n+z²)
    z2 = 1.959963984540054 ** 2
    assert wilson(0, 10) == pytest.approx((0.0, z2 / (10 + z2)))
    assert wilson(10, 10) == pytest.approx((10 / (10 + z2), 1.0))
    assert wilson(0, 10)[0] == 0.0 and wilson(10, 10)[1] == 1.0
    assert wilson(0, 0) == (0.0, 1.0)


def test_interval_narrows_with_more_episodes() -> None:
    widths = [wilson(n // 2, n)[1] - wilson(n // 2, n)[0] for n in (4, 16, 64, 256)]
    assert widths == sorted(widths, reverse=True)
    assert widths[-1] < 0.13


def test_suite_mean_weights_tasks_equally_and_pools_equal_counts() -> None:
    a, b = TaskScore("a", episodes=4, successes=4), TaskScore("b", episodes=4, successes=0)
    mean, lo, hi = suite_mean([a, b])
    assert mean == 0.5
    assert (lo, hi) == pytest.approx(wilson(4, 8))  # equal n: the pooled interval
    # unequal n: still the mean over tasks (pooling would say 10/12 ≈ 0.83)
    c, d = TaskScore("c", episodes=10, successes=10), TaskScore("d", episodes=2, successes=0)
    mean, lo, hi = suite_mean([c, d])
    assert mean == 0.5
    n_eff = 4 / (1 / 10 + 1 / 2)
    assert (lo, hi) == pytest.approx(wilson(0.5 * n_eff, n_eff))
    assert suite_mean([TaskScore("e")]) == (0.0, 0.0, 1.0)  # nothing scored


def test_tally_scores_only_agent_outcomes_and_names_the_metrics() -> None:
    t = Tally()
    t.expect(["x.a", "x.b", "x.c"])
    for status, steps in (("success", 3), ("failure", 5), ("aborted", 1), ("errored", 0)):
        t.add("x.a", status, steps)
    t.add("x.b", "success", 2)
    assert (t.tasks["x.a"].episodes, t.tasks["x.a"].aborted, t.tasks["x.a"].errored) == (2, 1, 1)
    assert t.mean_steps() == pytest.approx(10 / 3)
    s = t.scalars(policy_version=7)
    assert s["eval/success_rate"] == pytest.approx(0.75)  # (0.5 + 1) / 2; x.c not scored
    assert s["eval/policy_version"] == 7 and s["eval/episodes"] == 3
    assert s["eval/task/x.a"] == 0.5 and s["eval/task/x.b"] == 1.0 and "eval/task/x.c" not in s
    assert s["eval/ci_low"] < 0.75 < s["eval/ci_high"]
    assert all(math.isfinite(v) for v in s.values())
    assert Tally.from_dict(t.as_dict()).scalars(7) == s
