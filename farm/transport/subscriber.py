"""Learner side: receive trajectory chunks, reassemble, dedupe by trajectory id, ack.

Each complete, valid trajectory is handed once to ``handler`` (or put on
:attr:`TrajectorySubscriber.queue`); then a :class:`TrajectoryAck` goes to the farm's
``ack`` topic. A handler that returns an awaitable (e.g. "durable once the journal's next
group fsync is done") has the trajectory marked seen at once and its ack sent when the
awaitable completes, while delivery goes on: one fsync can then cover many trajectories.
A trajectory seen before is acked again (its first ack may have been lost) but not
delivered. Anything malformed is dropped and counted in :attr:`rejects` by
reason; the subscriber keeps running. With ``clean_session=False`` (the default) and a
stable ``client_id`` the broker queues trajectories while the learner is away."""

from __future__ import annotations

import asyncio
import inspect
import logging
import math
import os
import time
from collections import Counter, OrderedDict
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import aiomqtt

from distrl_sdk.wire import (
    MAX_CHUNK_BYTES,
    Chunk,
    DecodedTrajectory,
    Reassembler,
    Rejected,
    RejectReason,
    TrajectoryAck,
    check_trajectory,
    decode_trajectory,
    encode_envelope,
    parse_message,
    topics,
    verify_payload,
)
from distrl_sdk.wire.broker_url import parse_broker_url
from distrl_sdk.wire.signing import SigningKey, TrustedKeys, Verdict
from farm.aio import cancel_and_wait
from farm.transport._conn import Backoff
from farm.transport.reject_log import RejectLog

__all__ = ["SeenIds", "TrajectorySubscriber"]

log = logging.getLogger(__name__)

Handler = Callable[[DecodedTrajectory], Awaitable[None] | None]


class SeenIds:
    """Bounded LRU of trajectory ids with the age of each (its ``ended_at``), optionally
    persisted as an append-only file (``id`` or ``id<TAB>ended_at`` a line; compacted to
    the newest ``capacity`` ids when it grows past 2×).

    Dedupe that cannot be outrun: an id pushed out by newer ones raises the
    :attr:`watermark` to its age, and a trajectory that ended at or before the watermark
    is :meth:`forgotten` — it may be a duplicate of one no longer remembered, so it is
    refused (counted ``too_old``) instead of being trained on twice. Without ages (old
    farms) it is the plain LRU of before."""

    def __init__(self, capacity: int = 100_000, path: str | os.PathLike[str] | None = None):
        self.capacity = capacity
        self.path = Path(path) if path is not None else None
        self._ids: OrderedDict[str, float | None] = OrderedDict()
        self.watermark: float | None = None
        self._lines = 0
        if self.path is not None and self.path.exists():
            self._lines += self.load_text(self.path.read_text())

    def load_text(self, text: str) -> int:
        """Take in ids in :meth:`dump`'s form (plain id lines too); returns how many."""
        n = 0
        for line in text.splitlines():
            if line.startswith("#watermark "):
                self._raise(_float(line.split(" ", 1)[1]))
            elif line.strip():
                tid, _, at = line.strip().partition("\t")
                self._remember(tid, _float(at))
                n += 1
        return n

    def _raise(self, at: float | None) -> None:
        if at is not None and (self.watermark is None or at > self.watermark):
            self.watermark = at

    def _remember(self, tid: str, at: float | None) -> None:
        self._ids[tid] = at
        self._ids.move_to_end(tid)
        while len(self._ids) > self.capacity:
            _old, old_at = self._ids.popitem(last=False)
            self._raise(old_at)

    def __contains__(self, tid: object) -> bool:
        return tid in self._ids

    def __len__(self) -> int:
        return len(self._ids)

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def items(self) -> list[tuple[str, float | None]]:
        return list(self._ids.items())

    def forgotten(self, at: float | None) -> bool:
        """Whether a trajectory that ended at ``at`` is older than what is remembered."""
        return at is not None and self.watermark is not None and at <= self.watermark

    def add(self, tid: str, at: float | None = None) -> None:
        self._remember(tid, at)
        if self.path is not None:
            with open(self.path, "a") as f:
                f.write(tid + ("" if at is None else f"\t{at!r}") + "\n")
            self._lines += 1
            if self._lines > 2 * self.capacity:
                tmp = self.path.with_suffix(".tmp")
                tmp.write_text(self.dump())
                os.replace(tmp, self.path)
                self._lines = len(self._ids)

    def dump(self) -> str:
        """The file form: the watermark, then every id with its age."""
        head = "" if self.watermark is None else f"#watermark {self.watermark!r}\n"
        return head + "".join(t + ("" if a is None else f"\t{a!r}") + "\n"
                              for t, a in self._ids.items())


def _float(text: str) -> float | None:
    try:
        v = float(text)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


