"""``screencap``: the frame as raw RGBA (with its 16-byte header) or PNG."""

from __future__ import annotations

import struct
from collections.abc import Sequence

from farm.sim.profiles import CommandKind
from farm.sim.shell.commands.registry import command
from farm.sim.shell.context import Proc

DISPLAY_ID = "4619827259835644672"  # the built-in display's physical id on a Pixel
PIXEL_FORMAT_RGBA_8888 = 1
DATASPACE_SRGB = 1  # colour-space word Android 12+ appends to the raw header

USAGE = f"""usage: screencap [-hp] [-d display-id] [FILENAME]
   -h: this message
   -p: save the file as a png.
   -d: specify the display ID to capture (default: {DISPLAY_ID})
       see "dumpsys SurfaceFlinger --display-id" for valid display IDs.
If FILENAME ends with .png it will be saved as a png.
If FILENAME is not given, the results will be printed to stdout.
"""


def raw_header(width: int, height: int) -> bytes:
    """Little-endian u32 width, height, format (RGBA_8888), dataspace (sRGB)."""
    return struct.pack("<4I", width, height, PIXEL_FORMAT_RGBA_8888, DATASPACE_SRGB)


def _parse(argv: Sequence[str]) -> tuple[bool, str | None, bool]:
    """(png, file, ok)"""
    png = False
    file: str | None = None
    args = list(argv[1:])
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("-") and len(a) > 1 and file is None:
            for j, ch in enumerate(a[1:]):
                if ch == "p":
                    png = True
                elif ch == "j":
                    pass  # JPEG on Android 14; we answer PNG-less raw only for -p
                elif ch == "d":
                    if j != len(a) - 2 or i + 1 >= len(args):
                        return png, file, False
                    i += 1
                else:
                    return png, file, False
        elif file is None:
            file = a
        i += 1
    if file is not None and file.endswith(".png"):
        png = True
    return png, file, True


def _kind(argv: Sequence[str]) -> CommandKind:
    png, _, _ = _parse(argv)
    return CommandKind.SCREENCAP_PNG if png else CommandKind.SCREENCAP_RAW


@command("screencap", kind=_kind)
async def screencap(p: Proc) -> int:
    if "-h" in p.args:
        p.error(USAGE)
        return 0
    png, file, ok = _parse(p.argv)
    if not ok:
        p.error(USAGE)
        return 1
    world = p.phone.world
    if file is None:
        if png:
            p.write(world.frame_png())
        else:
            # Header and pixels stay separate chunks: the frame is never copied here.
            p.write(raw_header(world.width, world.height))
            p.write(world.frame_rgba())
        return 0
    path = p.path(file)
    data = world.frame_png() if png else raw_header(world.width, world.height) + bytes(
        world.frame_rgba())
    try:
        p.phone.vfs.write(path, data)
    except OSError as e:
        p.error(f"Error opening file: {file} ({e.strerror})\n")
        return 1
    return 0
