"""Farm side: publish trajectories at QoS 1 through a disk spool, until the learner acks.

Flow: :meth:`Publisher.publish` encodes the trajectory (JSON header + JPEG frames), writes
it to the :class:`~farm.transport.spool.Spool` (fsync) and wakes the sender (sending
starts while the write is under way; ``publish`` returns once the entry is durable). The sender
publishes every unacked entry as ≤ 1 MB chunks on ``distrl/v1/<farm>/traj/<id>``; after
each (re)connect it replays the whole spool, and it re-sends entries still unacked after
``resend_after_s`` (a learner that lost its session). The learner's ``TrajectoryAck`` on
``distrl/v1/<farm>/ack`` deletes entries. Reconnects back off exponentially.

The connection carries a last will: the retained status of ``controller_id`` becomes
``offline``. :meth:`set_status` publishes retained device statuses (re-sent on reconnect);
a graceful :meth:`stop` clears them.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import time
from collections import Counter, deque
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import aiomqtt
from PIL import Image

from distrl_sdk.wire import (
    FARM_STATUS_ID,
    MAX_CHUNK_BYTES,
    DeviceStatus,
    FrameOptions,
    Message,
    Rejected,
    TrajectoryAck,
    TrajectoryMsg,
    encode_envelope,
    encode_trajectory,
    parse_message,
    split_chunks,
    topics,
)
from distrl_sdk.wire.broker_url import parse_broker_url
from distrl_sdk.wire.signing import SigningKey, TrustedKeys, Verdict, check_envelope
from farm.aio import cancel_and_wait
from farm.transport._conn import Backoff
from farm.transport.reject_log import RejectLog
from farm.transport.spool import OnFull, Spool

__all__ = ["STOPPED", "Publisher", "PublisherStats"]

#: the detail of a farm's own retained status after it stopped cleanly
STOPPED = "stopped"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# One hashing thread for all publishers, FIFO: trajectories handed over together are
# hashed one after the other, so the first can be on the wire while the rest are hashed
# (a pool would hash them all at once, competing for the cores with the sender, the
# broker and the learner, and delay the first send until nearly all are done).
_HASHER = ThreadPoolExecutor(1, thread_name_prefix="distrl-sha256")

log = logging.getLogger(__name__)


@dataclass
class PublisherStats:
    spooled: int = 0
    sent: int = 0  # trajectory sends (first sends and replays)
    resent: int = 0
    chunks: int = 0
    bytes: int = 0
    acked: int = 0
    connects: int = 0
    errors: int = 0


class Publisher:
    def __init__(self, url: str, farm_id: str, spool: Spool | str | os.PathLike[str], *,
                 controller_id: str = FARM_STATUS_ID, client_id: str | None = None,
                 chunk_bytes: int = MAX_CHUNK_BYTES, frame_opts: FrameOptions | None = None,
                 resend_after_s: float = 30.0, max_inflight: int = 64,
                 backoff: Backoff | None = None, keepalive: int = 15,
                 spool_max_bytes: int = 2 * 1024**3, spool_max_entries: int = 10_000,
                 spool_on_full: OnFull = "block", tasks: Sequence[str] = (),
                 trusted_acks: TrustedKeys | None = None,
                 signer: SigningKey | None = None,
                 ledger: str | os.PathLike[str] | None = None) -> None:
        self.address = parse_broker_url(url)
        self.signer = signer  # signs every trajectory (a learner that trusts it learns it)
        # with keys: an ack deletes spooled trajectories only when a trusted learner signed
        # it (refused ones are counted as unsigned / unknown_key / bad_signature)
        self.trusted_acks = trusted_acks
        self.farm_id = topics.check_id(farm_id, "farm id")
        self.controller_id = topics.check_id(controller_id, "device id")
        self.tasks = sorted(tasks)  # named in the farm's own status (the TUI's run-task list)
        self.client_id = client_id or f"distrl-farm-{farm_id}"
        self.spool = spool if isinstance(spool, Spool) else Spool(
            spool, max_bytes=spool_max_bytes, max_entries=spool_max_entries,
            on_full=spool_on_full, ledger=ledger)
        self.chunk_bytes = chunk_bytes
        self.frame_opts = frame_opts or FrameOptions()
        self.resend_after_s = resend_after_s
        self.max_inflight = max_inflight
        self.backoff = backoff or Backoff()
        self.keepalive = keepalive
        self.stats = PublisherStats()
        self.rejects: Counter[str] = Counter()  # hostile/garbage messages on the ack topic
        self._reject_log = RejectLog(log, f"publisher {farm_id}: message on the ack topic",
                                     counter=self.rejects)
        self.connected = asyncio.Event()
        self._wake = asyncio.Event()
        self._statuses: dict[str, bytes] = {}
        self._early: dict[str, tuple[bytes, str]] = {}  # being written to the spool
        self._early_acked: set[str] = set()
        self._fresh: deque[str] = deque()  # ids not sent yet on this connection
        self._task: asyncio.Task[None] | None = None
        self._client: aiomqtt.Client | None = None
        self._stopping = False

    # -- lifecycle
    async def start(self) -> None:
        if self._task is None:
            self._stopping = False
            self._task = asyncio.create_task(self._run(), name=f"publisher-{self.farm_id}")

    async def stop(self, *, graceful: bool = True) -> None:
        """Stop; ``graceful`` (if connected) tells watchers every device went offline,
        then clears the devices' retained statuses, so a farm that stopped leaves no
        devices behind on the broker (a TUI started later shows none of them), and leaves
        its own retained status ``offline`` with the detail :data:`STOPPED`: it ended
        on purpose (a crash leaves the last will, with no detail)."""
        self._stopping = True
        self._reject_log.flush()
        if graceful and self._client is not None and self.connected.is_set():
            with contextlib.suppress(Exception):
                async with asyncio.timeout(2):
                    for dev in self._statuses:
                        topic = topics.status(self.farm_id, dev)
                        await self._client.publish(topic, self._offline(dev), qos=1)
                        await self._client.publish(topic, b"", qos=1, retain=True)  # clears
                    await self._client.publish(
                        topics.status(self.farm_id, self.controller_id),
                        self._offline(self.controller_id, STOPPED), qos=1, retain=True)
        if self._task is not None:
            await cancel_and_wait(self._task)
            self._task = None

    async def __aenter__(self) -> Publisher:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- API
    async def publish(self, msg: TrajectoryMsg,
                      frames: Mapping[int, bytes | Image.Image] | None = None,
                      extra: Mapping[str, tuple[str, bytes]] | None = None) -> str:
        """Encode, spool durably and queue a trajectory; returns its id. Delivery happens in
        the background; :meth:`wait_acked` waits for the learner."""
        if msg.farm_id != self.farm_id:
            msg = msg.model_copy(update={"farm_id": self.farm_id})
        payload = await asyncio.to_thread(encode_trajectory, msg, frames,
                                          frame_opts=self.frame_opts, extra=extra,
                                          signer=self.signer)
        await self.publish_payload(msg.id, payload)
        return msg.id

    async def publish_payload(self, traj_id: str, payload: bytes) -> None:
        """Spool an already encoded trajectory payload; returns once it is on disk.

        Sending starts while the spool write (and fsync) is still under way; an ack that
        arrives before the write finishes deletes the entry right after it."""
        if traj_id in self.spool or traj_id in self._early:
            return
        digest = await asyncio.get_running_loop().run_in_executor(_HASHER, _sha256, payload)
        self._early[traj_id] = (payload, digest)
        self._fresh.append(traj_id)
        self._wake.set()
        try:
            if await self.spool.put(traj_id, payload, sha256=digest):
                self.stats.spooled += 1
        except BaseException:  # SpoolFull etc.: not stored (it may still have been sent)
            self._early_acked.discard(traj_id)
            raise
        finally:
            self._early.pop(traj_id, None)
        if traj_id in self._early_acked:
            self._early_acked.discard(traj_id)
            await self.spool.remove([traj_id])

    async def set_status(self, status: DeviceStatus) -> None:
        """Publish a retained device status (kept and re-sent after reconnects)."""
        data = encode_envelope(status, farm_id=self.farm_id)
        self._statuses[status.device_id] = data
        client = self._client
        if client is not None and self.connected.is_set():
            with contextlib.suppress(aiomqtt.MqttError):
                await client.publish(topics.status(self.farm_id, status.device_id), data,
                                     qos=1, retain=True)

    async def wait_acked(self, timeout: float | None = None) -> bool:
        """Wait until the spool is empty (everything acked)."""
        try:
            async with asyncio.timeout(timeout):
                while True:
                    if not await self.spool.wait_empty(None):
                        return False
                    if not self._early:
                        return True
                    await asyncio.sleep(0.005)
        except TimeoutError:
            return False

    # -- internals
    def _offline(self, device_id: str, detail: str | None = None) -> bytes:
        return encode_envelope(DeviceStatus(device_id=device_id, state="offline",
                                            detail=detail), farm_id=self.farm_id)

    async def _run(self) -> None:
        while not self._stopping:
            will = aiomqtt.Will(topics.status(self.farm_id, self.controller_id),
                                self._offline(self.controller_id), qos=1, retain=True)
            client = aiomqtt.Client(**self.address.client_kwargs(), identifier=self.client_id,
                                    will=will, clean_session=True, keepalive=self.keepalive,
                                    max_inflight_messages=self.max_inflight, timeout=10)
            client.pending_calls_threshold = self.max_inflight + 16  # we bound them ourselves
            try:
                async with client:
                    self._client = client
                    self.stats.connects += 1
                    self.backoff.reset()
                    await client.subscribe(topics.ack(self.farm_id), qos=1)
                    await client.publish(
                        topics.status(self.farm_id, self.controller_id),
                        encode_envelope(DeviceStatus(device_id=self.controller_id,
                                                     state="ready", tasks=self.tasks),
                                        farm_id=self.farm_id),
                        qos=1, retain=True)
                    for dev, data in list(self._statuses.items()):
                        await client.publish(topics.status(self.farm_id, dev), data, qos=1,
                                             retain=True)
                    self.connected.set()
                    async with asyncio.TaskGroup() as tg:
                        tg.create_task(self._acks(client))
                        tg.create_task(self._send(client))
            except* aiomqtt.MqttError as eg:
                self.stats.errors += 1
                log.info("publisher %s: connection lost: %s", self.farm_id, eg.exceptions[0])
            finally:
                self.connected.clear()
                self._client = None
            if not self._stopping:
                await asyncio.sleep(self.backoff.next())

    async def _acks(self, client: aiomqtt.Client) -> None:
        async for m in client.messages:
            parsed = parse_message(str(m.topic), m.payload)
            if isinstance(parsed, Rejected):  # garbage on our ack topic: counted, ignored
                self._reject_log.reject(parsed.reason.value, f"on {m.topic}: {parsed}")
                continue
            if not isinstance(parsed, Message) or not isinstance(parsed.body, TrajectoryAck):
                self._reject_log.reject("wrong_schema", f"on {m.topic}: not an ack")
                continue
            if self.trusted_acks is not None:
                verdict, detail = check_envelope(m.payload, self.trusted_acks)
                if verdict is not Verdict.OK:
                    self._reject_log.reject(verdict.value, f"on {m.topic}: {detail}")
                    continue
            ids = list(parsed.body.ids)
            early = [i for i in ids if i in self._early]
            self._early_acked.update(early)
            # count before awaiting: remove() empties the index at once, so a
            # wait_acked() woken by it must already see the acks in the stats
            self.stats.acked += len(early) + sum(1 for i in ids if i in self.spool)
            await self.spool.remove(ids)

    async def _send(self, client: aiomqtt.Client) -> None:
        sent_at: dict[str, float] = {}  # this connection only: a reconnect replays all
        sem = asyncio.Semaphore(self.max_inflight)
        inflight: set[asyncio.Task[Any]] = set()
        failures: list[BaseException] = []

        async def one(topic: str, chunk: bytes) -> None:
            try:
                await client.publish(topic, chunk, qos=1)
                self.stats.chunks += 1
                self.stats.bytes += len(chunk)
            except Exception as e:  # surfaced by the send loop
                failures.append(e)
            finally:
                sem.release()

        try:
            await self._send_loop(client, sent_at, sem, inflight, failures, one)
        finally:
            for t in inflight:
                t.cancel()

    async def _send_loop(self, client: aiomqtt.Client, sent_at: dict[str, float],
                         sem: asyncio.Semaphore, inflight: set[asyncio.Task[Any]],
                         failures: list[BaseException], one: Any) -> None:
        # Work per wake-up is O(new ids), not O(spool): new ids come from ``_fresh``; the
        # whole spool is walked once per connection (replay) and when a resend is due.
        # ``sent_at`` is kept in send order, so its first item is the oldest send.
        self._fresh.clear()
        todo: list[str] = [*self._early, *self.spool.ids()]
        while True:
            self._wake.clear()
            if failures:
                raise failures[0]
            while self._fresh:
                todo.append(self._fresh.popleft())
            now = time.monotonic()
            for tid in list(sent_at):  # forget acked ids; find resends due
                if tid not in self.spool and tid not in self._early:
                    del sent_at[tid]
                elif now - sent_at[tid] >= self.resend_after_s:
                    todo.append(tid)
                else:
                    break  # the rest were sent later
            for tid in todo:
                last = sent_at.get(tid)
                if last is not None and now - last < self.resend_after_s:
                    continue  # queued twice (fresh + replay)
                if tid in self._early_acked:
                    continue
                digest: str | None
                if tid in self._early:
                    payload, digest = self._early[tid]
                else:
                    entry = self.spool.entry(tid)
                    maybe = self.spool.read(tid)
                    if entry is None or maybe is None:  # acked meanwhile
                        continue
                    payload, digest = maybe, entry.sha256
                topic = topics.traj(self.farm_id, tid)
                for chunk in split_chunks(tid, payload, max_bytes=self.chunk_bytes,
                                          sha256=digest):
                    await sem.acquire()
                    if failures:
                        sem.release()
                        raise failures[0]
                    t = asyncio.create_task(one(topic, chunk))
                    inflight.add(t)
                    t.add_done_callback(inflight.discard)
                if last is not None:
                    self.stats.resent += 1
                self.stats.sent += 1
                sent_at.pop(tid, None)
                sent_at[tid] = time.monotonic()
            todo = []
            wait = self.resend_after_s
            for tid, at in sent_at.items():  # the oldest still unacked send
                if tid in self.spool or tid in self._early:
                    wait = max(0.05, at + self.resend_after_s - time.monotonic())
                    break
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await self._wake.wait()
