"""The second half of the Spark demo: the rest of ``tpch.lineitem``'s life after ingest and the
late batch, each step printed with what it did to the table.

    tag 'ingested'                  manage_snapshots().create_tag        (kept through expiry)
    change-data MERGE               icefloe.spark.table(...).merge(...)  (merge-on-read: deletes files)
    schema change, then new rows    update_schema().add_column           + df.write.format("icefloe")
    partition change, then rows     update_spec(): month -> year         + df.write.format("icefloe")
    a crashed writer's file         left in the data directory           (an orphan)
    health, maintenance, health     table.health(); rewrite_data_files, expire_snapshots,
                                    remove_orphan_files, all with spark=
    a bad batch rolled back         append, a query finds it, manage_snapshots().rollback_to
    time travel                     the tag against now, read on Spark
    metadata tables                 ns.t.snapshots / .history / .partitions / .files on Spark
    how to go on                    icefloe commands against the demo's catalog

Every stage checks itself (the MERGE's counts against the change batch, rows before and after
against what each stage added and removed, the orphan gone and no live file lost) and stops
the demo with a message when a check fails. The Spark DataFrames are built with SQL text
(``selectExpr``): this module never imports pyspark.
"""

from __future__ import annotations

import datetime as dt
import io
import shlex
import shutil
import sys
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from icefloe.cli._demo_progress import Callback, SparkProgress
from icefloe.cli.demo import CATALOG_NAME, _say, _step, _table_text, _without_password
from icefloe.table import Table
from icefloe.table._repr import format_bytes
from icefloe.table.health import TableHealth, describe

__all__ = ["LifeResult", "run_life"]

TABLE = "tpch.lineitem"
TAG = "ingested"
# the change-data batch: what the order system changed about two months of shipments
CDC_FROM = dt.date(1998, 6, 1)
CDC_TO = dt.date(1998, 8, 1)
# new orders get keys above TPC-H's (6,000,000 per scale factor): one range per batch
NEW_ORDERS = {"merge": 1_000_000_000, "carrier": 2_000_000_000, "year": 3_000_000_000, "bad": 4_000_000_000}
CARRIERS = ("DHL", "UPS", "FedEx")
BAD_QUANTITY = -1000


@dataclass
class LifeResult:
    """What the stages did, for the summary and for tests."""

    tag_snapshot_id: int = 0
    merge: dict[str, int] = field(default_factory=dict)  # cdc batch: updates, deletes, inserts
    merge_result: Any = None
    carrier_rows: int = 0
    year_rows: int = 0
    orphan: str = ""
    orphans_removed: tuple[str, ...] = ()
    compaction: Any = None
    files_before_compaction: int = 0
    files_after_compaction: int = 0
    expired_snapshot_ids: tuple[int, ...] = ()
    pre_bad_snapshot_id: int = 0
    bad_snapshot_id: int = 0
    bad_rows: int = 0
    health_before: TableHealth | None = None
    health_after: TableHealth | None = None
    cli_commands: list[list[str]] = field(default_factory=list)
    #: (snapshot id, operation) of every snapshot the stages committed, in order
    snapshots: list[tuple[int, str]] = field(default_factory=list)


@dataclass(frozen=True)
class _TableState:
    """The table as the current snapshot's summary totals describe it."""

    snapshot_ids: frozenset[int]
    current: int | None
    data_files: int
    delete_files: int
    bytes: int
    records: int

    @staticmethod
    def of(t: Table) -> _TableState:
        snap = t.current_snapshot()
        p = snap.summary.properties if snap is not None else {}
        return _TableState(
            frozenset(s.snapshot_id for s in t.snapshots()),
            snap.snapshot_id if snap is not None else None,
            int(p.get("total-data-files", 0)),
            int(p.get("total-delete-files", 0)),
            int(p.get("total-files-size", 0)),
            int(p.get("total-records", 0)),
        )


