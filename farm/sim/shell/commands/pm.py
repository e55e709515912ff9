"""``pm`` / ``cmd package``: list, path, clear, install, uninstall, grant."""

from __future__ import annotations

import base64
import contextlib
import posixpath
from collections.abc import Sequence

from farm.sim.intents import MATCH_ADJUSTMENT_NORMAL, MATCH_EMPTY, ResolveInfo
from farm.sim.profiles import CommandKind
from farm.sim.shell.apk import ApkError, parse_apk
from farm.sim.shell.commands.am import parse_intent, query_of
from farm.sim.shell.commands.dumpsys import package as dumpsys_package
from farm.sim.shell.commands.names import full_class, short_component, split_component, uid_of
from farm.sim.shell.commands.registry import command
from farm.sim.shell.context import InstalledMeta, InstallSession, Phone, Proc
from farm.sim.spec import PackageInfo

USAGE = """Package manager (package) commands:
  help
    Print this help text.
  path [--user USER_ID] PACKAGE
  list packages [-f] [-d] [-e] [-s] [-3] [-i] [-l] [-u] [-U] [--show-versioncode] [FILTER]
  install [-rtfdg] [-i PACKAGE] [--user USER_ID|all|current] [-S BYTES] [PATH|-]
  uninstall [-k] [--user USER_ID] PACKAGE
  clear [--user USER_ID] PACKAGE
  grant [--user USER_ID] PACKAGE PERMISSION
  revoke [--user USER_ID] PACKAGE PERMISSION
  resolve-activity [--brief] [--user USER_ID] INTENT
"""

# install options that take a value
_INSTALL_VALUE_OPTS = frozenset({"-i", "--user", "--install-location", "-p", "--abi",
                                 "--originating-uri", "--referrer", "--install-reason",
                                 "--force-uuid", "--pkg", "--staged-ready-timeout", "-S"})
FEATURES = (
    "android.hardware.touchscreen", "android.hardware.touchscreen.multitouch",
    "android.hardware.wifi", "android.hardware.screen.portrait",
    "android.hardware.screen.landscape", "android.software.home_screen",
    "android.software.input_methods", "android.hardware.faketouch",
)


def _rand_token(phone: Phone) -> str:
    return base64.urlsafe_b64encode(bytes(phone.rng.getrandbits(8) for _ in range(16))).decode()


def install_bytes(phone: Phone, data: bytes) -> str:
    """Install an APK's bytes; returns pm's status line (``Success`` or ``Failure […]``)."""
    session_path = f"/data/app/vmdl{phone.rng.randrange(10**8, 2**31)}.tmp/base.apk"
    try:
        info = parse_apk(data, session_path)
    except ApkError as e:
        return f"Failure [{e.code}: {e.detail}]"
    old = phone.installed.get(info.package)
    apk_dir = f"/data/app/~~{_rand_token(phone)}/{info.package}-{_rand_token(phone)}"
    apk_path = f"{apk_dir}/base.apk"
    vfs = phone.vfs
    try:
        vfs.write(apk_path, data, make_parents=True)
    except OSError:
        return ("Failure [INSTALL_FAILED_INSUFFICIENT_STORAGE: Failed to override "
                "installation location]")
    try:
        phone.world.install_package(apk_path, info.package, info.label or info.package)
    except ValueError:  # the world refuses to replace a system package
        with contextlib.suppress(OSError):
            vfs.remove(posixpath.dirname(apk_dir), recursive=True)
        return (f"Failure [INSTALL_FAILED_UPDATE_INCOMPATIBLE: Package {info.package} "
                "signatures do not match previously installed version; ignoring!]")
    if old is not None and old.apk_dir:
        with contextlib.suppress(OSError):
            vfs.remove(posixpath.dirname(old.apk_dir), recursive=True)
    phone.installed[info.package] = InstalledMeta(info.version_code, info.version_name,
                                                  apk_dir=apk_dir)
    return "Success"


def _split_install_args(args: Sequence[str]) -> tuple[dict[str, str], list[str]]:
    opts: dict[str, str] = {}
    rest: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a in _INSTALL_VALUE_OPTS:
            opts[a] = args[i + 1] if i + 1 < len(args) else ""
            i += 2
            continue
        if a.startswith("-") and a != "-":
            opts[a] = ""
        else:
            rest.append(a)
        i += 1
    return opts, rest


async def _install(p: Proc, args: list[str]) -> int:
    opts, rest = _split_install_args(args)
    if "-S" in opts or (rest and rest[0] == "-"):
        size = int(opts["-S"]) if opts.get("-S", "").isdecimal() else len(p.stdin)
        data = p.stdin[:size]
    elif rest:
        path = p.path(rest[0])
        try:
            data = p.phone.vfs.read(path)
        except OSError:
            p.error(f"Exception occurred while executing 'install':\n"
                    f"java.lang.IllegalArgumentException: Error: Can't open file: {rest[0]}\n")
            return 255
    else:
        p.error("Exception occurred while executing 'install':\n"
                "java.lang.IllegalArgumentException: Error: must either specify a package "
                "size or an APK file\n")
        return 255
    status = install_bytes(p.phone, data)
    p.write(status + "\n")
    return 0 if status == "Success" else 1


