"""APK parsing (just enough to install) and ``build_test_apk`` for tests and users.

An APK is a zip with ``AndroidManifest.xml``. Real ones hold binary XML (AXML); we
read the ``package`` attribute out of its string pool. Test APKs may carry a plain
text manifest instead.
"""

from __future__ import annotations

import io
import re
import struct
import zipfile
from dataclasses import dataclass

_PKG_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)+")
_TEXT_ATTR = re.compile(r'\b([\w:]+)\s*=\s*"([^"]*)"')
_ZIP_TIME = (2008, 1, 1, 0, 0, 0)  # fixed so the same inputs give the same bytes


@dataclass(frozen=True, slots=True)
class ApkInfo:
    package: str
    label: str = ""
    version_code: int = 1
    version_name: str = "1.0"
    launcher_activity: str | None = None


class ApkError(Exception):
    """Why an APK cannot be installed: ``code`` is the INSTALL_… constant."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail


def _xml_escape(s: str) -> str:
    return (s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


def build_test_apk(package: str, label: str = "", activity: str = ".MainActivity",
                   version_code: int = 1, version_name: str = "1.0") -> bytes:
    """A minimal installable APK with a plain-text manifest and a launcher activity."""
    manifest = (
        '<?xml version="1.0" encoding="utf-8"?>\n'
        '<manifest xmlns:android="http://schemas.android.com/apk/res/android"\n'
        f'    package="{_xml_escape(package)}" android:versionCode="{version_code}"'
        f' android:versionName="{_xml_escape(version_name)}">\n'
        f'  <application android:label="{_xml_escape(label)}">\n'
        f'    <activity android:name="{_xml_escape(activity)}" android:exported="true">\n'
        "      <intent-filter>\n"
        '        <action android:name="android.intent.action.MAIN" />\n'
        '        <category android:name="android.intent.category.LAUNCHER" />\n'
        "      </intent-filter>\n"
        "    </activity>\n"
        "  </application>\n"
        "</manifest>\n"
    )
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in (
            ("AndroidManifest.xml", manifest.encode()),
            ("classes.dex", b"dex\n035\x00" + bytes(104)),
            ("META-INF/MANIFEST.MF", b"Manifest-Version: 1.0\r\nCreated-By: distrl-sim\r\n"),
        ):
            z.writestr(zipfile.ZipInfo(name, _ZIP_TIME), data)
    return buf.getvalue()


def parse_apk(data: bytes, path: str) -> ApkInfo:
    """Package name (and label) of an APK; raises ``ApkError`` like PackageParser."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            try:
                info = z.getinfo("AndroidManifest.xml")
            except KeyError:
                raise ApkError("INSTALL_PARSE_FAILED_BAD_MANIFEST",
                               f"Failed to parse {path}: Failed to read manifest from "
                               f"{path}") from None
            if info.file_size > 8 * 1024 * 1024:
                raise ApkError("INSTALL_PARSE_FAILED_BAD_MANIFEST",
                               f"Failed to parse {path}: manifest too large")
            manifest = z.read(info)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, OSError,
            EOFError, ValueError, RuntimeError):
        raise ApkError("INSTALL_PARSE_FAILED_NOT_APK",
                       f"Failed to parse {path}: Failed to load asset path {path}") from None
    if manifest[:4] == b"\x03\x00\x08\x00":
        attrs = _axml_manifest_attrs(manifest)
    else:
        attrs = _text_manifest_attrs(manifest)
    pkg = attrs.get("package", "")
    if not _PKG_NAME.fullmatch(pkg):
        what = f'specifies bad package name "{pkg}"' if pkg else "does not specify package"
        raise ApkError("INSTALL_PARSE_FAILED_MANIFEST_MALFORMED",
                       f"Failed parse during installPackageLI: {path} (at Binary XML file "
                       f"line #1): <manifest> {what}")
    code = attrs.get("versionCode", "1")
    launcher = attrs.get("activity")
    if launcher is not None and launcher.startswith("."):
        launcher = pkg + launcher
    return ApkInfo(pkg, attrs.get("label", ""), int(code) if code.isdecimal() else 1,
                   attrs.get("versionName", "1.0"), launcher)


