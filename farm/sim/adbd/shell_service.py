"""``shell[,args]:cmd`` (v1 raw and the v2 shell protocol) and ``exec:cmd``.

The backend runs the command line and writes its output into a ``ShellResult`` whose
log records stdout and stderr in write order; this layer relays that log while the
command runs (v1/``exec:`` merged raw, v2 one packet per write), as adbd relays its
subprocess's pipes. Latency profiles are applied in the backend. On a raw ``shell:``
stream the host's input is the command's stdin as it arrives (a script's ``read``
waits for it: adbutils' screen recording stops on a newline it sends); elsewhere it is
acknowledged and dropped, except for a streamed ``cmd package install … -S N`` whose N
bytes are the APK.
"""

from __future__ import annotations

import asyncio
import logging
import shlex
import struct
from collections.abc import Callable, Iterable

from farm.sim.adbd.packets import Buffer
from farm.sim.adbd.stream import Stream
from farm.sim.spec import STDERR, AdbdBackend, Chunk, LiveStdin, ShellResult

log = logging.getLogger(__name__)

# shell_protocol.h packet ids
ID_STDIN = 0
ID_STDOUT = 1
ID_STDERR = 2
ID_EXIT = 3
ID_CLOSE_STDIN = 4
ID_WINDOW_SIZE = 5

SHELL_HEADER = struct.Struct("<BI")
MAX_INSTALL_BYTES = 1 << 30  # a streamed APK larger than this is refused before reading it
INSTALL_READ = 1 << 20


def v2_packets(result: ShellResult) -> list[Buffer]:
    """stdout/stderr packets in write order and the exit packet; chunks are referenced."""
    parts = v2_output(result.log.events)
    parts.append(v2_exit(result.exit_code))
    return parts


def v2_output(events: Iterable[tuple[int, Chunk]]) -> list[Buffer]:
    """One stdout/stderr packet per chunk written; big chunks are referenced, not copied."""
    parts: list[Buffer] = []
    for fd, chunk in events:
        size = chunk.nbytes if isinstance(chunk, memoryview) else len(chunk)
        if size:
            parts.append(SHELL_HEADER.pack(ID_STDERR if fd == STDERR else ID_STDOUT, size))
            parts.append(chunk)
    return parts


def v2_exit(code: int) -> bytes:
    return SHELL_HEADER.pack(ID_EXIT, 1) + bytes((code & 0xFF,))


def v1_output(result: ShellResult) -> list[Buffer]:
    """stdout and stderr merged in the order written, raw (no \\r translation)."""
    return list(result.merged)


def _v1_events(events: Iterable[tuple[int, Chunk]]) -> list[Buffer]:
    return [chunk for _fd, chunk in events]


class _StreamStdin:
    """A raw ``shell:`` stream's host input, line by line, as the command's stdin."""

    def __init__(self, stream: Stream) -> None:
        self.stream = stream
        self._buf = bytearray()

    async def readline(self) -> bytes:
        while b"\n" not in self._buf:
            chunk = await self.stream.read_some(4096)
            if not chunk:  # the host closed the stream: what is left, then EOF
                break
            self._buf += chunk
        end = self._buf.find(b"\n")
        n = len(self._buf) if end < 0 else end + 1
        line = bytes(self._buf[:n])
        del self._buf[:n]
        return line


async def _run(backend: AdbdBackend, command: str, result: ShellResult,
               live_stdin: LiveStdin | None = None) -> ShellResult:
    """The backend's result; a crash in the phone becomes stderr + exit 255, not silence."""
    try:
        if live_stdin is not None:
            return await backend.run_shell(command, result=result, live_stdin=live_stdin)
        return await backend.run_shell(command, result=result)
    except Exception as exc:
        log.exception("adbd: run_shell(%r) failed", command[:200])
        result.err(f"adbd(sim): internal error: {type(exc).__name__}: {exc}\n")
        result.exit_code = 255
        return result


