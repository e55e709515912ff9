"""``shell[,args]:cmd`` (v1 raw and the v2 shell protocol) and ``exec:cmd``.

The backend runs the whole command line and returns its output at once; latency
profiles are applied there. Host stdin is acknowledged and dropped (nothing the
host tools, adbutils or DistRL run needs it), except for a streamed
``cmd package install … -S N`` whose N bytes are the APK.
"""

from __future__ import annotations

import logging
import shlex
import struct

from farm.sim.adbd.packets import Buffer
from farm.sim.adbd.stream import Stream
from farm.sim.spec import AdbdBackend, ShellResult

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
    """stdout/stderr packets and the exit packet; big chunks are referenced, not copied."""
    parts: list[Buffer] = []
    for ident, chunks in ((ID_STDOUT, result.stdout), (ID_STDERR, result.stderr)):
        for chunk in chunks:
            size = chunk.nbytes if isinstance(chunk, memoryview) else len(chunk)
            if size:
                parts.append(SHELL_HEADER.pack(ident, size))
                parts.append(chunk)
    parts.append(SHELL_HEADER.pack(ID_EXIT, 1) + bytes((result.exit_code & 0xFF,)))
    return parts


def v1_output(result: ShellResult) -> list[Buffer]:
    """stdout then stderr, merged and raw (no \\r translation)."""
    return [*result.stdout, *result.stderr]


async def _run(backend: AdbdBackend, command: str) -> ShellResult:
    """The backend's result; a crash in the phone becomes stderr + exit 255, not silence."""
    try:
        return await backend.run_shell(command)
    except Exception as exc:
        log.exception("adbd: run_shell(%r) failed", command[:200])
        result = ShellResult(exit_code=255)
        result.err(f"adbd(sim): internal error: {type(exc).__name__}: {exc}\n")
        return result


async def shell_service(args: list[str], command: str, stream: Stream,
                        backend: AdbdBackend) -> None:
    """``shell,v2,TERM=xterm,raw:cmd`` and friends; unknown arguments are ignored."""
    stream.discard_input = True
    v2 = "v2" in args
    if not command.strip():
        # An interactive (pty) shell: the simulator offers none, it just ends.
        if v2:
            await stream.write(v2_packets(ShellResult()))
        return
    result = await _run(backend, command)
    if stream.closed:
        return
    await stream.write(v2_packets(result) if v2 else v1_output(result))


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
    result = await _run(backend, command)
    if stream.closed:
        return
    await stream.write(v1_output(result))


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
