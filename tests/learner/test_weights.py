"""Weight distribution against a real mosquitto: publish, fetch, verify, refuse, hot-swap."""

from __future__ import annotations

import asyncio
import gc
import hashlib
import json
import struct
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiomqtt
import pytest
import torch

from distrl_sdk.policies import build_policy
from distrl_sdk.policy import Observation
from distrl_sdk.uitree import Bounds, UIElement
from distrl_sdk.wire import PolicyPointer, encode_envelope, split_chunks, topics
from farm.broker import EmbeddedBroker, find_mosquitto
from farm.collect import RandomProvider
from farm.learner.weights import (
    LearnedPolicyProvider,
    MqttLink,
    WeightPublisher,
    WeightSubscriber,
    blob_chunk_topic,
    deserialize_weights,
    serialize_weights,
)

pytestmark = pytest.mark.skipif(find_mosquitto() is None, reason="no mosquitto binary")

CFG: dict[str, Any] = {"buckets": 256, "embed_dim": 8, "hidden": 8, "seed": 0}
SMALL_CHUNKS = 4096 + 512  # several chunks even for a tiny policy


@pytest.fixture
async def broker() -> AsyncIterator[EmbeddedBroker]:
    async with EmbeddedBroker(backend="mosquitto") as b:
        yield b


def observation(instruction: str = "Turn off Wi-Fi") -> Observation:
    def el(i: int, text: str, clickable: bool = True) -> UIElement:
        return UIElement(index=i, depth=1 if i else 0, parent=0 if i else None, text=text,
                         resource_id="", class_name="android.widget.TextView",
                         package="com.android.settings", content_desc="",
                         bounds=Bounds(0, 100 * i, 1080, 100 * i + 90), clickable=clickable)

    return Observation(instruction=instruction, screen_size=(1080, 2400), step=0,
                       elements=[el(0, "", False), el(1, "Wi-Fi"), el(2, "Bluetooth")])


def shifted(weights: dict[str, torch.Tensor], by: float) -> dict[str, torch.Tensor]:
    return {k: v + by if v.is_floating_point() else v for k, v in weights.items()}


def same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


async def until(cond: Callable[[], bool], timeout: float = 10.0) -> None:
    async with asyncio.timeout(timeout):
        while not cond():  # noqa: ASYNC110 - polls state owned by other tasks
            await asyncio.sleep(0.02)


async def raw_publish(url: str, items: list[tuple[str, bytes]]) -> None:
    host, port = url.removeprefix("mqtt://").split(":")
    async with aiomqtt.Client(host, int(port)) as c:
        for topic, payload in items:
            await c.publish(topic, payload, qos=1, retain=True)


def test_safetensors_round_trip_and_garbage() -> None:
    w = build_policy("uitree", CFG).weights()
    w["steps"] = torch.arange(5, dtype=torch.int64)
    w["empty"] = torch.zeros(0, 3)
    blob = serialize_weights(w)
    assert same(deserialize_weights(blob), w)
    assert same(deserialize_weights(bytearray(blob)), w)
    with pytest.raises(ValueError, match="safetensors"):
        deserialize_weights(b"\x00" * 64)

    def forged(entry: dict[str, Any], data: bytes = b"\0" * 16) -> bytes:
        header = json.dumps({"x": entry}).encode()
        return struct.pack("<Q", len(header)) + header + data

    for bad in ({"dtype": "F32", "shape": [4], "data_offsets": [0, 64]},  # past the end
                {"dtype": "F32", "shape": [3], "data_offsets": [0, 16]},  # size ≠ shape
                {"dtype": "PICKLE", "shape": [4], "data_offsets": [0, 16]},
                {"dtype": "F32", "shape": [-4], "data_offsets": [0, 16]},
                {"dtype": "F32", "shape": [4]}):
        with pytest.raises(ValueError, match="safetensors"):
            deserialize_weights(forged(bad))
    assert deserialize_weights(forged({"dtype": "F32", "shape": [2, 2],
                                       "data_offsets": [0, 16]}))["x"].shape == (2, 2)


