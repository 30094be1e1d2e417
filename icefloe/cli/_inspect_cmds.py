"""Metadata tables: history, snapshots, refs, files, manifests, partitions (``table.inspect``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import click
from rich.text import Text

from icefloe.cli._output import emit_rows
from icefloe.cli._state import State, json_option, pass_state
from icefloe.table._repr import format_bytes

__all__ = ["COMMANDS"]

_CONTENT = {0: "data", 1: "position deletes", 2: "equality deletes"}


def _summary(row: Mapping[str, Any]) -> dict[str, str]:
    raw = row.get("summary") or []
    return dict(raw.items()) if isinstance(raw, Mapping) else {str(k): str(v) for k, v in raw}


def _partition(value: Any) -> str:
    if not value:
        return ""
    return ", ".join(f"{k}={v}" for k, v in value.items() if v is not None) or "(null)"


def _limited(state: State, rows: list[dict[str, Any]], limit: int | None) -> list[dict[str, Any]]:
    if limit is None or len(rows) <= limit:
        return rows
    if not state.json:
        state.err.print(Text(f"showing {limit} of {len(rows)} rows (--limit)", style="dim"))
    return rows[:limit]


def _limit_option(f: Any) -> Any:
    return click.option("--limit", "-n", type=click.IntRange(min=0), help="Show at most this many rows.")(f)


def _snapshot_option(f: Any) -> Any:
    return click.option(
        "--snapshot", "snapshot_id", type=int, help="Of this snapshot (default: the current one)."
    )(f)


def _show(
    state: State,
    rows: list[dict[str, Any]],
    columns: Sequence[str],
    limit: int | None,
    formats: Mapping[str, Callable[[Any], str]] | None = None,
    right: Sequence[str] = (),
    empty: str = "(none)",
) -> None:
    emit_rows(state, _limited(state, rows, limit), columns, formats=formats, right=right, empty=empty)


@click.command("history")
@click.argument("table")
@_limit_option
@json_option
@pass_state
def history_cmd(state: State, table: str, limit: int | None) -> None:
    """When each snapshot became current (the table's snapshot log), oldest first."""
    t = state.table(table)
    snaps = {s.snapshot_id: s for s in t.snapshots()}
    rows = []
    for r in t.inspect.history().to_pylist():
        s = snaps.get(r["snapshot_id"])
        summary = dict(s.summary.properties) if s is not None else {}
        rows.append(
            {
                **r,
                "operation": s.operation.value if s is not None else None,
                "added_records": summary.get("added-records"),
                "deleted_records": summary.get("deleted-records"),
                "total_records": summary.get("total-records"),
            }
        )
    _show(
        state,
        rows,
        [
            "made_current_at",
            "snapshot_id",
            "parent_id",
            "operation",
            "is_current_ancestor",
            "added_records",
            "deleted_records",
            "total_records",
        ],
        limit,
        right=["added_records", "deleted_records", "total_records"],
        empty="(no history: the table has no snapshot)",
    )


@click.command("snapshots")
@click.argument("table")
@_limit_option
@json_option
@pass_state
def snapshots_cmd(state: State, table: str, limit: int | None) -> None:
    """Every snapshot of TABLE with its operation and summary counts."""
    t = state.table(table)
    rows = []
    for r in t.inspect.snapshots().to_pylist():
        summary = _summary(r)
        rows.append({**r, "summary": summary})
    human = [
        {
            **r,
            "added files": r["summary"].get("added-data-files"),
            "added rows": r["summary"].get("added-records"),
            "deleted rows": r["summary"].get("deleted-records"),
            "total rows": r["summary"].get("total-records"),
            "total size": format_bytes(int(r["summary"]["total-files-size"]))
            if "total-files-size" in r["summary"]
            else None,
        }
        for r in rows
    ]
    if state.json:
        emit_rows(state, _limited(state, rows, limit))
        return
    _show(
        state,
        human,
        [
            "committed_at",
            "snapshot_id",
            "parent_id",
            "operation",
            "added files",
            "added rows",
            "deleted rows",
            "total rows",
            "total size",
        ],
        limit,
        right=["added files", "added rows", "deleted rows", "total rows", "total size"],
        empty="(no snapshots)",
    )


@click.command("refs")
@click.argument("table")
@json_option
@pass_state
def refs_cmd(state: State, table: str) -> None:
    """Branches and tags of TABLE."""
    rows = state.table(table).inspect.refs().to_pylist()
    _show(
        state,
        rows,
        [
            "name",
            "type",
            "snapshot_id",
            "max_reference_age_in_ms",
            "min_snapshots_to_keep",
            "max_snapshot_age_in_ms",
        ],
        None,
        empty="(no refs: the table has no snapshot)",
    )


@click.command("files")
@click.argument("table")
@_snapshot_option
@click.option("--content", type=click.Choice(["all", "data", "deletes"]), default="all", show_default=True)
@_limit_option
@json_option
@pass_state
def files_cmd(state: State, table: str, snapshot_id: int | None, content: str, limit: int | None) -> None:
    """Live data and delete files of TABLE (or of --snapshot)."""
    t = state.table(table)
    inspect = t.inspect
    arrow = {"all": inspect.files, "data": inspect.data_files, "deletes": inspect.delete_files}[content](
        snapshot_id=snapshot_id
    )
    if state.json:
        emit_rows(state, _limited(state, arrow.to_pylist(), limit))
        return
    rows = arrow.select(
        ["content", "file_path", "partition", "record_count", "file_size_in_bytes"]
    ).to_pylist()
    _show(
        state,
        rows,
        ["content", "file_path", "partition", "record_count", "file_size_in_bytes"],
        limit,
        formats={
            "content": lambda v: _CONTENT.get(v, str(v)),
            "partition": _partition,
            "file_size_in_bytes": format_bytes,
        },
        right=["record_count", "file_size_in_bytes"],
        empty="(no files)",
    )


@click.command("manifests")
@click.argument("table")
@_snapshot_option
@_limit_option
@json_option
@pass_state
def manifests_cmd(state: State, table: str, snapshot_id: int | None, limit: int | None) -> None:
    """Manifests of the current snapshot (or of --snapshot)."""
    rows = state.table(table).inspect.manifests(snapshot_id=snapshot_id).to_pylist()
    if state.json:
        emit_rows(state, _limited(state, rows, limit))
        return
    for r in rows:
        data = r["content"] == 0
        r["kind"] = "data" if data else "deletes"
        r["added"] = r["added_data_files_count"] if data else r["added_delete_files_count"]
        r["existing"] = r["existing_data_files_count"] if data else r["existing_delete_files_count"]
        r["deleted"] = r["deleted_data_files_count"] if data else r["deleted_delete_files_count"]
    _show(
        state,
        rows,
        ["kind", "path", "length", "partition_spec_id", "added_snapshot_id", "added", "existing", "deleted"],
        limit,
        formats={"length": format_bytes},
        right=["length", "added", "existing", "deleted"],
        empty="(no manifests)",
    )


@click.command("partitions")
@click.argument("table")
@_snapshot_option
@_limit_option
@json_option
@pass_state
def partitions_cmd(state: State, table: str, snapshot_id: int | None, limit: int | None) -> None:
    """Partitions of TABLE with their rows, files, size and deletes."""
    rows = state.table(table).inspect.partitions(snapshot_id=snapshot_id).to_pylist()
    if state.json:
        emit_rows(state, _limited(state, rows, limit))
        return
    for r in rows:
        r["delete files"] = r["position_delete_file_count"] + r["equality_delete_file_count"]
        r["deleted rows"] = r["position_delete_record_count"] + r["equality_delete_record_count"]
    _show(
        state,
        rows,
        [
            "partition",
            "spec_id",
            "record_count",
            "file_count",
            "total_data_file_size_in_bytes",
            "delete files",
            "deleted rows",
            "last_updated_at",
        ],
        limit,
        formats={
            "partition": lambda v: _partition(v) or "(unpartitioned)",
            "total_data_file_size_in_bytes": format_bytes,
        },
        right=["record_count", "file_count", "total_data_file_size_in_bytes", "delete files", "deleted rows"],
        empty="(no partitions: the table has no rows)",
    )


COMMANDS = [history_cmd, snapshots_cmd, refs_cmd, files_cmd, manifests_cmd, partitions_cmd]
