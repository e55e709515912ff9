"""Real phone screens for picture tests: a sim phone (in process, the same world the
farm drives over adb) is put on its launcher, Settings and a form (Contacts' editor), and
each framebuffer is made into the farm's own thumbnail JPEG (``farm.controller``'s
encoder, 240 px wide like the farm publishes)."""

from __future__ import annotations

import asyncio
import functools

from farm.controller import _thumbnail
from farm.sim.phone import SimPhone

__all__ = ["APPS", "app_screens"]

#: app → the shell command that shows it
APPS: dict[str, str] = {
    "launcher": "input keyevent KEYCODE_HOME",
    "settings": "am start -n com.android.settings/.Settings",
    "form": "am start -n com.google.android.contacts/"
            "com.android.contacts.activities.ContactEditorActivity",
}


async def _shots() -> dict[str, tuple[bytes, int, int]]:
    phone = SimPhone()
    out = {}
    for name, cmd in APPS.items():
        await phone.run_shell(cmd)
        w, h, rgba = phone.framebuffer()
        out[name] = _thumbnail(w, h, rgba, 240, 70)
    return out


@functools.cache
def app_screens() -> dict[str, tuple[bytes, int, int]]:
    """app → (JPEG, width, height) of its screen as the farm would publish it."""
    return asyncio.run(_shots())
