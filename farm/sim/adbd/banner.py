"""The device's CNXN banner (the ``device::`` banner of AOSP adb's protocol.txt, CONNECT)."""

from __future__ import annotations

import re

from farm.sim.spec import PhoneSpec

FEATURES = ("shell_v2", "cmd", "stat_v2", "ls_v2", "fixed_push_mkdir")
_UNSAFE = re.compile(r"[:;=,\x00-\x1f\x7f]")
_MAX_VALUE = 200


def clean_prop(value: str) -> str:
    """A banner property value the host parses back unchanged: no ':', ';', '=' or controls."""
    return _UNSAFE.sub("_", value)[:_MAX_VALUE]


def device_banner(spec: PhoneSpec, features: tuple[str, ...] = FEATURES) -> bytes:
    props = (
        f"ro.product.name={clean_prop(spec.product)};"
        f"ro.product.model={clean_prop(spec.model)};"
        f"ro.product.device={clean_prop(spec.device)};"
        f"features={','.join(features)}"
    )
    return f"device::{props}".encode()