def _n(p: Mapping[str, str], key: str) -> int:
    return int(p.get(key, 0))


def _effect(before: _TableState, t: Table, seen: list[tuple[int, str]] | None = None) -> None:
    """Print the snapshots a step added (and note them in ``seen``) and how the table's totals
    moved."""
    t.refresh()
    after = _TableState.of(t)
    for s in t.snapshots():
        if s.snapshot_id in before.snapshot_ids:
            continue
        p = s.summary.properties
        if seen is not None:
            seen.append((s.snapshot_id, s.summary.operation.value))
        parts = [f"+{_n(p, 'added-data-files')} -{_n(p, 'deleted-data-files')} data files"]
        if _n(p, "added-delete-files") or _n(p, "removed-delete-files"):
            parts.append(f"+{_n(p, 'added-delete-files')} -{_n(p, 'removed-delete-files')} delete files")
        parts.append(
            f"+{format_bytes(_n(p, 'added-files-size'))} -{format_bytes(_n(p, 'removed-files-size'))}"
        )
        parts.append(f"+{_n(p, 'added-records'):,} -{_n(p, 'deleted-records'):,} rows")
        if _n(p, "added-position-deletes"):
            parts.append(f"{_n(p, 'added-position-deletes'):,} position deletes")
        _say(f"    snapshot {s.snapshot_id} ({s.summary.operation.value}): " + ", ".join(parts))
    if after.current != before.current and after.current in before.snapshot_ids:
        _say(f"    current snapshot moved back to {after.current}")
    gone = len(before.snapshot_ids - after.snapshot_ids)
    _say(
        f"    table now: {len(after.snapshot_ids)} snapshots"
        + (f" ({gone} removed)" if gone else "")
        + f", {after.data_files} data files ({after.data_files - before.data_files:+d}), "
        f"{after.delete_files} delete files ({after.delete_files - before.delete_files:+d}), "
        f"{format_bytes(after.bytes)} ({_signed_bytes(after.bytes - before.bytes)}), "
        f"{after.records:,} rows ({after.records - before.records:+,})"
    )


def _signed_bytes(n: int) -> str:
    return ("+" if n >= 0 else "-") + format_bytes(abs(n))


def health_text(h: TableHealth) -> list[str]:
    """``table.health()`` as text: the verdict, the measurements, each finding and its fix."""
    verdict = "healthy" if h.healthy else "needs maintenance"
    lines = [f"{h.table}: {verdict}", *(f"  {line}" for line in describe(h))]
    for f in h.findings:
        lines.append(f"  [{f.severity}] {f.title}")
        if f.command:
            lines.append(f"      fix: {f.command}")
    if not h.findings:
        lines.append("  no findings")
    return lines


def _columns(t: Table) -> list[str]:
    return [f.name for f in t.schema().fields]


def _select(df: Any, columns: Sequence[str], replace: dict[str, str] | None = None, **extra: str) -> Any:
    """``df`` with ``columns`` in order, some replaced by SQL expressions, plus ``extra`` ones."""
    replace = replace or {}
    exprs = [f"{replace[c]} as {c}" if c in replace else c for c in columns]
    exprs += [f"{sql} as {name}" for name, sql in extra.items()]
    return df.selectExpr(*exprs)


def _carrier_sql() -> str:
    names = ", ".join(f"'{c}'" for c in CARRIERS)
    return f"element_at(array({names}), cast(l_linenumber % {len(CARRIERS)} as int) + 1)"


def _new_orders(df: Any, columns: Sequence[str], batch: str, **replace: str) -> Any:
    return _select(df, columns, {"l_orderkey": f"l_orderkey + {NEW_ORDERS[batch]}", **replace})


