"""Who may do what on the broker: one account per part of the system (the learner, each
farm, operators, read-only viewers), its password, and the topics it may publish and
subscribe to.

The broker enforces this before any message reaches a farm or the learner: an anonymous
client cannot connect, a viewer cannot command a device, a farm can publish trajectories
only under its own id, and nobody but the learner can ack a trajectory or announce a
policy. The same rules are rendered as a mosquitto ``password_file`` + ``acl_file``
(:func:`mosquitto_acl`, :meth:`BrokerAccounts.mosquitto_passwords`) and as amqtt's
password-file and topic-ACL plugin config (:meth:`BrokerAccounts.amqtt_plugins`)."""

from __future__ import annotations

import base64
import hashlib
import os
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote, urlsplit, urlunsplit

from distrl_sdk.wire import topics

__all__ = ["Account", "BrokerAccounts", "Role", "connect_failure", "default_accounts_dir",
           "farm_user",
           "mosquitto_acl", "mosquitto_password_hash"]

Role = Literal["learner", "farm", "operator", "viewer"]
P = topics.PREFIX
#: the farm id ``distrl deploy --broker`` shows its live status under
DEPLOY_FARM_ID = "deploy"


@dataclass(frozen=True)
class Account:
    """One broker user. ``farm_id`` names the farm a ``farm`` account speaks for."""

    user: str
    role: Role
    farm_id: str | None = None

    def __post_init__(self) -> None:
        if self.role == "farm":
            if self.farm_id is None:
                raise ValueError(f"farm account {self.user!r} needs a farm id")
            topics.traj(self.farm_id, "x")  # refuses ids the topic tree cannot hold

    def publishes(self) -> tuple[str, ...]:
        """Topic filters this account may publish to."""
        if self.role == "learner":
            return (f"{P}/policy/#", f"{P}/learner/#", f"{P}/+/ack")
        if self.role == "farm":
            f = f"{P}/{self.farm_id}"
            return (f"{f}/traj/+", f"{f}/status/+", f"{f}/frame/+", f"{f}/cmd_result",
                    f"{f}/metrics")
        if self.role == "operator":  # commands, and a deploy's live status
            d = f"{P}/{DEPLOY_FARM_ID}"
            return (f"{P}/+/cmd/+", f"{d}/status/+", f"{d}/frame/+")
        return ()

    def subscribes(self) -> tuple[str, ...]:
        """Topic filters this account may subscribe to."""
        if self.role == "learner":
            return (f"{P}/+/traj/+", f"{P}/policy/#", f"{P}/learner/#")
        if self.role == "farm":
            f = f"{P}/{self.farm_id}"
            return (f"{f}/ack", f"{f}/cmd/+", f"{P}/policy/#")
        return (f"{P}/#",)  # operators and viewers watch everything


def farm_user(farm_id: str) -> str:
    """The broker user a farm connects as."""
    return f"farm-{farm_id}"


def default_accounts_dir() -> Path:
    """Where ``distrl broker`` and ``farm up`` keep the accounts of the broker they start:
    ``$DISTRL_BROKER_ACCOUNTS``, else ``$XDG_STATE_HOME/distrl/broker``
    (``~/.local/state/distrl/broker``)."""
    if os.environ.get("DISTRL_BROKER_ACCOUNTS"):
        return Path(os.environ["DISTRL_BROKER_ACCOUNTS"]).expanduser()
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "distrl" / "broker"


def mosquitto_password_hash(password: str, *, salt: bytes | None = None,
                            iterations: int = 101) -> str:
    """mosquitto 2's ``$7$`` hash: PBKDF2-HMAC-SHA512 over a 12-byte salt, base64 — what
    ``mosquitto_passwd`` writes, so no binary is needed to make the file."""
    salt = secrets.token_bytes(12) if salt is None else salt
    digest = hashlib.pbkdf2_hmac("sha512", password.encode(), salt, iterations, 64)
    return (f"$7${iterations}${base64.b64encode(salt).decode()}"
            f"${base64.b64encode(digest).decode()}")


def mosquitto_acl(accounts: Iterable[Account]) -> str:
    """A mosquitto ``acl_file``: a block per user, nothing for anyone else (anonymous
    clients, if ever let in, may do nothing)."""
    lines = ["# distrl broker ACL: each part publishes only its own topics", ""]
    for a in accounts:
        lines.append(f"# {a.role}" + (f" {a.farm_id}" if a.farm_id else ""))
        lines.append(f"user {a.user}")
        lines += [f"topic write {t}" for t in a.publishes()]
        lines += [f"topic read {t}" for t in a.subscribes()]
        lines.append("")
    return "\n".join(lines)