async def test_publish_fetch_verify_and_clear_old_versions(broker: EmbeddedBroker) -> None:
    policy = build_policy("uitree", CFG)
    got: list[tuple[int, dict[str, torch.Tensor]]] = []
    async with MqttLink(broker.url) as link:
        pub = WeightPublisher(link, keep=2, chunk_bytes=SMALL_CHUNKS)
        w1 = policy.weights()
        p1 = await pub.publish(w1, 1, kind="uitree", config=policy.config_dict())
        assert p1.sha256 == hashlib.sha256(serialize_weights(w1)).hexdigest()
        assert pub.published[-1].chunks > 1
        # a subscriber that joins later gets the retained pointer and chunks
        sub = WeightSubscriber(broker.url, lambda w, p: got.append((p.version, w)))
        async with sub:
            assert await sub.wait_version(1, timeout=10) == 1
            assert same(got[0][1], w1)
            w3 = shifted(w1, 0.5)
            await pub.publish(shifted(w1, 0.25), 2, kind="uitree", config=policy.config_dict())
            await pub.publish(w3, 3, kind="uitree", config=policy.config_dict())
            await sub.wait_version(3, timeout=10)
        assert [v for v, _ in got][-1] == 3 and same(got[-1][1], w3)
        assert sub.refused == {}
        assert [p.version for p in pub.published] == [2, 3] and pub.cleared == 1
    # v1's chunks are no longer retained; v3's are
    host, port = broker.url.removeprefix("mqtt://").split(":")
    seen: dict[str, int] = {}
    async with aiomqtt.Client(host, int(port)) as c:
        await c.subscribe(topics.policy_blob(1) + "/+", qos=1)
        await c.subscribe(topics.policy_blob(3) + "/+", qos=1)
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(1.0):
                async for m in c.messages:
                    seen[str(m.topic).rsplit("/", 2)[1]] = seen.get(
                        str(m.topic).rsplit("/", 2)[1], 0) + 1
    assert "1" not in seen and seen.get("3", 0) == pub.published[-1].chunks


async def test_stale_corrupt_and_hostile_blobs_are_refused(broker: EmbeddedBroker) -> None:
    policy = build_policy("uitree", CFG)
    target = build_policy("uitree", CFG)
    good = serialize_weights(shifted(policy.weights(), 0.1))
    sha = hashlib.sha256(good).hexdigest()
    cfg = policy.config_dict()

    def pointer(v: int, digest: str = sha, size: int = len(good)) -> tuple[str, bytes]:
        p = PolicyPointer(version=v, sha256=digest, size=size,
                          where=f"mqtt:{topics.policy_blob(v)}", kind="uitree", config=cfg)
        return topics.policy_pointer(), encode_envelope(p)

    def chunks(v: int, data: bytes, digest: str | None = None) -> list[tuple[str, bytes]]:
        return [(blob_chunk_topic(v, i), c) for i, c in enumerate(
            split_chunks(f"policy-v{v}", data, max_bytes=SMALL_CHUNKS, sha256=digest))]

    sub = WeightSubscriber(broker.url, lambda w, p: target.load_weights(w),
                           fetch_timeout_s=5)
    async with sub, MqttLink(broker.url) as link:
        await WeightPublisher(link, chunk_bytes=SMALL_CHUNKS).publish(
            good, 5, kind="uitree", config=cfg)
        await sub.wait_version(5, timeout=10)
        assert same(target.weights(), shifted(policy.weights(), 0.1))

        async def expect(reason: str, items: list[tuple[str, bytes]], n: int = 1) -> None:
            before = sub.refused[reason]
            await raw_publish(broker.url, items)
            await until(lambda: sub.refused[reason] >= before + n)

        await expect("stale", [pointer(3)])  # older than what the farm plays
        await expect("sha_mismatch", [*chunks(6, good), pointer(6, digest="0" * 64)])
        tampered = bytes([good[0] ^ 1]) + good[1:]  # chunk headers carry the pointer's sha
        await expect("sha_mismatch", [*chunks(7, tampered, digest=sha), pointer(7)])
        await expect("size_mismatch", [*chunks(8, good), pointer(8, size=len(good) + 1)])
        await expect("bad_chunk", [(blob_chunk_topic(9, 0), b"DRK1\xff\xffgarbage"),
                                   pointer(9)])
        misfit = serialize_weights({"x": torch.zeros(3)})
        msha = hashlib.sha256(misfit).hexdigest()
        await expect("rejected_by_consumer", [*chunks(10, misfit),
                                              pointer(10, digest=msha, size=len(misfit))])
        junk = b"not safetensors" * 100
        jsha = hashlib.sha256(junk).hexdigest()
        await expect("bad_weights", [*chunks(11, junk),
                                     pointer(11, digest=jsha, size=len(junk))])
        await expect("bad_pointer", [(topics.policy_pointer(), b"{not json")])
        await expect("unsupported_where", [(topics.policy_pointer(), encode_envelope(
            PolicyPointer(version=12, sha256=sha, size=len(good), where="file:///etc/passwd",
                          kind="uitree", config=cfg)))])
        # the farm kept v5 through all of it, and still takes a good newer version
        assert sub.version == 5 and same(target.weights(), shifted(policy.weights(), 0.1))
        fresh = serialize_weights(policy.weights())
        await raw_publish(broker.url, [*chunks(13, fresh), pointer(
            13, digest=hashlib.sha256(fresh).hexdigest(), size=len(fresh))])
        await sub.wait_version(13, timeout=10)
        assert same(target.weights(), policy.weights()) and sub.accepted == 2


