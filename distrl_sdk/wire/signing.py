"""Ed25519 signatures on control envelopes: who said it, independent of the broker.

A signed envelope carries ``signer`` (the key id: the first 16 hex digits of the
SHA-256 of the raw 32-byte public key) and ``sig`` (base64 Ed25519 signature). What is
signed is the envelope's canonical JSON without ``sig``: keys sorted, no whitespace,
UTF-8 — the same bytes on both ends, whatever the sender's field order. The receiver
decides whom it trusts (:class:`TrustedKeys`); an envelope without a signature, from a
key it does not know, or whose signature does not verify, is refused by the caller and
counted under the :class:`Verdict`'s name.

Key files: the private key as unencrypted PKCS#8 PEM (mode 0600), the public key as
SubjectPublicKeyInfo PEM, so ``openssl pkey -in learner.key -pubout`` reads both.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

__all__ = ["SigningKey", "TrustedKeys", "Verdict", "VerifyKey", "canonical_json",
           "check_envelope", "sign_envelope"]

#: envelope fields that hold the signature (left out of the signed bytes)
SIG_FIELD, SIGNER_FIELD = "sig", "signer"
KEY_ID_HEX = 16


def canonical_json(obj: Mapping[str, Any]) -> bytes:
    """The bytes a signature covers: sorted keys, compact separators, UTF-8."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode()


def _write_file(path: Path, data: bytes, mode: int, *, exclusive: bool = False) -> None:
    """``data`` at ``path`` whole or not at all, with ``mode`` from the start (a temp file
    beside it, then renamed); ``exclusive``: an existing file is kept (linked, not
    replaced), so racing writers leave the first one's."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-")  # 0600
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, mode)
        if exclusive:
            with contextlib.suppress(FileExistsError):
                os.link(tmp, path)
        else:
            os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def _key_id(raw_public: bytes) -> str:
    return hashlib.sha256(raw_public).hexdigest()[:KEY_ID_HEX]


class VerifyKey:
    """A public key a receiver may trust."""

    def __init__(self, key: Ed25519PublicKey, name: str = "") -> None:
        self._key = key
        self.raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        self.key_id = _key_id(self.raw)
        self.name = name or self.key_id

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> VerifyKey:
        """A ``.pub`` (public PEM) or a ``.key`` (private PEM: its public half)."""
        data = Path(path).read_bytes()
        name = Path(path).stem
        if b"PRIVATE KEY" in data:
            return SigningKey.from_pem(data, name).verify_key
        try:
            key = serialization.load_pem_public_key(data)
        except ValueError as e:
            raise ValueError(f"{path}: not a PEM public key ({e})") from None
        if not isinstance(key, Ed25519PublicKey):
            raise ValueError(f"{path}: not an Ed25519 key")
        return cls(key, name)

    def pem(self) -> bytes:
        return self._key.public_bytes(serialization.Encoding.PEM,
                                      serialization.PublicFormat.SubjectPublicKeyInfo)

    def save(self, path: str | os.PathLike[str]) -> None:
        _write_file(Path(path), self.pem(), 0o644)  # public: whoever must trust it reads it

    def verify(self, data: bytes, signature: bytes) -> bool:
        try:
            self._key.verify(signature, data)
        except InvalidSignature:
            return False
        return True


class SigningKey:
    """A private key: a learner's, a farm's or an operator's identity."""

    def __init__(self, key: Ed25519PrivateKey, name: str = "") -> None:
        self._key = key
        self.verify_key = VerifyKey(key.public_key(), name)
        self.key_id = self.verify_key.key_id
        self.name = self.verify_key.name

    @classmethod
    def generate(cls, name: str = "") -> SigningKey:
        return cls(Ed25519PrivateKey.generate(), name)

    @classmethod
    def from_pem(cls, data: bytes, name: str = "") -> SigningKey:
        try:
            key = serialization.load_pem_private_key(data, password=None)
        except (ValueError, TypeError) as e:
            raise ValueError(f"not an unencrypted PEM private key ({e})") from None
        if not isinstance(key, Ed25519PrivateKey):
            raise ValueError("not an Ed25519 key")
        return cls(key, name)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> SigningKey:
        try:
            return cls.from_pem(Path(path).read_bytes(), Path(path).stem)
        except ValueError as e:
            raise ValueError(f"{path}: {e}") from None

    @classmethod
    def load_or_create(cls, path: str | os.PathLike[str]) -> SigningKey:
        """The key at ``path``; a new one written there first if there is none. Two
        processes racing to create it end up with the same key (the first link wins)."""
        path = Path(path)
        if not path.exists():
            key = cls.generate(path.stem)
            key.save(path, exclusive=True)
        return cls.load(path)

    def private_pem(self) -> bytes:
        return self._key.private_bytes(serialization.Encoding.PEM,
                                       serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption())

    def save(self, path: str | os.PathLike[str], *, exclusive: bool = False) -> None:
        """``path`` (0600 from creation) and its public half next to it as ``.pub``.
        ``exclusive``: keep an existing key file (another process made it first)."""
        path = Path(path)
        _write_file(path, self.private_pem(), 0o600, exclusive=exclusive)
        pub = path.with_suffix(".pub")
        if not (exclusive and pub.exists()):
            SigningKey.load(path).verify_key.save(pub)

    def sign(self, data: bytes) -> bytes:
        return self._key.sign(data)


