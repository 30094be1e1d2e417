"""``table.manage_snapshots()``: branches, tags, rollback and cherry-pick in one atomic commit.

::

    with table.manage_snapshots() as ms:
        ms.create_tag("v1", snapshot_id)
        ms.create_branch("audit", max_snapshot_age_ms=86_400_000)
        ms.rollback_to(older_snapshot_id)
    # one commit here; on an exception nothing is committed

Every call is checked at once against the table as this block sees it (so a bad name or an
unknown snapshot fails at the call), and again when the block commits. The commit is optimistic
like a data commit: it requires every ref it sets or removes to still be where it was when the
block began (``AssertRefSnapshotId``). A concurrent commit to another ref is merged by retrying;
a concurrent change to a ref this block changes is a :class:`~icefloe.errors.ConflictError`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import replace
from types import TracebackType
from typing import TYPE_CHECKING

from icefloe.errors import ConflictError, NoSuchSnapshotError, ValidationError
from icefloe.spec.snapshot import MAIN_BRANCH, SnapshotRef, SnapshotRefType
from icefloe.spec.updates import (
    AssertRefSnapshotId,
    AssertTableUUID,
    MetadataUpdate,
    RemoveSnapshotRef,
    SetSnapshotRef,
    TableRequirement,
    apply_updates,
)
from icefloe.transaction._commit import commit_actions
from icefloe.transaction._producer import PendingChanges, SnapshotProducer
from icefloe.transaction.cherry_pick import CherryPick, check_pickable, is_fast_forward
from icefloe.transaction.fast_append import FastAppend

if TYPE_CHECKING:
    from icefloe.manifest import ManifestFile
    from icefloe.spec.snapshot import Snapshot
    from icefloe.spec.table_metadata import TableMetadata
    from icefloe.table._table import Table

__all__ = ["ManageSnapshots"]

# One step of the block: given the metadata so far, the updates it makes (it re-checks its
# preconditions there) or a snapshot producer to run on it.
_Step = Callable[["TableMetadata"], "list[MetadataUpdate] | SnapshotProducer"]


def _millis(ts: int | str | dt.datetime) -> int:
    if isinstance(ts, bool):
        raise ValidationError(f"a timestamp must be epoch milliseconds, a datetime or ISO text, got {ts!r}")
    if isinstance(ts, int):
        return ts
    if isinstance(ts, str):
        try:
            ts = dt.datetime.fromisoformat(ts)
        except ValueError:
            raise ValidationError(f"{ts!r} is not an ISO-8601 timestamp") from None
    if isinstance(ts, dt.datetime):
        if ts.tzinfo is None:
            ts = ts.replace(tzinfo=dt.UTC)
        return int(ts.timestamp() * 1000)
    raise ValidationError(f"a timestamp must be epoch milliseconds, a datetime or ISO text, got {ts!r}")


def _check_name(name: object, what: str) -> str:
    if not isinstance(name, str) or not name:
        raise ValidationError(f"{what} name must be a non-empty string, got {name!r}")
    return name


def _ref(md: TableMetadata, name: str, kind: SnapshotRefType | None) -> SnapshotRef:
    ref = md.refs.get(name)
    what = "ref" if kind is None else kind.value
    if ref is None:
        raise NoSuchSnapshotError(
            f"{what} {name!r} does not exist",
            hint=f"refs are: {', '.join(sorted(md.refs)) or '(none)'}",
            ref=name,
        )
    if kind is not None and ref.ref_type is not kind:
        raise ValidationError(
            f"ref {name!r} is a {ref.ref_type.value}, not a {kind.value}",
            ref=name,
        )
    return ref


def _absent(md: TableMetadata, name: str) -> None:
    if name in md.refs:
        raise ValidationError(f"ref {name!r} already exists", hint="choose another name", ref=name)


def _snapshot(md: TableMetadata, snapshot_id: int) -> Snapshot:
    if isinstance(snapshot_id, bool) or not isinstance(snapshot_id, int):
        raise ValidationError(f"a snapshot id must be an integer, got {snapshot_id!r}")
    return md.snapshot_by_id(snapshot_id)


def _main_history(md: TableMetadata) -> list[Snapshot]:
    return list(md.ancestors(md.current_snapshot_id))


class _RefChanges(SnapshotProducer):
    """The whole block as one action of the commit loop: each attempt checks that the refs it
    changes are still where the block found them, then replays the steps on the refreshed table."""

    def __init__(
        self,
        table: Table,
        steps: Sequence[_Step],
        expected: dict[str, int | None],
        producers: Sequence[SnapshotProducer],
    ) -> None:
        super().__init__(table.io)
        self._steps = list(steps)
        self._expected = dict(expected)
        self._producers = list(producers)

    def manifests(self, base: TableMetadata, parent: Snapshot | None) -> list[ManifestFile]:
        raise AssertionError("ref changes write no manifests of their own")  # pragma: no cover

    def summary(self, base: TableMetadata, parent: Snapshot | None) -> dict[str, str]:
        raise AssertionError("ref changes write no snapshot of their own")  # pragma: no cover

    def _apply(self, base: TableMetadata) -> PendingChanges:
        for name, expected in self._expected.items():
            ref = base.refs.get(name)
            actual = ref.snapshot_id if ref is not None else None
            if actual != expected:
                raise ConflictError(
                    f"ref {name!r} changed concurrently: it is at snapshot {actual}, "
                    f"this change expected {expected}",
                    hint="refresh the table and decide again",
                    ref=name,
                    snapshot_id=actual,
                    operation="manage_snapshots",
                    files=[],
                )
        updates: list[MetadataUpdate] = []
        working = base
        for step in self._steps:
            result = step(working)
            step_updates = result.apply(working).updates if isinstance(result, SnapshotProducer) else result
            working = apply_updates(working, step_updates, None)
            updates += step_updates
        snaps = [p.committed_snapshot for p in self._producers if p.committed_snapshot is not None]
        self.committed_snapshot = snaps[-1] if snaps else None
        requirements: list[TableRequirement] = [AssertTableUUID(base.table_uuid)]
        requirements += [AssertRefSnapshotId(n, s) for n, s in self._expected.items()]
        return PendingChanges(updates, requirements)

    def cleanup(self, *, committed: bool) -> None:
        for p in self._producers:
            p.cleanup(committed=committed)


class ManageSnapshots:
    """Changes to a table's branches and tags, committed together when the ``with`` block ends
    (or by :meth:`commit`). Method names follow Iceberg Java's ``ManageSnapshots``."""

    def __init__(self, table: Table) -> None:
        self._table = table
        self._base = table.metadata
        self._working = table.metadata
        self._steps: list[_Step] = []
        self._expected: dict[str, int | None] = {}
        # Snapshot producers of the steps (cherry-picks, empty branches): created once, re-applied
        # on each attempt's metadata (the first attempt on an unchanged table reuses their work).
        self._producers: list[SnapshotProducer] = []
        self._done = False

    # ------------------------------------------------------------------ internals
    def _keep(self, producer: SnapshotProducer) -> SnapshotProducer:
        self._producers.append(producer)
        return producer

    def _run(self, touches: Sequence[str], step: _Step) -> ManageSnapshots:
        """Check ``step`` on the working metadata now and queue it."""
        if self._done:
            raise ValidationError("this manage_snapshots() block was already committed or abandoned")
        kept = len(self._producers)
        try:
            result = step(self._working)
            if isinstance(result, SnapshotProducer):
                changes = result.apply(self._working).updates
            else:
                changes = result
            working = apply_updates(self._working, changes, None)
        except BaseException:
            for p in self._producers[kept:]:
                p.cleanup(committed=False)
            del self._producers[kept:]
            raise
        self._working = working
        for name in touches:
            if name not in self._expected:
                ref = self._base.refs.get(name)
                self._expected[name] = ref.snapshot_id if ref is not None else None
        self._steps.append(step)
        return self

    @property
    def metadata(self) -> TableMetadata:
        """The table as it will be after the block commits (if nothing changes meanwhile)."""
        return self._working

    # ------------------------------------------------------------------ branches and tags
    def create_branch(
        self,
        name: str,
        snapshot_id: int | None = None,
        *,
        max_ref_age_ms: int | None = None,
        max_snapshot_age_ms: int | None = None,
        min_snapshots_to_keep: int | None = None,
    ) -> ManageSnapshots:
        """Create branch ``name`` at ``snapshot_id`` (default: the current snapshot; on a table
        without snapshots, at a new empty snapshot)."""
        _check_name(name, "branch")
        if snapshot_id is None and self._working.current_snapshot_id is None:
            if any(v is not None for v in (max_ref_age_ms, max_snapshot_age_ms, min_snapshots_to_keep)):
                raise ValidationError("retention settings need a snapshot: create the branch, then set them")

            producer = self._keep(FastAppend(self._table.io, [], branch=name))

            def empty(md: TableMetadata) -> SnapshotProducer:
                _absent(md, name)
                return producer

            return self._run([name], empty)
        sid = self._working.current_snapshot_id if snapshot_id is None else snapshot_id
        assert sid is not None
        ref = SnapshotRef(
            sid, SnapshotRefType.BRANCH, min_snapshots_to_keep, max_snapshot_age_ms, max_ref_age_ms
        )

        def step(md: TableMetadata) -> list[MetadataUpdate]:
            _absent(md, name)
            _snapshot(md, sid)
            return [SetSnapshotRef(name, ref)]

        return self._run([name], step)

    def create_tag(
        self, name: str, snapshot_id: int | None = None, *, max_ref_age_ms: int | None = None
    ) -> ManageSnapshots:
        """Create tag ``name`` at ``snapshot_id`` (default: the current snapshot)."""
        _check_name(name, "tag")
        sid = self._working.current_snapshot_id if snapshot_id is None else snapshot_id
        if sid is None:
            raise NoSuchSnapshotError("the table has no snapshot to tag", hint="write data first", ref=name)
        ref = SnapshotRef(sid, SnapshotRefType.TAG, max_ref_age_ms=max_ref_age_ms)

        def step(md: TableMetadata) -> list[MetadataUpdate]:
            _absent(md, name)
            _snapshot(md, sid)
            return [SetSnapshotRef(name, ref)]

        return self._run([name], step)

    def remove_branch(self, name: str) -> ManageSnapshots:
        _check_name(name, "branch")
        if name == MAIN_BRANCH:
            raise ValidationError("the main branch cannot be removed")

        def step(md: TableMetadata) -> list[MetadataUpdate]:
            _ref(md, name, SnapshotRefType.BRANCH)
            return [RemoveSnapshotRef(name)]

        return self._run([name], step)

    def remove_tag(self, name: str) -> ManageSnapshots:
        _check_name(name, "tag")

        def step(md: TableMetadata) -> list[MetadataUpdate]:
            _ref(md, name, SnapshotRefType.TAG)
            return [RemoveSnapshotRef(name)]

        return self._run([name], step)

    def rename_branch(self, name: str, new_name: str) -> ManageSnapshots:
        _check_name(name, "branch")
        _check_name(new_name, "branch")
        if name == MAIN_BRANCH:
            raise ValidationError("the main branch cannot be renamed")

        def step(md: TableMetadata) -> list[MetadataUpdate]:
            ref = _ref(md, name, SnapshotRefType.BRANCH)
            _absent(md, new_name)
            return [RemoveSnapshotRef(name), SetSnapshotRef(new_name, ref)]

        return self._run([name, new_name], step)

    def replace_branch(self, name: str, source: int | str) -> ManageSnapshots:
        """Point branch ``name`` at snapshot ``source`` (an id; the branch must exist) or at the
        head of ref ``source`` (a name; the branch is created if missing). Its retention settings
        stay."""
        _check_name(name, "branch")
        if isinstance(source, str):
            return self._replace_from_ref(name, source, fast_forward=False)

        def step(md: TableMetadata) -> list[MetadataUpdate]:
            ref = _ref(md, name, SnapshotRefType.BRANCH)
            _snapshot(md, source)
            return [SetSnapshotRef(name, replace(ref, snapshot_id=source))]

        return self._run([name], step)

    def replace_tag(self, name: str, snapshot_id: int) -> ManageSnapshots:
        _check_name(name, "tag")

        def step(md: TableMetadata) -> list[MetadataUpdate]:
            ref = _ref(md, name, SnapshotRefType.TAG)
            _snapshot(md, snapshot_id)
            return [SetSnapshotRef(name, replace(ref, snapshot_id=snapshot_id))]

        return self._run([name], step)

    def fast_forward(self, name: str, to: str) -> ManageSnapshots:
        """Move branch ``name`` to the head of ref ``to``, which must descend from it."""
        _check_name(name, "branch")
        return self._replace_from_ref(name, to, fast_forward=True)

    def _replace_from_ref(self, name: str, to: str, *, fast_forward: bool) -> ManageSnapshots:
        _check_name(to, "ref")

        def step(md: TableMetadata) -> list[MetadataUpdate]:
            target = _ref(md, to, None)
            ref = md.refs.get(name)
            if ref is None:
                return [SetSnapshotRef(name, SnapshotRef(target.snapshot_id, SnapshotRefType.BRANCH))]
            if not ref.is_branch:
                raise ValidationError(f"ref {name!r} is a tag, not a branch", ref=name)
            if ref.snapshot_id == target.snapshot_id:
                return []
            if fast_forward and all(
                s.snapshot_id != ref.snapshot_id for s in md.ancestors(target.snapshot_id)
            ):
                raise ValidationError(
                    f"cannot fast-forward {name!r} to {to!r}: the head of {name!r} (snapshot "
                    f"{ref.snapshot_id}) is not an ancestor of {to!r} (snapshot {target.snapshot_id})",
                    hint="the branches diverged; use replace_branch to move it anyway",
                    ref=name,
                )
            return [SetSnapshotRef(name, replace(ref, snapshot_id=target.snapshot_id))]

        return self._run([name], step)

    # ------------------------------------------------------------------ retention
    def set_min_snapshots_to_keep(self, name: str, min_snapshots_to_keep: int) -> ManageSnapshots:
        return self._retention(name, min_snapshots_to_keep=min_snapshots_to_keep)

    def set_max_snapshot_age_ms(self, name: str, max_snapshot_age_ms: int) -> ManageSnapshots:
        return self._retention(name, max_snapshot_age_ms=max_snapshot_age_ms)

    def set_max_ref_age_ms(self, name: str, max_ref_age_ms: int) -> ManageSnapshots:
        return self._retention(name, max_ref_age_ms=max_ref_age_ms)

    def _retention(self, name: str, **settings: int) -> ManageSnapshots:
        _check_name(name, "ref")
        for key, value in settings.items():
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValidationError(f"{key} must be an integer, got {value!r}")

        def step(md: TableMetadata) -> list[MetadataUpdate]:
            ref = _ref(md, name, None)
            return [SetSnapshotRef(name, replace(ref, **settings))]  # type: ignore[arg-type]

        return self._run([name], step)

    # ------------------------------------------------------------------ main's history
    def set_current_snapshot(self, snapshot_id: int) -> ManageSnapshots:
        """Make ``snapshot_id`` (any snapshot of the table) the current snapshot of main."""

        def step(md: TableMetadata) -> list[MetadataUpdate]:
            _snapshot(md, snapshot_id)
            return _move_main(md, snapshot_id)

        return self._run([MAIN_BRANCH], step)

    def rollback_to(self, snapshot_id: int) -> ManageSnapshots:
        """Make ``snapshot_id``, which must be in main's history, the current snapshot."""

        def step(md: TableMetadata) -> list[MetadataUpdate]:
            _snapshot(md, snapshot_id)
            if all(s.snapshot_id != snapshot_id for s in _main_history(md)):
                raise ValidationError(
                    f"cannot roll back to snapshot {snapshot_id}: it is not an ancestor of the current "
                    "snapshot",
                    hint="use set_current_snapshot to move main to any snapshot",
                    snapshot_id=snapshot_id,
                )
            return _move_main(md, snapshot_id)

        return self._run([MAIN_BRANCH], step)

    def rollback_to_timestamp(self, timestamp: int | str | dt.datetime) -> ManageSnapshots:
        """Make the latest snapshot of main's history older than ``timestamp`` (epoch ms,
        datetime or ISO text) the current snapshot."""
        ts = _millis(timestamp)

        def step(md: TableMetadata) -> list[MetadataUpdate]:
            older = [s for s in _main_history(md) if s.timestamp_ms < ts]
            if not older:
                raise NoSuchSnapshotError(
                    f"cannot roll back: no snapshot in main's history is older than {ts} ms",
                    timestamp_ms=ts,
                )
            return _move_main(md, max(older, key=lambda s: s.timestamp_ms).snapshot_id)

        return self._run([MAIN_BRANCH], step)

    def cherry_pick(self, snapshot_id: int) -> ManageSnapshots:
        """Apply the changes of snapshot ``snapshot_id`` to main: a fast-forward when its parent is
        main's head, else a new snapshot for an append or a dynamic overwrite (publishes a staged
        write-audit-publish snapshot)."""
        io = self._table.io
        cell: list[SnapshotProducer] = []

        def step(md: TableMetadata) -> list[MetadataUpdate] | SnapshotProducer:
            picked = _snapshot(md, snapshot_id)
            check_pickable(md, picked)
            if is_fast_forward(md, picked):
                return _move_main(md, snapshot_id)
            if not cell:
                cell.append(self._keep(CherryPick(io, md, picked)))
            return cell[0]

        return self._run([MAIN_BRANCH], step)

    # ------------------------------------------------------------------ outcome
    def commit(self) -> TableMetadata:
        """Commit every queued change atomically and refresh the table handle."""
        if self._done:
            raise ValidationError("this manage_snapshots() block was already committed or abandoned")
        self._done = True
        if not self._steps:
            return self._table.metadata
        action = _RefChanges(self._table, self._steps, self._expected, self._producers)
        metadata, location = commit_actions(self._table.catalog, self._table.identifier, self._base, [action])
        self._table.metadata = metadata
        self._table.metadata_location = location
        return metadata

    def abandon(self) -> None:
        """Drop the queued changes (and what their cherry-picks wrote)."""
        if not self._done:
            self._done = True
            for p in self._producers:
                p.cleanup(committed=False)

    def __enter__(self) -> ManageSnapshots:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is None:
            if not self._done:
                self.commit()
        else:
            self.abandon()

    def __repr__(self) -> str:
        return f"ManageSnapshots({self._table.name!r}, steps={len(self._steps)})"


def _move_main(md: TableMetadata, snapshot_id: int) -> list[MetadataUpdate]:
    ref = md.refs.get(MAIN_BRANCH)
    if ref is not None and ref.snapshot_id == snapshot_id:
        return []
    new = (
        SnapshotRef(snapshot_id, SnapshotRefType.BRANCH)
        if ref is None
        else replace(ref, snapshot_id=snapshot_id)
    )
    return [SetSnapshotRef(MAIN_BRANCH, new)]