class _Life:
    def __init__(self, spark: Any, catalog: Any, lineitem_src: Any, catalog_props: dict[str, str]) -> None:
        self.spark = spark
        self.catalog = catalog
        self.src = lineitem_src
        self.props = catalog_props
        self.progress = SparkProgress(spark)
        self.result = LifeResult()
        self.orphan_written_ms = 0

    @property
    def table(self) -> Table:
        t: Table = self.catalog.load_table(TABLE)
        return t

    @contextmanager
    def stage(self, title: str) -> Iterator[Callback | None]:
        with self.progress.step(title) as callback:
            yield callback

    def write(self, df: Any) -> None:
        df.write.format("icefloe").option("catalog", CATALOG_NAME).mode("append").save(TABLE)

    def read(
        self, columns: Sequence[str] | None = None, where: str | None = None, table: str = TABLE, **kw: Any
    ) -> Any:
        import icefloe.spark

        return icefloe.spark.read(self.spark, table, columns=columns, where=where, catalog=CATALOG_NAME, **kw)

    def count(self, where: str | None = None, **kw: Any) -> int:
        return int(self.read(["l_orderkey"], where, **kw).count())

    def live_rows(self) -> int:
        """The rows the stages since the tag leave (the bad batch excluded)."""
        tag = self.table.snapshot_by_id(self.result.tag_snapshot_id)
        m = self.result.merge
        return (
            _n(tag.summary.properties, "total-records")
            - m["deletes"]
            + m["inserts"]
            + self.result.carrier_rows
            + self.result.year_rows
        )

    # ------------------------------------------------------------------ the stages
    def run(self) -> LifeResult:
        self.tag()
        self.merge()
        self.schema_change()
        self.partition_change()
        self.crashed_writer()
        self.result.health_before = self.health("health report before maintenance")
        self.compaction()
        self.expiry()
        self.orphans()
        self.result.health_after = self.health("health report after maintenance")
        self.bad_batch()
        self.time_travel()
        self.metadata_tables()
        self.how_to_go_on()
        return self.result

    def tag(self) -> None:
        t = self.table
        with self.stage(f"tag the ingested table as '{TAG}' (kept through snapshot expiry)"):
            with t.manage_snapshots() as ms:
                if TAG in t.refs():
                    ms.replace_tag(TAG, t.current_snapshot().snapshot_id)  # type: ignore[union-attr]
                else:
                    ms.create_tag(TAG)
            self.result.tag_snapshot_id = t.refresh().refs()[TAG].snapshot_id
            _say(f"    tag {TAG} -> snapshot {self.result.tag_snapshot_id}")

    def merge(self) -> None:
        import icefloe.spark

        t = self.table
        cols = _columns(t)
        window = self.src.where(f"l_shipdate >= date'{CDC_FROM}' and l_shipdate < date'{CDC_TO}'")
        updates = _select(
            window.where("l_orderkey % 2 = 0"),
            cols,
            {"l_returnflag": "'R'", "l_linestatus": "'F'", "l_comment": "'returned (change data)'"},
            op="'U'",
        )
        deletes = _select(window.where("l_orderkey % 2 = 1 and l_orderkey % 7 = 1"), cols, op="'D'")
        inserts = _select(
            window.where("l_orderkey % 11 = 2"),
            cols,
            {"l_orderkey": f"l_orderkey + {NEW_ORDERS['merge']}"},
            op="'I'",
        )
        cdc = updates.unionByName(deletes).unionByName(inserts).cache()
        try:
            title = (
                f"change-data MERGE: order changes for shipments of {CDC_FROM:%b}-{CDC_TO:%b %Y} "
                "(updates, inserts, deletes) with icefloe.spark.table(...).merge(...)"
            )
            with self.stage(title):
                counts = {r["op"]: int(r["count"]) for r in cdc.groupBy("op").count().collect()}
                batch = {k: counts.get(k[0].upper(), 0) for k in ("updates", "deletes", "inserts")}
                self.result.merge = batch
                _say(
                    f"    change batch: {batch['updates']:,} updates (returns recorded), "
                    f"{batch['inserts']:,} inserts (new orders), "
                    f"{batch['deletes']:,} deletes (cancelled lines)"
                )
                with t.transaction() as tx:  # deletes as delete files: compaction applies them later
                    tx.set_properties(**{"write.merge.mode": "merge-on-read"})
                before = _TableState.of(t.refresh())
                res = (
                    icefloe.spark.table(self.spark, TABLE, catalog=CATALOG_NAME)
                    .alias("t")
                    .merge(
                        cdc.alias("s"),
                        "t.l_orderkey = s.l_orderkey and t.l_linenumber = s.l_linenumber "
                        "and t.l_shipdate = s.l_shipdate",
                    )
                    .when_matched_delete(condition="s.op = 'D'")
                    .when_matched_update_all()
                    .when_not_matched_insert_all(condition="s.op = 'I'")
                    .execute()
                )
                self.result.merge_result = res
                _say(
                    f"    merge ({res.mode}): {res.rows_updated:,} updated, {res.rows_inserted:,} inserted, "
                    f"{res.rows_deleted:,} deleted; looked at {res.files_planned} of {before.data_files} "
                    f"data files (the ON condition's l_shipdate range prunes the rest)"
                )
                _effect(before, t, self.result.snapshots)
                got = (res.rows_updated, res.rows_inserted, res.rows_deleted)
                if got != (batch["updates"], batch["inserts"], batch["deletes"]):
                    raise SystemExit(f"MERGE counts {got} do not match the change batch {batch}")
        finally:
            cdc.unpersist()

    def schema_change(self) -> None:
        t = self.table
        with self.stage("schema change: add column l_carrier, then write rows that use it"):
            before = _TableState.of(t)
            with t.update_schema() as u:
                u.add_column("l_carrier", pa.string(), doc="the shipping carrier, recorded from now on")
            t.refresh()
            schema = t.schema()
            _say(f"    schema {schema.schema_id}: {len(schema.fields)} columns, l_carrier added (optional)")
            rows = self.src.where(f"l_shipdate >= date'{CDC_TO}' and l_orderkey % 13 = 3")
            self.write(_new_orders(rows, _columns(t), "carrier", l_carrier=_carrier_sql()))
            by_carrier = self.read(["l_carrier"]).groupBy("l_carrier").count().orderBy("l_carrier").toArrow()
            counts = zip(by_carrier["l_carrier"].to_pylist(), by_carrier["count"].to_pylist(), strict=True)
            self.result.carrier_rows = sum(n for c, n in counts if c)
            _say("    rows per carrier (older rows read as null: written before the column existed)")
            _say(_table_text(by_carrier))
            _effect(before, t, self.result.snapshots)

    def partition_change(self) -> None:
        t = self.table
        month = t.spec().fields[0].name
        title = f"partition change: month -> year (drop {month}, add year(l_shipdate)), then write more"
        with self.stage(title):
            before = _TableState.of(t)
            with t.update_spec() as u:
                u.remove_field(month)
                u.add_field("year(l_shipdate)")
            t.refresh()
            _say(
                f"    spec {t.spec().spec_id}: {', '.join(f.name for f in t.spec().fields)} "
                "(files written before keep their monthly spec)"
            )
            rows = self.src.where(f"l_shipdate >= date'{CDC_TO}' and l_orderkey % 13 = 4")
            self.write(_new_orders(rows, _columns(t), "year", l_carrier=_carrier_sql()))
            snap = t.refresh().current_snapshot()
            assert snap is not None
            self.result.year_rows = _n(snap.summary.properties, "added-records")
            _effect(before, t, self.result.snapshots)

    def crashed_writer(self) -> None:
        t = self.table
        year = t.spec().fields[-1].name
        path = f"{t.location}/data/{year}=1998/00000-0-crashed-writer-{uuid.uuid4()}.parquet"
        with _step("a writer crashes: its data file stays in the table's data directory, never committed"):
            buf = io.BytesIO()
            pq.write_table(pa.table({"l_orderkey": pa.array([1, 2, 3], pa.int64())}), buf)
            with t.io.new_output(path).create() as f:
                f.write(buf.getvalue())
            self.result.orphan = path
            self.orphan_written_ms = int(time.time() * 1000)
            _say(f"    left behind: {path} ({format_bytes(len(buf.getvalue()))})")

    def health(self, title: str) -> TableHealth:
        with _step(title):
            h = self.table.health()
            for line in health_text(h):
                _say(f"    {line}")
        return h

    def compaction(self) -> None:
        t = self.table
        title = "compaction on Spark: table.maintenance.rewrite_data_files(spark=spark)"
        with self.stage(title) as callback:
            before = _TableState.of(t)
            res = t.maintenance.rewrite_data_files(spark=self.spark, progress=callback)
            self.result.compaction = res
            _say(
                f"    rewrote {res.rewritten_data_files_count} data files "
                f"({format_bytes(res.rewritten_bytes_count)}) into {res.added_data_files_count} "
                f"({format_bytes(res.added_bytes_count)}) in {len(res.rewrite_results)} groups, "
                f"applying the MERGE's deletes and moving old files into the yearly spec; "
                f"{res.removed_delete_files_count} delete files dropped"
            )
            _effect(before, t, self.result.snapshots)
            self.result.files_before_compaction = before.data_files + before.delete_files
            after = _TableState.of(t)
            self.result.files_after_compaction = after.data_files + after.delete_files
            live = self.live_rows()
            if after.delete_files == 0 and after.records != live:
                raise SystemExit(f"compaction left {after.records:,} rows, the stages say {live:,}")

    def expiry(self) -> None:
        t = self.table
        with self.stage("snapshot expiry: table.maintenance.expire_snapshots(older_than=now, retain_last=1)"):
            before = _TableState.of(t)
            res = t.maintenance.expire_snapshots(
                older_than=dt.datetime.now(dt.UTC), retain_last=1, spark=self.spark
            )
            self.result.expired_snapshot_ids = tuple(res.expired_snapshot_ids)
            kinds = ", ".join(f"{len(v)} {k.replace('_', ' ')}" for k, v in res.files.items() if v) or "none"
            _say(
                f"    expired {len(res.expired_snapshot_ids)} snapshots; kept the current one and tag "
                f"{TAG}'s; files only they reached, deleted: {kinds}"
            )
            _effect(before, t, self.result.snapshots)

    def orphans(self) -> None:
        t = self.table
        cutoff_ms = self.orphan_written_ms + 1000
        while time.time() * 1000 <= cutoff_ms:  # older_than must be in the past
            time.sleep(0.1)
        cutoff = dt.datetime.fromtimestamp(cutoff_ms / 1000, dt.UTC)
        title = f"orphan cleanup: remove_orphan_files(older_than={cutoff:%H:%M:%S} UTC)"
        with self.stage(title):
            _say(
                "    the cutoff is just after the crash; by default it is 3 days ago, so that files of "
                "writers still committing survive. The listing and the manifests are read here on the "
                "driver: for a table of a few hundred files that beats Spark jobs (spark=spark lists "
                "and reads them on executors)"
            )
            res = t.maintenance.remove_orphan_files(older_than=cutoff)
            self.result.orphans_removed = tuple(res.orphan_files)
            for p in res.orphan_files:
                _say(f"    removed {p}")
            if self.result.orphan not in res.orphan_files or t.io.exists(self.result.orphan):
                raise SystemExit(f"the crashed writer's file was not removed: {self.result.orphan}")
            missing = [p for p in _live_files(t) if not t.io.exists(p)]
            if missing:
                raise SystemExit(f"{len(missing)} files the table references are gone, e.g. {missing[0]}")
            _say(f"    every file the table's snapshots reference is still there ({len(_live_files(t))})")

    def bad_batch(self) -> None:
        t = self.table
        title = f"a bad batch: rows with l_quantity = {BAD_QUANTITY} are appended, found, rolled back"
        with self.stage(title):
            before = _TableState.of(t)
            self.result.pre_bad_snapshot_id = before.current or 0
            rows = self.src.where(f"l_shipdate >= date'{CDC_TO}' and l_orderkey % 13 = 5")
            quantity = f"cast({BAD_QUANTITY} as decimal(15, 2))"
            self.write(_new_orders(rows, _columns(t), "bad", l_quantity=quantity, l_carrier=_carrier_sql()))
            snap = t.refresh().current_snapshot()
            assert snap is not None
            self.result.bad_snapshot_id = snap.snapshot_id
            _effect(before, t, self.result.snapshots)
            check = "l_quantity <= 0"
            bad = self.count(check)
            self.result.bad_rows = bad
            _say(f"    check query (where {check}): {bad:,} rows: the batch is wrong")
            with_bad = _TableState.of(t)
            with t.manage_snapshots() as ms:
                ms.rollback_to(self.result.pre_bad_snapshot_id)
            _say(f"    rolled back to snapshot {before.current} (manage_snapshots().rollback_to)")
            _effect(with_bad, t, self.result.snapshots)
            left = self.count(check)
            _say(f"    check query again: {left} rows")
            if bad == 0 or left != 0 or t.refresh().current_snapshot().snapshot_id != before.current:  # type: ignore[union-attr]
                raise SystemExit(f"rollback check failed: {bad} bad rows found, {left} left")

    def time_travel(self) -> None:
        t = self.table
        tag_sid = self.result.tag_snapshot_id
        with self.stage(f"time travel: tag '{TAG}' (snapshot {tag_sid}) against now, on Spark"):
            rows = []
            for label, kw in ((f"tag {TAG}", {"tag": TAG}), ("now", {})):
                df = self.read(["l_orderkey", "l_returnflag"], **kw)
                agg = df.selectExpr(
                    "count(*) as n",
                    "count(case when l_returnflag = 'R' then 1 end) as returned",
                    f"count(case when l_orderkey >= {min(NEW_ORDERS.values())} then 1 end) as new_orders",
                ).collect()[0]
                snap = t.snapshot_by_id(tag_sid) if kw else t.current_snapshot()
                assert snap is not None
                schema = t.schemas()[snap.schema_id] if snap.schema_id is not None else t.schema()
                counts = (int(agg["n"]), int(agg["returned"]), int(agg["new_orders"]))
                rows.append((label, snap.snapshot_id, *counts, len(schema.fields)))
            _say(
                _table_text(
                    pa.table(
                        {
                            "as of": [r[0] for r in rows],
                            "snapshot": [str(r[1]) for r in rows],
                            "rows": [f"{r[2]:,}" for r in rows],
                            "returned (R)": [f"{r[3]:,}" for r in rows],
                            "new-order rows": [f"{r[4]:,}" for r in rows],
                            "columns": [str(r[5]) for r in rows],
                        }
                    )
                )
            )
            m = self.result.merge
            expected = self.live_rows()
            if rows[1][2] != expected:
                raise SystemExit(f"rows now {rows[1][2]:,}, expected {expected:,} from the stages")
            _say(
                f"    now = tag - {m['deletes']:,} deleted + {m['inserts']:,} merged in + "
                f"{self.result.carrier_rows + self.result.year_rows:,} appended (the bad batch is gone)"
            )

    def metadata_tables(self) -> None:
        with self.stage("metadata tables: tpch.lineitem.snapshots and .partitions on Spark, files"):
            t = self.table
            refs: dict[int, list[str]] = {}
            for name, ref in sorted(t.refs().items()):
                refs.setdefault(ref.snapshot_id, []).append(name)
            snapshots = self.read(
                ["snapshot_id", "operation", "summary", "committed_at"], table=f"{TABLE}.snapshots"
            )
            rows = snapshots.orderBy("committed_at").selectExpr(
                "snapshot_id",
                "operation",
                "summary['added-data-files'] as added_files",
                "summary['total-records'] as total_records",
            )
            shown = rows.toArrow()
            shown = shown.append_column(
                "refs", pa.array([", ".join(refs.get(i, [])) for i in shown["snapshot_id"].to_pylist()])
            )
            _say("    spark.read ... load('tpch.lineitem.snapshots'), with the refs pointing at each")
            _say("    (none: the rolled-back batch, kept until an expiry removes it)")
            _say(_table_text(shown))
            partitions = self.read(table=f"{TABLE}.partitions").selectExpr(
                "coalesce(date_format(add_months(date'1970-01-01', partition.l_shipdate_month), 'yyyy-MM'), "
                "cast(1970 + partition.l_shipdate_year as string)) as partition",
                "spec_id",
                "record_count as rows",
                "file_count as files",
                "total_data_file_size_in_bytes as bytes",
                "position_delete_file_count as delete_files",
            )
            _say("    tpch.lineitem.partitions (the current snapshot's)")
            _say(_table_text(partitions.orderBy("spec_id", "partition").toArrow()))
            files = t.inspect.files()
            by_spec = files.group_by(["spec_id", "content"]).aggregate(
                [("file_path", "count"), ("record_count", "sum"), ("file_size_in_bytes", "sum")]
            )
            _say("    table.inspect.files(), by spec and content (0 = data, 1 = position deletes)")
            by_spec = by_spec.sort_by([("spec_id", "ascending"), ("content", "ascending")])
            names = ["spec_id", "content", "file_path_count", "record_count_sum", "file_size_in_bytes_sum"]
            by_spec = by_spec.select(names).rename_columns(["spec_id", "content", "files", "rows", "bytes"])
            _say(_table_text(by_spec))

    def how_to_go_on(self) -> None:
        exe = _icefloe_command()
        base = [*exe, *cli_catalog_args(self.props)]
        commands = [
            ["describe", TABLE],
            ["snapshots", TABLE],
            ["refs", TABLE],
            ["health", TABLE],
            ["query", f"SELECT l_carrier, count(*) AS n FROM {TABLE} GROUP BY l_carrier ORDER BY l_carrier"],
        ]
        self.result.cli_commands = commands
        _say("\nGo on from here with the icefloe command (the demo's catalog is named 'demo'):")
        for c in commands:
            _say("    " + shlex.join([*base, *c]))
        _say("    " + shlex.join([*base, "--help"]))