async def test_provider_swaps_between_episodes(broker: EmbeddedBroker) -> None:
    learner = build_policy("uitree", CFG)
    cfg = learner.config_dict()
    w1, w2, w3 = (shifted(learner.weights(), d) for d in (0.0, 0.3, 0.6))
    async with MqttLink(broker.url) as link, LearnedPolicyProvider(
            broker.url, fallback=RandomProvider(seed=1)) as provider:
        pub = WeightPublisher(link)
        before = await provider.policy_for(None, None)  # type: ignore[arg-type]
        assert before.version == 0 and before.policy.name == "random"  # no learner yet
        await pub.publish(w1, 1, kind="uitree", config=cfg)
        assert await provider.wait_ready(10) == 1
        ep1 = await provider.policy_for(None, None)  # type: ignore[arg-type]
        assert ep1.version == 1
        d1 = await ep1.policy.act(observation())
        assert d1.policy_version == 1 and d1.log_prob is not None and d1.obs and d1.choice

        await pub.publish(w2, 2, kind="uitree", config=cfg)
        await provider.subscriber.wait_version(2, timeout=10)
        ep2 = await provider.policy_for(None, None)  # type: ignore[arg-type]
        assert ep2.version == 2 and ep2.policy is not ep1.policy
        # the episode in flight keeps playing v1 (weights untouched) and records v1
        assert same(ep1.policy.policy.weights(), w1)  # type: ignore[attr-defined]
        assert (await ep1.policy.act(observation())).policy_version == 1
        assert (await ep2.policy.act(observation())).policy_version == 2
        assert same(ep2.policy.policy.weights(), w2)  # type: ignore[attr-defined]
        assert provider.builds == 2

        del ep1, d1  # the v1 episode ended: its policy object is free for reuse
        gc.collect()
        await pub.publish(w3, 3, kind="uitree", config=cfg)
        await provider.subscriber.wait_version(3, timeout=10)
        ep3 = await provider.policy_for(None, None)  # type: ignore[arg-type]
        assert ep3.version == 3 and provider.builds == 2 and provider.swaps == 3
        assert same(ep3.policy.policy.weights(), w3)  # type: ignore[attr-defined]
        assert same(ep2.policy.policy.weights(), w2)  # type: ignore[attr-defined]


async def test_provider_without_learner_times_out_clearly(broker: EmbeddedBroker) -> None:
    async with LearnedPolicyProvider(broker.url, ready_timeout_s=0.3) as provider:
        with pytest.raises(TimeoutError, match="distrl learner"):
            await provider.policy_for(None, None)  # type: ignore[arg-type]


async def test_pointers_that_cannot_freeze_a_farm(broker: EmbeddedBroker) -> None:
    """The pointer attacks of [trust], as a hostile client on the broker makes them: a
    1 GiB pointer with no blob, a forged version 10⁹ whose blob never comes, and a config
    that would build a huge model. The farm spends no memory on announcements, drops a
    stuck fetch on its own timer, lets the next real pointer replace a pending forged one
    and refuses the config before fetching anything."""
    import tracemalloc

    policy = build_policy("uitree", CFG)
    cfg = policy.config_dict()
    target = build_policy("uitree", CFG)
    sub = WeightSubscriber(broker.url, lambda w, p: target.load_weights(w),
                           fetch_timeout_s=1.0)

    def pointer(v: int, size: int, config: dict[str, Any] = cfg) -> tuple[str, bytes]:
        p = PolicyPointer(version=v, sha256="ab" * 32, size=size,
                          where=f"mqtt:{topics.policy_blob(v)}", kind="uitree", config=config)
        return topics.policy_pointer(), encode_envelope(p)

    async with sub, MqttLink(broker.url) as link:
        pub = WeightPublisher(link, chunk_bytes=SMALL_CHUNKS)
        await pub.publish(policy.weights(), 1, kind="uitree", config=cfg)
        await sub.wait_version(1, timeout=10)

        # 1 GiB announced, nothing behind it: no allocation of the announced size, and the
        # fetch ends on its timer although no other message ever arrives
        tracemalloc.start()
        try:
            await raw_publish(broker.url, [pointer(2, 1 << 30)])
            await until(lambda: sub._fetch is not None and sub._fetch.pointer.version == 2)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < 16 << 20, f"{peak / 2**20:.0f} MiB allocated for an announcement"
        await until(lambda: sub.refused["timeout"] == 1, timeout=5)
        assert sub._fetch is None and sub.version == 1

        # a forged v10⁹ without its blob, then the learner's real next version: the real
        # one replaces the pending fetch at once (not after the forged one times out)
        slow = WeightSubscriber(broker.url, lambda w, p: None, fetch_timeout_s=60)
        async with slow:
            await asyncio.wait_for(slow.connected.wait(), 10)
            await raw_publish(broker.url, [pointer(10**9, 4096)])
            await until(lambda: slow._fetch is not None
                        and slow._fetch.pointer.version == 10**9)
            await pub.publish(shifted(policy.weights(), 0.2), 3, kind="uitree", config=cfg)
            assert await slow.wait_version(3, timeout=10) == 3
            assert slow.refused["timeout"] == 0

        # a config that would build ~1 GB of embeddings is refused before any fetch
        huge = {**cfg, "buckets": 8_000_000}
        await raw_publish(broker.url, [pointer(4, 4096, huge)])
        await until(lambda: sub.refused["bad_config"] == 1)
        assert sub._fetch is None and sub.version == 3


