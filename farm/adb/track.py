"""Follow the adb server's device list with ``host:track-devices``.

The server answers OKAY and then, on the same connection, a length-prefixed block
(4 hex digits + ``serial\\tstate\\n`` lines) now and again whenever anything changes.
:func:`track_devices` turns that stream into :class:`DeviceSetChange` values and keeps
going when the adb server restarts: the broken connection is reported once as a change
with ``server_up=False`` and every device removed, then it reconnects with exponential
backoff and the first block after that is a full resync.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

__all__ = ["DeviceSetChange", "parse_device_block", "track_devices"]


@dataclass(frozen=True, slots=True)
class DeviceSetChange:
    """One change of the adb server's device set: the whole set plus the differences."""

    devices: Mapping[str, str]  # serial -> adb state (device, offline, unauthorized …)
    added: frozenset[str] = frozenset()
    removed: frozenset[str] = frozenset()
    changed: frozenset[str] = frozenset()  # present before and after, state differs
    server_up: bool = True
    resync: bool = False  # the first block of a (re)connection
    previous: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))


def parse_device_block(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in text.splitlines():
        serial, sep, state = line.partition("\t")
        if sep and serial:
            out[serial] = state.strip()
    return out


def _diff(old: Mapping[str, str], new: Mapping[str, str], *, server_up: bool,
          resync: bool) -> DeviceSetChange:
    return DeviceSetChange(
        devices=MappingProxyType(dict(new)),
        added=frozenset(new.keys() - old.keys()),
        removed=frozenset(old.keys() - new.keys()),
        changed=frozenset(s for s in new.keys() & old.keys() if new[s] != old[s]),
        server_up=server_up, resync=resync, previous=MappingProxyType(dict(old)),
    )


async def _read_blocks(reader: asyncio.StreamReader) -> AsyncIterator[str]:
    while True:
        head = await reader.readexactly(4)
        length = int(head, 16)
        yield (await reader.readexactly(length)).decode(errors="replace")


async def track_devices(
    host: str = "127.0.0.1", port: int = 5037, *, reconnect: bool = True,
    connect_timeout: float = 5.0, min_backoff: float = 0.1, max_backoff: float = 5.0,
) -> AsyncIterator[DeviceSetChange]:
    """Yield a :class:`DeviceSetChange` for every change of the server's device set.

    The first item is the initial list (everything ``added``). Identical consecutive
    blocks are skipped. With ``reconnect=False`` a lost server ends the iteration
    (after the ``server_up=False`` change) instead of waiting for it to come back.
    """
    known: dict[str, str] = {}
    backoff = min_backoff
    announced_down = False
    while True:
        writer: asyncio.StreamWriter | None = None
        try:
            reader, w = await asyncio.wait_for(
                asyncio.open_connection(host, port), connect_timeout)
            writer = w
            req = b"host:track-devices"
            w.write(b"%04x" % len(req) + req)
            await w.drain()
            status = await asyncio.wait_for(reader.readexactly(4), connect_timeout)
            if status != b"OKAY":
                raise ConnectionError(f"adb server refused track-devices: {status!r}")
            first = True
            async for block in _read_blocks(reader):
                new = parse_device_block(block)
                if first or new != known:
                    yield _diff(known, new, server_up=True, resync=first)
                    known = new
                first = False
                backoff = min_backoff
                announced_down = False
        except (OSError, TimeoutError, asyncio.IncompleteReadError, ValueError):
            pass  # the server went away (or never answered): report and retry below
        finally:
            if writer is not None:
                writer.close()
        if not announced_down:
            yield _diff(known, {}, server_up=False, resync=False)
            known = {}
            announced_down = True
        if not reconnect:
            return
        await asyncio.sleep(backoff)
        backoff = min(max_backoff, backoff * 2)
