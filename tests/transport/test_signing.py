"""Ed25519 envelopes (distrl_sdk.wire.signing): what verifies, what is refused and why,
and the key files `distrl keys` writes."""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from distrl_sdk.wire import (
    Message,
    PolicyPointer,
    TrajectoryAck,
    encode_envelope,
    parse_message,
    topics,
)
from distrl_sdk.wire.signing import (
    SigningKey,
    TrustedKeys,
    Verdict,
    VerifyKey,
    canonical_json,
    check_envelope,
)

LEARNER = SigningKey.generate("learner")
INTRUDER = SigningKey.generate("intruder")
TRUST = TrustedKeys.of([LEARNER])


def ack(signer: SigningKey | None = LEARNER, ids: tuple[str, ...] = ("t1", "t2")) -> bytes:
    return encode_envelope(TrajectoryAck(ids=list(ids), learner_id="learner"), farm_id="f1",
                           signer=signer)


def test_a_signed_ack_verifies_and_still_parses() -> None:
    payload = ack()
    assert check_envelope(payload, TRUST) == (Verdict.OK, "learner")
    parsed = parse_message(topics.ack("f1"), payload)
    assert isinstance(parsed, Message) and isinstance(parsed.body, TrajectoryAck)
    assert parsed.envelope.signer == LEARNER.key_id


def test_unsigned_unknown_and_tampered_envelopes_are_refused() -> None:
    assert check_envelope(ack(None), TRUST)[0] is Verdict.UNSIGNED
    verdict, detail = check_envelope(ack(INTRUDER), TRUST)
    assert verdict is Verdict.UNKNOWN_KEY and INTRUDER.key_id in detail
    # the learner's real ack with other ids in it: the ids a forger wants deleted
    raw = json.loads(ack())
    raw["body"]["ids"] = ["spooled-1", "spooled-2"]
    assert check_envelope(json.dumps(raw).encode(), TRUST)[0] is Verdict.BAD_SIGNATURE
    # a trusted key id on a signature made by another key
    forged = json.loads(ack(INTRUDER))
    forged["signer"] = LEARNER.key_id
    assert check_envelope(json.dumps(forged).encode(), TRUST)[0] is Verdict.BAD_SIGNATURE
    # garbage where the signature goes, and things that are not envelopes at all
    raw = json.loads(ack())
    raw["sig"] = "!!not base64!!"
    assert check_envelope(json.dumps(raw).encode(), TRUST)[0] is Verdict.BAD_SIGNATURE
    for junk in (b"", b"[1, 2]", b"\xff\xfe", "null", 42):
        assert check_envelope(junk, TRUST)[0] is Verdict.UNSIGNED


def test_the_signature_covers_canonical_json_not_the_senders_byte_order() -> None:
    """A relay (a bridge, a proxy that re-serialises) may reorder keys or whitespace."""
    raw = json.loads(ack())
    reordered = json.dumps(dict(reversed(list(raw.items()))), indent=3).encode()
    assert check_envelope(reordered, TRUST)[0] is Verdict.OK
    assert canonical_json({"b": 1, "a": "é"}) == '{"a":"é","b":1}'.encode()


def test_a_pointer_signature_binds_its_version() -> None:
    """The forged-v10⁹ attack: the learner's own pointer republished as another version."""
    p = PolicyPointer(version=7, sha256="ab" * 32, size=10, where="mqtt:x", kind="uitree")
    raw = json.loads(encode_envelope(p, signer=LEARNER))
    assert TRUST.check(raw)[0] is Verdict.OK
    raw["body"]["version"] = 10**9
    assert TRUST.check(raw)[0] is Verdict.BAD_SIGNATURE


@given(st.dictionaries(st.text(max_size=8), st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20)), max_size=6))
def test_any_json_body_round_trips(body: dict[str, object]) -> None:
    from distrl_sdk.wire.signing import sign_envelope

    env = sign_envelope({"schema": "metrics", "version": 1, "body": body}, LEARNER)
    assert TRUST.check(json.loads(json.dumps(env)))[0] is Verdict.OK


