"""``icefloe health ns.t``: findings about a table's layout, each with the command that fixes
it; ``--html report.html`` writes the report page with plots."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import click
from rich.table import Table as RichTable
from rich.text import Text

from icefloe.cli._output import write_json
from icefloe.cli._state import State, json_option, parse_key_values, pass_state
from icefloe.errors import ValidationError
from icefloe.table.health import SEVERITIES, Thresholds, describe

__all__ = ["COMMANDS"]

_STYLE = {"critical": "bold red", "warning": "yellow", "info": "cyan"}


def _thresholds(items: tuple[str, ...]) -> dict[str, Any]:
    types = {f.name: f.type for f in dataclasses.fields(Thresholds)}
    out: dict[str, Any] = {}
    for key, value in parse_key_values(items, "--threshold").items():
        name = key.replace("-", "_")
        if name not in types:
            raise ValidationError(f"unknown threshold {key!r}", hint="thresholds: " + ", ".join(types))
        try:
            out[name] = int(value) if types[name] in (int, "int") else float(value)
        except ValueError:
            raise ValidationError(f"threshold {key!r} must be a number, got {value!r}") from None
    return out


@click.command("health")
@click.argument("table")
@click.option("--html", "html_path", type=click.Path(dir_okay=False), help="Also write the report page here.")
@click.option(
    "--threshold",
    "-t",
    "thresholds",
    multiple=True,
    metavar="NAME=VALUE",
    help="Change a threshold (min_input_files=5, delete_ratio=0.3, max_manifests=20, ...).",
)
@click.option(
    "--fail-on",
    type=click.Choice(SEVERITIES),
    help="Exit with code 3 when a finding is at least this severe (for schedulers and CI).",
)
@json_option
@pass_state
def health_cmd(
    state: State, table: str, html_path: str | None, thresholds: tuple[str, ...], fail_on: str | None
) -> int:
    """Check TABLE's files, deletes, manifests, snapshots and partitions (metadata only)."""
    t = state.table(table)
    with state.status(f"reading the manifests of {t.name}"):
        report = t.health(**_thresholds(thresholds))
    if html_path is not None:
        Path(html_path).write_text(report.to_html(), encoding="utf-8")
    if state.json:
        write_json({**report.to_dict(), "html": html_path})
    else:
        out = state.out
        verdict = (
            Text("healthy", style="green") if report.healthy else Text("needs maintenance", style="yellow")
        )
        out.print(Text.assemble((f"{report.table}: ", "bold"), verdict))
        for line in describe(report):
            out.print(Text(f"  {line}", style="dim"))
        if report.findings:
            findings = RichTable(show_edge=False, header_style="bold")
            findings.add_column("severity")
            findings.add_column("finding", overflow="fold")
            findings.add_column("fix", overflow="fold")
            for f in report.findings:
                findings.add_row(
                    Text(f.severity, style=_STYLE.get(f.severity, "")),
                    Text(f.title),
                    Text(f.command or f.python or ""),
                )
            out.print()
            out.print(findings)
        if html_path is not None:
            out.print(Text(f"report written to {html_path}"))
    if fail_on is not None:
        rank = SEVERITIES.index(fail_on)
        if any(f.severity in SEVERITIES[rank:] for f in report.findings):
            return 3
    return 0


COMMANDS = [health_cmd]
