"""How Android prints components, identity hashes and pids (shared by dumpsys/am)."""

from __future__ import annotations

import zlib

from farm.sim.spec import ActivityRecord


def full_class(package: str, activity: str) -> str:
    """``.Main`` → ``com.pkg.Main``; already-qualified names are kept."""
    return package + activity if activity.startswith(".") else activity


def short_component(package: str, activity: str) -> str:
    """ComponentName.flattenToShortString: ``com.pkg/.Main``."""
    cls = full_class(package, activity)
    if cls.startswith(package + "."):
        return f"{package}/{cls[len(package):]}"
    return f"{package}/{cls}"


def long_component(package: str, activity: str) -> str:
    return f"{package}/{full_class(package, activity)}"


def split_component(component: str) -> tuple[str, str]:
    """``pkg/.Act`` → (pkg, pkg.Act)."""
    pkg, _, cls = component.partition("/")
    return pkg, full_class(pkg, cls)


def ident_hash(*parts: object) -> str:
    """A stable stand-in for System.identityHashCode, as lowercase hex."""
    return f"{zlib.crc32(repr(parts).encode()) & 0xFFFFFFF:x}"


def pid_of(package: str, world: object = None) -> int:
    """The world's pid for a running package when it keeps one (``World.pid``)."""
    getter = getattr(world, "pid", None)
    if callable(getter):
        pid = getter(package)
        if isinstance(pid, int):
            return pid
    return 2000 + zlib.crc32(package.encode()) % 28000


def uid_of(package: str) -> int:
    """Same formula as the world: system packages share uid 1000."""
    if package in ("com.android.settings", "android"):
        return 1000
    return 10000 + zlib.crc32(package.encode()) % 300


def activity_record(r: ActivityRecord) -> str:
    return (f"ActivityRecord{{{ident_hash('ar', r.token)} u0 "
            f"{short_component(r.package, r.activity)} t{r.task_id}}}")


def window_name(package: str, activity: str) -> str:
    """WindowState.toString; system windows (an ANR dialog) carry a plain title."""
    title = activity if " " in activity or not package else long_component(package, activity)
    return f"Window{{{ident_hash('win', package, activity)} u0 {title}}}"
