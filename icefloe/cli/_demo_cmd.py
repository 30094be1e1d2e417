"""``icefloe demo [...]``: the demo pipeline (:mod:`icefloe.cli.demo`), after checking that what
the chosen engine needs is installed, so a missing package is named with its extra instead of
surfacing as a ``ModuleNotFoundError`` or ``FileNotFoundError`` mid-run."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import click

from icefloe._optional import require
from icefloe.errors import MissingDependencyError

__all__ = ["COMMANDS", "check_demo_dependencies"]


def _engine(args: list[str]) -> str:
    for i, arg in enumerate(args):
        if arg == "--engine" and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("--engine="):
            return arg.split("=", 1)[1]
    return "spark"


def check_demo_dependencies(args: list[str]) -> None:
    """`MissingDependencyError` naming the extra when the demo's engine cannot run here."""
    if any(a in ("-h", "--help") for a in args):
        return
    if shutil.which("tpchgen-cli") is None and not (Path(sys.executable).parent / "tpchgen-cli").exists():
        raise MissingDependencyError(
            "the demo generates its TPC-H data with tpchgen-cli, which is not installed",
            hint="pip install 'icefloe[demo]'",
            module="tpchgen-cli",
            extra="demo",
        )
    if _engine(args) == "arrow":
        require("duckdb", extra="demo", feature="the demo's Arrow engine")
    else:
        require("pyspark", extra="spark", feature="the demo's Spark engine (or run it with --engine arrow)")


@click.command(
    "demo",
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []},
    add_help_option=False,
    short_help="The demo pipeline: TPC-H into Iceberg tables (--help for its options).",
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def demo_cmd(args: tuple[str, ...]) -> int:
    """The demo pipeline (its own options follow: icefloe demo --help)."""
    argv = list(args)
    check_demo_dependencies(argv)
    from icefloe.cli.demo import main as demo_main

    return demo_main(argv)


COMMANDS = [demo_cmd]