class _Relay:
    """Sends a command's output while it runs, as adbd relays its subprocess's pipes.

    Each write wakes a drain task (at most one at a time); the drain sends everything
    written so far in one batch. A command that never yields therefore goes out in one
    batch after it ends, exactly as before; one that sleeps or pays latency has what it
    wrote so far on the wire first.
    """

    def __init__(self, stream: Stream, result: ShellResult,
                 encode: Callable[[Iterable[tuple[int, Chunk]]], list[Buffer]]) -> None:
        self.stream = stream
        self.events = result.log.events
        self.encode = encode
        self.sent = 0
        self.task: asyncio.Task[None] | None = None
        result.log.on_write = self._wake

    def _wake(self) -> None:
        if self.task is None and not self.stream.closed:
            self.task = asyncio.get_running_loop().create_task(self._drain())

    async def _drain(self) -> None:
        try:
            while self.sent < len(self.events) and not self.stream.closed:
                batch = self.events[self.sent:]
                self.sent += len(batch)
                if not await self.stream.write(self.encode(batch)):
                    return
        finally:
            self.task = None

    async def finish(self) -> bool:
        """Wait for the drain, then send what is left; False if the stream closed."""
        while self.task is not None:
            await asyncio.shield(self.task)
        await self._drain()
        return not self.stream.closed

    def cancel(self) -> None:
        if self.task is not None:
            self.task.cancel()


async def _relay_command(backend: AdbdBackend, command: str, stream: Stream,
                         v2: bool, live_stdin: LiveStdin | None = None) -> None:
    result = ShellResult()
    relay = _Relay(stream, result, v2_output if v2 else _v1_events)
    try:
        await _run(backend, command, result, live_stdin)
        await stream.stop_reading()
        result.log.on_write = None
        if await relay.finish() and v2:
            await stream.write((v2_exit(result.exit_code),))
    finally:
        result.log.on_write = None
        relay.cancel()


async def shell_service(args: list[str], command: str, stream: Stream,
                        backend: AdbdBackend) -> None:
    """``shell,v2,TERM=xterm,raw:cmd`` and friends; unknown arguments are ignored."""
    v2 = "v2" in args
    stream.discard_input = v2  # v2 frames stdin in packets: not modelled, dropped
    if not command.strip():
        # An interactive (pty) shell: the simulator offers none, it just ends.
        await stream.stop_reading()
        if v2:
            await stream.write(v2_packets(ShellResult()))
        return
    await _relay_command(backend, command, stream, v2,
                         None if v2 else _StreamStdin(stream))


def _streamed_install_size(command: str) -> tuple[list[str], str | None] | None:
    """For ``cmd package install … -S N``: (args after 'install', N as typed)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if words[:3] != ["cmd", "package", "install"] or "-S" not in words:
        return None
    args = words[3:]
    i = args.index("-S")
    return args, (args[i + 1] if i + 1 < len(args) else None)


async def exec_service(command: str, stream: Stream, backend: AdbdBackend) -> None:
    """``exec:cmd``: binary-safe merged output, no protocol; or a streamed install."""
    install = _streamed_install_size(command)
    if install is not None:
        await _streamed_install(install[0], install[1], stream, backend)
        return
    stream.discard_input = True
    await _relay_command(backend, command, stream, v2=False)


async def _streamed_install(args: list[str], size_text: str | None, stream: Stream,
                            backend: AdbdBackend) -> None:
    try:
        size = int(size_text) if size_text is not None else -1
    except ValueError:
        size = -1
    if size < 0:
        await stream.write((b"Error: APK content size (-S) must be a number\n",))
        return
    free = backend.vfs.capacity - backend.vfs.used_bytes
    if size > min(MAX_INSTALL_BYTES, free):
        await stream.write((b"Failure [INSTALL_FAILED_INSUFFICIENT_STORAGE: "
                            b"Failed to allocate space for the APK]\n",))
        return
    data = bytearray()
    while len(data) < size:
        chunk = await stream.read_some(min(INSTALL_READ, size - len(data)))
        if not chunk:
            return  # the host went away mid-APK; nothing to install, nobody to tell
        data += chunk
    stream.discard_input = True
    reply = await backend.install_stream(bytes(data), args)
    if not reply.endswith("\n"):
        reply += "\n"
    await stream.write((reply.encode(),))
