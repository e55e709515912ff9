"""ADB transport packets: constants, the 24-byte header and an incremental parser.

A packet is a header of six little-endian ``uint32`` (command, arg0, arg1,
data_length, data_check, magic) followed by ``data_length`` payload bytes
(AOSP adb's protocol.txt). ``data_check`` is the byte sum of the payload; no
receiver since adb 29 checks it, so the parser never validates it and the sender
only fills it in for peers that negotiated the pre-2017 protocol version.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import NamedTuple, TypeAlias

Buffer: TypeAlias = bytes | bytearray | memoryview

A_CNXN = 0x4E584E43
A_AUTH = 0x48545541
A_OPEN = 0x4E45504F
A_OKAY = 0x59414B4F
A_WRTE = 0x45545257
A_CLSE = 0x45534C43
A_SYNC = 0x434E5953
A_STLS = 0x534C5453

COMMAND_NAMES: dict[int, str] = {
    A_CNXN: "CNXN",
    A_AUTH: "AUTH",
    A_OPEN: "OPEN",
    A_OKAY: "OKAY",
    A_WRTE: "WRTE",
    A_CLSE: "CLSE",
    A_SYNC: "SYNC",
    A_STLS: "STLS",
}

A_VERSION_MIN = 0x01000000
A_VERSION_SKIP_CHECKSUM = 0x01000001
A_VERSION = A_VERSION_SKIP_CHECKSUM

MAX_PAYLOAD = 1 << 20  # what adb ≥ 29 uses; we never advertise more
MAX_PAYLOAD_V1 = 4096  # CNXN/AUTH limit; also our floor for a host's maxdata

HEADER = struct.Struct("<6I")
HEADER_SIZE = HEADER.size  # 24

_SMALL_SUM = 4096


class ProtocolError(Exception):
    """The peer sent something that makes the connection unusable (bad magic, oversize)."""


class Packet(NamedTuple):
    command: int
    arg0: int
    arg1: int
    payload: bytes

    @property
    def name(self) -> str:
        return command_name(self.command)


def command_name(command: int) -> str:
    return COMMAND_NAMES.get(command, f"0x{command:08x}")


def checksum(parts: Iterable[Buffer]) -> int:
    """Unsigned byte sum of all parts, mod 2**32 (the ``data_check`` field)."""
    total = 0
    for part in parts:
        view = memoryview(part).cast("B")
        if view.nbytes <= _SMALL_SUM:
            total += sum(view)
        else:
            import numpy as np

            total += int(np.frombuffer(view, dtype=np.uint8).sum(dtype=np.uint64))
    return total & 0xFFFFFFFF


def pack_header(command: int, arg0: int, arg1: int, length: int, check: int = 0) -> bytes:
    return HEADER.pack(command, arg0, arg1, length, check, command ^ 0xFFFFFFFF)


def pack_packet(command: int, arg0: int = 0, arg1: int = 0, payload: bytes = b"",
                *, with_checksum: bool = True) -> bytes:
    """A whole packet as bytes; for small packets and tests."""
    check = checksum((payload,)) if with_checksum and payload else 0
    return pack_header(command, arg0, arg1, len(payload), check) + payload


def unpack_header(data: Buffer, offset: int = 0) -> tuple[int, int, int, int, int, int]:
    """(command, arg0, arg1, length, check, magic); raises ProtocolError on bad magic."""
    fields: tuple[int, int, int, int, int, int] = HEADER.unpack_from(data, offset)
    if fields[5] != fields[0] ^ 0xFFFFFFFF:
        raise ProtocolError(f"bad magic 0x{fields[5]:08x} for command 0x{fields[0]:08x}")
    return fields


class PacketParser:
    """Turns a byte stream into packets, however the bytes are split.

    ``max_payload`` is checked on the header, before any payload is buffered, so a
    hostile length never makes us allocate it.
    """

    __slots__ = ("_buf", "_header", "max_payload")

    def __init__(self, max_payload: int = MAX_PAYLOAD) -> None:
        self.max_payload = max_payload
        self._buf = bytearray()
        self._header: tuple[int, int, int, int, int, int] | None = None

    @property
    def buffered(self) -> int:
        return len(self._buf)

    def feed(self, data: Buffer) -> list[Packet]:
        """Add bytes; return every packet they complete. Raises ProtocolError."""
        buf = self._buf
        buf += data
        out: list[Packet] = []
        pos = 0
        end = len(buf)
        while True:
            header = self._header
            if header is None:
                if end - pos < HEADER_SIZE:
                    break
                header = unpack_header(buf, pos)
                if header[3] > self.max_payload:
                    raise ProtocolError(
                        f"{command_name(header[0])} payload of {header[3]} bytes exceeds "
                        f"maxdata {self.max_payload}"
                    )
                pos += HEADER_SIZE
                self._header = header
            length = header[3]
            if end - pos < length:
                break
            payload = bytes(buf[pos : pos + length]) if length else b""
            pos += length
            self._header = None
            out.append(Packet(header[0], header[1], header[2], payload))
        if pos:
            del buf[:pos]
        return out
