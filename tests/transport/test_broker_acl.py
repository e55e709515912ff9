"""The embedded broker with accounts, on the real brokers: anonymous and wrong passwords
are refused at CONNECT, and each account publishes and subscribes only where its role
allows — the hostile-local-user attacks (forged acks, commands from anyone, trajectories
as another farm, forged policies) stop at the broker."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import aiomqtt
import pytest

from distrl_sdk.wire import topics
from distrl_sdk.wire.broker_url import parse_broker_url
from farm.broker import EmbeddedBroker
from farm.broker_acl import BrokerAccounts, mosquitto_acl, mosquitto_password_hash

from .conftest import BACKENDS

FARMS = ["alpha", "beta"]


@pytest.fixture(params=BACKENDS)
async def locked(request: pytest.FixtureRequest) -> AsyncIterator[EmbeddedBroker]:
    b = EmbeddedBroker(backend=request.param, accounts=BrokerAccounts.generate(FARMS))
    async with b:
        yield b


def _client(url: str, ident: str) -> aiomqtt.Client:
    return aiomqtt.Client(**parse_broker_url(url).client_kwargs(), identifier=ident,
                          timeout=5)


def _as(b: EmbeddedBroker, user: str, role: str = "") -> aiomqtt.Client:
    assert b.accounts is not None  # one client id per connection: a reused id kicks
    return _client(b.accounts.url_for(b.url, user), f"t-{user}-{role}")


async def test_anonymous_and_wrong_passwords_are_refused(locked: EmbeddedBroker) -> None:
    assert locked.accounts is not None
    with pytest.raises(aiomqtt.MqttError):
        async with _client(locked.url, "anon"):
            pass
    wrong = BrokerAccounts(locked.accounts.accounts,
                           {u: "not-" + p for u, p in locked.accounts.passwords.items()})
    with pytest.raises(aiomqtt.MqttError):
        async with _client(wrong.url_for(locked.url, "learner"), "wrong"):
            pass
    with pytest.raises(aiomqtt.MqttError):  # a user the broker does not know
        async with _client(locked.url.replace("mqtt://", "mqtt://mallory:x@"), "mallory"):
            pass
    async with _as(locked, "learner"):
        pass


# (account, topic, allowed): what each role may publish
PUBLISH_CASES = [
    ("learner", topics.ack("alpha"), True),
    ("learner", topics.policy_pointer(), True),
    ("learner", topics.traj("alpha", "t-learner"), False),
    ("learner", topics.cmd("alpha", "dev1"), False),
    ("farm-alpha", topics.traj("alpha", "t1"), True),
    ("farm-alpha", topics.status("alpha", "dev1"), True),
    ("farm-alpha", topics.cmd_result("alpha"), True),
    ("farm-alpha", topics.traj("beta", "t2"), False),   # data forged as another farm
    ("farm-alpha", topics.ack("alpha"), False),         # acks only from the learner
    ("farm-alpha", topics.policy_pointer(), False),     # policies only from the learner
    ("farm-alpha", topics.cmd("beta", "dev1"), False),
    ("operator", topics.cmd("alpha", "dev1"), True),
    ("operator", topics.status("deploy", "dev9"), True),
    ("operator", topics.ack("alpha"), False),
    ("operator", topics.traj("alpha", "t3"), False),
    ("operator", topics.policy_blob_chunk(7, 0), False),
    ("viewer", topics.cmd("alpha", "dev1"), False),     # read-only operators
    ("viewer", topics.ack("beta"), False),
]


async def test_each_account_publishes_only_its_own_topics(locked: EmbeddedBroker) -> None:
    got: list[bytes] = []
    allowed = {f"{u} {t}".encode() for u, t, ok in PUBLISH_CASES if ok}
    async with _as(locked, "viewer", "watcher") as watcher:
        await watcher.subscribe(f"{topics.PREFIX}/#", qos=1)

        all_allowed = asyncio.Event()

        async def collect() -> None:
            async for msg in watcher.messages:
                got.append(bytes(msg.payload))  # type: ignore[arg-type]
                if allowed <= set(got):
                    all_allowed.set()

        reader = asyncio.create_task(collect())
        users = dict.fromkeys(u for u, _t, _ok in PUBLISH_CASES)
        for user in users:
            async with _as(locked, user) as c:
                for u, topic, _ok in PUBLISH_CASES:
                    if u == user:
                        await c.publish(topic, f"{u} {topic}".encode(), qos=1)
        # every allowed message arrives; each publisher's refused ones went before its
        # allowed ones on the same connection, so by then they would have arrived too
        async with asyncio.timeout(10):
            await all_allowed.wait()
        await asyncio.sleep(0.3)  # the viewer's own refused publishes have no marker
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reader
    retained_clear = [m for m in got if not m]
    assert set(got) - set(retained_clear) == allowed


async def test_a_farm_cannot_read_another_farms_commands(locked: EmbeddedBroker) -> None:
    seen: dict[str, list[str]] = {"farm-alpha": [], "farm-beta": []}
    async with _as(locked, "farm-alpha") as a, _as(locked, "farm-beta") as b:
        await a.subscribe(f"{topics.PREFIX}/beta/cmd/+", qos=1)
        await b.subscribe(f"{topics.PREFIX}/beta/cmd/+", qos=1)

        beta_got_it = asyncio.Event()

        async def read(name: str, c: aiomqtt.Client) -> None:
            async for msg in c.messages:
                seen[name].append(str(msg.topic))
                if name == "farm-beta":
                    beta_got_it.set()

        tasks = [asyncio.create_task(read("farm-alpha", a)),
                 asyncio.create_task(read("farm-beta", b))]
        async with _as(locked, "operator") as op:
            await op.publish(topics.cmd("beta", "dev1"), b"{}", qos=1)
        async with asyncio.timeout(10):
            await beta_got_it.wait()
        await asyncio.sleep(0.3)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    assert seen == {"farm-alpha": [], "farm-beta": [topics.cmd("beta", "dev1")]}


def test_mosquitto_hash_is_what_mosquitto_passwd_writes() -> None:
    salt = bytes(range(12))
    h = mosquitto_password_hash("secret", salt=salt)
    assert h.startswith("$7$101$AAECAwQFBgcICQoL$") and len(h.rsplit("$", 1)[1]) == 88


def test_saved_passwords_survive_a_restart_and_are_private(tmp_path: Path) -> None:
    d = tmp_path / "accounts"
    first = BrokerAccounts.load_or_create(d, ["alpha"])
    again = BrokerAccounts.load_or_create(d, ["alpha", "beta"])
    assert again.passwords["farm-alpha"] == first.passwords["farm-alpha"]
    assert "farm-beta" in again.passwords
    for user in again.passwords:
        path = again.password_file(user)
        assert path.stat().st_mode & 0o777 == 0o600
        assert path.read_text().strip() == again.passwords[user]
    acl = mosquitto_acl(again.accounts)
    assert "user farm-beta\ntopic write distrl/v1/beta/traj/+" in acl
    assert "user viewer\ntopic read distrl/v1/#" in acl
