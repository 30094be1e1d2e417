"""`DataScan`: choose a snapshot, plan its files, and read them as Arrow (or pandas, Polars, DuckDB).

Which schema a scan reads with: a scan of the current state or of a branch head uses the table's
current schema; a scan of a specific snapshot (by id, tag or timestamp) uses the schema that was
current when that snapshot was written, as Iceberg Java does for time travel.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from icefloe._optional import require
from icefloe.errors import NoSuchSnapshotError, ValidationError
from icefloe.expressions import AlwaysTrue, And, BooleanExpression, parse
from icefloe.expressions.visitors.strict_metrics import StrictMetricsEvaluator
from icefloe.scan.planner import PlanningStats, plan_files
from icefloe.scan.row_lineage import check_row_lineage, split_lineage, with_lineage
from icefloe.spec.snapshot import SnapshotRefType

if TYPE_CHECKING:
    import duckdb
    import pandas as pd
    import polars as pl
    import pyarrow as pa

    from icefloe.arrow._scan_groups import ReadOptions
    from icefloe.scan.task import FileScanTask
    from icefloe.spec.schema import Schema
    from icefloe.spec.snapshot import Snapshot
    from icefloe.table._table import Table

__all__ = ["ArrowStreamSource", "DataScan"]


_TS_HELP = "as_of_timestamp must be epoch milliseconds, a datetime or ISO-8601 text"


def _to_millis(ts: Any) -> int:
    if isinstance(ts, bool):
        raise ValidationError(f"{_TS_HELP}, got {ts!r}")
    if isinstance(ts, int):
        return ts
    if isinstance(ts, str):
        try:
            ts = dt.datetime.fromisoformat(ts)
        except ValueError:
            raise ValidationError(f"as_of_timestamp {ts!r} is not an ISO-8601 timestamp") from None
    if isinstance(ts, dt.datetime):
        if ts.tzinfo is None:
            ts = ts.replace(tzinfo=dt.UTC)
        return int(ts.timestamp() * 1000)
    raise ValidationError(f"{_TS_HELP}, got {ts!r}")


class DataScan:
    """An immutable description of a read; the ``to_*`` methods run it.

    ``selected_fields`` may name the format v3 row lineage columns ``_row_id`` and
    ``_last_updated_sequence_number`` (after ``"*"`` or table columns); they are read after the
    table's columns. Tables below v3 raise :class:`~icefloe.errors.UnsupportedFeatureError`."""

    def __init__(
        self,
        table: Table,
        *,
        row_filter: str | BooleanExpression | None = None,
        selected_fields: tuple[str, ...] = ("*",),
        case_sensitive: bool = True,
        snapshot_id: int | None = None,
        ref: str | None = None,
        as_of_timestamp: Any = None,
        limit: int | None = None,
        options: dict[str, str] | None = None,
    ) -> None:
        chosen = [x for x in (snapshot_id, ref, as_of_timestamp) if x is not None]
        if len(chosen) > 1:
            raise ValidationError("choose at most one of snapshot_id, ref and as_of_timestamp")
        if limit is not None and limit < 0:
            raise ValidationError(f"limit must be >= 0, got {limit}")
        self.table = table
        if row_filter is None:
            row_filter = AlwaysTrue()
        self.row_filter: BooleanExpression = parse(row_filter) if isinstance(row_filter, str) else row_filter
        self.selected_fields = selected_fields
        self.case_sensitive = case_sensitive
        self.snapshot_id = snapshot_id
        self.ref = ref
        self.as_of_timestamp = as_of_timestamp
        self.limit = limit
        self.options = dict(options or {})
        self.planning_stats = PlanningStats()
        # Resolve eagerly so that a bad snapshot, ref, column or filter fails at scan() time.
        self._snapshot = self._resolve_snapshot()
        self._schema = self._resolve_schema()
        self._projection = self._resolve_projection()
        from icefloe.expressions import bind

        bind(self._schema, self.row_filter, case_sensitive)

    # ------------------------------------------------------------------ resolution
    def _resolve_snapshot(self) -> Snapshot | None:
        md = self.table.metadata
        if self.snapshot_id is not None:
            return md.snapshot_by_id(self.snapshot_id)
        if self.ref is not None:
            if self.ref not in md.refs:
                raise NoSuchSnapshotError(
                    f"table {self.table.name} has no branch or tag {self.ref!r}",
                    hint=f"refs are: {', '.join(sorted(md.refs)) or '(none)'}",
                    ref=self.ref,
                )
            return md.snapshot_for_ref(self.ref)
        if self.as_of_timestamp is not None:
            return md.snapshot_as_of(_to_millis(self.as_of_timestamp))
        return md.current_snapshot()

    def _resolve_schema(self) -> Schema:
        md = self.table.metadata
        reads_branch_head = (
            self.snapshot_id is None
            and self.as_of_timestamp is None
            and (self.ref is None or md.refs[self.ref].ref_type == SnapshotRefType.BRANCH)
        )
        if reads_branch_head or self._snapshot is None or self._snapshot.schema_id is None:
            return md.schema()
        return md.schema_by_id(self._snapshot.schema_id)

    def _resolve_projection(self) -> Schema:
        # The v3 row lineage metadata columns (_row_id, _last_updated_sequence_number) can be
        # selected next to the table's columns; they come after them, in the order asked.
        columns, lineage = split_lineage(self._schema, self.selected_fields, self.case_sensitive)
        if lineage:
            check_row_lineage(self.table.metadata, f"reading {', '.join(lineage)}")
        if "*" in columns:
            projection = self._schema
        else:
            projection = self._schema.select(columns, self.case_sensitive)
        return with_lineage(projection, lineage)

    def __repr__(self) -> str:
        parts = [repr(self.table.name)]
        if self._snapshot is not None:
            parts.append(f"snapshot_id={self._snapshot.snapshot_id}")
        else:
            parts.append("no snapshot")
        if self.ref is not None:
            parts.append(f"ref={self.ref!r}")
        if not isinstance(self.row_filter, AlwaysTrue):
            parts.append(f"row_filter={str(self.row_filter)!r}")
        if "*" not in self.selected_fields:
            parts.append(f"selected_fields={self.selected_fields!r}")
        if self.limit is not None:
            parts.append(f"limit={self.limit}")
        return f"DataScan({', '.join(parts)})"

    # ------------------------------------------------------------------ refinement
    def _copy(self, **changes: Any) -> DataScan:
        args: dict[str, Any] = {
            "row_filter": self.row_filter,
            "selected_fields": self.selected_fields,
            "case_sensitive": self.case_sensitive,
            "snapshot_id": self.snapshot_id,
            "ref": self.ref,
            "as_of_timestamp": self.as_of_timestamp,
            "limit": self.limit,
            "options": self.options,
        }
        args.update(changes)
        return DataScan(self.table, **args)

    def filter(self, expr: str | BooleanExpression) -> DataScan:
        more = parse(expr) if isinstance(expr, str) else expr
        return self._copy(row_filter=And(self.row_filter, more))

    def select(self, *names: str) -> DataScan:
        return self._copy(selected_fields=names)

    def use_ref(self, ref: str) -> DataScan:
        return self._copy(ref=ref, snapshot_id=None, as_of_timestamp=None)

    def with_limit(self, limit: int | None) -> DataScan:
        return self._copy(limit=limit)

    # ------------------------------------------------------------------ results
    def snapshot(self) -> Snapshot | None:
        return self._snapshot

    def schema(self) -> Schema:
        """The schema rows are read with (before projection)."""
        return self._schema

    def projection(self) -> Schema:
        return self._projection

    def plan_files(self) -> list[FileScanTask]:
        self.planning_stats = PlanningStats()
        return plan_files(
            self.table.io,
            self.table.metadata,
            self._snapshot,
            self.row_filter,
            schema=self._schema,
            case_sensitive=self.case_sensitive,
            stats=self.planning_stats,
        )

    def arrow_schema(self) -> pa.Schema:
        from icefloe.arrow.schema import schema_to_arrow

        return schema_to_arrow(self._projection)

    def _read_task(self, task: FileScanTask) -> Iterator[pa.RecordBatch]:
        from icefloe.arrow.reader import read_task

        return read_task(
            self.table.io,
            task,
            self._projection,
            self._schema,
            self.case_sensitive,
            # Files written without field ids (e.g. migrated tables) resolve columns through it.
            name_mapping=self.table.metadata.properties.get("schema.name-mapping.default"),
        )

    def _read_options(self) -> ReadOptions:
        from icefloe.arrow._scan_groups import (
            DEFAULT_BATCH_READAHEAD,
            DEFAULT_FRAGMENT_READAHEAD,
            ReadOptions,
        )
        from icefloe.arrow.reader import DEFAULT_BATCH_SIZE

        def number(key: str, default: int) -> int:
            try:
                value = int(self.options.get(key, default))
            except ValueError:
                raise ValidationError(
                    f"scan option {key} must be an integer, got {self.options[key]!r}"
                ) from None
            if value < 1:
                raise ValidationError(f"scan option {key} must be >= 1, got {value}")
            return value

        return ReadOptions(
            self._projection,
            self._schema,
            self.case_sensitive,
            batch_size=number("read.batch-size", DEFAULT_BATCH_SIZE),
            # Files written without field ids (e.g. migrated tables) resolve columns through it.
            name_mapping=self.table.metadata.properties.get("schema.name-mapping.default"),
            fragment_readahead=number("read.fragment-readahead", DEFAULT_FRAGMENT_READAHEAD),
            batch_readahead=number("read.batch-readahead", DEFAULT_BATCH_READAHEAD),
            threads=number("read.threads", 4),
        )

    def _batches(self) -> Iterator[pa.RecordBatch]:
        from icefloe.arrow._scan_groups import stream_batches

        remaining = self.limit
        if remaining == 0:
            return
        for batch in stream_batches(self.table.io, self.plan_files(), self._read_options()):
            if remaining is not None:
                if batch.num_rows >= remaining:
                    yield batch.slice(0, remaining)
                    return
                remaining -= batch.num_rows
            if batch.num_rows:
                yield batch

    def to_batches(self) -> pa.RecordBatchReader:
        """Stream the rows in plan order, with bounded read-ahead.

        Small files (up to 4 MiB) are decoded by Arrow's dataset scanner, at most
        ``read.fragment-readahead`` files in flight (scan option, default 4), each with at most
        ``read.batch-readahead`` decoded batches waiting (default 4) of ``read.batch-size`` rows
        (default 131,072); larger files are read one at a time. The Arrow memory held at once,
        beyond the process's fixed costs and the consumer's batch, is at most
        ``(fragment_readahead + 1) * (2 * file_bytes + (batch_readahead + 2) * batch_bytes)``
        (:func:`icefloe.arrow._scan_groups.memory_bound`; ``file_bytes`` the largest small file
        or a large file's largest row group, ``batch_bytes`` a decoded batch) whatever the
        table's size; peak RSS adds the allocator's retention (25-60 MB measured). Measured in
        ``tests/table/test_batches_memory.py`` and bench/README.md; see docs/architecture.md."""
        import pyarrow as pa

        return pa.RecordBatchReader.from_batches(self.arrow_schema(), self._batches())

    def to_arrow(self) -> pa.Table:
        """Read everything into one Arrow table, in plan order (row order within a file kept).
        Groups of small files are decoded by Arrow's dataset scanner on its threads; larger files
        are read in parallel by ``read.threads`` Python threads (scan option, default 4)."""
        import pyarrow as pa

        from icefloe.arrow._scan_groups import read_table

        if self.limit is not None:
            return pa.Table.from_batches(list(self._batches()), schema=self.arrow_schema())
        return read_table(self.table.io, self.plan_files(), self._read_options())

    def to_pandas(self, **kwargs: Any) -> pd.DataFrame:
        """Read everything into a pandas DataFrame (needs ``icefloe[pandas]``)."""
        require("pandas", extra="pandas", feature="DataScan.to_pandas")
        return self.to_arrow().to_pandas(**kwargs)

    def to_polars(self) -> pl.LazyFrame:
        """The rows as a Polars ``LazyFrame`` (needs ``icefloe[polars]``). Nothing is read until
        it is collected; then Polars' projection, filter and row limit reach the scan: only the
        columns the query uses are read, and reading stops after the rows a ``head`` needs."""
        polars = require("polars", extra="polars", feature="DataScan.to_polars")
        try:
            from polars.io.plugins import register_io_source
        except ImportError:  # an old Polars without IO plugins: read eagerly
            return polars.from_arrow(self.to_arrow()).lazy()  # type: ignore[no-any-return]

        def source(
            with_columns: list[str] | None, predicate: Any, n_rows: int | None, batch_size: int | None
        ) -> Iterator[pl.DataFrame]:
            scan = self if with_columns is None else self.select(*with_columns)
            if predicate is None and n_rows is not None:
                scan = scan.with_limit(n_rows if self.limit is None else min(n_rows, self.limit))
            remaining = n_rows
            for batch in scan._batches():
                frame = polars.from_arrow(batch)
                if predicate is not None:
                    frame = frame.filter(predicate)
                if remaining is not None:
                    if remaining <= 0:
                        return
                    frame = frame.head(remaining)
                    remaining -= frame.height
                yield frame

        import pyarrow as pa

        schema = polars.from_arrow(pa.Table.from_batches([], schema=self.arrow_schema())).schema
        return register_io_source(source, schema=schema)  # type: ignore[no-any-return]

    def to_duckdb(
        self, table_name: str, connection: duckdb.DuckDBPyConnection | None = None
    ) -> duckdb.DuckDBPyConnection:
        """Register the scan as ``table_name`` in a DuckDB connection (a new one if none; needs
        ``icefloe[duckdb]``). Nothing is read up front: each query that scans ``table_name``
        streams the rows from the files, one batch at a time (see :class:`ArrowStreamSource`)."""
        duckdb = require("duckdb", extra="duckdb", feature="DataScan.to_duckdb")
        con = connection if connection is not None else duckdb.connect()
        con.register(table_name, ArrowStreamSource(self))
        return con

    def count(self) -> int:
        """The number of rows the scan returns.

        Answered from metadata (the files' record counts) for every file no delete file applies
        to and whose rows all match the filter (no residual, or the file's column metrics prove
        every row matches); only the other files are read, and only the columns their filter
        and deletes need."""
        if self.limit == 0:
            return 0
        total = 0
        to_read: list[FileScanTask] = []
        schema = self._schema
        strict: dict[str, StrictMetricsEvaluator] = {}
        for task in self.plan_files():
            f = task.file
            if task.delete_files or f.record_count < 0 or task.length is not None or task.start:
                to_read.append(task)
                continue
            if isinstance(task.residual, AlwaysTrue):
                total += f.record_count
                continue
            key = str(task.residual)
            evaluator = strict.get(key)
            if evaluator is None:
                evaluator = strict[key] = StrictMetricsEvaluator(schema, task.residual, self.case_sensitive)
            if evaluator.eval(f):
                total += f.record_count
            else:
                to_read.append(task)
        if to_read:
            # one narrow column: read_task adds the columns the residual and the deletes need
            narrow = self._copy(selected_fields=(schema.fields[0].name,)) if schema.fields else self
            for task in to_read:
                for batch in narrow._read_task(task):
                    total += batch.num_rows
                if self.limit is not None and total >= self.limit:
                    break
        return total if self.limit is None else min(total, self.limit)


class ArrowStreamSource:
    """A scan as an Arrow stream that can be read more than once: each reader of its
    ``__arrow_c_stream__`` (the Arrow PyCapsule protocol, which DuckDB, Polars and pyarrow
    speak) gets a fresh, lazily planned `pa.RecordBatchReader` over the files, so a DuckDB
    view over it streams the rows of every query that scans it, self-joins included."""

    def __init__(self, scan: DataScan) -> None:
        self.scan = scan

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        return self.scan.to_batches().__arrow_c_stream__(requested_schema)

    def __repr__(self) -> str:
        return f"ArrowStreamSource({self.scan!r})"