async def test_provider_builds_policies_off_the_event_loop(
        broker: EmbeddedBroker, monkeypatch: pytest.MonkeyPatch) -> None:
    """Building a model can take seconds; the farm's devices and MQTT keepalives share the
    provider's event loop, so the build runs in a worker thread."""
    import threading

    import distrl_sdk.policies as policies

    built_on: list[str] = []
    real = policies.build_policy

    def recording(kind: str, config: dict[str, Any]) -> Any:
        built_on.append(threading.current_thread().name)
        return real(kind, config)

    monkeypatch.setattr(policies, "build_policy", recording)
    learner = build_policy("uitree", CFG)
    async with MqttLink(broker.url) as link, LearnedPolicyProvider(broker.url) as provider:
        await WeightPublisher(link).publish(learner.weights(), 1, kind="uitree",
                                            config=learner.config_dict())
        assert await provider.wait_ready(10) == 1
    assert built_on and threading.main_thread().name not in built_on, built_on


async def test_only_pointers_the_trusted_learner_signed_are_followed(
        broker: EmbeddedBroker) -> None:
    """The pointer attack signatures close: the learner's own blob republished under
    version 10⁹ froze a farm on it. Unsigned, by another key, or the learner's signed
    pointer with its version changed: each is refused and counted before any fetch, and
    the farm goes on following the learner."""
    from distrl_sdk.wire.signing import SigningKey, TrustedKeys

    learner, intruder = SigningKey.generate("learner"), SigningKey.generate("intruder")
    policy = build_policy("uitree", CFG)
    cfg = policy.config_dict()
    sub = WeightSubscriber(broker.url, lambda w, p: None, trusted=TrustedKeys.of([learner]))
    async with sub, MqttLink(broker.url) as link:
        pub = WeightPublisher(link, chunk_bytes=SMALL_CHUNKS, signer=learner)
        real = await pub.publish(policy.weights(), 1, kind="uitree", config=cfg)
        await sub.wait_version(1, timeout=10)
        huge = real.model_copy(update={"version": 10**9})
        moved = json.loads(encode_envelope(real, signer=learner))
        moved["body"]["version"] = 10**9
        await raw_publish(broker.url, [
            (topics.policy_pointer(), encode_envelope(huge)),
            (topics.policy_pointer(), encode_envelope(huge, signer=intruder)),
            (topics.policy_pointer(), json.dumps(moved).encode())])
        await until(lambda: sum(sub.refused[r] for r in
                                ("unsigned", "unknown_key", "bad_signature")) == 3)
        assert (sub.refused["unsigned"], sub.refused["unknown_key"],
                sub.refused["bad_signature"]) == (1, 1, 1)
        assert sub.version == 1 and sub._fetch is None
        await pub.publish(shifted(policy.weights(), 0.1), 2, kind="uitree", config=cfg)
        assert await sub.wait_version(2, timeout=10) == 2


async def test_a_farm_waiting_on_an_untrusted_learner_says_so(broker: EmbeddedBroker) -> None:
    """Pointers from a learner whose key the farm does not trust: the wait ends with the
    reason and the way out, not "is a learner running?"."""
    from distrl_sdk.wire.signing import SigningKey, TrustedKeys

    policy = build_policy("uitree", CFG)
    trusted = TrustedKeys.of([SigningKey.generate("learner")])
    async with LearnedPolicyProvider(broker.url, trusted=trusted) as provider, \
            MqttLink(broker.url) as link:
        await WeightPublisher(link, signer=SigningKey.generate("other")).publish(
            policy.weights(), 1, kind="uitree", config=policy.config_dict())
        with pytest.raises(TimeoutError, match=r"refused \(unknown_key 1\).*--learner-key"):
            await provider.wait_ready(2)
