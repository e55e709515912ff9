"""bench/_common.py: the benchmarks' sim phones in a child process."""

from __future__ import annotations

import os

import pytest

from bench._common import phones_in_child


def test_phones_in_child_serves_phones_and_stops_them() -> None:
    with phones_in_child(1) as state:
        pid = state["pid"]
        assert [p["serial"] for p in state["phones"]] and os.path.exists(f"/proc/{pid}")
    assert not os.path.exists(f"/proc/{pid}")  # terminated and reaped


def test_a_child_that_fails_to_start_says_why() -> None:
    with pytest.raises(RuntimeError, match=r"(?s)sim serve failed: .*no-such-profile"), \
            phones_in_child(1, profile="no-such-profile"):
        pass
