"""Maintenance: ``compact``, ``expire``, ``remove-orphans``, ``rewrite-manifests``; each calls
``table.maintenance.*`` (docs/maintenance.md), locally with Arrow or on Spark (``--engine spark``),
and ``--dry-run`` shows what would be done without committing or deleting anything."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from typing import Any

import click
from rich.text import Text

from icefloe._optional import require
from icefloe.cli._output import emit_done, emit_rows, write_json
from icefloe.cli._state import State, json_option, parse_key_values, pass_state
from icefloe.errors import UnsupportedFeatureError, ValidationError
from icefloe.table._repr import format_bytes

__all__ = ["COMMANDS", "parse_time"]

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|sec|m|min|h|d|w)\s*$", re.IGNORECASE)
_LISTED = 20  # paths listed for people; --json has them all


def _print_paths(state: State, lines: list[str]) -> None:
    """The first ``_LISTED`` of ``lines``, dimmed, and how many more ``--json`` would list."""
    for line in lines[:_LISTED]:
        state.out.print(Text(f"  {line}", style="dim"))
    if len(lines) > _LISTED:
        state.out.print(Text(f"  ... and {len(lines) - _LISTED} more (--json lists them all)", style="dim"))


_UNIT_SECONDS = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_time(text: str | None) -> Any:
    """``7d``/``12h``/``30m`` (that long ago), epoch milliseconds, or ISO-8601 text (UTC unless it
    says otherwise), as the library's ``older_than`` takes it; None stays None."""
    if text is None:
        return None
    m = _DURATION.match(text)
    if m:
        seconds = float(m.group(1)) * _UNIT_SECONDS[m.group(2).lower()]
        return dt.datetime.now(dt.UTC) - dt.timedelta(seconds=seconds)
    if text.strip().isdigit():
        return int(text.strip())
    try:
        when = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValidationError(
            f"cannot read the time {text!r}",
            hint="write a duration (7d, 12h, 30m), epoch milliseconds or ISO-8601 (2024-06-01T00:00:00)",
        ) from None
    return when if when.tzinfo is not None else when.replace(tzinfo=dt.UTC)


def _engine_options(f: Any) -> Any:
    f = click.option(
        "--spark-conf", multiple=True, metavar="KEY=VALUE", help="Spark conf of the session (--engine spark)."
    )(f)
    f = click.option(
        "--spark-master", default="local[2]", show_default=True, help="Spark master (--engine spark)."
    )(f)
    f = click.option(
        "--engine",
        type=click.Choice(["arrow", "spark"]),
        default="arrow",
        show_default=True,
        help="Run the work locally with Arrow, or on Spark.",
    )(f)
    return click.option(
        "--dry-run", is_flag=True, help="Show what would be done; commit and delete nothing."
    )(f)


def _spark(engine: str, master: str, conf: tuple[str, ...]) -> Any:
    if engine != "spark":
        return None
    require("pyspark", extra="spark", feature="--engine spark")
    from icefloe.spark import start_session

    return start_session(
        master=master, app_name="icefloe-maintenance", conf=parse_key_values(conf, "--spark-conf")
    )


def _maintenance_call(table: Any, name: str) -> Callable[..., Any]:
    """``table.maintenance.<name>``, or a clear error while that action has not landed."""
    action = getattr(table.maintenance, name, None)
    if action is None:
        raise UnsupportedFeatureError(
            f"this icefloe has no table.maintenance.{name} yet",
            hint="upgrade icefloe; see docs/maintenance.md for the actions it has",
        )
    return action  # type: ignore[no-any-return]


# --------------------------------------------------------------------------- compact


