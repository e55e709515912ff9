"""Policy weight distribution over MQTT: the learner's :class:`WeightPublisher`, the
farm's :class:`WeightSubscriber` and :class:`LearnedPolicyProvider`.

    learner: weights() ─safetensors─► blob ─split_chunks─► retained chunks
             distrl/v1/policy/blob/<v>/<i>   (one topic per chunk: a retained topic keeps
                                              only its last message)
             then the retained PolicyPointer{version, sha256, size, where="mqtt:<blob/v>"}
             on distrl/v1/policy/pointer; the blobs of all but the last ``keep`` versions
             are cleared (empty retained payloads).
    farm:    pointer ─► subscribe blob/<v>/+ ─► chunks into place ─► size + sha256 ─► tensors
             ─► load_weights into a pooled policy object ─► a new PolicyAgent for new episodes

A pointer whose version is not newer than the one in use is refused as stale; a blob
whose chunks, size or sha256 disagree with the pointer is refused as corrupt; both are
counted in :attr:`WeightSubscriber.refused` and the farm keeps its current policy.
Weights are parsed with ``safetensors`` only: nothing received is ever unpickled.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import math
import struct
import uuid
import weakref
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Self

import aiomqtt

from distrl_sdk.errors import ConfigError
from distrl_sdk.policies import check_config
from distrl_sdk.wire import (
    MAX_CHUNK_BYTES,
    Chunk,
    Message,
    PolicyPointer,
    Rejected,
    encode_envelope,
    parse_chunk,
    parse_message,
    split_chunks,
    topics,
)
from distrl_sdk.wire.codec import CHUNK_MAGIC
from distrl_sdk.wire.signing import SigningKey, TrustedKeys, Verdict, check_envelope
from farm.aio import cancel_and_wait
from farm.collect.policy import PolicyChoice, PolicyProvider
from farm.transport import Backoff, parse_broker_url
from farm.transport.reject_log import RejectLog

if TYPE_CHECKING:
    import torch

    from distrl_sdk.device import Device
    from distrl_sdk.learn.api import PolicyAgent, TrainablePolicy
    from distrl_sdk.policies.remote import RemotePolicy
    from distrl_sdk.task import Task

__all__ = [
    "LearnedPolicyProvider",
    "MqttLink",
    "PublishedBlob",
    "WeightPublisher",
    "WeightSubscriber",
    "blob_chunk_topic",
    "deserialize_weights",
    "serialize_weights",
]

log = logging.getLogger(__name__)


def blob_chunk_topic(version: int, index: int) -> str:
    """Where chunk ``index`` of version ``version`` is retained."""
    return topics.policy_blob_chunk(version, int(index))


def serialize_weights(weights: Mapping[str, torch.Tensor]) -> bytes:
    """safetensors bytes of a weights dict (contiguous CPU copies)."""
    from safetensors.torch import save

    return save({k: v.detach().contiguous().cpu() for k, v in weights.items()})


_ST_DTYPES = {"F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16",
              "I64": "int64", "I32": "int32", "I16": "int16", "I8": "int8", "U8": "uint8",
              "BOOL": "bool"}


def deserialize_weights(data: bytes | bytearray) -> dict[str, torch.Tensor]:
    """Inverse of :func:`serialize_weights`; raises ``ValueError`` on anything else.

    Parses the safetensors layout (u64 header length, JSON header, raw data) itself so
    a received ``bytearray`` becomes tensors *without a copy* (``torch.frombuffer``
    views; they keep the buffer alive). Every offset, dtype and shape is checked
    against the buffer; there is no code path that could execute anything."""
    import torch

    n = len(data)
    if n < 8:
        raise ValueError("not a safetensors blob: shorter than its header length")
    (hlen,) = struct.unpack_from("<Q", data, 0)
    if hlen > min(n - 8, 100 * 1024 * 1024):
        raise ValueError(f"not a safetensors blob: header length {hlen} out of range")
    try:
        header = json.loads(bytes(data[8 : 8 + hlen]))
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"not a safetensors blob: header is not JSON ({exc})") from None
    if not isinstance(header, dict):
        raise ValueError("not a safetensors blob: header is not an object")
    base, size = 8 + hlen, n - 8 - hlen
    buf = data if isinstance(data, bytearray) else bytearray(data)
    out: dict[str, torch.Tensor] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype = getattr(torch, _ST_DTYPES[info["dtype"]])
            shape = [int(d) for d in info["shape"]]
            begin, end = (int(x) for x in info["data_offsets"])
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"not a safetensors blob: bad entry {name!r}") from None
        count = math.prod(shape)
        itemsize = torch.empty((), dtype=dtype).element_size()
        if min(shape, default=0) < 0 or not 0 <= begin <= end <= size \
                or end - begin != count * itemsize:
            raise ValueError(f"not a safetensors blob: {name!r} does not fit the data")
        t = torch.frombuffer(buf, dtype=dtype, count=count, offset=base + begin) if count \
            else torch.empty(0, dtype=dtype)
        out[str(name)] = t.reshape(shape)
    return out


# ----------------------------------------------------------------------------- link


class _Background:
    """A connection loop (``_run``) in a background task: start/stop, or ``async with``."""

    client_id: str
    _task: asyncio.Task[None] | None = None
    _task_prefix = "mqtt"

    async def _run(self) -> None:
        raise NotImplementedError

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(),
                                             name=f"{self._task_prefix}-{self.client_id}")

    async def stop(self) -> None:
        if self._task is not None:
            await cancel_and_wait(self._task)
            self._task = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


class MqttLink(_Background):
    """One publishing connection that survives broker restarts: :meth:`publish` waits
    for a connection and retries (a publish awaiting its PUBACK on a dead connection is
    timed out and re-sent)."""

    def __init__(self, url: str, *, client_id: str | None = None,
                 backoff: Backoff | None = None, keepalive: int = 15,
                 publish_timeout_s: float = 10.0) -> None:
        self.address = parse_broker_url(url)
        self.client_id = client_id or f"distrl-link-{uuid.uuid4().hex[:8]}"
        self.backoff = backoff or Backoff(initial=0.1, maximum=2.0)
        self.keepalive = keepalive
        self.publish_timeout_s = publish_timeout_s
        self.connected = asyncio.Event()
        self.connects = 0
        self._client: aiomqtt.Client | None = None
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            client = aiomqtt.Client(**self.address.client_kwargs(), identifier=self.client_id,
                                    clean_session=True, keepalive=self.keepalive, timeout=10,
                                    max_inflight_messages=100)
            try:
                async with client:
                    self._client = client
                    self.connects += 1
                    self.backoff.reset()
                    self.connected.set()
                    async for _ in client.messages:  # nothing subscribed: ends on disconnect
                        pass
            except aiomqtt.MqttError as exc:
                log.info("link %s: connection lost: %s", self.client_id, exc)
            finally:
                self.connected.clear()
                self._client = None
            await asyncio.sleep(self.backoff.next())

    async def publish(self, topic: str, payload: bytes, *, qos: int = 1, retain: bool = False,
                      timeout: float | None = None) -> None:
        """Publish once connected; raises ``TimeoutError`` after ``timeout`` seconds."""
        async with asyncio.timeout(timeout):
            while True:
                await self.connected.wait()
                client = self._client
                if client is None:
                    await asyncio.sleep(0.05)
                    continue
                try:
                    async with asyncio.timeout(self.publish_timeout_s):
                        await client.publish(topic, payload, qos=qos, retain=retain)
                    return
                except (aiomqtt.MqttError, TimeoutError) as exc:
                    log.info("link %s: publish to %s failed (%s); retrying", self.client_id,
                             topic, exc)
                    await asyncio.sleep(0.1)


# ----------------------------------------------------------------------------- publisher


@dataclass(frozen=True)
class PublishedBlob:
    version: int
    chunks: int
    size: int
    sha256: str


class WeightPublisher:
    """Publishes policy versions (learner side) through an :class:`MqttLink`."""

    def __init__(self, link: MqttLink, *, keep: int = 2,
                 chunk_bytes: int = MAX_CHUNK_BYTES, signer: SigningKey | None = None) -> None:
        self.link = link
        self.signer = signer  # signs every pointer (the blob is bound to it by its sha256)
        self.keep = max(1, keep)
        self.chunk_bytes = chunk_bytes
        self.published: list[PublishedBlob] = []  # oldest first; persisted by the learner
        self.cleared: int = 0

    async def publish(self, weights: Mapping[str, torch.Tensor] | bytes, version: int, *,
                      kind: str, config: Mapping[str, Any] | None = None) -> PolicyPointer:
        """Blob chunks (retained), then the retained pointer, then clear old blobs."""
        blob = weights if isinstance(weights, bytes) else \
            await asyncio.to_thread(serialize_weights, weights)
        digest = await asyncio.to_thread(lambda: hashlib.sha256(blob).hexdigest())
        chunks = await asyncio.to_thread(split_chunks, f"policy-v{version}", blob,
                                         max_bytes=self.chunk_bytes, sha256=digest)
        await self._publish_all([(blob_chunk_topic(version, i), c)
                                 for i, c in enumerate(chunks)])
        pointer = PolicyPointer(version=version, sha256=digest, size=len(blob),
                                where=f"mqtt:{topics.policy_blob(version)}", kind=kind,
                                config=dict(config or {}))
        await self.link.publish(topics.policy_pointer(),
                                encode_envelope(pointer, signer=self.signer), retain=True)
        self.published = [p for p in self.published if p.version != version]
        self.published.append(PublishedBlob(version, len(chunks), len(blob), digest))
        await self._clear_old()
        return pointer

    async def _clear_old(self) -> None:
        old, self.published = self.published[: -self.keep], self.published[-self.keep :]
        for p in old:
            await self._publish_all([(blob_chunk_topic(p.version, i), b"")
                                     for i in range(p.chunks)])
            self.cleared += 1

    async def _publish_all(self, items: list[tuple[str, bytes]], window: int = 8) -> None:
        """Retained QoS 1 publishes, ``window`` in flight (keeps the pipe full, and under
        aiomqtt's 10-pending-calls warning)."""
        sem = asyncio.Semaphore(window)

        async def one(topic: str, payload: bytes) -> None:
            async with sem:
                await self.link.publish(topic, payload, retain=True)

        await asyncio.gather(*(one(t, p) for t, p in items))


# ----------------------------------------------------------------------------- subscriber

OnPolicy = Callable[[dict[str, "torch.Tensor"] | None, PolicyPointer], Awaitable[None] | None]


class _Fetch:
    """One blob being fetched. Chunks are kept as they arrive and joined once the last is
    in: memory follows the bytes received, never the pointer's announced size (a pointer
    announcing 1 GiB with no blob behind it once cost a farm 1.1 GB). Non-last chunks all
    carry ``per`` bytes; the last one ends the blob."""

    def __init__(self, pointer: PolicyPointer) -> None:
        self.pointer = pointer
        self.parts: dict[int, memoryview] = {}
        self.per: int | None = None
        self.count: int | None = None
        self.last_len: int | None = None
        self.timer: asyncio.TimerHandle | None = None

    def put(self, chunk: Chunk, data: memoryview) -> str | None:
        """Store a chunk; returns why it does not fit, or None."""
        if self.count is None:
            self.count = chunk.count
        if chunk.count != self.count:
            return "chunk count differs between chunks"
        if chunk.index in self.parts:
            return None  # redelivered
        n = len(data)
        if chunk.index == chunk.count - 1:
            start = self.pointer.size - n
            if start < 0 or (self.per is not None and start != self.per * chunk.index) \
                    or (chunk.count == 1 and start != 0):
                return "last chunk does not end the blob"
            self.last_len = n
        else:
            if self.per is None:
                self.per = n
            if n != self.per or n == 0:
                return "chunk sizes differ"
            start = self.per * chunk.index
            if self.last_len is not None and \
                    self.pointer.size - self.last_len != self.per * (chunk.count - 1):
                return "chunks do not tile the blob"
        if start + n > self.pointer.size:
            return "chunk beyond the announced size"
        self.parts[chunk.index] = data
        return None

    @property
    def complete(self) -> bool:
        return self.count is not None and len(self.parts) == self.count

    def blob(self) -> bytes:
        """The chunks joined in order (call once :attr:`complete`)."""
        return b"".join(self.parts[i] for i in range(len(self.parts)))

    @property
    def received(self) -> int:
        return sum(len(v) for v in self.parts.values())


class WeightSubscriber(_Background):
    """Follows the retained pointer, fetches, verifies and hands new weights on.

    ``on_weights(weights, pointer)`` is called (and awaited) once per accepted version,
    in increasing version order; :attr:`version` is the newest accepted one.
    :attr:`refused` counts refusals by reason: ``stale``, ``sha_mismatch``,
    ``size_mismatch``, ``bad_chunk``, ``bad_weights``, ``bad_pointer``, ``bad_config``,
    ``timeout``, ``unsupported_where``, ``rejected_by_consumer`` and, with ``trusted``
    keys, ``unsigned``, ``unknown_key``, ``bad_signature`` (a pointer must be signed by
    one of them: the broker's word that it came from the learner is not enough).

    A fetch in progress never holds the farm: the broker's newest pointer replaces it (the
    retained pointer topic holds one message, so the newest is what the learner, or
    whoever last wrote there, says now) and a timer abandons it after
    ``fetch_timeout_s`` even when nothing more arrives. A pointer's architecture config
    is checked before anything is fetched."""

    _task_prefix = "weights"

    def __init__(self, url: str, on_weights: OnPolicy, *, client_id: str | None = None,
                 version: int = -1, fetch_timeout_s: float = 60.0,
                 max_blob_bytes: int = 2 * 1024**3, backoff: Backoff | None = None,
                 keepalive: int = 15, trusted: TrustedKeys | None = None,
                 fetch_blobs: bool = True) -> None:
        self.address = parse_broker_url(url)
        # False: hand on accepted pointers with weights None (a farm acting through an
        # inference server, which the learner loaded the version into, never fetches them)
        self.fetch_blobs = fetch_blobs
        self.on_weights = on_weights
        self.trusted = trusted  # None: any well-formed pointer (tests, one-process use)
        self.client_id = client_id or f"distrl-weights-{uuid.uuid4().hex[:10]}"
        self.version = version
        self.fetch_timeout_s = fetch_timeout_s
        self.max_blob_bytes = max_blob_bytes
        self.backoff = backoff or Backoff(initial=0.1, maximum=5.0)
        self.keepalive = keepalive
        self.refused: Counter[str] = Counter()
        # forged or stale pointers must not flood the log: first per reason, then summaries
        self._refusals = RejectLog(log, f"weights {self.client_id}: policy update",
                                   counter=self.refused)
        self.accepted = 0
        self.connected = asyncio.Event()
        self.updated = asyncio.Condition()
        self.last_pointer: PolicyPointer | None = None
        self._fetch: _Fetch | None = None
        self._client: aiomqtt.Client | None = None  # the connected client, for the timer
        self._timer_tasks: set[asyncio.Task[None]] = set()
        self._task: asyncio.Task[None] | None = None

    async def wait_version(self, at_least: int = 0, timeout: float | None = None) -> int:
        """Wait until a version ≥ ``at_least`` is accepted; returns it."""
        async with asyncio.timeout(timeout):
            async with self.updated:
                await self.updated.wait_for(lambda: self.version >= at_least)
        return self.version

    def _refuse(self, reason: str, detail: str) -> None:
        self._refusals.reject(reason, detail)

    async def stop(self) -> None:
        await super().stop()
        self._refusals.flush()

    async def _run(self) -> None:
        while True:
            client = aiomqtt.Client(**self.address.client_kwargs(), identifier=self.client_id,
                                    clean_session=True, keepalive=self.keepalive, timeout=10)
            try:
                async with client:
                    self.backoff.reset()
                    self._drop_fetch()
                    self._client = client
                    await client.subscribe(topics.policy_pointer(), qos=1)
                    self.connected.set()
                    await self._loop(client)
            except aiomqtt.MqttError as exc:
                log.info("weights %s: connection lost: %s", self.client_id, exc)
            finally:
                self._client = None
                self._drop_fetch()
                self.connected.clear()
            await asyncio.sleep(self.backoff.next())

    async def _loop(self, client: aiomqtt.Client) -> None:
        pointer_topic = topics.policy_pointer()
        async for m in client.messages:
            topic = str(m.topic)
            payload = m.payload if isinstance(m.payload, bytes | bytearray) else b""
            if topic == pointer_topic:
                if not payload:  # a cleared pointer: nothing published
                    continue
                await self._on_pointer(client, bytes(payload))
            elif self._fetch is not None and topic.startswith(
                    topics.policy_blob(self._fetch.pointer.version) + "/"):
                if not payload:
                    continue  # a cleared chunk (the version is being retired)
                await self._on_chunk(client, bytes(payload))

    def _start_timer(self, f: _Fetch) -> None:
        """Abandon ``f`` after the fetch timeout even if no message ever arrives (the
        timeout used to be checked only when a message came)."""
        def expire() -> None:
            if self._fetch is f and self._client is not None:
                task = asyncio.get_running_loop().create_task(self._expire(self._client, f))
                self._timer_tasks.add(task)
                task.add_done_callback(self._timer_tasks.discard)

        f.timer = asyncio.get_running_loop().call_later(self.fetch_timeout_s, expire)

    async def _expire(self, client: aiomqtt.Client, f: _Fetch) -> None:
        if self._fetch is f:
            await self._abandon(client, "timeout", "blob chunks did not all arrive within "
                                f"{self.fetch_timeout_s:g} s ({f.received} of "
                                f"{f.pointer.size} B)")

    async def _on_pointer(self, client: aiomqtt.Client, payload: bytes) -> None:
        if self.trusted is not None:
            verdict, detail = check_envelope(payload, self.trusted)
            if verdict is not Verdict.OK:
                self._refuse(verdict.value, detail)
                return
        parsed = parse_message(topics.policy_pointer(), payload)
        if not isinstance(parsed, Message) or not isinstance(parsed.body, PolicyPointer):
            detail = parsed.detail if isinstance(parsed, Rejected) else "not a pointer"
            self._refuse("bad_pointer", detail)
            return
        p = parsed.body
        self.last_pointer = p
        if p.version <= self.version:
            if p.version < self.version:  # the same version again (a retained re-send) is fine
                self._refuse("stale", f"v{p.version} ≤ current v{self.version}")
            return
        if self._fetch is not None:
            pending = self._fetch.pointer
            if pending.version == p.version and pending.sha256 == p.sha256:
                return  # the same pointer again (a retained re-send)
            # the newest pointer wins, higher version or not: a forged v10⁹ whose blob
            # never comes must not make the farm ignore the learner's real next version
            log.info("weights %s: fetch of v%d replaced by a newer pointer (v%d)",
                     self.client_id, pending.version, p.version)
            await self._abandon(client, None, "")
        if not p.where.startswith("mqtt:") or p.where[5:] != topics.policy_blob(p.version):
            self._refuse("unsupported_where", p.where)
            return
        if p.size > self.max_blob_bytes:
            self._refuse("size_mismatch", f"{p.size} B announced, limit {self.max_blob_bytes}")
            return
        try:
            check_config(p.kind, dict(p.config))
        except ConfigError as exc:
            self._refuse("bad_config", f"v{p.version}: {exc}")
            return
        if not self.fetch_blobs:  # the weights live on an inference server: the pointer is all
            await self._accept(None, p)
            return
        self._fetch = f = _Fetch(p)
        self._start_timer(f)
        await client.subscribe(topics.policy_blob(p.version) + "/+", qos=1)

    def _drop_fetch(self) -> None:
        """Forget a fetch without a broker round trip (the connection is gone)."""
        f, self._fetch = self._fetch, None
        if f is not None and f.timer is not None:
            f.timer.cancel()

    async def _abandon(self, client: aiomqtt.Client, reason: str | None, detail: str) -> None:
        f, self._fetch = self._fetch, None
        if f is None:
            return
        if f.timer is not None:
            f.timer.cancel()
        if reason is not None:
            self._refuse(reason, f"v{f.pointer.version}: {detail}")
        with contextlib.suppress(aiomqtt.MqttError):
            await client.unsubscribe(topics.policy_blob(f.pointer.version) + "/+")

    async def _on_chunk(self, client: aiomqtt.Client, payload: bytes) -> None:
        f = self._fetch
        assert f is not None
        p = f.pointer
        # validate the header alone, then copy the data once, into place
        if len(payload) > MAX_CHUNK_BYTES or len(payload) < 6 or payload[:4] != CHUNK_MAGIC:
            await self._abandon(client, "bad_chunk", "not a chunk of at most 1 MB")
            return
        (hlen,) = struct.unpack_from(">H", payload, 4)
        chunk = parse_chunk(payload[: 6 + hlen])
        if isinstance(chunk, Rejected):
            await self._abandon(client, "bad_chunk", f"{chunk.reason}: {chunk.detail}")
            return
        if chunk.sha256 != p.sha256:
            await self._abandon(client, "sha_mismatch", "chunk announces another sha256")
            return
        if chunk.total != p.size:
            await self._abandon(client, "size_mismatch",
                                f"chunks announce {chunk.total} B, pointer {p.size} B")
            return
        why = f.put(chunk, memoryview(payload)[6 + hlen :])
        if why is not None:
            await self._abandon(client, "bad_chunk", why)
            return
        if not f.complete:
            return
        await self._abandon(client, None, "")  # done with the blob topic
        whole = await asyncio.to_thread(f.blob)
        f.parts.clear()
        digest = await asyncio.to_thread(lambda: hashlib.sha256(whole).hexdigest())
        if digest != p.sha256:
            self._refuse("sha_mismatch", f"v{p.version}: blob sha256 {digest[:12]}…")
            return
        try:
            weights = await asyncio.to_thread(deserialize_weights, whole)
        except ValueError as exc:
            self._refuse("bad_weights", f"v{p.version}: {exc}")
            return
        if p.version <= self.version:  # a newer one won the race meanwhile
            return
        await self._accept(weights, p)

    async def _accept(self, weights: dict[str, torch.Tensor] | None, p: PolicyPointer) -> None:
        try:
            res = self.on_weights(weights, p)
            if res is not None:
                await res
        except Exception as exc:  # weights that do not fit the policy: keep the old one
            self._refuse("rejected_by_consumer", f"v{p.version}: {exc}")
            return
        async with self.updated:
            self.version = p.version
            self.accepted += 1
            self.updated.notify_all()
        log.info("policy v%d accepted (%d B, sha256 %s…)", p.version, p.size, p.sha256[:12])


# ----------------------------------------------------------------------------- provider


@dataclass
class _Slot:
    policy: TrainablePolicy
    kind: str
    config: dict[str, Any]
    agent: weakref.ref[PolicyAgent] | None = None

    def free(self) -> bool:
        return self.agent is None or self.agent() is None


class LearnedPolicyProvider:
    """A :class:`farm.collect.PolicyProvider` playing the learner's newest policy.

    Every version gets its own :class:`~distrl_sdk.learn.PolicyAgent` (which batches the
    decisions of all devices playing that version), so a swap happens between episodes:
    an episode keeps the agent it started with, and every step records the version that
    chose it. Policy objects are pooled: new weights are loaded into an object no live
    agent uses (``build_policy`` runs only when none is free, e.g. for the first version).

        async with LearnedPolicyProvider(broker_url) as provider:
            await provider.wait_ready(60)
            ctl = FarmController(cfg, policies=provider)
    """

    def __init__(self, url: str, *, client_id: str | None = None, greedy: bool = False,
                 fetch_timeout_s: float = 60.0, ready_timeout_s: float = 120.0,
                 fallback: PolicyProvider | None = None,
                 trusted: TrustedKeys | None = None, inference_url: str | None = None,
                 inference_api_key: str | None = None) -> None:
        self.greedy = greedy
        # acting through an OpenAI-compatible server (vLLM + LoRA) that the learner loads
        # every version into: pointers only, no blobs fetched, no model built here
        self.inference_url = inference_url
        self.inference_api_key = inference_api_key
        self._http: Any = None
        self.fallback = fallback  # plays (e.g. RandomProvider) until the first version
        self.ready_timeout_s = ready_timeout_s
        self.subscriber = WeightSubscriber(url, self._on_weights, client_id=client_id,
                                           fetch_timeout_s=fetch_timeout_s, trusted=trusted,
                                           fetch_blobs=inference_url is None)
        self.agent: PolicyAgent | RemotePolicy | None = None
        self.swaps = 0
        self.builds = 0
        self._slots: list[_Slot] = []
        self._ready = asyncio.Event()

    @property
    def version(self) -> int | None:
        return self.agent.version if self.agent is not None else None

    @property
    def refused(self) -> Counter[str]:
        return self.subscriber.refused

    async def start(self) -> None:
        if self.inference_url is not None and self._http is None:
            import httpx

            # decisions wait on the server's batches: generous read timeout, many sockets
            self._http = httpx.AsyncClient(timeout=httpx.Timeout(120.0, connect=10.0),
                                           limits=httpx.Limits(max_connections=256))
        await self.subscriber.start()

    async def stop(self) -> None:
        await self.subscriber.stop()
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    async def __aenter__(self) -> LearnedPolicyProvider:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def wait_ready(self, timeout: float | None = None) -> int:
        """Wait for the first policy version; ``TimeoutError`` says no learner published."""
        try:
            async with asyncio.timeout(timeout):
                await self._ready.wait()
        except TimeoutError:
            refused = {r: n for r, n in self.subscriber.refused.items() if n}
            unsigned = [r for r in ("unsigned", "unknown_key", "bad_signature") if r in refused]
            if unsigned:  # a learner is there, but not one this side trusts
                trusted = self.subscriber.trusted
                raise TimeoutError(
                    f"no policy within {timeout:.0f} s: the broker's policy pointers were "
                    f"refused ({', '.join(f'{r} {refused[r]}' for r in unsigned)}); trusted "
                    f"learner keys: {trusted.describe() if trusted else 'any'} — give the "
                    "learner's public key with --learner-key FILE.pub") from None
            why = f" (refused: {refused})" if refused else ""
            raise TimeoutError(
                f"no policy arrived from the learner within {timeout:.0f} s (is `distrl "
                f"learner` running on the same broker?){why}") from None
        assert self.agent is not None
        return self.agent.version

    async def _slot_for(self, kind: str, config: dict[str, Any]) -> _Slot:
        for s in self._slots:
            if s.free() and s.kind == kind and s.config == config:
                return s
        self._slots = [s for s in self._slots if not s.free()]  # other architectures: drop
        from distrl_sdk.policies import build_policy

        # off the event loop: a large model takes seconds to build, and the farm's
        # devices, heartbeats and MQTT keepalives run on this loop meanwhile
        policy = await asyncio.to_thread(build_policy, kind, config)
        slot = _Slot(policy, kind, config)
        self.builds += 1
        self._slots.append(slot)
        return slot

    async def _on_weights(self, weights: dict[str, torch.Tensor] | None,
                          p: PolicyPointer) -> None:
        if self.inference_url is not None:
            self._on_remote(p)
            return
        from distrl_sdk.learn.api import PolicyAgent

        assert weights is not None
        slot = await self._slot_for(p.kind, dict(p.config))
        # no live agent uses this object, so no decide() can run on it while it loads
        await asyncio.to_thread(slot.policy.load_weights, weights)
        agent = PolicyAgent(slot.policy, p.version, greedy=self.greedy)
        slot.agent = weakref.ref(agent)
        self.agent = agent
        self.swaps += 1
        self._ready.set()

    def _on_remote(self, p: PolicyPointer) -> None:
        from distrl_sdk.policies.remote import RemotePolicy

        if p.kind != "vlm":
            raise ConfigError(f"a {p.kind} policy cannot be served remotely (--policy remote "
                              "plays vlm policies through an inference server)")
        assert self.inference_url is not None and self._http is not None
        self.agent = RemotePolicy(self._http, self.inference_url, p.version, dict(p.config),
                                  greedy=self.greedy, api_key=self.inference_api_key)
        self.swaps += 1
        self._ready.set()

    async def policy_for(self, task: Task, device: Device) -> PolicyChoice:
        if self.agent is None:
            if self.fallback is not None:
                return await self.fallback.policy_for(task, device)
            await self.wait_ready(self.ready_timeout_s)
        assert self.agent is not None
        return PolicyChoice(self.agent, self.agent.version)
