"""State shared by the interpreter and the commands.

``Phone`` is what persists across command lines on one simulated phone (setprop
values, ``wm size`` overrides, install sessions). ``Session`` is one command line's
shell process (cwd, variables, ``$?``). ``Proc`` is one command being run.
"""

from __future__ import annotations

import asyncio
import posixpath
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from farm.sim.faults import Faults
from farm.sim.profiles import LatencyProfile
from farm.sim.spec import LiveStdin, LogBuffer, PhoneSpec, WorldAPI
from farm.sim.vfs import VirtualFS

Sink = list[bytes | memoryview]


def enc(text: str) -> bytes:
    """UTF-8, tolerating lone surrogates from badly decoded input (never raises)."""
    try:
        return text.encode()
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace")


@dataclass(slots=True)
class InstalledMeta:
    """What ``dumpsys package`` shows for a package installed through the shell."""

    version_code: int = 1
    version_name: str = "1.0"
    install_time: float = field(default_factory=time.time)
    apk_dir: str = ""


@dataclass(slots=True)
class InstallSession:
    """``pm install-create`` … ``install-commit``."""

    apks: dict[str, bytes] = field(default_factory=dict)


@dataclass(slots=True)
class Phone:
    spec: PhoneSpec
    world: WorldAPI
    vfs: VirtualFS
    faults: Faults
    profile: LatencyProfile
    rng: random.Random
    logcat: LogBuffer
    props: dict[str, str] = field(default_factory=dict)  # set with setprop
    wm_size: tuple[int, int] | None = None
    wm_density: int | None = None
    battery_override: dict[str, int] = field(default_factory=dict)  # dumpsys battery set
    installed: dict[str, InstalledMeta] = field(default_factory=dict)
    sessions: dict[int, InstallSession] = field(default_factory=dict)
    boot_time: float = field(default_factory=time.time)
    clipboard: str = ""  # the primary clip, as apps such as Clipper set and read it


ENV_DEFAULTS: dict[str, str] = {
    "PATH": "/product/bin:/apex/com.android.runtime/bin:/apex/com.android.art/bin"
    ":/system_ext/bin:/system/bin:/system/xbin:/odm/bin:/vendor/bin:/vendor/xbin",
    "HOME": "/",
    "USER": "shell",
    "LOGNAME": "shell",
    "SHELL": "/bin/sh",
    "TMPDIR": "/data/local/tmp",
    "ANDROID_DATA": "/data",
    "ANDROID_ROOT": "/system",
    "EXTERNAL_STORAGE": "/sdcard",
    "ANDROID_STORAGE": "/storage",
    "TERM": "dumb",
    "IFS": " \t\n",
}


@dataclass(slots=True)
class Session:
    """One ``sh -c`` process: what a command line can change about its own shell."""

    phone: Phone
    vars: dict[str, str]
    cwd: str = "/"
    status: int = 0
    slept: bool = False  # the command line has paid its round-trip latency
    depth: int = 0  # nesting of $(…), ( … ) and sh -c
    pid: int = 0
    # the host's stdin as it arrives (a `shell:` stream), for `read`; None: none
    live_stdin: LiveStdin | None = None
    # background jobs (`cmd &`) by pid, shared with subshells as the process tree is:
    # the job's task and the session it runs in
    jobs: dict[int, tuple[asyncio.Task[int], Session]] = field(default_factory=dict)
    # what SIGINT does to the command running in this session, if it handles it (as
    # screenrecord finishes its file and exits 0); None: the signal ends it
    sigint: Callable[[], None] | None = None
    # the signal that ended this session's job (``wait`` reports 128 + it)
    killed_by: int | None = None

    def subshell(self) -> Session:
        return Session(self.phone, dict(self.vars), self.cwd, self.status, self.slept,
                       self.depth + 1, self.pid, self.live_stdin, self.jobs)

    def signal_job(self, pid: int, number: int) -> bool:
        """``kill -NUMBER PID`` for one of this shell's jobs: SIGINT goes to a command
        that handles it; otherwise the job ends (cancelled, as a process the signal
        kills). False if no such job."""
        job = self.jobs.get(pid)
        if job is None:
            return False
        task, session = job
        if number == 2 and session.sigint is not None:
            session.sigint()
        else:
            session.killed_by = number
            task.cancel()
        return True


class ExitShell(Exception):
    """``exit N``: ends the (sub)shell."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


@dataclass(slots=True)
class Proc:
    """One command invocation: argv, stdin and where its output goes."""

    session: Session
    argv: list[str]
    stdin: bytes
    out: Sink
    err: list[bytes]

    @property
    def phone(self) -> Phone:
        return self.session.phone

    @property
    def name(self) -> str:
        return self.argv[0]

    @property
    def args(self) -> list[str]:
        return self.argv[1:]

    def write(self, data: str | bytes | memoryview) -> None:
        self.out.append(enc(data) if isinstance(data, str) else data)

    def error(self, data: str) -> None:
        self.err.append(enc(data))

    def path(self, p: str) -> str:
        """Absolute, normalised path of ``p`` relative to the shell's cwd."""
        if not p.startswith("/"):
            p = posixpath.join(self.session.cwd, p)
        return VirtualFS.normpath(p)
