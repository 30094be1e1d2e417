"""The driver side of Spark's row-level changes: plan, run the executors, commit one snapshot.

::

    plan      load the table; the condition's implied filter (+ for MERGE the source's key range)
              -> plan_files: the candidate data files (partition and metrics pruning); DELETE
              removes files its condition must match by metadata, without reading them
    execute   read the candidates with their file and position (Spark's Parquet reader, position
              deletes by anti-join; or icefloe's reader in Python workers) and join the source
                merge-on-read   rows to delete or add -> executors write data files and one
                                position delete file per data file (icefloe.spark._dml_runner);
                                format v3: a deletion vector per data file that replaces the
                                file's earlier deletes in the same commit
                copy-on-write   1. the files holding a matched row (a semi-join, few columns)
                                2. those files re-read whole, joined again: every kept, updated
                                   and inserted row -> executors write the new files
    commit    one transaction on the table as planned: row_delta (merge-on-read) or
              overwrite_files with the replaced files (copy-on-write), the implied filter as
              conflict filter, write.<command>.isolation-level; schema evolution in the same commit

Rows of one data file meet in one task (the job distributes by file key), so a task writes
one delete file per data file and can tell a target row matched twice (MergeCardinalityError).
Nothing commits when a task fails: its files and those of the other tasks (found by the job's
write id in their names) are deleted.
"""

from __future__ import annotations

import contextlib
import functools
import json
import uuid as uuid_mod
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as st

from icefloe.errors import InvalidMetadataError, UnsupportedFeatureError, ValidationError
from icefloe.expressions import AlwaysFalse, AlwaysTrue, And, BooleanExpression
from icefloe.spark._dml_runner import (
    KIND,
    KIND_DELETE,
    KIND_KEEP,
    KIND_UPDATE,
    LINEAGE_ROW_ID,
    LINEAGE_SEQ,
    MATCHED,
    RESULT_FIELD,
    FileInfo,
    ReadJob,
    TaskResult,
    WriteJob,
    read_tasks,
    task_results,
    write_changes,
)
from icefloe.spark._metadata_columns import (
    FILE_SIZE,
    KEY,
    ROW_POS,
    key_from_spark,
    parquet_deletes_supported,
    parquet_rows,
    path_key,
)
from icefloe.spark.session import session_confs
from icefloe.spark.types import to_spark_schema, to_spark_type
from icefloe.spec.properties import COPY_ON_WRITE

if TYPE_CHECKING:
    from icefloe.manifest import DataFile
    from icefloe.scan.task import FileScanTask
    from icefloe.spec.schema import Schema
    from icefloe.spec.table_metadata import TableMetadata
    from icefloe.table import Table

__all__ = ["DmlResult", "MergeCardinalityError", "RowLevelChange"]

T_MARK = "__icefloe_t"
S_MARK = "__icefloe_s"
CLAUSE = "__icefloe_clause"
WRITE_ID_PROPERTY = "icefloe.spark.write-id"


class MergeCardinalityError(ValidationError):
    """A MERGE matched one target row with several source rows (Spark's and Delta's
    ``MERGE_CARDINALITY_VIOLATION``); nothing was committed. Context: ``file`` and ``position``
    of one such target row."""


@dataclass(frozen=True)
class DmlResult:
    """What a DELETE, UPDATE or MERGE did."""

    operation: str  # delete | update | merge
    mode: str  # copy-on-write | merge-on-read
    rows_inserted: int = 0
    rows_updated: int = 0
    rows_deleted: int = 0
    rows_copied: int = 0  # copy-on-write: unchanged rows rewritten with their files
    data_files_added: int = 0
    delete_files_added: int = 0
    data_files_removed: int = 0
    files_planned: int = 0  # candidate data files after partition and metrics pruning
    files_rewritten: int = 0  # copy-on-write: data files read again and replaced
    snapshot_id: int | None = None  # the new snapshot (None when nothing changed)
    metrics: dict[str, Any] = field(default_factory=dict)

    @property
    def rows_affected(self) -> int:
        return self.rows_inserted + self.rows_updated + self.rows_deleted

    @property
    def files_added(self) -> int:
        return self.data_files_added + self.delete_files_added

    @property
    def files_removed(self) -> int:
        return self.data_files_removed