@click.command("compact")
@click.argument("table")
@click.option(
    "--strategy", type=click.Choice(["binpack", "sort", "zorder"]), default="binpack", show_default=True
)
@click.option("--sort-by", help="Sort order for --strategy sort: 'id, day(ts) desc' [default: the table's].")
@click.option("--zorder-by", help="Columns for --strategy zorder: 'a, b'.")
@click.option("--where", help="Only files that may hold rows matching this filter: \"day >= '2024-06-01'\".")
@click.option("--target-file-size", type=int, metavar="BYTES", help="Target size of the new files.")
@click.option(
    "--option", "-o", "options", multiple=True, metavar="KEY=VALUE", help="Iceberg Java's option names."
)
@_engine_options
@json_option
@pass_state
def compact_cmd(
    state: State,
    table: str,
    strategy: str,
    sort_by: str | None,
    zorder_by: str | None,
    where: str | None,
    target_file_size: int | None,
    options: tuple[str, ...],
    dry_run: bool,
    engine: str,
    spark_master: str,
    spark_conf: tuple[str, ...],
) -> None:
    """Compact small files and apply deletes (table.maintenance.rewrite_data_files)."""
    t = state.table(table)
    opts: dict[str, Any] = parse_key_values(options, "--option")
    if target_file_size is not None:
        opts["target-file-size-bytes"] = target_file_size
    zorder = [c.strip() for c in zorder_by.split(",") if c.strip()] if zorder_by else None
    if dry_run:
        from icefloe.maintenance.rewrite_data_files import RewriteDataFiles

        with state.status(f"planning the compaction of {t.name}"):
            plan = RewriteDataFiles(t, strategy, sort_by, zorder, where, opts).plan()

        def where_is(g: Any) -> str:
            spec = t.metadata.specs_by_id.get(g.info.spec_id) if g.info.spec_id is not None else None
            if spec is None:
                return "(files of older partition specs)" if g.info.spec_id is None else "?"
            return spec.partition_path(g.info.partition, t.schema()) if spec.fields else "(unpartitioned)"

        groups: list[dict[str, Any]] = [
            {
                "group": g.info.global_index,
                "partition": where_is(g),
                "input_files": g.input_files_count,
                "input_bytes": g.input_size,
                "delete_files": len(g.delete_files),
                "expected_output_files": g.expected_output_files,
            }
            for g in plan.groups
        ]
        if state.json:
            write_json({"table": t.name, "dry_run": True, "strategy": strategy, "groups": groups})
            return
        emit_rows(
            state,
            groups,
            formats={"input_bytes": format_bytes},
            right=["input_files", "input_bytes", "delete_files", "expected_output_files"],
            empty=f"nothing to compact in {t.name}",
        )
        if groups:
            files = sum(g["input_files"] for g in groups)
            state.out.print(Text(f"would rewrite {files} data files in {len(groups)} groups (dry run)"))
        return
    spark = _spark(engine, spark_master, spark_conf)
    with state.progress(f"compacting {t.name} ({engine})") as progress:
        result = _maintenance_call(t, "rewrite_data_files")(
            progress=progress,
            strategy=strategy,
            sort_order=sort_by,
            zorder_columns=zorder,
            where=where,
            options=opts,
            spark=spark,
        )
    out: dict[str, Any] = {
        "table": t.name,
        "rewritten_data_files": result.rewritten_data_files_count,
        "added_data_files": result.added_data_files_count,
        "rewritten_bytes": result.rewritten_bytes_count,
        "added_bytes": result.added_bytes_count,
        "rewritten_file_groups": result.rewritten_file_groups_count,
        "failed_file_groups": result.failed_file_groups_count,
        "removed_delete_files": result.removed_delete_files_count,
        "snapshot_ids": list(result.snapshot_ids),
    }
    if not result.rewritten_data_files_count and not result.removed_delete_files_count:
        message = f"nothing to compact in {t.name}"
    else:
        message = (
            f"rewrote {out['rewritten_data_files']} data files ({format_bytes(out['rewritten_bytes'])}) into "
            f"{out['added_data_files']} ({format_bytes(out['added_bytes'])}) in "
            f"{out['rewritten_file_groups']} groups"
        )
        if out["removed_delete_files"]:
            message += f", removed {out['removed_delete_files']} delete files"
        if out["failed_file_groups"]:
            message += f"; {out['failed_file_groups']} groups failed"
    emit_done(state, message, out)


# --------------------------------------------------------------------------- expire


@click.command("expire")
@click.argument("table")
@click.option(
    "--older-than", help="Expire snapshots older than this: 7d, 12h, epoch ms or ISO-8601 [default: 5 days]."
)
@click.option(
    "--retain-last", type=click.IntRange(min=1), help="Keep at least this many snapshots of each branch."
)
@click.option(
    "--snapshot-id", "snapshot_ids", type=int, multiple=True, help="Expire this snapshot too; repeatable."
)
@click.option(
    "--keep-files", is_flag=True, help="Remove the snapshots from the metadata only; delete no file."
)
@_engine_options
@json_option
@pass_state
def expire_cmd(
    state: State,
    table: str,
    older_than: str | None,
    retain_last: int | None,
    snapshot_ids: tuple[int, ...],
    keep_files: bool,
    dry_run: bool,
    engine: str,
    spark_master: str,
    spark_conf: tuple[str, ...],
) -> None:
    """Expire old snapshots and delete the files only they used (table.maintenance.expire_snapshots)."""
    t = state.table(table)
    spark = _spark(engine, spark_master, spark_conf)
    with state.status(f"expiring snapshots of {t.name}"):
        result = _maintenance_call(t, "expire_snapshots")(
            older_than=parse_time(older_than),
            retain_last=retain_last,
            snapshot_ids=list(snapshot_ids) or None,
            clean_expired_files=not keep_files,
            dry_run=dry_run,
            spark=spark,
        )
    files = {kind: list(paths) for kind, paths in result.files.items()}
    out: dict[str, Any] = {
        "table": t.name,
        "dry_run": dry_run,
        "expired_snapshot_ids": list(result.expired_snapshot_ids),
        "removed_refs": list(result.removed_refs),
        "deleted_files": {kind: len(paths) for kind, paths in files.items()},
        "files": files,
        "not_deleted": [str(f) for f in result.not_deleted],
    }
    verb = "would expire" if dry_run else "expired"
    counts = ", ".join(f"{n} {kind.replace('_', ' ')}" for kind, n in out["deleted_files"].items() if n)
    message = f"{verb} {len(out['expired_snapshot_ids'])} snapshots of {t.name}"
    if out["removed_refs"]:
        message += f" and refs {', '.join(out['removed_refs'])}"
    if counts:
        message += f"; {'would delete' if dry_run else 'deleted'} {counts}"
    if out["not_deleted"]:
        message += f"; {len(out['not_deleted'])} files could not be deleted"
    emit_done(state, message, out)
    if dry_run and not state.json:
        _print_paths(state, [f"{kind}: {p}" for kind, paths in files.items() for p in paths])


