"""Drives a SimPhone the way a task runner would: shell input + parsed uiautomator dumps.

Used by the ``test_apps_*`` tests. Every tap targets the centre of bounds read from the
dump (``distrl_sdk.uitree``), so a test only passes if the UI tree and the input agree.
"""

from __future__ import annotations

import shlex

from distrl_sdk.uitree import UIElement, find_elements, parse_ui_dump
from farm.sim.phone import SimPhone
from farm.sim.spec import PhoneSpec, ScreenSpec


class Droid:
    def __init__(self, preset: str = "phone", seed: int = 0) -> None:
        self.phone = SimPhone(PhoneSpec(screen=ScreenSpec.preset(preset), seed=seed))
        self.world = self.phone.world

    async def sh(self, cmd: str, ok: bool = True) -> str:
        r = await self.phone.run_shell(cmd)
        if ok:
            assert r.exit_code == 0, (cmd, r.stdout_bytes, r.stderr_bytes)
        return r.stdout_bytes.decode()

    async def sh_err(self, cmd: str) -> tuple[int, str, str]:
        r = await self.phone.run_shell(cmd)
        return r.exit_code, r.stdout_bytes.decode(), r.stderr_bytes.decode()

    def elements(self) -> list[UIElement]:
        return parse_ui_dump(self.world.ui_xml())

    def find(self, **sel: str | bool) -> UIElement | None:
        found = find_elements(self.elements(), **sel)  # type: ignore[arg-type]
        return found[0] if found else None

    def get(self, **sel: str | bool) -> UIElement:
        e = self.find(**sel)
        labels = [x.label for x in self.elements()]
        assert e is not None, f"no {sel} on {self.world.current_focus()}: {labels}"
        return e

    def texts(self, resource_id: str) -> list[str]:
        return [e.text for e in find_elements(self.elements(), resource_id=resource_id)]

    async def tap(self, **sel: str | bool) -> None:
        x, y = self.get(**sel).bounds.center
        await self.sh(f"input tap {x} {y}")

    async def scroll_to(self, **sel: str | bool) -> UIElement:
        """Swipe up until the element is on screen and clear of the bottom bars."""
        h, wd = self.world.height, self.world.width
        for _ in range(12):
            e = self.find(**sel)
            if e is not None and e.bounds.bottom < h * 0.75:
                return e
            await self.sh(f"input swipe {wd // 2} {int(h * 0.7)} {wd // 2} {int(h * 0.4)} 300")
        return self.get(**sel)

    async def type(self, text: str) -> None:
        await self.sh("input text " + shlex.quote(text.replace(" ", "%s")))

    async def key(self, name: str) -> None:
        await self.sh(f"input keyevent {name}")

    async def launch(self, package: str) -> None:
        await self.sh(f"monkey -p {package} -c android.intent.category.LAUNCHER 1")

    def focus(self) -> tuple[str, str] | None:
        return self.world.current_focus()
