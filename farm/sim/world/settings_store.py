"""The settings provider: ``settings get|put|delete|list`` over system, secure, global.

It is the single source of truth: the Settings app reads from it when it builds a
screen and writes to it when the user toggles something, so ``settings put`` from the
shell shows up in the UI and a tap in the UI shows up in ``settings get``.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from farm.sim.world.settings_defaults import DEFAULTS

NAMESPACES = ("system", "secure", "global")

IME_ID = "com.google.android.inputmethod.latin/com.android.inputmethod.latin.LatinIME"


def default_settings(device_name: str, rng: random.Random) -> dict[str, dict[str, str]]:
    """Values as a freshly set-up Android 14 phone reports them: the keys the sim's UI
    uses (below) over the rest of AOSP's defaults (``settings_defaults``)."""
    own = {
        "global": {
            "adb_enabled": "1",
            "airplane_mode_on": "0",
            "airplane_mode_radios": "cell,bluetooth,wifi,nfc,wimax",
            "animator_duration_scale": "1.0",
            "auto_time": "1",
            "auto_time_zone": "1",
            "bluetooth_on": "0",
            "boot_count": "1",
            "data_roaming": "0",
            "development_settings_enabled": "0",
            "device_name": device_name,
            "device_provisioned": "1",
            "low_power": "0",
            "mobile_data": "1",
            "stay_on_while_plugged_in": "0",
            "transition_animation_scale": "1.0",
            "wifi_on": "1",
            "window_animation_scale": "1.0",
            "zen_mode": "0",
        },
        "system": {
            "accelerometer_rotation": "0",
            "font_scale": "1.0",
            "haptic_feedback_enabled": "1",
            "screen_brightness": "102",
            "screen_brightness_mode": "0",
            "screen_off_timeout": "60000",
            "sound_effects_enabled": "1",
            "status_bar_show_battery_percent": "0",
            "volume_music_speaker": "5",
        },
        "secure": {
            "accessibility_enabled": "0",
            "android_id": f"{rng.getrandbits(64):016x}",
            "bluetooth_name": device_name,
            "default_input_method": IME_ID,
            "enabled_input_methods": IME_ID,
            "location_mode": "3",
            "ui_night_mode": "1",
            "user_setup_complete": "1",
        },
    }
    return {ns: {**DEFAULTS[ns], **values} for ns, values in own.items()}


class SettingsStore:
    """Implements ``farm.sim.spec.SettingsAPI``; listeners hear every change."""

    def __init__(self, defaults: dict[str, dict[str, str]]) -> None:
        self._data = {ns: dict(defaults.get(ns, {})) for ns in NAMESPACES}
        self.listeners: list[Callable[[str, str], None]] = []

    def _ns(self, namespace: str) -> dict[str, str]:
        try:
            return self._data[namespace]
        except KeyError:
            raise ValueError(f"Invalid namespace '{namespace}'") from None

    def get(self, namespace: str, key: str) -> str | None:
        return self._ns(namespace).get(key)

    def put(self, namespace: str, key: str, value: str) -> None:
        ns = self._ns(namespace)
        if ns.get(key) == value:
            return
        ns[key] = value
        self._changed(namespace, key)

    def delete(self, namespace: str, key: str) -> bool:
        ns = self._ns(namespace)
        if key not in ns:
            return False
        del ns[key]
        self._changed(namespace, key)
        return True

    def list(self, namespace: str) -> list[tuple[str, str]]:
        return sorted(self._ns(namespace).items())

    # typed helpers for the apps
    def get_int(self, namespace: str, key: str, default: int) -> int:
        raw = self.get(namespace, key)
        try:
            return int(float(raw)) if raw is not None else default
        except ValueError:
            return default

    def get_bool(self, namespace: str, key: str, default: bool = False) -> bool:
        return self.get_int(namespace, key, 1 if default else 0) != 0

    def _changed(self, namespace: str, key: str) -> None:
        for cb in list(self.listeners):
            cb(namespace, key)
