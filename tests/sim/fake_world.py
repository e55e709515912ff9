"""A small stand-in for ``farm.sim.world.World`` (a WorldAPI test double).

Records every input call and keeps a trivial activity stack so shell tests can check
exact output without depending on the real world's apps.
"""

from __future__ import annotations

from farm.sim.faults import BatteryState
from farm.sim.intents import (
    ACTION_MAIN,
    CATEGORY_DEFAULT,
    CATEGORY_HOME,
    IntentFilter,
    IntentQuery,
    ResolveInfo,
    resolve,
)
from farm.sim.spec import ActivityRecord, LogBuffer, PackageInfo, StartResult

LAUNCHER = "com.android.launcher3"


class FakeSettings:
    def __init__(self) -> None:
        self.tables: dict[str, dict[str, str]] = {
            "system": {"screen_brightness": "102"},
            "secure": {"android_id": "0123456789abcdef"},
            "global": {"wifi_on": "1", "airplane_mode_on": "0"},
        }

    def get(self, namespace: str, key: str) -> str | None:
        return self.tables[namespace].get(key)

    def put(self, namespace: str, key: str, value: str) -> None:
        self.tables[namespace][key] = value

    def delete(self, namespace: str, key: str) -> bool:
        return self.tables[namespace].pop(key, None) is not None

    def list(self, namespace: str) -> list[tuple[str, str]]:
        return sorted(self.tables[namespace].items())


class FakeWorld:
    def __init__(self, width: int = 1080, height: int = 2400, density: int = 420,
                 battery: BatteryState | None = None) -> None:
        self.width, self.height, self.density = width, height, density
        self.settings = FakeSettings()
        self.logcat = LogBuffer()
        self.battery = battery or BatteryState()
        self.screen_on = True
        self.rotation = 0
        self.calls: list[tuple[object, ...]] = []
        self._version = 0
        self._frame = bytes(range(256)) * (width * height * 4 // 256) + bytes(
            width * height * 4 % 256)
        self._pkgs: dict[str, PackageInfo] = {
            p.name: p for p in (
                PackageInfo(LAUNCHER, "/system/priv-app/Launcher3/Launcher3.apk", True,
                            "com.android.launcher3.Launcher", "Launcher"),
                PackageInfo("com.android.settings", "/system/priv-app/Settings/Settings.apk",
                            True, "com.android.settings.Settings", "Settings"),
                PackageInfo("com.android.phone", "/system/priv-app/TeleService/TeleService.apk",
                            True, None, "Phone"),
            )
        }
        self.stack: list[ActivityRecord] = [
            ActivityRecord(LAUNCHER, "com.android.launcher3.Launcher", 1, 0xA1)]
        self._next_task = 10

    # input
    def tap(self, x: float, y: float) -> None:
        self.calls.append(("tap", x, y))
        self._version += 1

    def swipe(self, x1: float, y1: float, x2: float, y2: float, duration_ms: int) -> None:
        self.calls.append(("swipe", x1, y1, x2, y2, duration_ms))

    def input_text(self, text: str) -> None:
        self.calls.append(("text", text))

    def clear_text(self) -> None:
        self.calls.append(("clear_text",))

    def key(self, keycode: int) -> None:
        self.calls.append(("key", keycode))

    # observation
    @property
    def version(self) -> int:
        return self._version

    def frame_rgba(self) -> bytes:
        return self._frame

    def frame_png(self) -> bytes:
        return b"\x89PNG\r\n\x1a\n" + b"fakepng"

    def ui_xml(self) -> str:
        top = self.stack[0].package if self.stack else ""
        return ("<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\">"
                f'<node index="0" text="" resource-id="" class="android.widget.FrameLayout" '
                f'package="{top}" content-desc="" checkable="false" checked="false" '
                'clickable="false" enabled="true" focusable="false" focused="false" '
                'scrollable="false" long-clickable="false" password="false" selected="false" '
                f'bounds="[0,0][{self.width},{self.height}]" /></hierarchy>')

    # activities / packages
    def current_focus(self) -> tuple[str, str] | None:
        return (self.stack[0].package, self.stack[0].activity) if self.stack else None

    def activity_stack(self) -> list[ActivityRecord]:
        return list(self.stack)

    def input_method_state(self) -> tuple[bool, str, str]:
        return False, "", self.stack[0].package if self.stack else ""

    def call_state(self) -> tuple[int, str]:
        return 0, ""

    def remove_task(self, task_id: int) -> bool:
        before = len(self.stack)
        self.stack = [r for r in self.stack if r.task_id != task_id]
        return len(self.stack) != before

    def has_activity(self, package: str, activity: str) -> bool:
        info = self._pkgs.get(package)
        return info is not None and info.launcher_activity == activity

    def resolve_intent(self, intent: IntentQuery) -> list[ResolveInfo]:
        filters = [(LAUNCHER, "Launcher", IntentFilter(
            "com.android.launcher3.Launcher", (ACTION_MAIN,), (CATEGORY_HOME, CATEGORY_DEFAULT)))]
        return resolve(filters, intent)

    def intent_args(self, info: ResolveInfo, intent: IntentQuery) -> dict[str, str]:
        return {}

    def start_activity(self, component: str, args: dict[str, str] | None = None) -> StartResult:
        pkg, _, cls = component.partition("/")
        full = pkg + cls if cls.startswith(".") else cls
        info = self._pkgs.get(pkg)
        if info is None or info.launcher_activity != full:
            return StartResult("no_such_activity", component, pkg, full)
        if self.stack and self.stack[0].package == pkg:
            return StartResult("brought_to_front", component, pkg, full)
        self._next_task += 1
        self.stack.insert(0, ActivityRecord(pkg, full, self._next_task, 0xB0 + self._next_task))
        return StartResult("ok", component, pkg, full)

    def launch_package(self, package: str) -> bool:
        info = self._pkgs.get(package)
        if info is None or info.launcher_activity is None:
            return False
        self.start_activity(f"{package}/{info.launcher_activity}")
        return True

    def force_stop(self, package: str) -> None:
        self.calls.append(("force_stop", package))
        self.stack = [r for r in self.stack if r.package != package]

    def clear_package(self, package: str) -> bool:
        return package in self._pkgs

    def packages(self) -> list[PackageInfo]:
        return list(self._pkgs.values())

    def install_package(self, apk_path: str, package: str, label: str) -> None:
        old = self._pkgs.get(package)
        if old is not None and old.system:
            raise ValueError("system package")
        self._pkgs[package] = PackageInfo(package, apk_path, False, f"{package}.MainActivity",
                                          label)

    def uninstall_package(self, package: str) -> bool:
        info = self._pkgs.get(package)
        if info is None or info.system:
            return False
        del self._pkgs[package]
        return True

    def show_anr(self) -> None:
        self.calls.append(("anr",))

    shade_open = False
    posted: tuple[tuple[str, str, str, str | None], ...] = ()

    def post_notification(self, package: str, title: str, text: str,
                          tag: str | None = None) -> object:
        self.posted = (*self.posted, (package, title, text, tag))
        return self.posted[-1]

    def notification_dump(self, redact: bool = True) -> str:
        return f"Current Notification Manager state:\n  posted={len(self.posted)}\n"

    def expand_shade(self) -> None:
        self.shade_open = True

    def collapse_shade(self) -> None:
        self.shade_open = False
