"""``getprop`` / ``setprop``: system properties derived from the PhoneSpec."""

from __future__ import annotations

from farm.sim.shell.commands.registry import command
from farm.sim.shell.context import Phone, Proc

# A plausible build id per release; only its shape matters to parsers.
_BUILD_IDS = {34: "UP1A.231005.007", 33: "TQ3A.230901.001", 35: "AP3A.241005.015",
              31: "SQ3A.220705.004", 30: "RQ3A.211001.001", 29: "QQ3A.200805.001"}


def static_props(phone: Phone) -> dict[str, str]:
    s = phone.spec
    build_id = _BUILD_IDS.get(s.sdk, "UP1A.231005.007")
    incremental = "10817346"
    fingerprint = (f"{s.manufacturer}/{s.product}/{s.device}:{s.release}/{build_id}/"
                   f"{incremental}:user/release-keys")
    return {
        "ro.product.model": s.model,
        "ro.product.name": s.product,
        "ro.product.device": s.device,
        "ro.product.manufacturer": s.manufacturer,
        "ro.product.brand": s.manufacturer,
        "ro.product.board": s.device,
        "ro.product.system.model": s.model,
        "ro.product.vendor.model": s.model,
        "ro.product.cpu.abi": "arm64-v8a",
        "ro.product.cpu.abilist": "arm64-v8a,armeabi-v7a,armeabi",
        "ro.product.cpu.abilist64": "arm64-v8a",
        "ro.product.cpu.abilist32": "armeabi-v7a,armeabi",
        "ro.product.locale": "en-US",
        "ro.product.first_api_level": str(s.sdk),
        "ro.build.version.sdk": str(s.sdk),
        "ro.build.version.release": s.release,
        "ro.build.version.release_or_codename": s.release,
        "ro.build.version.codename": "REL",
        "ro.build.version.incremental": incremental,
        "ro.build.version.security_patch": "2024-01-05",
        "ro.build.id": build_id,
        "ro.build.display.id": f"{build_id} release-keys",
        "ro.build.fingerprint": fingerprint,
        "ro.bootimage.build.fingerprint": fingerprint,
        "ro.vendor.build.fingerprint": fingerprint,
        "ro.build.type": "user",
        "ro.build.tags": "release-keys",
        "ro.build.user": "android-build",
        "ro.build.host": "distrl-sim",
        "ro.build.characteristics": "nosdcard",
        "ro.build.date.utc": "1704412800",
        "ro.serialno": s.serialno,
        "ro.boot.serialno": s.serialno,
        "ro.hardware": s.device,
        "ro.boot.hardware": s.device,
        "ro.board.platform": "sim",
        "ro.debuggable": "0",
        "ro.secure": "1",
        "ro.adb.secure": "0",
        "ro.sf.lcd_density": str(s.screen.density),
        "ro.opengles.version": "196610",
        "ro.zygote": "zygote64_32",
        "ro.crypto.state": "encrypted",
        "ro.kernel.version": "5.10",
        "persist.sys.locale": "en-US",
        "persist.sys.timezone": "UTC",
        "persist.sys.usb.config": "adb",
        "sys.usb.config": "adb",
        "sys.usb.state": "adb",
        "net.hostname": s.name,
        "wifi.interface": "wlan0",
        "gsm.operator.alpha": "",
        "gsm.sim.state": "ABSENT",
        "service.adb.root": "0",
    }


def all_props(phone: Phone) -> dict[str, str]:
    props = static_props(phone)
    booted = phone.faults.boot_completed()
    props["sys.boot_completed"] = "1" if booted else "0"
    props["dev.bootcomplete"] = "1" if booted else "0"
    props["init.svc.bootanim"] = "stopped" if booted else "running"
    props["service.bootanim.exit"] = "1" if booted else "0"
    props.update(phone.props)
    return props


@command("getprop")
async def getprop(p: Proc) -> int:
    args = [a for a in p.args if a not in ("-T", "-Z")]
    props = all_props(p.phone)
    if not args:
        for k in sorted(props):
            p.write(f"[{k}]: [{props[k]}]\n")
        return 0
    default = args[1] if len(args) > 1 else ""
    value = props.get(args[0], "")
    p.write((value or default) + "\n")
    return 0


@command("setprop")
async def setprop(p: Proc) -> int:
    if len(p.args) != 2:
        p.error("usage: setprop NAME VALUE\n\nSets an Android system property.\n\n"
                "  setprop foo \"\"    clear property \"foo\"\n"
                "  setprop foo bar   set property \"foo\" to \"bar\"\n")
        return 1
    name, value = p.args
    props = p.phone.props
    read_only = name.startswith("ro.") and name in all_props(p.phone)
    too_long = len(value) > 91 and not name.startswith("ro.")  # PROP_VALUE_MAX
    if read_only or too_long or not name:
        p.error(f"Failed to set property '{name}' to '{value}'.\n"
                "See dmesg for error reason.\n")
        return 1
    props[name] = value
    return 0