def _text_manifest_attrs(manifest: bytes) -> dict[str, str]:
    text = manifest.decode("utf-8", "replace")
    attrs: dict[str, str] = {}
    m = re.search(r"<manifest\b([^>]*)>", text, re.S)
    if m:
        for k, v in _TEXT_ATTR.findall(m.group(1)):
            attrs[k.split(":")[-1]] = v
    m = re.search(r"<application\b([^>]*)>", text, re.S)
    if m:
        for k, v in _TEXT_ATTR.findall(m.group(1)):
            if k.endswith("label"):
                attrs["label"] = v
    m = re.search(r"<activity\b([^>]*)>", text, re.S)
    if m:
        for k, v in _TEXT_ATTR.findall(m.group(1)):
            if k.endswith(":name") or k == "name":
                attrs["activity"] = v
    return attrs


def _axml_strings(buf: bytes, off: int) -> list[str]:
    _typ, hsize, _size, count, _styles, flags, start, _sstart = struct.unpack_from(
        "<HHIIIIII", buf, off)
    utf8 = bool(flags & 0x100)
    offsets = struct.unpack_from(f"<{count}I", buf, off + hsize)
    base = off + start
    out: list[str] = []
    for o in offsets:
        p = base + o
        if utf8:
            n = buf[p]
            p += 2 if n & 0x80 else 1  # skip the UTF-16 length
            n = buf[p]
            if n & 0x80:
                n = ((n & 0x7F) << 8) | buf[p + 1]
                p += 1
            p += 1
            out.append(buf[p:p + n].decode("utf-8", "replace"))
        else:
            (n,) = struct.unpack_from("<H", buf, p)
            p += 2
            if n & 0x8000:
                (lo,) = struct.unpack_from("<H", buf, p)
                n = ((n & 0x7FFF) << 16) | lo
                p += 2
            out.append(buf[p:p + 2 * n].decode("utf-16-le", "replace"))
    return out


def _axml_manifest_attrs(buf: bytes) -> dict[str, str]:
    """``package``/versions of the first <manifest> element of binary XML.

    Chunk layout per frameworks/base/libs/androidfw/ResourceTypes.h: a string pool,
    a resource map, then XML nodes; attributes are 20 bytes each.
    """
    attrs: dict[str, str] = {}
    try:
        strings: list[str] = []
        off = 8
        while off + 8 <= len(buf):
            typ, _hsize, size = struct.unpack_from("<HHI", buf, off)
            if size < 8:
                break
            if typ == 0x0001:
                strings = _axml_strings(buf, off)
            elif typ == 0x0102:  # RES_XML_START_ELEMENT_TYPE
                _ns, name, astart, asize, acount = struct.unpack_from("<IIHHH", buf, off + 16)
                tag = strings[name] if name < len(strings) else ""
                if tag in ("manifest", "application", "activity"):
                    for k in range(acount):
                        a = off + 16 + astart + k * (asize or 20)
                        _ans, aname, raw, _vs, _r, dtype, data = struct.unpack_from(
                            "<IIIHBBI", buf, a)
                        key = strings[aname] if aname < len(strings) else ""
                        if raw != 0xFFFFFFFF and raw < len(strings):
                            val = strings[raw]
                        elif dtype in (0x10, 0x11):  # int dec / hex
                            val = str(data)
                        else:
                            continue
                        if tag == "manifest" and key in ("package", "versionCode",
                                                         "versionName"):
                            attrs[key] = val
                        elif tag == "application" and key == "label":
                            attrs.setdefault("label", val)
                        elif tag == "activity" and key == "name":
                            attrs.setdefault("activity", val)
            off += size
    except (struct.error, IndexError):
        pass
    return attrs