async def _session_cmd(p: Proc, sub: str, args: list[str]) -> int:
    phone = p.phone
    if sub == "install-create":
        sid = phone.rng.randrange(10**8, 2**31)
        phone.sessions[sid] = InstallSession()
        p.write(f"Success: created install session [{sid}]\n")
        return 0
    opts, rest = _split_install_args(args)
    if not rest or not rest[0].isdecimal() or int(rest[0]) not in phone.sessions:
        p.error(f"Exception occurred while executing '{sub}':\njava.lang.SecurityException:"
                f" Caller has no access to session {rest[0] if rest else -1}\n")
        return 255
    sid = int(rest[0])
    session = phone.sessions[sid]
    if sub == "install-write":
        name = rest[1] if len(rest) > 1 else "base.apk"
        src = rest[2] if len(rest) > 2 else "-"
        if src == "-":
            size = int(opts["-S"]) if opts.get("-S", "").isdecimal() else len(p.stdin)
            session.apks[name] = p.stdin[:size]
        else:
            try:
                session.apks[name] = phone.vfs.read(p.path(src))
            except OSError:
                p.error(f"Error: Can't open file: {src}\n")
                return 255
        p.write(f"Success: streamed {len(session.apks[name])} bytes\n")
        return 0
    if sub == "install-abandon":
        del phone.sessions[sid]
        p.write("Success\n")
        return 0
    # install-commit
    del phone.sessions[sid]
    if not session.apks:
        p.write("Failure [INSTALL_FAILED_INVALID_APK: No packages staged]\n")
        return 1
    status = install_bytes(phone, next(iter(session.apks.values())))
    p.write(status + "\n")
    return 0 if status == "Success" else 1


def _positional(args: Sequence[str]) -> list[str]:
    out: list[str] = []
    skip = False
    for a in args:
        if skip:
            skip = False
        elif a in ("--user", "-i", "--uid"):
            skip = True
        elif not a.startswith("-"):
            out.append(a)
    return out


async def _list(p: Proc, args: list[str]) -> int:
    what = args[0] if args else ""
    opts = set(a for a in args[1:] if a.startswith("-"))
    pos = _positional(args[1:])
    world = p.phone.world
    if what in ("packages", "package"):
        for pk in sorted(world.packages(), key=lambda x: x.name):
            if ("-3" in opts and pk.system) or ("-s" in opts and not pk.system):
                continue
            if pos and pos[0] not in pk.name:
                continue
            line = f"package:{pk.apk_path}={pk.name}" if "-f" in opts else f"package:{pk.name}"
            if "--show-versioncode" in opts:
                meta = p.phone.installed.get(pk.name)
                line += f" versionCode:{meta.version_code if meta else p.phone.spec.sdk}"
            if "-i" in opts:
                line += "  installer=null"
            if "-U" in opts:
                line += f" uid:{uid_of(pk.name)}"
            p.write(line + "\n")
        return 0
    if what == "features":
        p.write("".join(f"feature:{f}\n" for f in FEATURES))
        return 0
    if what == "users":
        p.write("Users:\n\tUserInfo{0:Owner:c13} running\n")
        return 0
    if what in ("permissions", "permission-groups", "libraries", "instrumentation"):
        return 0
    p.error(f"Error: unknown list type '{what}'\n")
    return 255


@command("pm", kind=lambda argv: (CommandKind.INSTALL if len(argv) > 1 and argv[1] in (
    "install", "install-commit") else CommandKind.SHELL))
async def pm(p: Proc) -> int:
    return await package_command(p, p.args)


