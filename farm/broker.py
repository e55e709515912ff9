"""An embedded MQTT broker for development and tests: a ``mosquitto`` subprocess on a
loopback port with a generated config when the binary exists, else amqtt in-process
(MQTT 3.1.1 only, which the wire contract allows: docs/design.md §3)."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from farm.broker_acl import BrokerAccounts
    from farm.broker_bridge import Bridge

__all__ = ["Backend", "BrokerStartError", "EmbeddedBroker", "find_mosquitto", "free_port"]

Backend = Literal["auto", "mosquitto", "amqtt"]
log = logging.getLogger(__name__)


def find_mosquitto() -> str | None:
    for cand in (shutil.which("mosquitto"), "/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto"):
        if cand and os.access(cand, os.X_OK):
            return cand
    return None


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _dies_with_owner(argv: list[str], user: str | None) -> list[str]:
    """``argv`` run so that the broker gets SIGTERM (and saves its queue) when the process
    that started it dies, even by SIGKILL: an orphaned mosquitto kept serving the port, so
    a restarted `distrl broker` could not bind it and a "killed" broker never went away.

    Linux's parent-death signal, through util-linux ``setpriv`` (preexec_fn is unsafe in a
    threaded process). The kernel clears that signal when the credentials change, as when
    mosquitto drops root to ``user`` itself, so setpriv drops them first and restores it.
    Without setpriv (macOS) the argv is unchanged."""
    setpriv = shutil.which("setpriv") if sys.platform.startswith("linux") else None
    if setpriv is None:
        return argv
    drop = ["--reuid", user, "--regid", user, "--clear-groups"] if user else []
    return [setpriv, "--pdeathsig", "TERM", *drop, *argv]


async def _wait_port(host: str, port: int, timeout: float, proc: subprocess.Popen[bytes] | None
                     ) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"mosquitto exited with {proc.returncode}")
        try:
            _r, w = await asyncio.open_connection(host, port)
            w.close()
            with contextlib.suppress(Exception):
                await w.wait_closed()
            return
        except OSError:
            if loop.time() > deadline:
                raise TimeoutError(f"broker did not listen on {host}:{port}") from None
            await asyncio.sleep(0.02)


class BrokerStartError(RuntimeError):
    """The broker could not start (its own reason in the message)."""


class EmbeddedBroker:
    """``async with EmbeddedBroker() as b: ... b.url``. The port stays fixed across
    :meth:`restart`, so clients reconnect to the same URL; mosquitto's persistence
    directory survives restarts (persistent sessions and queued messages are kept on a
    clean stop; :meth:`kill` loses what was not saved).

    ``accounts``: the broker checks passwords, refuses anonymous clients and enforces
    each account's topic ACL (farm/broker_acl.py). Every command that starts a broker for
    others to use passes them; ``None`` (anonymous, no ACL) is for tests and
    single-process tools."""

    def __init__(self, *, port: int | None = None, backend: Backend = "auto",
                 host: str = "127.0.0.1", data_dir: str | os.PathLike[str] | None = None,
                 max_queued_messages: int = 100_000,
                 message_size_limit: int = 8 * 1024 * 1024,
                 accounts: BrokerAccounts | None = None, bridge: Bridge | None = None
                 ) -> None:
        if backend == "auto":
            backend = "mosquitto" if find_mosquitto() or bridge else "amqtt"
        if bridge is not None and backend != "mosquitto":
            raise RuntimeError("a bridge to a central broker needs mosquitto "
                               "(apt install mosquitto); amqtt cannot bridge")
        if backend == "mosquitto" and not find_mosquitto():
            raise RuntimeError("mosquitto binary not found (apt install mosquitto)")
        self.backend: Backend = backend
        self.host = host
        self.port = port or free_port(host)
        self.max_queued_messages = max_queued_messages
        self.message_size_limit = max(message_size_limit, 2 * 1024 * 1024)
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        if data_dir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="distrl-broker-")
            data_dir = self._tmp.name
        self.data_dir = Path(data_dir)
        self._proc: subprocess.Popen[bytes] | None = None
        self._amqtt: Any = None
        self._amqtt_writers: set[asyncio.StreamWriter] = set()
        self.accounts = accounts
        self.bridge = bridge  # forwards this site's farms' topics to a central broker

    @property
    def url(self) -> str:
        return f"mqtt://{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        if self.backend == "mosquitto":
            return self._proc is not None and self._proc.poll() is None
        return self._amqtt is not None

    def _run_as(self) -> list[str]:
        """The ``user`` line. Started as root, mosquitto drops to user ``mosquitto``
        (``nobody`` if that user is missing) unless the config names another user; the
        dropped user could not write a root-owned 0700 persistence dir, so restarts lost
        every queued message. Our own temp dir is handed to ``mosquitto`` (the broker
        still drops root); a caller's dir keeps its owner, so the broker stays root."""
        if os.geteuid() != 0:
            return []  # mosquitto ignores ``user`` when not started as root
        try:
            pw = pwd.getpwnam("mosquitto")
        except KeyError:
            return ["user root"]
        if self._tmp is None:
            return ["user root"]
        return [f"user {pw.pw_name}"]  # _spawn hands it the dir

    def config_text(self) -> str:
        return "\n".join([
            f"listener {self.port} {self.host}",
            *self._run_as(),
            *self._auth_lines(),
            "persistence true",
            f"persistence_location {self.data_dir}/",
            "autosave_interval 60",
            f"max_queued_messages {self.max_queued_messages}",
            "max_queued_bytes 0",
            "max_inflight_messages 100",
            f"message_size_limit {self.message_size_limit}",
            "persistent_client_expiration 1d",
            "log_type error",
            "log_type warning",
            *(self.bridge.config_lines() if self.bridge is not None else []),
            "",
        ])

    def _auth_lines(self) -> list[str]:
        if self.accounts is None:
            return ["allow_anonymous true"]
        return ["allow_anonymous false", f"password_file {self.data_dir / 'passwd'}",
                f"acl_file {self.data_dir / 'acl'}"]

    def _write_secret(self, name: str, text: str) -> Path:
        path = self.data_dir / name
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def _spawn(self) -> subprocess.Popen[bytes]:
        text = self.config_text()
        conf = self._write_secret("mosquitto.conf", text)  # a bridge's password is in it
        secret_files: list[Path] = []
        if self.accounts is not None:
            secret_files = [self._write_secret("passwd", self.accounts.mosquitto_passwords()),
                       self._write_secret("acl", self.accounts.acl())]
        if "\nuser mosquitto\n" in text:
            pw = pwd.getpwnam("mosquitto")
            # it reads them after dropping root (the config too: setpriv drops root first)
            for path in (self.data_dir, conf, *secret_files):
                os.chown(path, pw.pw_uid, pw.pw_gid)
        exe = find_mosquitto()
        assert exe is not None
        argv = _dies_with_owner([exe, "-c", str(conf)],
                                "mosquitto" if "\nuser mosquitto\n" in text else None)
        with open(self.data_dir / "mosquitto.log", "ab") as logf:
            return subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL, stderr=logf)

    async def start(self, timeout: float = 10.0) -> None:
        if self.running:
            return
        if self.backend == "mosquitto":
            self._proc = self._spawn()
            try:
                await _wait_port(self.host, self.port, timeout, self._proc)
            except RuntimeError as exc:  # it exited: its log says why (port taken, < 1024)
                await self.kill()
                raise BrokerStartError(f"{exc} on port {self.port}: "
                                       f"{self._log_errors() or 'no reason logged'}") from None
            except BaseException:
                await self.kill()
                raise
        else:
            # imported lazily (and untyped): only the fallback needs amqtt
            Broker = importlib.import_module("amqtt.broker").Broker

            plugins: dict[str, Any] = {
                "amqtt.plugins.authentication.AnonymousAuthPlugin": {"allow_anonymous": True}}
            if self.accounts is not None:  # Argon2 hashing takes a while: off the loop
                hashed = await asyncio.to_thread(self.accounts.amqtt_passwords)
                plugins = self.accounts.amqtt_plugins(self._write_secret("passwd", hashed))
            cfg = {
                "listeners": {"default": {"type": "tcp", "bind": f"{self.host}:{self.port}",
                                          "max_connections": 1000}},
                "plugins": plugins,
            }
            with warnings.catch_warnings():
                # amqtt 0.12 reads its subscribe ACL only from the option it calls deprecated
                warnings.filterwarnings("ignore", "The 'acl' option is deprecated")
                broker = Broker(cfg)
            writers: set[asyncio.StreamWriter] = set()
            self._amqtt_writers = writers
            orig = broker.stream_connected

            async def tracked(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                              listener_name: str) -> None:
                writers.add(writer)  # so a stop can drop every client connection
                try:
                    await orig(reader, writer, listener_name)
                finally:
                    writers.discard(writer)

            broker.stream_connected = tracked
            await broker.start()
            self._amqtt = broker
            await _wait_port(self.host, self.port, timeout, None)

    def _log_errors(self) -> str:
        """mosquitto's ``Error:`` lines (and the hint before them), without timestamps."""
        try:
            lines = (self.data_dir / "mosquitto.log").read_text(errors="replace").splitlines()
        except OSError:
            return ""
        text = [ln.split(": ", 1)[-1] for ln in lines if "Note:" not in ln]
        return " ".join(t.strip() for t in text[-3:] if t.strip())

    async def stop(self, timeout: float = 10.0) -> None:
        """Clean stop (mosquitto: SIGTERM, which saves its persistence file)."""
        if self._proc is not None:
            proc, self._proc = self._proc, None
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    await asyncio.to_thread(proc.wait, timeout)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    await asyncio.to_thread(proc.wait)
        if self._amqtt is not None:
            broker, self._amqtt = self._amqtt, None
            # close the listener and drop every connection first (amqtt's own shutdown
            # can stall under load and leaves both open), then let it clean up
            for srv in list(getattr(broker, "_servers", {}).values()):
                inst = getattr(srv, "instance", None)
                if inst is not None:
                    inst.close()
            for w in list(self._amqtt_writers):
                w.transport.abort()
            try:
                async with asyncio.timeout(min(timeout, 3.0)):
                    await broker.shutdown()
            except Exception as e:
                log.debug("amqtt shutdown: %r", e)

    async def kill(self) -> None:
        """Hard stop: SIGKILL for mosquitto (no persistence save); amqtt has no process,
        so this is its shutdown (sessions are in memory and are lost)."""
        if self._proc is not None:
            proc, self._proc = self._proc, None
            if proc.poll() is None:
                proc.kill()
                await asyncio.to_thread(proc.wait)
        if self._amqtt is not None:
            await self.stop()

    async def restart(self, *, hard: bool = False) -> None:
        await (self.kill() if hard else self.stop())
        await self.start()

    async def close(self) -> None:
        await self.stop()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    async def __aenter__(self) -> EmbeddedBroker:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