def _before_commit(table: Table) -> None:
    """Called right before the commit (tests run concurrent writers here)."""


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def to_column(condition: str | Column) -> Column:
    if isinstance(condition, Column):
        return condition
    if isinstance(condition, str):
        return F.expr(condition)
    raise ValidationError(
        f"a condition must be SQL text or a Column, got {type(condition).__name__}",
        hint='e.g. "t.id = s.id" or F.col("t.id") == F.col("s.id")',
    )


def _true(c: Column) -> Column:
    """SQL's WHERE: TRUE selects, FALSE and NULL do not."""
    return F.coalesce(c, F.lit(False))


# --------------------------------------------------------------------------- reading the target


def _fast_path_problem(metadata: TableMetadata, tasks: Sequence[FileScanTask]) -> str | None:
    from icefloe.spark.read import _has_default, _location_problem, _unsupported_type

    if "schema.name-mapping.default" in metadata.properties:
        return "name mapping"
    schema = metadata.schema()
    for f in schema.fields:
        if _unsupported_type(f.field_type) is not None:
            return f"column {f.name}"
    if _has_default(schema.fields):
        return "defaults"
    for t in tasks:
        if str(t.file.file_format).lower().rsplit(".", 1)[-1] != "parquet":
            return "not parquet"
    if not parquet_deletes_supported(tasks):
        return "delete files"
    return _location_problem(tasks)


@dataclass(frozen=True)
class Target:
    """The target rows of a change (:func:`target_frame`)."""

    frame: DataFrame
    #: whether Spark's Parquet reader reads them (else icefloe's reader in Python workers)
    fast: bool
    #: ``KEY`` is a number (a long) naming the row's data file: number -> the file's
    #: :func:`path_key`; None when ``KEY`` is the path as Spark spells it
    ids: dict[int, str] | None

    def file_key(self, table: Table, value: Any) -> str:
        """The :func:`path_key` of a ``KEY`` value of these rows."""
        if self.ids is None:
            return key_from_spark(value)
        key = self.ids.get(int(value))
        if key is None:
            raise _length_mismatch(table, repr(value))
        return key


def _length_mismatch(table: Table, key: str) -> InvalidMetadataError:
    return InvalidMetadataError(
        f"table {table.name}: rows were read from a data file ({key}: its length in bytes) that "
        "matches no planned data file of the table's metadata; nothing was changed",
        hint="a manifest entry's file_size_in_bytes differs from the length of its file: restore "
        "the file or repair the table's metadata",
        file_key=key,
    )


def _size_ids(tasks: Sequence[FileScanTask]) -> dict[int, str] | None:
    """File length -> file key when no two of the planned files have the same length (the
    length then names the file: a number to carry through the shuffles instead of the path)."""
    out: dict[int, str] = {}
    for t in tasks:
        key = path_key(t.file.file_path)
        size = int(t.file.file_size_in_bytes)
        if out.setdefault(size, key) != key:
            return None
    return out


def target_frame(
    spark: SparkSession,
    table: Table,
    metadata: TableMetadata,
    tasks: Sequence[FileScanTask],
    lineage: bool = False,
) -> Target:
    """The live rows of ``tasks``' files (current schema) with ``KEY`` and ``ROW_POS`` (and with
    ``lineage``, format v3, each row's ``_row_id`` and ``_last_updated_sequence_number`` as
    ``LINEAGE_ROW_ID`` and ``LINEAGE_SEQ``).

    ``KEY`` names the row's data file with a number where it can (:class:`Target`): eight bytes
    instead of a path of ~100 through the shuffles of every target row. icefloe's reader numbers
    the files itself; Spark's Parquet reader gives each row its file's length in bytes
    (``_metadata.file_size``), which names the file when the planned files' lengths are all
    different (the table's metadata holds each length; a length no planned file has fails the
    write task). Otherwise ``KEY`` is the path as Spark spells it."""
    from icefloe.spark.read import FIELD_ID_READ_CONF

    schema = metadata.schema()
    data_schema = to_spark_schema(schema)
    full = st.StructType(
        [
            *data_schema.fields,
            st.StructField(KEY, st.LongType(), False),
            st.StructField(ROW_POS, st.LongType(), False),
            *(
                [
                    st.StructField(LINEAGE_ROW_ID, st.LongType(), True),
                    st.StructField(LINEAGE_SEQ, st.LongType(), True),
                ]
                if lineage
                else []
            ),
        ]
    )
    if not tasks:
        return Target(spark.createDataFrame([], full), True, {})
    columns = [F.col(_quoted(f.name)) for f in schema.fields]
    if not lineage and _fast_path_problem(metadata, tasks) is None:
        spark.conf.set(FIELD_ID_READ_CONF, "true")
        sizes = _size_ids(tasks)
        read_schema = to_spark_schema(schema, with_field_ids=True)
        df = parquet_rows(spark, read_schema, tasks, with_size=sizes is not None)
        if sizes is None:
            return Target(df.select(*columns, KEY, ROW_POS), True, None)
        return Target(df.select(*columns, F.col(FILE_SIZE).alias(KEY), ROW_POS), True, sizes)
    from icefloe.spec.table_metadata import write_metadata_json

    numbers: dict[str, int] = {}
    for t in tasks:
        numbers.setdefault(path_key(t.file.file_path), len(numbers))
    groups = [[t] for t in tasks]
    keys = tuple(numbers[path_key(t.file.file_path)] for t in tasks)
    io_props = dict(table.io.properties)
    job = ReadJob(write_metadata_json(metadata), io_props, groups, full.json(), lineage, keys)
    ids = spark.range(0, len(groups), 1, numPartitions=max(1, min(len(groups), 4 * _cores(spark))))
    with arrow_functions():
        df = ids.mapInArrow(functools.partial(read_tasks, job), full)
    return Target(df, False, {n: key for key, n in numbers.items()})


