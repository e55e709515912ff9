"""Broker passwords kept off the command line: ``--password-file`` and
``DISTRL_BROKER_PASSWORD`` for every command that connects to a broker.

A password inside ``--broker mqtt://user:secret@host`` is visible to every local user in
``ps``; a file (mode 0600) or the environment is not. The password is folded into the URL
the clients use; anything shown goes through :func:`distrl_sdk.wire.url_mask.mask_url`."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote, urlsplit, urlunsplit

import click

from distrl_sdk.wire.url_mask import mask_url

__all__ = ["PASSWORD_ENV", "broker_password", "mask_url", "password_file_option",
           "read_password_file", "url_with_password"]

PASSWORD_ENV = "DISTRL_BROKER_PASSWORD"
F = TypeVar("F", bound=Callable[..., Any])


def read_password_file(path: Path) -> str:
    """The file's first line (a trailing newline is not part of the password). Raises
    ``ValueError`` naming the file when it cannot be read or is empty."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"cannot read password file {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ValueError(f"password file {path} is not UTF-8 text") from None
    password = text.split("\n", 1)[0].rstrip("\r")
    if not password:
        raise ValueError(f"password file {path} is empty")
    return password


def broker_password(password_file: Path | None,
                    env: Mapping[str, str] | None = None) -> str | None:
    """``--password-file`` first, else ``$DISTRL_BROKER_PASSWORD``, else None."""
    if password_file is not None:
        return read_password_file(password_file)
    value = (os.environ if env is None else env).get(PASSWORD_ENV)
    return value or None


def url_with_password(url: str, password: str | None, *, override: bool = True) -> str:
    """``url`` with ``password`` as its password (``override=False``: only when the URL has
    none). MQTT sends a password only with a user name, so one is required."""
    if password is None:
        return url
    parts = urlsplit(url if "://" in url else "mqtt://" + url)
    if parts.password is not None and not override:
        return url
    if parts.username is None:
        raise ValueError(f"a broker password needs a user name in the URL "
                         f"(mqtt://USER@host:port), got {mask_url(url)}")
    host = parts.netloc.rpartition("@")[2]
    netloc = f"{parts.username}:{quote(password, safe='')}@{host}"
    return urlunsplit(parts._replace(netloc=netloc))


def password_file_option(fn: F) -> F:
    """The ``--password-file`` click option (parameter ``password_file``)."""
    return click.option(
        "--password-file", "password_file", default=None,
        type=click.Path(dir_okay=False, path_type=Path),
        help=f"Read the broker password from this file (first line; keep it 0600). Unlike "
             f"a password in the URL it never shows in `ps`. Default: ${PASSWORD_ENV} when "
             "set; the URL needs a user name (mqtt://USER@host).")(fn)