def _live_files(t: Table) -> set[str]:
    """Every data and delete file the table's remaining snapshots reference."""
    files = t.inspect.all_files()
    return set(files["file_path"].to_pylist())


def _icefloe_command() -> list[str]:
    if shutil.which("icefloe"):
        return ["icefloe"]
    exe = Path(sys.executable).parent / "icefloe"
    if exe.exists():
        try:
            return [str(exe.relative_to(Path.cwd()))]
        except ValueError:
            return [str(exe)]
    return [sys.executable, "-m", "icefloe.cli"]


_SECRET_WORDS = ("secret", "password", "token", "credential", "session")


def cli_catalog_args(props: dict[str, str]) -> list[str]:
    """The ``icefloe`` global options that open the demo's catalog (secrets masked)."""
    args = ["--catalog", CATALOG_NAME]
    for key, value in props.items():
        if key == "type":
            continue
        if key == "uri":
            args += ["--uri", _without_password(value)]
        elif key == "warehouse":
            args += ["--warehouse", value]
        else:
            masked = "***" if any(w in key.lower() for w in _SECRET_WORDS) else value
            args += ["-p", f"{key}={masked}"]
    return args


def run_life(spark: Any, catalog: Any, lineitem_src: Any, catalog_props: dict[str, str]) -> LifeResult:
    """The stages after the late batch (module docstring), on ``tpch.lineitem``."""
    return _Life(spark, catalog, lineitem_src, catalog_props).run()
