"""End to end against real brokers: mosquitto subprocess and the amqtt fallback."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import Callable
from pathlib import Path

import aiomqtt

from distrl_sdk.wire import (
    DecodedTrajectory,
    DeviceStatus,
    Message,
    Reassembler,
    encode_envelope,
    parse_message,
    split_chunks,
    topics,
)
from farm.broker import EmbeddedBroker
from farm.transport import Publisher, SeenIds, TrajectorySubscriber, parse_broker_url
from farm.transport.publisher import STOPPED
from tests.transport.conftest import fast_backoff, make_traj, png_frame

MB = 1024 * 1024


def _pub(broker: EmbeddedBroker, tmp: Path, **kw: object) -> Publisher:
    return Publisher(broker.url, "farm1", tmp / "spool", backoff=fast_backoff(),
                     resend_after_s=kw.pop("resend_after_s", 3.0),  # type: ignore[arg-type]
                     **kw)  # type: ignore[arg-type]


def _sub(broker: EmbeddedBroker, got: list[DecodedTrajectory], **kw: object
         ) -> TrajectorySubscriber:
    kw.setdefault("client_id", "learner-test")
    return TrajectorySubscriber(broker.url, handler=got.append, backoff=fast_backoff(),
                                **kw)  # type: ignore[arg-type]


async def _until(pred: Callable[[], bool], timeout: float = 20.0) -> None:
    async with asyncio.timeout(timeout):
        while not pred():  # noqa: ASYNC110 - polling a counter in a test
            await asyncio.sleep(0.02)


async def test_multi_mb_trajectories_exactly_once(broker: EmbeddedBroker, tmp_path: Path) -> None:
    got: list[DecodedTrajectory] = []
    blobs = {i: os.urandom(int(2.5 * MB)) for i in range(4)}
    async with _sub(broker, got) as sub:
        await sub.connected.wait()
        async with _pub(broker, tmp_path) as pub:
            ids = []
            for i in range(4):
                ids.append(await pub.publish(
                    make_traj(), frames={0: png_frame(seed=i + 1)},
                    extra={"blob": ("application/octet-stream", blobs[i])}))
            assert await pub.wait_acked(30)
            assert len(pub.spool) == 0
            # acked files are unlinked on a worker thread, just after the in-memory entry
            await _until(lambda: not any((tmp_path / "spool").iterdir()), timeout=5)
        await _until(lambda: len(got) == 4)
    assert sorted(d.msg.id for d in got) == sorted(ids)
    for d in got:
        assert d.attachments["frame/0"][:2] == b"\xff\xd8"  # JPEG
        assert d.msg.steps[0].frame == "frame/0"
        assert d.msg.steps[0].log_prob == -1.25
    assert {len(d.attachments["blob"]) for d in got} == {int(2.5 * MB)}
    assert {d.attachments["blob"] for d in got} == set(blobs.values())
    assert sub.rejects.total() == 0


async def test_broker_killed_mid_run(broker: EmbeddedBroker, tmp_path: Path) -> None:
    got: list[DecodedTrajectory] = []
    async with _sub(broker, got) as sub, _pub(broker, tmp_path, resend_after_s=1.5) as pub:
        await sub.connected.wait()
        ids = [await pub.publish(make_traj(), extra={"b": ("x/y", os.urandom(MB // 2))})
               for _ in range(10)]
        await _until(lambda: len(got) >= 3)
        await broker.restart(hard=True)  # mid-run: some trajectories still in flight
        ids += [await pub.publish(make_traj(), extra={"b": ("x/y", os.urandom(MB // 2))})
                for _ in range(10)]
        assert await pub.wait_acked(30)
        await _until(lambda: len(got) == 20)
        await asyncio.sleep(0.3)
    assert sorted(d.msg.id for d in got) == sorted(ids)  # nothing lost, nothing twice
    assert pub.stats.connects >= 2


async def test_subscriber_away(broker: EmbeddedBroker, tmp_path: Path) -> None:
    got: list[DecodedTrajectory] = []
    sub = _sub(broker, got)
    await sub.start()
    await sub.connected.wait()
    await sub.stop()  # the learner goes away; its persistent session stays (mosquitto)
    async with _pub(broker, tmp_path, resend_after_s=1.0) as pub:
        ids = [await pub.publish(make_traj(), extra={"b": ("x/y", os.urandom(300_000))})
               for _ in range(15)]
        await asyncio.sleep(0.5)
        assert len(pub.spool) == 15  # nobody acked
        sub2 = _sub(broker, got)
        async with sub2:
            assert await pub.wait_acked(30)
            await asyncio.sleep(0.3)
    assert sorted(d.msg.id for d in got) == sorted(ids)


async def test_hostile_messages_counted_and_survived(broker: EmbeddedBroker,
                                                     tmp_path: Path) -> None:
    got: list[DecodedTrajectory] = []
    async with _sub(broker, got, reassembler=Reassembler(max_pending_messages=16)) as sub:
        await sub.connected.wait()
        addr = parse_broker_url(broker.url)
        async with aiomqtt.Client(**addr.client_kwargs(), identifier="evil") as evil:
            t = topics.traj("farm1", "evil1")
            await evil.publish(t, b"{not json", qos=1)  # bad chunk
            await evil.publish(t, b"\x00" * (2 * MB), qos=1)  # huge
            good = split_chunks("evil2", b"DRT1" + b"\x00" * 10)
            await evil.publish(topics.traj("farm1", "evil2"), good[0], qos=1)  # bad payload
            # wrong sha: flip a byte of chunk data
            chunks = split_chunks("evil3", os.urandom(1_500_000))
            bad = bytearray(chunks[1])
            bad[-1] ^= 0xFF
            for c in (chunks[0], bytes(bad)):
                await evil.publish(topics.traj("farm1", "evil3"), c, qos=1)
            # a chunk flood: many partial messages (first of 3 chunks each)
            for i in range(40):
                c = split_chunks(f"flood{i}", os.urandom(3000), max_bytes=1536)[0]
                await evil.publish(topics.traj("farm1", f"flood{i}"), c, qos=1)
            # wrong schema on a traj topic, inside a valid chunk
            env = encode_envelope(DeviceStatus(device_id="d", state="ready"), farm_id="farm1")
            await evil.publish(topics.traj("farm1", "evil4"),
                               split_chunks("evil4", b"DRT1" + len(env).to_bytes(4, "big")
                                            + env)[0], qos=1)
        async with _pub(broker, tmp_path) as pub:
            tid = await pub.publish(make_traj())
            assert await pub.wait_acked(20)
        await _until(lambda: len(got) == 1)
    assert got[0].msg.id == tid
    r = sub.rejects
    assert r["bad_chunk"] >= 1
    assert r["too_large"] >= 1
    assert r["bad_json"] >= 1  # a payload with the magic but an empty header
    assert r["sha_mismatch"] == 1
    assert r["pending_full"] == 40 - 16
    assert r["wrong_schema"] == 1


async def test_retained_status_and_last_will(broker: EmbeddedBroker, tmp_path: Path) -> None:
    pub = _pub(broker, tmp_path, controller_id="ctl")
    await pub.start()
    await pub.connected.wait()
    await pub.set_status(DeviceStatus(device_id="emu-1", state="busy"))
    # a crash: drop the TCP connection without DISCONNECT so the broker fires the will
    assert pub._client is not None
    pub._stopping = True  # no reconnect
    sock = pub._client._client.socket()
    assert isinstance(sock, socket.socket)
    sock.shutdown(socket.SHUT_RDWR)
    await asyncio.sleep(0.5)
    addr = parse_broker_url(broker.url)
    seen: dict[str, str] = {}
    async with aiomqtt.Client(**addr.client_kwargs(), identifier="tui") as c:
        await c.subscribe("distrl/v1/farm1/status/+", qos=1)
        async with asyncio.timeout(5):
            async for m in c.messages:
                p = parse_message(str(m.topic), m.payload)
                assert isinstance(p, Message) and isinstance(p.body, DeviceStatus)
                seen[p.body.device_id] = p.body.state
                if len(seen) == 2 and seen.get("ctl") == "offline":
                    break
    await pub.stop(graceful=False)
    assert seen == {"ctl": "offline", "emu-1": "busy"}


async def test_a_graceful_stop_clears_device_statuses(broker: EmbeddedBroker,
                                                      tmp_path: Path) -> None:
    """A farm that stops leaves no devices behind: watchers see them go offline, the
    retained statuses are cleared (a later subscriber gets none), and the farm's own
    retained status says it stopped on purpose."""
    addr = parse_broker_url(broker.url)
    live: list[tuple[str, bytes]] = []
    async with aiomqtt.Client(**addr.client_kwargs(), identifier="tui-live") as watcher:
        await watcher.subscribe("distrl/v1/farm1/status/+", qos=1)
        pub = _pub(broker, tmp_path, controller_id="ctl")
        await pub.start()
        await pub.connected.wait()
        await pub.set_status(DeviceStatus(device_id="emu-1", state="busy"))
        await pub.set_status(DeviceStatus(device_id="emu-2", state="ready"))
        await pub.stop()
        async with asyncio.timeout(5):
            async for m in watcher.messages:
                live.append((str(m.topic).rsplit("/", 1)[1], bytes(m.payload)))  # type: ignore[arg-type]
                if sum(1 for _d, p in live if p == b"") == 2 and live[-1][0] == "ctl":
                    break
    states = {d: parse_message(f"distrl/v1/farm1/status/{d}", p).body.state  # type: ignore[union-attr]
              for d, p in live if p}
    assert states == {"emu-1": "offline", "emu-2": "offline", "ctl": "offline"}
    retained: dict[str, bytes] = {}
    async with aiomqtt.Client(**addr.client_kwargs(), identifier="tui-later") as later:
        await later.subscribe("distrl/v1/farm1/status/+", qos=1)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(1.0):  # retained messages come at once, or never
                async for m in later.messages:
                    retained[str(m.topic).rsplit("/", 1)[1]] = bytes(m.payload)  # type: ignore[arg-type]
    assert set(retained) == {"ctl"}
    ctl = parse_message("distrl/v1/farm1/status/ctl", retained["ctl"])
    assert isinstance(ctl, Message) and isinstance(ctl.body, DeviceStatus)
    assert (ctl.body.state, ctl.body.detail) == ("offline", STOPPED)


async def test_farm_restart_replays_spool(broker: EmbeddedBroker, tmp_path: Path) -> None:
    async with _pub(broker, tmp_path) as pub:  # nobody listening: nothing acked
        ids = [await pub.publish(make_traj()) for _ in range(5)]
    assert len(pub.spool) == 5
    got: list[DecodedTrajectory] = []
    async with _sub(broker, got, client_id="learner-fresh"), _pub(broker, tmp_path) as pub2:
        assert len(pub2.spool) == 5  # reloaded from disk
        assert await pub2.wait_acked(20)
        await _until(lambda: len(got) == 5)
    assert sorted(d.msg.id for d in got) == sorted(ids)


def test_seen_ids_forget_by_count_but_remember_the_age(tmp_path: Path) -> None:
    seen = SeenIds(capacity=3, path=tmp_path / "seen.txt")
    for i, at in enumerate([10.0, 20.0, 30.0, 40.0, 50.0]):
        seen.add(f"t{i}", at)
    seen.add("no-age")  # an old farm's trajectory: no ended_at
    assert list(seen) == ["t3", "t4", "no-age"] and seen.watermark == 30.0
    assert seen.forgotten(30.0) and seen.forgotten(5.0) and not seen.forgotten(30.5)
    assert not seen.forgotten(None)  # no age: only the id can tell
    again = SeenIds(capacity=3, path=tmp_path / "seen.txt")  # reloaded, compacted or not
    assert list(again) == list(seen) and again.watermark == 30.0
    restored = SeenIds(capacity=3)
    restored.load_text(seen.dump())
    assert restored.items() == seen.items() and restored.watermark == 30.0


async def test_a_duplicate_that_outran_the_dedupe_window_is_refused(
        broker: EmbeddedBroker, tmp_path: Path) -> None:
    """The learner remembers 100,000 ids; a trajectory redelivered after more than that
    many newer ones was accepted again. Now anything that ended before the oldest id
    still remembered is refused as too_old (and acked, so the farm lets go of it)."""
    got: list[DecodedTrajectory] = []
    seen = SeenIds(capacity=2)
    msgs = [make_traj().model_copy(update={"ended_at": 1000.0 + i}) for i in range(3)]
    async with _sub(broker, got, seen=seen) as sub, _pub(broker, tmp_path) as pub:
        for m in msgs:
            await pub.publish(m)
        assert await pub.wait_acked(20)
        await _until(lambda: len(got) == 3)
        # the spool may deliver them in any order: the first to arrive is forgotten
        gone = [m for m in msgs if m.id not in seen]
        assert len(gone) == 1 and seen.watermark == gone[0].ended_at
        await pub.publish(gone[0])  # it again, long after its id was forgotten
        assert await pub.wait_acked(20)  # acked: the farm's spool lets go of it
        await _until(lambda: sub.rejects["too_old"] == 1)
        assert len(got) == 3 and len(pub.spool) == 0
