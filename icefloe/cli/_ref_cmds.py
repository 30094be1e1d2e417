"""Branches, tags, rollback and cherry-pick (``table.manage_snapshots()``)."""

from __future__ import annotations

from typing import Any

import click

from icefloe.cli._output import emit_done
from icefloe.cli._state import State, json_option, pass_state

__all__ = ["COMMANDS"]


def _ref_snapshot(state: State, table: str, name: str) -> int | None:
    ref = state.table(table).refs().get(name)
    return ref.snapshot_id if ref is not None else None


def _ref_command(kind: str) -> click.Command:
    @click.command(kind, help=f"Create (or move, or drop) {kind} NAME of TABLE.")
    @click.argument("table")
    @click.argument("name")
    @click.option("--snapshot", "snapshot_id", type=int, help="At this snapshot [default: the current one].")
    @click.option("--replace", is_flag=True, help=f"Move an existing {kind} to --snapshot.")
    @click.option("--drop", is_flag=True, help=f"Remove the {kind}.")
    @json_option
    @pass_state
    def command(
        state: State, table: str, name: str, snapshot_id: int | None, replace: bool, drop: bool
    ) -> None:
        if replace and drop:
            raise click.UsageError("--replace and --drop exclude each other")
        t = state.table(table)
        with t.manage_snapshots() as ms:
            if drop:
                (ms.remove_branch if kind == "branch" else ms.remove_tag)(name)
            elif replace:
                target = snapshot_id if snapshot_id is not None else t.metadata.current_snapshot_id
                if target is None:
                    raise click.UsageError("the table has no snapshot: give --snapshot")
                if kind == "branch":
                    ms.replace_branch(name, target)
                else:
                    ms.replace_tag(name, target)
            elif kind == "branch":
                ms.create_branch(name, snapshot_id)
            else:
                ms.create_tag(name, snapshot_id)
        at = None if drop else t.refs()[name].snapshot_id
        verb = "dropped" if drop else "moved" if replace else "created"
        where = "" if at is None else f" at snapshot {at}"
        emit_done(
            state,
            f"{verb} {kind} {name!r} of {t.name}{where}",
            {"table": t.name, kind: name, "action": verb, "snapshot_id": at},
        )

    return command


@click.command("rollback")
@click.argument("table")
@click.argument("snapshot_id", type=int, required=False)
@click.option("--to-timestamp", help="Roll back to the last snapshot older than this (ISO-8601 or epoch ms).")
@click.option("--force", is_flag=True, help="Allow any snapshot of the table, not only an ancestor of main.")
@json_option
@pass_state
def rollback_cmd(
    state: State, table: str, snapshot_id: int | None, to_timestamp: str | None, force: bool
) -> None:
    """Make SNAPSHOT_ID (or the snapshot current at --to-timestamp) the current snapshot of main."""
    if (snapshot_id is None) == (to_timestamp is None):
        raise click.UsageError("give either SNAPSHOT_ID or --to-timestamp")
    t = state.table(table)
    before = t.metadata.current_snapshot_id
    with t.manage_snapshots() as ms:
        if to_timestamp is not None:
            when: Any = int(to_timestamp) if to_timestamp.isdigit() else to_timestamp
            ms.rollback_to_timestamp(when)
        elif force:
            assert snapshot_id is not None
            ms.set_current_snapshot(snapshot_id)
        else:
            assert snapshot_id is not None
            ms.rollback_to(snapshot_id)
    now = t.metadata.current_snapshot_id
    emit_done(
        state,
        f"rolled {t.name} back from snapshot {before} to {now}",
        {"table": t.name, "previous_snapshot_id": before, "snapshot_id": now},
    )


@click.command("cherry-pick")
@click.argument("table")
@click.argument("snapshot_id", type=int)
@json_option
@pass_state
def cherry_pick_cmd(state: State, table: str, snapshot_id: int) -> None:
    """Apply the changes of SNAPSHOT_ID to main (publishes a staged write-audit-publish snapshot)."""
    t = state.table(table)
    with t.manage_snapshots() as ms:
        ms.cherry_pick(snapshot_id)
    now = t.metadata.current_snapshot_id
    emit_done(
        state,
        f"cherry-picked snapshot {snapshot_id} onto main of {t.name}: main is at {now}",
        {"table": t.name, "cherry_picked": snapshot_id, "snapshot_id": now},
    )


@click.command("fast-forward")
@click.argument("table")
@click.argument("branch")
@click.argument("to")
@json_option
@pass_state
def fast_forward_cmd(state: State, table: str, branch: str, to: str) -> None:
    """Move BRANCH to the head of TO (a branch or tag descending from it): publish a branch."""
    t = state.table(table)
    with t.manage_snapshots() as ms:
        ms.fast_forward(branch, to)
    at = t.refs()[branch].snapshot_id
    emit_done(
        state,
        f"fast-forwarded {branch!r} of {t.name} to {to!r} (snapshot {at})",
        {"table": t.name, "branch": branch, "to": to, "snapshot_id": at},
    )


COMMANDS = [_ref_command("branch"), _ref_command("tag"), rollback_cmd, cherry_pick_cmd, fast_forward_cmd]
