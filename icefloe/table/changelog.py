"""``table.changelog_scan(...)``: the rows each snapshot of a range inserted and deleted.

Every row carries ``_change_type`` (INSERT, DELETE, or UPDATE_BEFORE / UPDATE_AFTER when the rows
have identifier columns), ``_change_ordinal`` (0 for the oldest snapshot of the range) and
``_commit_snapshot_id``. Like Spark's ``create_changelog_view``:

- rows a snapshot deleted and inserted unchanged (copy-on-write rewrites) are not changes;
- ``identifier_columns`` (default: the table's identifier fields) turn a DELETE and an INSERT of
  one key in one snapshot into an update pair (``compute_updates=False`` turns this off);
- ``net_changes=True`` reports only the net effect of the whole range.

Copy-on-write rewrites, position deletes and equality deletes are all read correctly: see
:mod:`icefloe.scan.incremental` for the planning and :mod:`icefloe.arrow.changelog` for the read.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from icefloe.errors import ValidationError
from icefloe.expressions import AlwaysTrue, And, BooleanExpression, bind, parse
from icefloe.scan.incremental import ChangelogTask, plan_changelog, snapshots_between

if TYPE_CHECKING:
    import duckdb
    import pandas as pd
    import pyarrow as pa

    from icefloe.spec.schema import Schema
    from icefloe.table._table import Table

__all__ = ["ChangelogScan"]


class ChangelogScan:
    """An immutable description of a changelog read; the ``to_*`` methods run it."""

    def __init__(
        self,
        table: Table,
        from_snapshot_id: int | None = None,
        to_snapshot_id: int | None = None,
        *,
        row_filter: str | BooleanExpression | None = None,
        selected_fields: Sequence[str] = ("*",),
        case_sensitive: bool = True,
        identifier_columns: Sequence[str] | None = None,
        compute_updates: bool | None = None,
        net_changes: bool = False,
        remove_carryovers: bool = True,
    ) -> None:
        self.table = table
        self.from_snapshot_id = from_snapshot_id
        self.to_snapshot_id = to_snapshot_id
        expr = AlwaysTrue() if row_filter is None else row_filter
        self.row_filter: BooleanExpression = parse(expr) if isinstance(expr, str) else expr
        self.selected_fields = tuple(selected_fields)
        self.case_sensitive = case_sensitive
        self.net_changes = net_changes
        self.remove_carryovers = remove_carryovers
        self._schema = table.metadata.schema()
        bind(self._schema, self.row_filter, case_sensitive)
        snapshots_between(table.metadata, from_snapshot_id, to_snapshot_id)  # a bad range fails now
        if "*" in self.selected_fields:
            self._projection = self._schema
        else:
            self._projection = self._schema.select(list(self.selected_fields), case_sensitive)
        self.identifier_columns = self._resolve_identifiers(identifier_columns, compute_updates)
        self.compute_updates = compute_updates

    def _resolve_identifiers(
        self, given: Sequence[str] | None, compute_updates: bool | None
    ) -> tuple[str, ...] | None:
        if compute_updates is False:
            return None
        if given is not None:
            names = tuple(given)
        else:
            names = tuple(self._schema.column_name(i) for i in sorted(self._schema.identifier_field_ids))
            if not names:
                if compute_updates:
                    raise ValidationError(
                        "update images need identifier columns: the table has no identifier fields",
                        hint="pass identifier_columns=[...]",
                    )
                return None
            if self.net_changes and compute_updates is None:
                return None  # net changes carry no update images
        top = {f.name for f in self._projection.fields}
        for n in names:
            self._schema.find_field(n, self.case_sensitive)
            if n not in top:
                raise ValidationError(
                    f"identifier column {n!r} must be a selected top-level column",
                    hint="select it, or choose other identifier columns",
                )
        return names

    # ------------------------------------------------------------------ refinement
    def _copy(self, **changes: Any) -> ChangelogScan:
        args: dict[str, Any] = {
            "row_filter": self.row_filter,
            "selected_fields": self.selected_fields,
            "case_sensitive": self.case_sensitive,
            "identifier_columns": self.identifier_columns,
            "compute_updates": self.compute_updates,
            "net_changes": self.net_changes,
            "remove_carryovers": self.remove_carryovers,
        }
        args.update(changes)
        return ChangelogScan(self.table, self.from_snapshot_id, self.to_snapshot_id, **args)

    def filter(self, expr: str | BooleanExpression) -> ChangelogScan:
        more = parse(expr) if isinstance(expr, str) else expr
        return self._copy(row_filter=And(self.row_filter, more))

    def select(self, *names: str) -> ChangelogScan:
        return self._copy(selected_fields=names)

    # ------------------------------------------------------------------ results
    def schema(self) -> Schema:
        return self._schema

    def projection(self) -> Schema:
        return self._projection

    def plan_files(self) -> list[ChangelogTask]:
        return plan_changelog(
            self.table.io,
            self.table.metadata,
            self.from_snapshot_id,
            self.to_snapshot_id,
            self.row_filter,
            schema=self._schema,
            case_sensitive=self.case_sensitive,
        )

    def arrow_schema(self) -> pa.Schema:
        from icefloe.arrow.changelog import changelog_arrow_schema

        return changelog_arrow_schema(self._projection)

    def _raw_batches(self) -> Iterator[pa.RecordBatch]:
        from icefloe.arrow.changelog import read_changelog_task

        mapping = self.table.metadata.properties.get("schema.name-mapping.default")
        for task in self.plan_files():
            yield from read_changelog_task(
                self.table.io, task, self._projection, self._schema, self.case_sensitive, name_mapping=mapping
            )

    def to_arrow(self) -> pa.Table:
        import pyarrow as pa

        from icefloe.arrow.changelog import finish_changelog

        raw = pa.Table.from_batches(list(self._raw_batches()), schema=self.arrow_schema())
        return finish_changelog(
            raw,
            [f.name for f in self._projection.fields],
            identifier_columns=self.identifier_columns,
            remove_carryovers=self.remove_carryovers,
            net_changes=self.net_changes,
        )

    def to_batches(self) -> pa.RecordBatchReader:
        import pyarrow as pa

        table = self.to_arrow()
        return pa.RecordBatchReader.from_batches(table.schema, table.to_batches())

    def to_pandas(self, **kwargs: Any) -> pd.DataFrame:
        return self.to_arrow().to_pandas(**kwargs)

    def to_duckdb(
        self, table_name: str, connection: duckdb.DuckDBPyConnection | None = None
    ) -> duckdb.DuckDBPyConnection:
        """Register the changed rows as ``table_name`` in a DuckDB connection (a new one if none)."""
        import duckdb

        con = connection if connection is not None else duckdb.connect()
        con.register(table_name, self.to_arrow())
        return con

    def count(self) -> int:
        return int(self.to_arrow().num_rows)
