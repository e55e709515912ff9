"""What an app is: a package with activities that build view trees from state.

Adding an app is one module: subclass ``App``, list its activities, decorate it with
``@register``. The world instantiates every registered app once per phone; ``reset()``
is what ``pm clear`` does, so keep all of the app's data in attributes it sets.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import ClassVar, Protocol

from farm.sim.faults import BatteryState
from farm.sim.intents import IntentFilter, IntentQuery
from farm.sim.spec import PackageInfo, PhoneSpec
from farm.sim.vfs import VirtualFS
from farm.sim.world.settings_store import SettingsStore
from farm.sim.world.views import TextField, View
from farm.sim.world.widgets import Ctx


class Host(Protocol):
    """The parts of the phone an app may use (implemented by World)."""

    spec: PhoneSpec
    store: SettingsStore  # the settings provider, with typed helpers
    battery: BatteryState
    vfs: VirtualFS
    rng: random.Random

    def battery_level(self) -> int: ...
    def wall_time(self) -> float: ...
    def start(self, package: str, activity: str, args: dict[str, str] | None = None, *,
              new_task: bool = False) -> None: ...
    def finish(self, activity: Activity) -> None: ...
    def launch_package(self, package: str) -> bool: ...
    def force_stop(self, package: str) -> None: ...
    def uninstall_package(self, package: str) -> bool: ...
    def packages(self) -> list[PackageInfo]: ...
    def app(self, package: str) -> App | None: ...
    def running(self, package: str) -> bool: ...
    def focus(self, activity: Activity, field: TextField | None) -> None: ...
    def data_changed(self) -> None: ...  # a provider changed outside the UI: redraw
    def post_notification(self, package: str, title: str, text: str,
                          tag: str | None = None) -> object: ...


class Activity:
    """One screen. ``build`` is pure with respect to the phone: it reads state, returns views.

    Per-instance UI state (scroll offsets, focused field, open dialog) lives here and is
    lost when the activity is finished or the app force-stopped, as on Android.
    """

    def __init__(self, app: App, host: Host, name: str, args: dict[str, str]) -> None:
        self.app = app
        self.host = host
        self.name = name  # fully qualified class name
        self.args = args
        self.scroll: dict[str, int] = {}
        self.focus: TextField | None = None
        self.dialog_open = ""  # which app dialog is shown, "" for none

    @property
    def package(self) -> str:
        return self.app.package

    @property
    def shows_wallpaper(self) -> bool:
        """Drawn over the wallpaper with light system-bar icons (the home screen)."""
        return False

    def build(self, ctx: Ctx) -> View:
        raise NotImplementedError

    def build_dialog(self, ctx: Ctx) -> View | None:
        """An app-owned dialog window shown over this activity, or None."""
        return None

    def on_back(self) -> bool:
        """Handle BACK inside the activity (close a dialog); False lets the task pop it."""
        if self.dialog_open:
            self.dialog_open = ""
            self.focus = None
            return True
        return False

    def on_enter(self) -> None:
        """ENTER with no focused text field."""

    def finish(self) -> None:
        self.host.finish(self)

    def focus_field(self, field: TextField) -> Callable[[], None]:
        def do() -> None:
            self.host.focus(self, field)
        return do


class App:
    """A package. Class attributes describe it; instance attributes are its data."""

    package: ClassVar[str] = ""
    label: ClassVar[str] = ""
    apk_path: ClassVar[str] = ""
    system: ClassVar[bool] = True
    launcher_activity: ClassVar[str | None] = None
    icon: ClassVar[str] = "app"  # launcher icon glyph, see icons.py
    icon_color: ClassVar[str] = "#5f6368"
    # fully qualified activity class → Activity subclass
    activities: ClassVar[dict[str, type[Activity]]] = {}
    # what its manifest would declare: implicit intents that reach its activities
    intent_filters: ClassVar[tuple[IntentFilter, ...]] = ()

    def __init__(self, host: Host) -> None:
        self.host = host
        self.reset()

    def reset(self) -> None:
        """Forget all app data (``pm clear``)."""

    def resolve(self, activity: str) -> str | None:
        """Fully qualified class name if this app has that activity."""
        return activity if activity in self.activities else None

    def create(self, activity: str, args: dict[str, str]) -> Activity:
        return self.activities[activity](self, self.host, activity, args)

    def intent_args(self, activity: str, intent: IntentQuery) -> dict[str, str]:
        """What a resolved implicit intent tells the activity (its data, as args)."""
        return {}

    def on_intent(self, activity: str, args: dict[str, str]) -> None:
        """An intent with ``args`` reaches ``activity`` (new or already running)."""

    def info(self) -> PackageInfo:
        return PackageInfo(name=self.package, apk_path=self.apk_path, system=self.system,
                           launcher_activity=self.launcher_activity, label=self.label)


REGISTRY: list[type[App]] = []


def register(cls: type[App]) -> type[App]:
    """Class decorator: every phone gets an instance of this app."""
    REGISTRY.append(cls)
    return cls


# Packages every phone has that have no UI here; they only show up in ``pm list``.
SYSTEM_PACKAGES: list[PackageInfo] = [
    PackageInfo("android", "/system/framework/framework-res.apk", True, None, "Android System"),
    PackageInfo("com.android.systemui", "/system_ext/priv-app/SystemUIGoogle/SystemUIGoogle.apk",
                True, None, "System UI"),
    PackageInfo("com.android.shell", "/system/priv-app/Shell/Shell.apk", True, None, "Shell"),
    PackageInfo("com.android.phone", "/system/priv-app/TeleService/TeleService.apk", True, None,
                "Phone Services"),
    PackageInfo("com.android.providers.settings",
                "/system/priv-app/SettingsProvider/SettingsProvider.apk", True, None,
                "Settings Storage"),
    PackageInfo("com.android.providers.media.module",
                "/apex/com.android.mediaprovider/priv-app/MediaProvider/MediaProvider.apk", True,
                None, "Media Storage"),
    PackageInfo("com.android.bluetooth", "/apex/com.android.btservices/app/Bluetooth/Bluetooth.apk",
                True, None, "Bluetooth"),
    PackageInfo("com.android.networkstack", "/system/priv-app/NetworkStack/NetworkStack.apk", True,
                None, "Network manager"),
]
