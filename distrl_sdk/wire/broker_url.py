"""Broker URLs (`mqtt://[user[:pass]@]host[:port]`, `mqtts://…`) → aiomqtt client arguments.

Shared by every MQTT client of the wire contract: farms, the learner and the TUI."""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from distrl_sdk.wire.url_mask import mask_url

__all__ = ["BrokerAddress", "parse_broker_url"]

_SCHEMES = {"mqtt": (1883, False), "tcp": (1883, False), "mqtts": (8883, True),
            "ssl": (8883, True), "tls": (8883, True)}


@dataclass(frozen=True)
class BrokerAddress:
    hostname: str
    port: int
    username: str | None = None
    password: str | None = None
    tls: bool = False
    ca_file: str | None = None
    insecure: bool = False  # TLS without certificate/hostname checks (tests only)

    def client_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``aiomqtt.Client``."""
        kw: dict[str, Any] = {"hostname": self.hostname, "port": self.port}
        if self.username is not None:
            kw["username"] = self.username
            kw["password"] = self.password
        if self.tls:
            ctx = ssl.create_default_context(cafile=self.ca_file)
            if self.insecure:
                ctx.check_hostname = False
                ctx.verify_mode = ssl.CERT_NONE
            kw["tls_context"] = ctx
        return kw

    def __str__(self) -> str:  # never prints the password
        scheme = "mqtts" if self.tls else "mqtt"
        user = f"{self.username}@" if self.username else ""
        return f"{scheme}://{user}{self.hostname}:{self.port}"


def parse_broker_url(url: str) -> BrokerAddress:
    """``mqtt://[user[:pass]@]host[:port]``, ``mqtts://…`` (TLS, port 8883 by default,
    ``?ca=/path/ca.pem``, ``?insecure=1``); a bare ``host[:port]`` means ``mqtt://``."""
    if "://" not in url:
        url = "mqtt://" + url
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in _SCHEMES:
        raise ValueError(f"unsupported broker URL scheme {parts.scheme!r} (mqtt:// or mqtts://)")
    default_port, tls = _SCHEMES[scheme]
    if not parts.hostname:
        raise ValueError(f"no host in broker URL {mask_url(url)!r}")
    try:
        port = parts.port or default_port
    except ValueError as e:
        raise ValueError(f"bad port in broker URL: {e}") from None
    q = parse_qs(parts.query)
    return BrokerAddress(
        hostname=parts.hostname,
        port=port,
        username=unquote(parts.username) if parts.username is not None else None,
        password=unquote(parts.password) if parts.password is not None else None,
        tls=tls,
        ca_file=q["ca"][0] if "ca" in q else None,
        insecure=q.get("insecure", ["0"])[0].lower() in ("1", "true", "yes"),
    )