# --------------------------------------------------------------------------- orphans


@click.command("remove-orphans")
@click.argument("table")
@click.option(
    "--older-than", help="Only files older than this: 3d, 12h, epoch ms or ISO-8601 [default: 3 days]."
)
@click.option("--location", help="Look under this location [default: the table's].")
@click.option(
    "--prefix-mismatch-mode",
    type=click.Choice(["error", "ignore", "delete"]),
    default="error",
    show_default=True,
)
@_engine_options
@json_option
@pass_state
def remove_orphans_cmd(
    state: State,
    table: str,
    older_than: str | None,
    location: str | None,
    prefix_mismatch_mode: str,
    dry_run: bool,
    engine: str,
    spark_master: str,
    spark_conf: tuple[str, ...],
) -> None:
    """Delete files under the table's location that no metadata references (remove_orphan_files)."""
    t = state.table(table)
    spark = _spark(engine, spark_master, spark_conf)
    with state.status(f"looking for orphan files of {t.name}"):
        result = _maintenance_call(t, "remove_orphan_files")(
            older_than=parse_time(older_than),
            location=location,
            dry_run=dry_run,
            spark=spark,
            prefix_mismatch_mode=prefix_mismatch_mode,
        )
    orphans = list(result.orphan_files)
    out: dict[str, Any] = {
        "table": t.name,
        "dry_run": dry_run,
        "orphan_files": orphans,
        "not_deleted": [str(f) for f in result.not_deleted],
    }
    verb = "found" if dry_run else "deleted"
    message = f"{verb} {len(orphans)} orphan files of {t.name}"
    if out["not_deleted"]:
        message += f"; {len(out['not_deleted'])} could not be deleted"
    emit_done(state, message, out)
    if not state.json:
        _print_paths(state, orphans)


# --------------------------------------------------------------------------- manifests


@click.command("rewrite-manifests")
@click.argument("table")
@click.option(
    "--spec-id", type=int, help="Rewrite the manifests of this partition spec [default: the current]."
)
@_engine_options
@json_option
@pass_state
def rewrite_manifests_cmd(
    state: State,
    table: str,
    spec_id: int | None,
    dry_run: bool,
    engine: str,
    spark_master: str,
    spark_conf: tuple[str, ...],
) -> None:
    """Cluster manifests by partition at the target manifest size (table.maintenance.rewrite_manifests)."""
    t = state.table(table)
    opts: dict[str, Any] = {} if spec_id is None else {"spec-id": spec_id}
    if dry_run:
        from icefloe.maintenance.rewrite_manifests import RewriteManifestsAction

        plan = RewriteManifestsAction(t, None, opts).plan()
        replaced = len(plan.replaced)
        target = sum(s.target_manifests for s in plan.sets)
        emit_done(
            state,
            f"would rewrite {replaced} manifests of {t.name} into {target} (dry run)"
            if replaced
            else f"nothing to rewrite in {t.name}",
            {"table": t.name, "dry_run": True, "rewritten_manifests": replaced, "added_manifests": target},
        )
        return
    spark = _spark(engine, spark_master, spark_conf)
    with state.progress(f"rewriting the manifests of {t.name}") as progress:
        result = _maintenance_call(t, "rewrite_manifests")(spark=spark, options=opts, progress=progress)
    out: dict[str, Any] = {
        "table": t.name,
        "dry_run": False,
        "rewritten_manifests": len(result.rewritten_manifests),
        "added_manifests": len(result.added_manifests),
        "snapshot_id": result.snapshot_id,
    }
    message = (
        f"rewrote {out['rewritten_manifests']} manifests of {t.name} into {out['added_manifests']}"
        if out["rewritten_manifests"]
        else f"nothing to rewrite in {t.name}"
    )
    emit_done(state, message, out)


COMMANDS = [compact_cmd, expire_cmd, remove_orphans_cmd, rewrite_manifests_cmd]