class TrajectorySubscriber:
    def __init__(self, url: str, *, farm_id: str = "+", client_id: str = "distrl-learner",
                 clean_session: bool = False, handler: Handler | None = None,
                 queue_size: int = 0, reassembler: Reassembler | None = None,
                 seen: SeenIds | None = None, max_chunk_bytes: int = MAX_CHUNK_BYTES,
                 backoff: Backoff | None = None, keepalive: int = 15,
                 learner_id: str | None = None, signer: SigningKey | None = None,
                 trusted_farms: TrustedKeys | None = None) -> None:
        self.address = parse_broker_url(url)
        self.signer = signer  # signs every ack (farms that trust this key accept only those)
        # with keys: only trajectories a trusted farm key signed are learned from; the rest
        # are counted (unsigned / unknown_key / bad_signature) and never acked, so a forger
        # reusing a real id cannot make the farm drop the real trajectory
        self.trusted_farms = trusted_farms
        self.filter = topics.traj_filter(farm_id)
        self.client_id = client_id
        self.clean_session = clean_session
        self.handler = handler
        self.queue: asyncio.Queue[DecodedTrajectory] = asyncio.Queue(queue_size)
        # sha256 of whole payloads is checked here, in a worker thread, not in the loop
        self.reassembler = reassembler or Reassembler()
        self.reassembler.verify = False
        # smaller payloads are hashed inline (a thread hop costs more than hashing them)
        self.inline_verify_bytes = 64 * 1024
        self.pipeline_depth = 8  # payloads being hashed / waiting for delivery (memory bound)
        self.seen = seen if seen is not None else SeenIds()  # an empty one is falsy
        self.max_chunk_bytes = max_chunk_bytes
        self.backoff = backoff or Backoff()
        self.keepalive = keepalive
        self.learner_id = learner_id or client_id
        self.rejects: Counter[str] = Counter()
        # refused trajectories: first per reason at WARNING, then summaries (a fuzzer must
        # not flood the log); duplicates are normal redeliveries, only counted
        self._reject_log = RejectLog(log, f"subscriber {client_id}: trajectory",
                                     counter=self.rejects,
                                     quiet=(RejectReason.DUPLICATE.value,))
        self.delivered = 0
        self.acks_sent = 0
        self.connects = 0
        self.connected = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        # trajectories whose handler's awaitable (durability) is still running
        self._pending: dict[str, asyncio.Future[None]] = {}

    @property
    def duplicates(self) -> int:
        return self.rejects[RejectReason.DUPLICATE.value]

    async def start(self) -> None:
        if self._task is None:
            self._stopping = False
            self._task = asyncio.create_task(self._run(), name="trajectory-subscriber")

    async def stop(self) -> None:
        self._stopping = True
        self._reject_log.flush()
        if self._task is not None:
            await cancel_and_wait(self._task)
            self._task = None

    async def __aenter__(self) -> TrajectorySubscriber:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def _run(self) -> None:
        while not self._stopping:
            client = aiomqtt.Client(**self.address.client_kwargs(), identifier=self.client_id,
                                    clean_session=self.clean_session, keepalive=self.keepalive,
                                    max_queued_incoming_messages=0, timeout=10)
            try:
                async with client:
                    self.connects += 1
                    self.backoff.reset()
                    await client.subscribe(self.filter, qos=1)
                    self.connected.set()
                    acks: asyncio.Queue[tuple[str, str]] = asyncio.Queue()
                    # acks go out from their own task: a publish awaiting its PUBACK is not
                    # woken by a lost connection, but the message loop is
                    async with asyncio.TaskGroup() as tg:
                        tg.create_task(self._loop(client, acks))
                        tg.create_task(self._send_acks(client, acks))
            except* aiomqtt.MqttError as eg:
                log.info("subscriber: connection lost: %s", eg.exceptions[0])
            finally:
                self.connected.clear()
            if not self._stopping:
                await asyncio.sleep(self.backoff.next())

    def _reject(self, r: Rejected) -> None:
        self._reject_log.reject(r.reason.value, str(r.detail))

    async def _send_acks(self, client: aiomqtt.Client, acks: asyncio.Queue[tuple[str, str]]
                         ) -> None:
        while True:
            batch = [await acks.get()]
            while not acks.empty() and len(batch) < 1000:
                batch.append(acks.get_nowait())
            by_farm: dict[str, list[str]] = {}
            for farm, tid in batch:
                by_farm.setdefault(farm, []).append(tid)
            for farm, ids in by_farm.items():
                ack = TrajectoryAck(ids=ids, learner_id=self.learner_id)
                await client.publish(topics.ack(farm), encode_envelope(
                    ack, farm_id=farm, signer=self.signer), qos=1)
                self.acks_sent += len(ids)

    async def _loop(self, client: aiomqtt.Client, acks: asyncio.Queue[tuple[str, str]]
                    ) -> None:
        """Two stages: this task receives and reassembles; complete payloads have their
        sha256 checked in a worker thread (hashing releases the GIL, so it overlaps with
        receiving the next messages) and go, in arrival order, to :meth:`_deliver`."""
        ready: asyncio.Queue[_Whole] = asyncio.Queue(self.pipeline_depth)
        async with asyncio.TaskGroup() as tg:
            tg.create_task(self._deliver(ready, acks))
            await self._receive(client, ready)

    async def _receive(self, client: aiomqtt.Client, ready: asyncio.Queue[_Whole]) -> None:
        last_expire = time.monotonic()
        loop = asyncio.get_running_loop()
        async for m in client.messages:
            now = time.monotonic()
            if now - last_expire > 1.0:
                before = self.reassembler.expired
                self.reassembler.expire(now)
                if self.reassembler.expired > before:
                    self.rejects[RejectReason.TIMEOUT.value] += self.reassembler.expired - before
                last_expire = now
            topic = str(m.topic)
            parsed = parse_message(topic, m.payload, max_chunk_bytes=self.max_chunk_bytes)
            if isinstance(parsed, Rejected):
                self._reject(parsed)
                continue
            if not isinstance(parsed, Chunk):
                self.rejects["unexpected_message"] += 1
                continue
            whole = self.reassembler.feed(parsed, now)
            if whole is None:
                continue
            if isinstance(whole, Rejected):
                self._reject(whole)
                continue
            checked: asyncio.Future[bytes | Rejected] = loop.create_future()
            if len(whole) < self.inline_verify_bytes:
                checked.set_result(verify_payload(whole, parsed.sha256))
            else:
                checked = loop.run_in_executor(None, verify_payload, whole, parsed.sha256)
            await ready.put(_Whole(topic, parsed.msg_id, checked))

    async def _deliver(self, ready: asyncio.Queue[_Whole],
                       acks: asyncio.Queue[tuple[str, str]]) -> None:
        while True:
            item = await ready.get()
            checked = await item.checked
            if isinstance(checked, Rejected):
                self._reject(checked)
                continue
            if self.trusted_farms is not None:
                verdict, detail = check_trajectory(checked, self.trusted_farms)
                if verdict is not Verdict.OK:
                    self._reject_log.reject(verdict.value, f"{item.topic}: {detail}")
                    continue
            # the whole payload's sha256 was checked: skip the attachments' own, unless
            # the signed header's hashes are what vouches for them
            decoded = decode_trajectory(checked,
                                        verify_attachments=self.trusted_farms is not None)
            if isinstance(decoded, Rejected):
                self._reject(decoded)
                continue
            farm = item.topic.split("/")[2]
            tid = decoded.msg.id
            if tid != item.msg_id or decoded.msg.farm_id != farm:
                self._reject(Rejected(RejectReason.BAD_BODY, "ids differ from topic/chunks"))
                continue
            ended = decoded.msg.ended_at
            if tid not in self.seen and self.seen.forgotten(ended):
                # older than every id still remembered: it may be one trained on already
                self._reject(Rejected(RejectReason.TOO_OLD, f"{tid} ended at {ended}, at or "
                                      f"before the dedupe watermark {self.seen.watermark}"))
                acks.put_nowait((farm, tid))  # the farm drops it; counted, never trained
                continue
            if tid in self.seen:
                self.rejects[RejectReason.DUPLICATE.value] += 1
                pending = self._pending.get(tid)
                if pending is not None:  # its first copy is not durable yet: ack with it
                    pending.add_done_callback(partial(self._ack_if_ok, acks=acks, farm=farm,
                                                      tid=tid))
                    continue
            else:
                if self.handler is not None:
                    res = self.handler(decoded)
                    if inspect.isawaitable(res):
                        fut: asyncio.Future[None] = asyncio.ensure_future(res)
                        self._pending[tid] = fut
                        self.seen.add(tid, ended)
                        self.delivered += 1
                        fut.add_done_callback(partial(self._ack_if_ok, acks=acks, farm=farm,
                                                      tid=tid))
                        continue
                else:
                    await self.queue.put(decoded)
                self.seen.add(tid, ended)
                self.delivered += 1
            acks.put_nowait((farm, tid))

    def _ack_if_ok(self, fut: asyncio.Future[None], acks: asyncio.Queue[tuple[str, str]],
                   farm: str, tid: str) -> None:
        """Ack once the handler's awaitable is done; a failed one is not acked (the farm
        keeps the trajectory spooled and sends it again)."""
        if self._pending.get(tid) is fut:
            del self._pending[tid]
        if fut.cancelled():
            return
        if (exc := fut.exception()) is not None:
            self.rejects["handler_failed"] += 1
            log.error("trajectory %s not acked: %s", tid, exc)
            return
        acks.put_nowait((farm, tid))


@dataclass(frozen=True)
class _Whole:
    """A reassembled payload on its way to delivery; ``checked`` resolves to the payload
    once its sha256 matched (or to the rejection)."""

    topic: str
    msg_id: str
    checked: asyncio.Future[bytes | Rejected]
