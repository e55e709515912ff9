"""``distrl keys``: the Ed25519 identities that sign policy pointers and trajectory acks."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click

from farm.cli.common import CONTEXT, fail

__all__ = ["keys"]

_NAME = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
_DIR_HELP = "Key directory [default: $DISTRL_KEYS or ~/.local/state/distrl/keys]."


def _dir(directory: Path | None) -> Path:
    from farm.keys import default_keys_dir

    return directory or default_keys_dir()


@click.group("keys", context_settings=CONTEXT)
def keys() -> None:
    """Create and list signing keys (Ed25519). The learner signs policy pointers and
    trajectory acks with learner.key; a farm accepts only what the learner keys it trusts
    signed (farm up --learner-key FILE.pub; by default the local learner key)."""


@keys.command("create", context_settings=CONTEXT)
@click.argument("name")
@click.option("--dir", "directory", type=click.Path(file_okay=False, path_type=Path),
              default=None, help=_DIR_HELP)
@click.option("--force", is_flag=True, help="Replace an existing key of that name.")
def create(name: str, directory: Path | None, force: bool) -> None:
    """Make NAME.key (private, mode 0600) and NAME.pub (public: give it to whoever must
    trust this identity)."""
    from distrl_sdk.wire.signing import SigningKey

    if not _NAME.match(name):
        fail(f"invalid key name {name!r}: use 1-64 letters, digits, '.', '_' or '-'")
    path = _dir(directory) / f"{name}.key"
    if path.exists() and not force:
        fail(f"{path} exists (--force replaces it; whoever trusts its .pub then refuses "
             "what the new key signs)")
    try:
        key = SigningKey.generate(name)
        key.save(path)
    except OSError as exc:
        fail(f"cannot write {path}: {exc.strerror or exc}")
    click.echo(f"{key.key_id}  {path}  (public: {path.with_suffix('.pub')})")


@keys.command("list", context_settings=CONTEXT)
@click.option("--dir", "directory", type=click.Path(file_okay=False, path_type=Path),
              default=None, help=_DIR_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def list_keys(directory: Path | None, as_json: bool) -> None:
    """Every key in the directory: name, key id, private or public only."""
    from distrl_sdk.wire.signing import VerifyKey

    root = _dir(directory)
    rows = []
    files = sorted(root.glob("*.key")) + sorted(
        p for p in root.glob("*.pub") if not p.with_suffix(".key").exists())
    for p in files:
        try:
            vk = VerifyKey.load(p)
            rows.append({"name": p.stem, "key_id": vk.key_id, "private": p.suffix == ".key",
                         "path": str(p)})
        except (OSError, ValueError) as exc:
            rows.append({"name": p.stem, "key_id": None, "private": p.suffix == ".key",
                         "path": str(p), "error": str(exc)})
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        click.echo(f"no keys in {root} (`distrl keys create NAME` makes one)")
        return
    for r in rows:
        kind = "private+public" if r["private"] else "public"
        click.echo(f"{r['name']:<20} {r['key_id'] or 'unreadable':<17} {kind:<15} {r['path']}"
                   + (f"  ({r['error']})" if "error" in r else ""))