@dataclass
class BrokerAccounts:
    """The accounts a broker knows and their passwords (kept in memory; :meth:`save`
    writes one ``<user>.password`` file per account, mode 0600 from creation)."""

    accounts: list[Account]
    passwords: dict[str, str] = field(default_factory=dict)
    directory: Path | None = None

    @classmethod
    def default_accounts(cls, farms: Sequence[str] = ("farm",)) -> list[Account]:
        return [Account("learner", "learner"),
                *(Account(farm_user(f), "farm", f) for f in dict.fromkeys(farms)),
                Account("operator", "operator"), Account("viewer", "viewer")]

    @classmethod
    def generate(cls, farms: Sequence[str] = ("farm",)) -> BrokerAccounts:
        accounts = cls.default_accounts(farms)
        return cls(accounts, {a.user: secrets.token_urlsafe(24) for a in accounts})

    @classmethod
    def load_or_create(cls, directory: Path, farms: Sequence[str] = ("farm",)
                       ) -> BrokerAccounts:
        """The accounts for ``farms``, reusing the passwords already saved in
        ``directory`` (so clients keep working across broker restarts) and saving new
        ones for accounts that have none."""
        accounts = cls.default_accounts(farms)
        out = cls(accounts, {}, directory)
        for a in accounts:
            path = out.password_file(a.user)
            try:
                pw = path.read_text(encoding="utf-8").split("\n", 1)[0].strip()
            except FileNotFoundError:
                pw = ""
            out.passwords[a.user] = pw or secrets.token_urlsafe(24)
        out.save(directory)
        return out

    def account(self, user: str) -> Account:
        for a in self.accounts:
            if a.user == user:
                return a
        raise KeyError(f"no broker account {user!r}")

    def farm(self, farm_id: str) -> Account:
        return self.account(farm_user(farm_id))

    def password_file(self, user: str) -> Path:
        if self.directory is None:
            raise ValueError("these accounts were not saved to a directory")
        return self.directory / f"{user}.password"

    def save(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.directory = directory
        for user, pw in self.passwords.items():
            path = self.password_file(user)
            tmp = path.with_suffix(".tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(pw + "\n")
            os.replace(tmp, path)

    def url_for(self, url: str, user: str) -> str:
        """``url`` as ``user`` with its password (for in-process clients only: a URL
        with a password must never reach a command line)."""
        return _with_userinfo(url, f"{quote(user, safe='')}:"
                                   f"{quote(self.passwords[user], safe='')}")

    @staticmethod
    def user_url(url: str, user: str) -> str:
        """``url`` with ``user`` and no password (its password comes from a file)."""
        return _with_userinfo(url, quote(user, safe=""))

    def describe(self) -> str:
        """One line on how a part connects (no password is printed)."""
        where = f" in {self.directory}" if self.directory is not None else ""
        return (f"broker accounts{where}: " + ", ".join(a.user for a in self.accounts)
                + " (connect as --broker mqtt://USER@HOST:PORT --password-file"
                + (f" {self.directory}/USER.password)" if self.directory else " FILE)"))

    def mosquitto_passwords(self) -> str:
        return "".join(f"{u}:{mosquitto_password_hash(pw)}\n"
                       for u, pw in self.passwords.items())

    def acl(self) -> str:
        return mosquitto_acl(self.accounts)

    def amqtt_passwords(self) -> str:
        """amqtt's password file takes Argon2 hashes (pwdlib, an amqtt dependency)."""
        from pwdlib import PasswordHash
        from pwdlib.hashers.argon2 import Argon2Hasher

        hasher = PasswordHash((Argon2Hasher(),))
        return "".join(f"{u}:{hasher.hash(pw)}\n" for u, pw in self.passwords.items())

    def amqtt_plugins(self, password_file: Path) -> dict[str, Any]:
        """amqtt plugin config: passwords checked, anonymous refused, topic ACLs for
        publish and subscribe (amqtt's ``acl`` is the subscribe list)."""
        return {
            "amqtt.plugins.authentication.AnonymousAuthPlugin": {"allow_anonymous": False},
            "amqtt.plugins.authentication.FileAuthPlugin": {"password_file": str(password_file)},
            "amqtt.plugins.topic_checking.TopicAccessControlListPlugin": {
                "publish_acl": {a.user: list(a.publishes()) for a in self.accounts},
                "acl": {a.user: list(a.subscribes()) for a in self.accounts},
            },
        }


def _with_userinfo(url: str, userinfo: str) -> str:
    parts = urlsplit(url if "://" in url else "mqtt://" + url)
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    netloc = f"{userinfo}@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))


def connect_failure(where: object, exc: BaseException | None) -> str:
    """Why a client could not connect, in words a user can act on: a refused login says
    so (and where the passwords are), anything else is "cannot reach"."""
    rc = getattr(exc, "rc", None)
    code = getattr(rc, "value", rc)
    if code in (4, 5, 134, 135) or "authori" in str(rc).lower():
        return (f"the MQTT broker at {where} refused the login ({rc}): check the user in "
                f"--broker and its --password-file (the accounts of `distrl broker` are in "
                f"{default_accounts_dir()}; `distrl demo` keeps its own in the run dir)")
    return f"cannot reach the MQTT broker at {where}: {exc or 'timeout'}"
