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


def test_a_port_taken_between_probe_and_bind_starts_the_child_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Another process binds a port of the probed range before the child does (the race
    that failed one of six bench runs started side by side): the child is started again
    on fresh ports instead of the run failing."""
    import socket

    import bench._common as common

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    probed = iter([port, common.free_base_port(2)])  # the first range holds a taken port
    bases: list[int] = []

    def probe(n: int) -> int:
        bases.append(next(probed))
        return bases[-1]

    monkeypatch.setattr(common, "free_base_port", probe)
    try:
        with phones_in_child(2) as state:
            assert len(state["phones"]) == 2
    finally:
        taken.close()
    assert bases[0] == port and len(bases) == 2  # refused once, then served


def test_a_port_race_that_persists_fails_with_the_childs_reason(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    import bench._common as common

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    monkeypatch.setattr(common, "PORT_TRIES", 2)
    monkeypatch.setattr(common, "free_base_port", lambda n: taken.getsockname()[1])
    try:
        with pytest.raises(RuntimeError, match="cannot listen on ports"), phones_in_child(1):
            pass
    finally:
        taken.close()