class Verdict(StrEnum):
    """What a receiver found; everything but ``OK`` is refused and counted by name."""

    OK = "ok"
    UNSIGNED = "unsigned"
    UNKNOWN_KEY = "unknown_key"
    BAD_SIGNATURE = "bad_signature"
    WRONG_FARM = "wrong_farm"  # a trusted key, signing for a farm id it is not bound to


@dataclass(frozen=True)
class TrustedKeys:
    """The public keys a receiver accepts, by key id. ``farms`` binds keys to farm ids:
    a key id listed there verifies only envelopes whose ``farm_id`` (and, when the body
    names one, the body's) is one of its farms — one farm's key cannot speak for
    another. A key not listed may sign for any farm."""

    keys: Mapping[str, VerifyKey]
    farms: Mapping[str, frozenset[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, keys: Iterable[VerifyKey | SigningKey]) -> TrustedKeys:
        vks = [k.verify_key if isinstance(k, SigningKey) else k for k in keys]
        return cls({k.key_id: k for k in vks})

    @classmethod
    def load(cls, paths: Iterable[str | os.PathLike[str]],
             bound: Mapping[str, Iterable[str | os.PathLike[str]]] | None = None
             ) -> TrustedKeys:
        """Keys from ``paths`` (any farm) and from ``bound`` (farm id → key files trusted
        for that farm only; a key bound to several farms may sign for each of them)."""
        free = {k.key_id: k for k in (VerifyKey.load(p) for p in paths)}
        keys: dict[str, VerifyKey] = dict(free)
        farms: dict[str, frozenset[str]] = {}
        for farm_id, farm_paths in (bound or {}).items():
            for p in farm_paths:
                k = VerifyKey.load(p)
                keys.setdefault(k.key_id, k)
                if k.key_id not in free:  # listed unbound too: it may sign for any farm
                    farms[k.key_id] = farms.get(k.key_id, frozenset()) | {farm_id}
        return cls(keys, farms)

    def describe(self) -> str:
        return ", ".join(f"{k.name} ({i})" for i, k in sorted(self.keys.items())) or "none"

    def check(self, envelope: Mapping[str, Any]) -> tuple[Verdict, str]:
        """The verdict on one decoded envelope and a detail for the log."""
        signer, sig = envelope.get(SIGNER_FIELD), envelope.get(SIG_FIELD)
        if not isinstance(signer, str) or not isinstance(sig, str):
            return Verdict.UNSIGNED, "no signature"
        key = self.keys.get(signer)
        if key is None:
            return Verdict.UNKNOWN_KEY, f"signed by key {signer[:KEY_ID_HEX]!r}, not trusted " \
                                        f"(trusted: {self.describe()})"
        try:
            raw_sig = base64.b64decode(sig, validate=True)
        except (binascii.Error, ValueError):
            return Verdict.BAD_SIGNATURE, "signature is not base64"
        unsigned = {k: v for k, v in envelope.items() if k != SIG_FIELD}
        try:
            data = canonical_json(unsigned)
        except ValueError:
            return Verdict.BAD_SIGNATURE, "envelope not canonicalisable"
        if not key.verify(data, raw_sig):
            return Verdict.BAD_SIGNATURE, f"signature by {key.name} does not verify"
        allowed = self.farms.get(signer)
        if allowed is not None:
            body = envelope.get("body")
            claimed = {envelope.get("farm_id"),
                       body.get("farm_id") if isinstance(body, dict) else None} - {None}
            if not claimed or not claimed <= allowed:
                return Verdict.WRONG_FARM, (
                    f"{key.name} signed for farm {', '.join(sorted(map(str, claimed))) or '?'}"
                    f", but is trusted for {', '.join(sorted(allowed))} only")
        return Verdict.OK, key.name


def sign_envelope(envelope: dict[str, Any], key: SigningKey) -> dict[str, Any]:
    """``envelope`` (its JSON form, by alias) with ``signer`` and ``sig`` set."""
    out = {k: v for k, v in envelope.items() if k != SIG_FIELD}
    out[SIGNER_FIELD] = key.key_id
    out[SIG_FIELD] = base64.b64encode(key.sign(canonical_json(out))).decode()
    return out


def check_envelope(payload: object, trusted: TrustedKeys) -> tuple[Verdict, str]:
    """The verdict on a JSON control payload (``encode_envelope``'s bytes, or the str /
    bytes-like an MQTT client hands over). Never raises."""
    if isinstance(payload, str):
        payload = payload.encode("utf-8", "surrogatepass")
    if not isinstance(payload, bytes | bytearray | memoryview):
        return Verdict.UNSIGNED, f"payload type {type(payload).__name__}"
    try:
        raw = json.loads(bytes(payload))
    except (ValueError, RecursionError):
        return Verdict.UNSIGNED, "not JSON"
    if not isinstance(raw, dict):
        return Verdict.UNSIGNED, "not an envelope"
    return trusted.check(raw)