@contextlib.contextmanager
def arrow_functions() -> Iterator[None]:
    """PySpark checks the pandas version whenever an Arrow function is set up (mapInArrow never
    goes through pandas) and warns about pandas 3; the warning is not ours to show."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")
        yield


def _cores(spark: SparkSession) -> int:
    return max(1, int(spark.sparkContext.defaultParallelism))


# --------------------------------------------------------------------------- the shared flow


@dataclass
class _Context:
    spark: SparkSession
    table: Table
    metadata: TableMetadata  # what the new files are written with (schema evolution applied)
    schema: Schema
    mode: str
    isolation: str
    alias: str
    target_names: tuple[str, ...]
    #: format v3: rows carry their row lineage (LINEAGE_ROW_ID, LINEAGE_SEQ) to the writers
    lineage: bool = False


class RowLevelChange:
    """A DELETE, UPDATE or MERGE: subclasses say which rows change and how."""

    command = "delete"

    def __init__(self, spark: SparkSession, load: Callable[[], Table], alias: str | None) -> None:
        self.spark = spark
        self._load = load
        self._alias = alias

    # ------------------------------------------------------------------ hooks
    def prepare(self, table: Table) -> tuple[TableMetadata, str | None]:
        """The metadata new files are written with, and a schema change to commit with them."""
        return table.metadata, None

    def prune(self, ctx: _Context) -> tuple[BooleanExpression, bool]:
        """A filter every target row the change touches passes, and whether it is exact."""
        return AlwaysTrue(), False

    def whole_file_deletes(self) -> bool:
        return False

    def insert_only(self) -> bool:
        return False

    def check_cardinality(self) -> bool:
        return False

    def dedupe_kept(self) -> bool:
        return False

    def join_confs(self) -> dict[str, str]:
        """Session settings for the statement's jobs (set around them, restored after)."""
        return {}

    def group_rewrites(self) -> bool:
        """Copy-on-write: whether the rows of one target row's matches must be brought together
        by the file key (they are when Spark's join keeps them in one task)."""
        return False

    def changed_rows(self, ctx: _Context, t: DataFrame) -> DataFrame:
        """Merge-on-read: rows to delete or add (the standard columns)."""
        raise NotImplementedError

    def affected_files(self, ctx: _Context, t: DataFrame) -> DataFrame | None:
        """Copy-on-write: a DataFrame of the ``KEY``s of files to rewrite (None: every one)."""
        raise NotImplementedError

    def rewritten_rows(self, ctx: _Context, t: DataFrame) -> DataFrame:
        """Copy-on-write: every row of the files being rewritten (kept, updated, deleted) and
        the inserted rows (the standard columns)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ helpers for subclasses
    @staticmethod
    def output(
        ctx: _Context, t: DataFrame, kind: Column, matched: Column, values: Mapping[str, Column]
    ) -> list[Column]:
        """The standard columns: file key, position, kind, matched, then the table's columns
        (``values`` by name; the target's own value elsewhere), cast to the table's types."""
        cols = [
            t[KEY].alias(KEY),
            t[ROW_POS].alias(ROW_POS),
            kind.cast("byte").alias(KIND),
            matched.alias(MATCHED),
        ]
        target_names = set(t.columns)
        for f in ctx.schema.fields:
            spark_type = to_spark_type(f.field_type)
            if f.name in values:
                value = values[f.name]
            elif f.name in target_names:
                value = t[_quoted(f.name)]
            else:
                value = F.lit(None)
            cols.append(value.cast(spark_type).alias(f.name))
        if ctx.lineage:
            # kept rows keep both; updated rows keep _row_id and inherit the new sequence
            # number (null); new rows (no target row) get nulls: new ids at commit
            row_id = t[LINEAGE_ROW_ID] if LINEAGE_ROW_ID in target_names else F.lit(None)
            seq = t[LINEAGE_SEQ] if LINEAGE_SEQ in target_names else F.lit(None)
            cols.append(row_id.cast("long").alias(LINEAGE_ROW_ID))
            cols.append(F.when(kind == F.lit(KIND_KEEP), seq).cast("long").alias(LINEAGE_SEQ))
        return cols

    # ------------------------------------------------------------------ the flow
    def run(self) -> DmlResult:
        from icefloe.scan.planner import plan_files
        from icefloe.table._row_ops import write_mode
        from icefloe.transaction._file_filter import FileFilter
        from icefloe.transaction.conflicts import isolation_level

        table = self._load()
        if table.format_version not in (2, 3):
            raise UnsupportedFeatureError(
                f"table {table.name} is format version {table.format_version}; icefloe changes rows "
                "of format version 2 and 3 tables",
                hint="upgrade the table to format version 2 or 3" if table.format_version < 2 else None,
            )
        nanos = _nanosecond_columns(table.schema())
        if nanos:
            raise UnsupportedFeatureError(
                f"table {table.name} has nanosecond timestamp columns ({', '.join(nanos)}); Spark carries "
                "timestamps in microseconds, so rewriting rows through Spark would drop their nanoseconds",
                hint="change the rows with the Arrow API (table.delete / table.update / table.upsert)",
            )
        write_metadata, schema_change = self.prepare(table)
        props = dict(table.metadata.properties)
        mode = write_mode(props, self.command)
        short = table.identifier[-1]
        alias = self._alias or short
        ctx = _Context(
            self.spark,
            table,
            write_metadata,
            write_metadata.schema(),
            mode,
            isolation_level(props, self.command),
            alias,
            tuple(dict.fromkeys((alias, short, table.name))),
        )
        copy_on_write = mode == COPY_ON_WRITE
        # format v3 row lineage goes wherever rows are written: not for merge-on-read DELETE
        ctx.lineage = table.format_version >= 3 and (copy_on_write or self.command != "delete")
        prune, exact = self.prune(ctx)
        snapshot = table.current_snapshot()
        tasks = plan_files(table.io, table.metadata, snapshot, prune) if snapshot is not None else []
        planned = len(tasks)
        whole: list[DataFile] = []
        if self.whole_file_deletes() and exact and tasks:
            must = FileFilter(table.metadata, prune)
            whole = [t.file for t in tasks if must.must_match(t.file)]
            gone = {f.file_path for f in whole}
            tasks = [t for t in tasks if t.file.file_path not in gone]
        rewritten: list[FileScanTask] = []
        # copy-on-write reads this frame only for the keys of the files to rewrite
        first_lineage = ctx.lineage and not copy_on_write
        target = target_frame(self.spark, table, table.metadata, tasks, first_lineage)
        fast = target.fast
        written_from = target  # the frame whose rows reach the writers
        t = target.frame.withColumn(T_MARK, F.lit(True)).alias(alias)
        if self.insert_only():
            out: DataFrame | None = self.changed_rows(ctx, t)
        elif not copy_on_write:
            out = self.changed_rows(ctx, t) if tasks or self._may_insert() else None
        else:
            affected = self.affected_files(ctx, t) if tasks else None
            if affected is None:
                rewritten = list(tasks)
            else:
                with session_confs(self.spark, self.join_confs()):
                    found = affected.distinct().collect()
                keys = {target.file_key(table, r[0]) for r in found}
                rewritten = [x for x in tasks if path_key(x.file.file_path) in keys]
            if rewritten or self._may_insert():
                written_from = target_frame(self.spark, table, table.metadata, rewritten, ctx.lineage)
                t2 = written_from.frame.withColumn(T_MARK, F.lit(True)).alias(alias)
                out = self.rewritten_rows(ctx, t2)
            else:
                out = None
        write_id = str(uuid_mod.uuid4())
        results: list[TaskResult] = []
        if out is not None:
            results = self._execute(ctx, out, tasks, copy_on_write, write_id, written_from.ids)
        return self._commit(ctx, results, rewritten, whole, prune, schema_change, write_id, planned, fast)

    def _may_insert(self) -> bool:
        return False

    def _execute(
        self,
        ctx: _Context,
        out: DataFrame,
        tasks: Sequence[FileScanTask],
        copy_on_write: bool,
        write_id: str,
        ids: dict[int, str] | None = None,
    ) -> list[TaskResult]:
        from icefloe.spark.source import delete_job_files
        from icefloe.spec.table_metadata import write_metadata_json

        # format v3 merge-on-read writes deletion vectors: the tasks need each data file's entry
        # and the delete files that applied to it (the new vector merges and replaces them)
        dvs = not copy_on_write and ctx.metadata.format_version >= 3
        files = {
            path_key(x.file.file_path): FileInfo(
                x.file.file_path,
                x.file.spec_id,
                tuple(x.file.partition),
                x.file.record_count,
                x.file if dvs else None,
                tuple(x.delete_files) if dvs else (),
            )
            for x in tasks
        }
        job = WriteJob(
            write_metadata_json(ctx.metadata),
            dict(ctx.table.io.properties),
            files,
            copy_on_write,
            self.check_cardinality(),
            copy_on_write and self.dedupe_kept(),
            write_id,
            lineage=ctx.lineage,
            ids=ids,
        )
        # merge-on-read: the rows of a data file meet in one task (one delete file per data
        # file, matches of a target row together); copy-on-write needs that only for some joins
        grouped = not copy_on_write or self.group_rewrites()
        distributed = out.repartition(self._distribution(ctx, out)) if grouped else out
        if copy_on_write and not job.dedupe_kept and isinstance(out.schema[KEY].dataType, st.StringType):
            # the tasks need a row's file only to report a target row matched twice; the others
            # ship an empty key ("a target row") instead of their file's path: a copy-on-write
            # rewrite sends every row of the rewritten files through Arrow to Python
            key = F.col(KEY)
            distributed = distributed.withColumn(
                KEY, F.when(F.col(MATCHED), key).when(key.isNotNull(), F.lit(""))
            )
        result_schema = st.StructType([st.StructField(RESULT_FIELD, st.BinaryType(), False)])
        try:
            with arrow_functions():
                frame = distributed.mapInArrow(functools.partial(write_changes, job), result_schema)
            with session_confs(self.spark, self.join_confs()):
                rows = frame.collect()
        except BaseException:
            delete_job_files(ctx.metadata, write_id, ctx.table.io)
            raise
        results = task_results(rows)
        unknown = next((r.unknown_file for r in results if r.unknown_file is not None), None)
        if unknown is not None:
            _discard(ctx, results)
            delete_job_files(ctx.metadata, write_id, ctx.table.io)
            raise _length_mismatch(ctx.table, unknown)
        duplicate = next((r.duplicate for r in results if r.duplicate is not None), None)
        if duplicate is not None:
            _discard(ctx, results)
            path, pos = duplicate
            raise MergeCardinalityError(
                f"MERGE matched the target row at position {pos} of {path} with more than one source "
                "row; a target row may be updated or deleted by at most one source row",
                hint="de-duplicate the source on the join keys, or make the ON condition match at most "
                "one source row per target row",
                file=path,
                position=pos,
            )
        return results

    def _distribution(self, ctx: _Context, out: DataFrame) -> Column:
        """Rows of one data file together (one delete file per data file, one rewrite per file);
        new rows by partition (partitioned tables) or spread by their values."""
        from icefloe.spark.write import transform_column

        spec = ctx.metadata.spec()
        fields = [f for f in spec.fields if not f.transform.is_void]
        if fields:
            parts = [transform_column(ctx.schema, f.source_id, f.transform).cast("string") for f in fields]
            spread = F.concat_ws("/", *[F.coalesce(p, F.lit("\0")) for p in parts])
        else:
            hashable = [F.col(_quoted(f.name)) for f in ctx.schema.fields if f.field_type.is_primitive]
            spread = F.hash(*hashable).cast("string") if hashable else F.lit("")
        if isinstance(out.schema[KEY].dataType, st.StringType):
            return F.coalesce(F.col(KEY), F.concat(F.lit("\1"), spread))
        # a number names the file; new rows spread by a hash (one that equals a file's number
        # only shares that file's task)
        return F.coalesce(F.col(KEY), F.xxhash64(F.lit("\1"), spread))

    def _commit(
        self,
        ctx: _Context,
        results: list[TaskResult],
        rewritten: list[FileScanTask],
        whole: list[DataFile],
        prune: BooleanExpression,
        schema_change: str | None,
        write_id: str,
        planned: int,
        fast: bool,
    ) -> DmlResult:
        from icefloe.spark._merge_schema import commit_merged_schema

        data = [f for r in results for f in r.data_files]
        deletes = [f for r in results for f in r.delete_files]
        referenced = sorted({p for r in results for p in r.referenced})
        replaced = _unique_deletes(d for r in results for d in r.rewritten_deletes)
        removed = [*[x.file for x in rewritten], *whole]
        copy_on_write = ctx.mode == COPY_ON_WRITE
        counts = {
            "rows_inserted": sum(r.inserted for r in results),
            "rows_updated": sum(r.updated for r in results),
            "rows_deleted": sum(r.deleted for r in results) + sum(f.record_count for f in whole),
            "rows_copied": sum(r.copied for r in results),
        }
        base = DmlResult(
            self.command,
            ctx.mode,
            **counts,
            data_files_added=len(data),
            delete_files_added=len(deletes),
            data_files_removed=len(removed),
            files_planned=planned,
            files_rewritten=len(rewritten),
            metrics={"fast_path": fast},
        )
        changed = bool(data or deletes or removed)
        if not changed and schema_change is None:
            return base
        table = ctx.table
        props = {WRITE_ID_PROPERTY: write_id, "icefloe.spark.operation": self.command}
        tx = table.transaction()
        try:
            if schema_change is not None:
                commit_merged_schema(tx, schema_change)
            if copy_on_write and not self.insert_only():
                if changed:
                    tx.overwrite_files(
                        data,
                        delete_filter=AlwaysFalse(),
                        remove_files=removed,
                        conflict_filter=prune,
                        isolation_level=ctx.isolation,
                        snapshot_properties=props,
                        delete_on_failure=True,
                    )
            elif changed:
                tx.row_delta(
                    add_data_files=data,
                    add_delete_files=deletes,
                    remove_data_files=whole,
                    remove_delete_files=replaced,  # v3: the deletion vectors' predecessors
                    referenced_data_files=referenced,
                    conflict_filter=prune,
                    isolation_level=ctx.isolation,
                    snapshot_properties=props,
                    delete_on_failure=True,
                )
            _before_commit(table)
            snapshots = tx.commit()
        except BaseException:
            tx.abandon()
            _discard(ctx, results)
            raise
        snapshot_id = snapshots[-1].snapshot_id if snapshots else None
        return DmlResult(
            base.operation,
            base.mode,
            **counts,
            data_files_added=base.data_files_added,
            delete_files_added=base.delete_files_added,
            data_files_removed=base.data_files_removed,
            files_planned=planned,
            files_rewritten=len(rewritten),
            snapshot_id=snapshot_id,
            metrics=base.metrics,
        )


def _discard(ctx: _Context, results: Sequence[TaskResult]) -> None:
    # a Puffin file holds the deletion vectors of several data files: each path once
    paths = dict.fromkeys(f.file_path for r in results for f in (*r.data_files, *r.delete_files))
    for path in paths:
        with contextlib.suppress(Exception):
            ctx.table.io.delete(path)


def _unique_deletes(files: Iterable[DataFile]) -> list[DataFile]:
    """Delete files once each (a deletion vector is one blob of a Puffin file)."""
    out: dict[tuple[str, int | None], DataFile] = {}
    for f in files:
        out.setdefault((f.file_path, f.content_offset), f)
    return list(out.values())


def and_all(parts: Sequence[BooleanExpression]) -> BooleanExpression:
    out: BooleanExpression = AlwaysTrue()
    for p in parts:
        if isinstance(p, AlwaysTrue):
            continue
        out = p if isinstance(out, AlwaysTrue) else And(out, p)
    return out


def schema_json(schema: st.StructType) -> str:
    return json.dumps(schema.jsonValue())


# --------------------------------------------------------------------------- DELETE and UPDATE


class DeleteChange(RowLevelChange):
    command = "delete"

    def __init__(
        self,
        spark: SparkSession,
        load: Callable[[], Table],
        alias: str | None,
        condition: str | Column | None,
    ) -> None:
        super().__init__(spark, load, alias)
        self.condition = condition

    def _cond(self) -> Column:
        return F.lit(True) if self.condition is None else _true(to_column(self.condition))

    def prune(self, ctx: _Context) -> tuple[BooleanExpression, bool]:
        from icefloe.spark._conditions import analyze_condition

        info = analyze_condition(self.condition, ctx.table.schema(), ctx.target_names)
        return info.implied, info.exact

    def whole_file_deletes(self) -> bool:
        return True

    def changed_rows(self, ctx: _Context, t: DataFrame) -> DataFrame:
        # deleted rows need no values: Spark then reads only the condition's columns
        nothing = {f.name: F.lit(None) for f in ctx.schema.fields}
        return t.filter(self._cond()).select(*self.output(ctx, t, F.lit(KIND_DELETE), F.lit(False), nothing))

    def affected_files(self, ctx: _Context, t: DataFrame) -> DataFrame | None:
        return t.filter(self._cond()).select(t[KEY])

    def rewritten_rows(self, ctx: _Context, t: DataFrame) -> DataFrame:
        kind = F.when(self._cond(), F.lit(KIND_DELETE)).otherwise(F.lit(KIND_KEEP))
        return t.select(*self.output(ctx, t, kind, F.lit(False), {}))


class UpdateChange(DeleteChange):
    command = "update"

    def __init__(
        self,
        spark: SparkSession,
        load: Callable[[], Table],
        alias: str | None,
        condition: str | Column | None,
        assignments: Mapping[str, str | Column],
    ) -> None:
        super().__init__(spark, load, alias, condition)
        self.assignments = dict(assignments)

    def whole_file_deletes(self) -> bool:
        return False

    def _values(self, ctx: _Context) -> dict[str, Column]:
        return resolve_assignments(ctx.schema, self.assignments, "update")

    def changed_rows(self, ctx: _Context, t: DataFrame) -> DataFrame:
        values = self._values(ctx)
        return t.filter(self._cond()).select(*self.output(ctx, t, F.lit(KIND_UPDATE), F.lit(False), values))

    def rewritten_rows(self, ctx: _Context, t: DataFrame) -> DataFrame:
        cond = self._cond()
        kind = F.when(cond, F.lit(KIND_UPDATE)).otherwise(F.lit(KIND_KEEP))
        values = {
            name: F.when(cond, value).otherwise(t[_quoted(name)]) for name, value in self._values(ctx).items()
        }
        return t.select(*self.output(ctx, t, kind, F.lit(False), values))


def resolve_assignments(
    schema: Schema, assignments: Mapping[str, str | Column], what: str
) -> dict[str, Column]:
    """Assignments keyed by the table's own column names (matched case-insensitively, an
    ``alias.`` prefix dropped) with their values as Columns."""
    by_lower = {f.name.lower(): f.name for f in schema.fields}
    out: dict[str, Column] = {}
    for key, value in assignments.items():
        if not isinstance(key, str):
            raise ValidationError(f"{what}: column names must be strings, got {key!r}")
        name = by_lower.get(key.lower())
        if name is None and "." in key:
            name = by_lower.get(key.rsplit(".", 1)[1].strip("`").lower())
        if name is None:
            from icefloe.errors import SchemaError

            raise SchemaError(
                f"{what}: {key!r} is not a column of the table",
                hint=f"table columns: {', '.join(f.name for f in schema.fields)}",
                column=key,
            )
        if name in out:
            raise ValidationError(f"{what}: column {name!r} is assigned twice")
        out[name] = to_column(value) if not isinstance(value, Column) else value
    return out


def _nanosecond_columns(schema: Schema) -> list[str]:
    """Names of the columns (nested ones dotted) whose type holds nanosecond timestamps."""
    from icefloe.spec.types import TimestampNsType, TimestamptzNsType

    return [
        schema.column_name(fid)
        for fid in schema.leaf_field_ids()
        if isinstance(schema.find_type(fid), TimestampNsType | TimestamptzNsType)
    ]