def test_key_files_are_private_reloadable_and_pem(tmp_path: Path) -> None:
    path = tmp_path / "keys" / "farm-a.key"
    key = SigningKey.generate("farm-a")
    key.save(path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert b"BEGIN PRIVATE KEY" in path.read_bytes()
    assert b"BEGIN PUBLIC KEY" in path.with_suffix(".pub").read_bytes()
    assert SigningKey.load(path).key_id == key.key_id
    assert VerifyKey.load(path.with_suffix(".pub")).key_id == key.key_id
    assert VerifyKey.load(path).key_id == key.key_id  # a .key gives its public half
    bad = tmp_path / "bad.pub"
    bad.write_text("hello")
    with pytest.raises(ValueError, match=r"bad\.pub"):
        VerifyKey.load(bad)
    with pytest.raises(ValueError, match=r"bad\.pub"):
        SigningKey.load(bad)


def test_processes_racing_to_create_the_local_key_agree_on_one(tmp_path: Path) -> None:
    """The learner and a farm on one host both create the default learner key if it is
    missing; whichever writes first wins and both end up with that key."""
    path = tmp_path / "learner.key"
    ids: list[str] = []
    barrier = threading.Barrier(8)

    def create() -> None:
        barrier.wait()
        ids.append(SigningKey.load_or_create(path).key_id)

    threads = [threading.Thread(target=create) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(ids)) == 1 and len(ids) == 8
    assert VerifyKey.load(path.with_suffix(".pub")).key_id == ids[0]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp left


def test_a_key_bound_to_a_farm_signs_for_that_farm_only(tmp_path: Path) -> None:
    """One farm's key must not speak for another: a key bound to f1 verifies what it
    signs as f1 (the envelope's farm id and the body's), and nothing it signs as f2."""
    from distrl_sdk.wire import TrajectoryMsg, check_trajectory, encode_trajectory

    f1, shared = SigningKey.generate("farm-f1"), SigningKey.generate("farm-any")
    for k in (f1, shared):
        k.save(tmp_path / f"{k.name}.key")
    trust = TrustedKeys.load([tmp_path / "farm-any.pub"],
                             {"f1": [tmp_path / "farm-f1.pub"],
                              "f3": [tmp_path / "farm-f1.pub", tmp_path / "farm-any.pub"]})
    assert trust.farms == {f1.key_id: frozenset({"f1", "f3"})}  # farm-any stays unbound

    def traj(farm: str, envelope_farm: str | None = None) -> bytes:
        msg = TrajectoryMsg(farm_id=farm, device_id="d", task="t")
        payload = encode_trajectory(msg, signer=f1)
        if envelope_farm is None:
            return payload
        # re-signed by f1 with the envelope's farm id differing from the body's
        hlen = int.from_bytes(payload[4:8], "big")
        header = json.loads(payload[8:8 + hlen])
        header["farm_id"] = envelope_farm
        from distrl_sdk.wire.signing import sign_envelope

        new = json.dumps(sign_envelope(header, f1)).encode()
        return payload[:4] + len(new).to_bytes(4, "big") + new + payload[8 + hlen:]

    assert check_trajectory(traj("f1"), trust)[0] is Verdict.OK
    assert check_trajectory(traj("f3"), trust)[0] is Verdict.OK
    verdict, why = check_trajectory(traj("f2"), trust)
    assert verdict is Verdict.WRONG_FARM and "f2" in why and "f1, f3" in why
    # the envelope says f1, the body (what the learner trains on) says f2: refused
    assert check_trajectory(traj("f2", envelope_farm="f1"), trust)[0] is Verdict.WRONG_FARM
    any_farm = encode_envelope(TrajectoryAck(ids=["x"]), farm_id="f9", signer=shared)
    assert check_envelope(any_farm, trust)[0] is Verdict.OK
