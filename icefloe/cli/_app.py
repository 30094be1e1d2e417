"""The ``icefloe`` command: global options, the command list, and how errors reach the user.

Global options come before the command and choose the catalog the way the library does
(``icefloe.load_catalog``): ``--catalog NAME`` (default ``$ICEFLOE_CATALOG`` or ``default``) from
``~/.icefloe.yaml`` and ``ICEFLOE_CATALOG__<NAME>__*`` variables, overridden by ``--uri``,
``--warehouse`` and ``-p KEY=VALUE``.

Errors print as one line (``error: ...``) and the hint (``hint: ...``) on stderr, with exit code
1 (2 for a wrong command line); ``--debug`` (or ``ICEFLOE_DEBUG=1``) shows the traceback.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

import click

from icefloe import __version__
from icefloe.cli._state import State, parse_key_values
from icefloe.errors import IcefloeError

__all__ = ["cli", "main"]

EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _print_error(message: str, hint: str | None) -> None:
    click.echo(f"error: {_one_line(message)}", err=True)
    if hint:
        lines = hint.strip().splitlines()
        click.echo(f"hint: {lines[0]}", err=True)
        for line in lines[1:]:
            click.echo(f"      {line}", err=True)


def _debug_requested(args: Sequence[str]) -> bool:
    return "--debug" in args or os.environ.get("ICEFLOE_DEBUG", "").lower() in ("1", "true", "yes")


class IcefloeGroup(click.Group):
    """A click group whose ``main`` turns every failure into the one-line error format, also
    under click's test runner (which calls ``main`` directly)."""

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        code = self._run(argv, prog_name or "icefloe", complete_var, **extra)
        if standalone_mode:
            sys.exit(code)
        return code

    def _run(self, argv: list[str], prog_name: str, complete_var: str | None, **extra: Any) -> int:
        debug = _debug_requested(argv)
        try:
            rv = super().main(argv, prog_name, complete_var, standalone_mode=False, **extra)
        except click.exceptions.NoArgsIsHelpError as e:
            click.echo(e.ctx.get_help() if e.ctx is not None else e.format_message(), err=True)
            return EXIT_USAGE
        except click.UsageError as e:
            command = e.ctx.command_path if e.ctx is not None else prog_name
            _print_error(e.format_message(), f"see '{command} --help'")
            return EXIT_USAGE
        except click.Abort:
            click.echo("aborted", err=True)
            return EXIT_ERROR
        except click.ClickException as e:
            _print_error(e.format_message(), None)
            return e.exit_code
        except IcefloeError as e:
            if debug:
                raise
            _print_error(e.message, e.hint)
            return EXIT_ERROR
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            return EXIT_INTERRUPTED
        except BrokenPipeError:  # `icefloe files ns.t | head`
            return 0
        except Exception as e:
            if debug:
                raise
            _print_error(f"unexpected {type(e).__name__}: {e}", "run with --debug for the traceback")
            return EXIT_ERROR
        return rv if isinstance(rv, int) else 0


@click.group(
    "icefloe",
    cls=IcefloeGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110},
)
@click.option(
    "--catalog",
    "-c",
    "catalog_name",
    envvar="ICEFLOE_CATALOG",
    metavar="NAME",
    help="Catalog from ~/.icefloe.yaml / ICEFLOE_CATALOG__<NAME>__* variables "
    "[default: $ICEFLOE_CATALOG or 'default'].",
)
@click.option(
    "--uri", help="Catalog URI: sqlite:///catalog.db, postgresql+psycopg://..., http(s)://... (REST)."
)
@click.option("--warehouse", help="Where new tables go: file:///path or s3://bucket/prefix.")
@click.option(
    "--property",
    "-p",
    "properties",
    multiple=True,
    metavar="KEY=VALUE",
    help="Another catalog property (s3.endpoint=..., token=...); repeatable.",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Machine-readable JSON output (also accepted after a command)."
)
@click.option("--debug", is_flag=True, envvar="ICEFLOE_DEBUG", help="Show tracebacks of errors.")
@click.version_option(__version__, "--version", prog_name="icefloe")
@click.pass_context
def cli(
    ctx: click.Context,
    catalog_name: str | None,
    uri: str | None,
    warehouse: str | None,
    properties: tuple[str, ...],
    as_json: bool,
    debug: bool,
) -> None:
    """icefloe: Apache Iceberg tables from the command line.

    \b
    icefloe --uri sqlite:///cat.db --warehouse file:///tmp/wh tables
    icefloe describe sales.orders
    icefloe query "SELECT count(*) FROM sales.orders WHERE id > 10"
    icefloe health sales.orders --html report.html
    """
    state = ctx.ensure_object(State)
    state.catalog_name = catalog_name
    state.uri = uri
    state.warehouse = warehouse
    state.properties = parse_key_values(properties, "--property")
    state.json = state.json or as_json
    state.debug = debug


def _register() -> None:
    from icefloe.cli import (
        _catalog_cmds,
        _demo_cmd,
        _health_cmd,
        _inspect_cmds,
        _maintenance_cmds,
        _query,
        _ref_cmds,
        _serve,
    )

    modules = (
        _catalog_cmds,
        _inspect_cmds,
        _query,
        _ref_cmds,
        _maintenance_cmds,
        _health_cmd,
        _serve,
        _demo_cmd,
    )
    for module in modules:
        for command in module.COMMANDS:
            command.short_help = _SHORT_HELP.get(command.name or "", command.short_help)
            cli.add_command(command)


# one line each in `icefloe --help` (click would cut the docstrings' first sentences short)
_SHORT_HELP = {
    "append": "Append rows of Parquet, CSV or JSON-lines files.",
    "branch": "Create, move or drop a branch.",
    "cherry-pick": "Apply a snapshot's changes to main.",
    "compact": "Compact small files, apply deletes (rewrite_data_files).",
    "create": "Create a table from a schema or from data files.",
    "create-namespace": "Create a namespace.",
    "demo": "The demo pipeline (icefloe demo --help).",
    "describe": "Schema, layout, properties, snapshot and size of a table.",
    "drop": "Drop a table (--purge deletes its files).",
    "drop-namespace": "Drop an empty namespace.",
    "expire": "Expire old snapshots and delete their files.",
    "fast-forward": "Move a branch to the head of another.",
    "files": "Live data and delete files.",
    "health": "Findings about a table's layout, with their fixes.",
    "history": "When each snapshot became current.",
    "manifests": "Manifests of a snapshot.",
    "namespaces": "List namespaces.",
    "partitions": "Rows, files, size and deletes per partition.",
    "query": "SQL on DuckDB over icefloe tables.",
    "refs": "Branches and tags.",
    "remove-orphans": "Delete files no metadata references.",
    "rename": "Rename or move a table.",
    "rewrite-manifests": "Cluster manifests by partition.",
    "rollback": "Make an earlier snapshot current.",
    "serve": "Serve the catalog over the Iceberg REST protocol.",
    "set-properties": "Set or remove table properties.",
    "snapshots": "Every snapshot with its summary.",
    "tables": "List tables.",
    "tag": "Create, move or drop a tag.",
}

_register()


def main(argv: Sequence[str] | None = None) -> int:
    """The console script ``icefloe`` (and ``python -m icefloe.cli``)."""
    return int(cli.main(args=argv, prog_name="icefloe", standalone_mode=False))