def _resolve_activity(p: Proc, sub: str, rest: list[str], pkgs: dict[str, PackageInfo]) -> int:
    """``resolve-activity [--brief] [--components] INTENT`` and ``query-activities``.

    The intent is parsed as ``am`` parses it; a bare package name is an intent limited
    to that package, which resolves to its launcher activity (what ``pm`` callers use
    it for). Formats follow ``printResolveInfo``: ``--brief`` is the ResolveInfo line and
    the short component, ``--components`` the component alone.
    """
    brief = "--brief" in rest
    components = "--components" in rest
    it = parse_intent([a for a in rest if a not in ("--brief", "--components")])
    world = p.phone.world
    found: list[ResolveInfo] = []
    if it.component:
        pkg, cls = split_component(it.component)
        info = pkgs.get(pkg)
        if info is not None and world.has_activity(pkg, cls):
            found = [ResolveInfo(pkg, cls, 0, label=info.label)]
    elif it.package and not (it.action or it.data or it.categories or it.mime):
        info = pkgs.get(it.package)
        if info is not None and info.launcher_activity:
            cls = full_class(info.name, info.launcher_activity)
            found = [ResolveInfo(info.name, cls, MATCH_EMPTY + MATCH_ADJUSTMENT_NORMAL,
                                 label=info.label)]
    elif it.action or it.data or it.categories or it.mime:
        found = world.resolve_intent(query_of(it))
    if sub == "query-activities":
        if not found:
            p.write("No activities found\n")
            return 0
        if not (brief or components):
            p.write(f"{len(found)} activities found:\n")
        for i, r in enumerate(found):
            if not (brief or components):
                p.write(f"  Activity #{i}:\n")
            _print_resolve_info(p, r, brief, components, "    " if not (
                brief or components) else "")
        return 0
    if not found:
        p.write("No activity found\n")
        return 0
    if len(found) > 1 and found[0].priority == found[1].priority:
        # several equally good matches and no preferred one: the chooser resolves it
        found = [ResolveInfo("android", "com.android.internal.app.ResolverActivity", 0,
                             is_default=False, label="Android System")]
    _print_resolve_info(p, found[0], brief, components, "")
    return 0


def _print_resolve_info(p: Proc, r: ResolveInfo, brief: bool, components: bool,
                        prefix: str) -> None:
    comp = short_component(r.package, r.activity)
    if brief or components:
        if not components:
            p.write(f"{prefix}priority={r.priority} preferredOrder=0 match=0x{r.match:x} "
                    f"specificIndex=-1 isDefault={str(r.is_default).lower()}\n")
        p.write(f"{prefix}{comp}\n")
        return
    p.write(f"{prefix}priority={r.priority} preferredOrder=0 match=0x{r.match:x} "
            f"specificIndex=-1 isDefault={str(r.is_default).lower()}\n"
            f"{prefix}ActivityInfo:\n"
            f"{prefix}  name={r.activity}\n"
            f"{prefix}  packageName={r.package}\n"
            f"{prefix}  enabled=true exported=true directBootAware=false\n")


async def package_command(p: Proc, args: list[str]) -> int:
    """Shared by ``pm …`` and ``cmd package …``."""
    if not args or args[0] in ("help", "-h"):
        p.write(USAGE)
        return 0
    sub, rest = args[0], args[1:]
    world = p.phone.world
    pkgs = {pk.name: pk for pk in world.packages()}
    pos = _positional(rest)
    if sub == "list":
        return await _list(p, rest)
    if sub == "path":
        if not pos or pos[0] not in pkgs:
            return 1
        p.write(f"package:{pkgs[pos[0]].apk_path}\n")
        return 0
    if sub == "clear":
        if not pos:
            p.error("Error: no package specified\n")
            return 255
        p.write("Success\n" if world.clear_package(pos[0]) else "Failed\n")
        return 0
    if sub == "install":
        return await _install(p, rest)
    if sub in ("install-create", "install-write", "install-commit", "install-abandon"):
        return await _session_cmd(p, sub, rest)
    if sub == "uninstall":
        if not pos:
            p.error("Error: package name not specified\n")
            return 255
        if world.uninstall_package(pos[0]):
            meta = p.phone.installed.pop(pos[0], None)
            if meta is not None and meta.apk_dir:
                with contextlib.suppress(OSError):
                    p.phone.vfs.remove(posixpath.dirname(meta.apk_dir), recursive=True)
            p.write("Success\n")
            return 0
        p.write("Failure [DELETE_FAILED_INTERNAL_ERROR]\n")
        return 1
    if sub in ("grant", "revoke"):
        if len(pos) < 2:
            p.error(f"Exception occurred while executing '{sub}':\n"
                    "java.lang.IllegalArgumentException: no permission specified\n")
            return 255
        if pos[0] not in pkgs:
            p.error(f"Exception occurred while executing '{sub}':\n"
                    f"java.lang.IllegalArgumentException: Unknown package: {pos[0]}\n")
            return 255
        return 0
    if sub in ("resolve-activity", "query-activities"):
        return _resolve_activity(p, sub, rest, pkgs)
    if sub == "dump":
        text, _ = dumpsys_package(p.phone, pos[:1])
        p.write(text)
        return 0
    if sub in ("enable", "disable", "disable-user", "hide", "unhide", "suspend", "unsuspend"):
        if not pos or pos[0] not in pkgs:
            p.error(f"Exception occurred while executing '{sub}':\n"
                    f"java.lang.IllegalArgumentException: Unknown package: "
                    f"{pos[0] if pos else ''}\n")
            return 255
        state = "enabled" if sub == "enable" else "disabled" if sub == "disable" else \
            "disabled-user"
        if sub in ("enable", "disable", "disable-user"):
            p.write(f"Package {pos[0]} new state: {state}\n")
        return 0
    if sub in ("set-install-location", "trim-caches", "compile", "reconcile-secondary-dexes"):
        return 0
    p.error(f"Unknown command: {sub}\n")
    return 255
