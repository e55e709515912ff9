"""A site broker bridged to a central one, two real mosquitto instances: the site's farm
topics reach the central broker, acks and policies come back, others' topics stay out,
and what a farm publishes while the link is cut arrives once it is back (store and
forward), each message once."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import aiomqtt
import pytest

from distrl_sdk.wire import topics
from distrl_sdk.wire.broker_url import parse_broker_url
from farm.broker import EmbeddedBroker, find_mosquitto
from farm.broker_acl import BrokerAccounts, farm_user
from farm.broker_bridge import Bridge

pytestmark = pytest.mark.skipif(find_mosquitto() is None, reason="bridging needs mosquitto")

SITE = "site1"


def _client(url: str, ident: str, *, clean: bool = True) -> aiomqtt.Client:
    return aiomqtt.Client(**parse_broker_url(url).client_kwargs(), identifier=ident,
                          clean_session=clean, timeout=5)


async def _take(c: aiomqtt.Client, n: int, timeout: float = 20) -> list[tuple[str, bytes]]:
    got: list[tuple[str, bytes]] = []
    async with asyncio.timeout(timeout):
        async for m in c.messages:
            got.append((str(m.topic), bytes(m.payload)))  # type: ignore[arg-type]
            if len(got) == n:
                break
    return got


@contextlib.asynccontextmanager
async def _sites() -> AsyncIterator[tuple[EmbeddedBroker, EmbeddedBroker]]:
    accounts = BrokerAccounts.generate([SITE, "other"])
    central = EmbeddedBroker(backend="mosquitto", accounts=accounts)
    async with central:
        user = farm_user(SITE)
        url = central.url.replace("mqtt://", f"mqtt://{user}@")
        site = EmbeddedBroker(backend="mosquitto", bridge=Bridge(
            url, farms=[SITE], password=accounts.passwords[user], retry_s=(1, 2)))
        async with site:
            yield central, site


async def _bridged(site: EmbeddedBroker, central_learner: aiomqtt.Client) -> None:
    """Until a probe published at the site reaches the central broker."""
    async with _client(site.url, "probe") as p:
        for _ in range(100):
            await p.publish(topics.traj(SITE, "probe"), b"probe", qos=1)
            with contextlib.suppress(TimeoutError):
                await _take(central_learner, 1, timeout=0.2)
                return
    raise AssertionError("the bridge never came up")


async def test_site_topics_cross_and_survive_a_cut() -> None:
    async with _sites() as (central, site):
        assert central.accounts is not None
        learner_url = central.accounts.url_for(central.url, "learner")
        # the central learner: a persistent session, as `distrl learner` keeps
        learner = _client(learner_url, "learner-central", clean=False)
        await learner.__aenter__()
        try:
            await learner.subscribe(topics.traj_filter(), qos=1)
            await _bridged(site, learner)
            async with _client(site.url, "farm-at-site") as farm:
                await farm.subscribe(topics.ack(SITE), qos=1)
                await farm.subscribe(topics.policy_pointer(), qos=1)
                await farm.publish(topics.traj(SITE, "t1"), b"one", qos=1)
                await farm.publish(topics.traj("other", "t9"), b"not ours", qos=1)
                assert await _take(learner, 1) == [(topics.traj(SITE, "t1"), b"one")]
                # acks and policies come back to the site
                await learner.publish(topics.ack(SITE), b"ack t1", qos=1)
                await learner.publish(topics.policy_pointer(), b"v1", qos=1, retain=True)
                back = await _take(farm, 2)
                assert sorted(back) == sorted([(topics.ack(SITE), b"ack t1"),
                                               (topics.policy_pointer(), b"v1")])

            # the WAN cut: the central broker goes away; the site keeps taking data
            await learner.__aexit__(None, None, None)
            await central.stop()
            async with _client(site.url, "farm-at-site-2") as farm:
                for i in range(5):
                    await farm.publish(topics.traj(SITE, f"cut{i}"), f"{i}".encode(), qos=1)
            await asyncio.sleep(1.0)
            await central.start()  # back: the bridge reconnects and delivers the queue
            learner = _client(learner_url, "learner-central", clean=False)
            await learner.__aenter__()
            got = await _take(learner, 5, timeout=30)
            assert sorted(p for _, p in got) == [b"0", b"1", b"2", b"3", b"4"]
            with pytest.raises(TimeoutError):  # each once
                await _take(learner, 1, timeout=1.5)
        finally:
            with contextlib.suppress(Exception):
                await learner.__aexit__(None, None, None)


def test_bridge_config_names_only_the_sites_topics() -> None:
    lines = Bridge("mqtts://farm-site1@central.example:8883?ca=/etc/ca.pem",
                   farms=["site1"], password="pw").config_lines()
    assert "address central.example:8883" in lines and "bridge_cafile /etc/ca.pem" in lines
    assert "remote_username farm-site1" in lines and "remote_password pw" in lines
    assert "topic distrl/v1/site1/traj/+ out 1" in lines
    assert "topic distrl/v1/site1/ack in 1" in lines and "cleansession false" in lines
    assert not any("other" in ln for ln in lines)
    with pytest.raises(ValueError):
        Bridge("ftp://x", farms=["site1"])
    with pytest.raises(ValueError):
        Bridge("mqtt://x", farms=[])
