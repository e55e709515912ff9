"""``distrl config show``: the effective farm configuration and where each value came from."""

from __future__ import annotations

import json
import sys
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from farm.cli.common import CONTEXT

__all__ = ["FieldsHelp", "config"]



class FieldsHelp(click.Command):
    """A command whose --help ends with every config field (built only when asked: the
    config model pulls in pydantic and the farm, too slow for every `distrl` start)."""

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        from farm.config import fields_help
        from farm.learner.settings import learner_fields_help

        self.epilog = fields_help() + "\n" + learner_fields_help()
        super().format_epilog(ctx, formatter)


def _value(data: dict[str, Any], key: str) -> Any:
    cur: Any = data
    for part in key.split("."):
        cur = cur[part]
    return cur


@click.group("config", context_settings=CONTEXT)
def config() -> None:
    """Look at the effective configuration of a role (flags > DISTRL_* env vars > TOML
    file > defaults). One file serves every role: the farm's sections and a [learner]
    table; one variable scheme: DISTRL_<SECTION>_<FIELD> for the farm,
    DISTRL_LEARNER_<FIELD> for the learner, DISTRL_BROKER_URL for both."""


@config.command("show", cls=FieldsHelp, context_settings=CONTEXT)
@click.option("--config", "config_file", type=click.Path(dir_okay=False), default=None,
              envvar="DISTRL_CONFIG", show_envvar=True, help="TOML config file.")
@click.option("--role", type=click.Choice(["farm", "learner"]), default="farm",
              show_default=True, help="Whose configuration: `distrl farm up`'s or "
                                      "`distrl learner`'s.")
@click.option("--json", "as_json", is_flag=True,
              help="Print {config, sources} as JSON instead of a table.")
def show(config_file: str | None, role: str, as_json: bool) -> None:
    """Print the effective configuration of a role (secrets masked) and where each value
    came from: default, the file, an environment variable or a flag."""
    from farm.config import FIELDS, SECRET_KEYS, ConfigError, load_settings, masked

    try:
        if role == "learner":
            from farm.learner.settings import (
                LEARNER_FIELDS,
                load_learner_settings,
                masked_learner,
            )

            got = load_learner_settings(config_file)
            data, sources, path = masked_learner(got.config), got.sources, got.path
            keys: list[str] = list(LEARNER_FIELDS)
        else:
            loaded = load_settings(config_file)
            data, sources, path = masked(loaded.settings), loaded.sources, loaded.path
            keys = list(FIELDS)
    except ConfigError as exc:
        Console(stderr=True, soft_wrap=True).print(f"[bold red]error:[/] {escape(str(exc))}",
                                                   highlight=False)
        sys.exit(2)
    if as_json:
        click.echo(json.dumps({"config": data, "sources": sources,
                               "file": str(path) if path else None}, indent=2))
        return
    table = Table(title=f"{role} config{f' ({path})' if path else ''}")
    for col in ("key", "value", "source"):
        table.add_column(col, overflow="fold")
    for key in keys:
        v = _value(data, key)
        shown = ("-" if v is None else json.dumps(v) if isinstance(v, dict)
                 else ", ".join(map(str, v)) if isinstance(v, list)
                 else str(v).lower() if isinstance(v, bool) else str(v))
        if key in SECRET_KEYS and v is not None:
            shown = "****"
        src = sources[key]
        table.add_row(key, escape(shown), escape(src),
                      style="dim" if src == "default" else None)
    Console().print(table)
