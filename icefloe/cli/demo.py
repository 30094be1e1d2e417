"""The demo pipeline: TPC-H orders and lineitem into partitioned Iceberg tables, queries, a late batch
into old partitions, and time travel to compare before and after; on Spark, then the rest of the
table's life (a change-data MERGE, schema and partition changes, health, maintenance, a bad batch
rolled back, time travel to a tag, metadata tables: :mod:`icefloe.cli._demo_life`).

Runs on the embedded defaults: a SQLite catalog and a local warehouse under ``--workdir``;
``--warehouse s3://bucket/path`` puts the tables on an object store, ``--catalog-uri
postgresql+psycopg://...`` the catalog in PostgreSQL and ``--catalog-uri http://host:port`` behind
a REST catalog. The catalog is named ``demo``: its properties (the store's ``s3.endpoint``,
``s3.access-key-id``, ...) come from ``-p KEY=VALUE``, from ``ICEFLOE_CATALOG__DEMO__*`` environment
variables or from ``~/.icefloe.yaml``, as for any catalog (docs/catalogs.md).
Two engines run the same pipeline: Spark (the default; :mod:`icefloe.cli._demo_spark`, local[2])
and Arrow (``--engine arrow``: no JVM, DuckDB for the SQL). This module holds what both share
(data generation, the catalog, the Q6 cross-check, printing) and the Arrow engine.
"""

from __future__ import annotations

import argparse
import datetime as dt
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import icefloe
from icefloe.errors import IcefloeError
from icefloe.table import Table

__all__ = ["main"]

# The late batch: March 1995 shipments received after the month closed. The rest of March is
# ingested on time, so the late rows land in a partition (month=1995-03) that already has files.
_LATE_FROM = dt.date(1995, 3, 1)
_LATE_TO = dt.date(1995, 4, 1)
# the demo's catalog: ICEFLOE_CATALOG__DEMO__* variables and ~/.icefloe.yaml's catalog.demo apply
CATALOG_NAME = "demo"


def _say(msg: str) -> None:
    print(msg, flush=True)


@contextmanager
def _step(title: str) -> Iterator[None]:
    _say(f"==> {title}")
    t0 = time.perf_counter()
    yield
    _say(f"    done in {time.perf_counter() - t0:.1f}s")


def _tpchgen(out: Path, scale: float) -> None:
    exe = shutil.which("tpchgen-cli") or str(Path(sys.executable).parent / "tpchgen-cli")
    if (out / "orders.parquet").exists() and (out / "lineitem.parquet").exists():
        _say(f"    reusing TPC-H data in {out}")
        return
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [exe, "parquet", "-s", str(scale), "--tables=orders,lineitem", f"--output-dir={out}"],
        check=True,
    )


def _plain(t: pa.Table) -> pa.Table:
    """tpchgen writes string_view columns and its own field ids; start from plain Arrow types."""
    fields = []
    for f in t.schema:
        typ = pa.string() if pa.types.is_string_view(f.type) else f.type
        fields.append(pa.field(f.name, typ, nullable=f.nullable))
    return t.cast(pa.schema(fields))


def _query(con: Any, sql: str) -> pa.Table:
    rel = con.sql(sql)
    to_arrow = getattr(rel, "to_arrow_table", None) or rel.arrow  # duckdb 2 renamed it
    return to_arrow()


def _q6_reference(data: pa.Table) -> float:
    """Q6 computed straight from the source Parquet data, to check what the table returns."""
    d = data.filter(
        pc.and_(
            pc.and_(
                pc.greater_equal(data["l_shipdate"], pa.scalar(dt.date(1995, 1, 1), pa.date32())),
                pc.less(data["l_shipdate"], pa.scalar(dt.date(1996, 1, 1), pa.date32())),
            ),
            pc.and_(
                pc.and_(
                    pc.greater_equal(pc.cast(data["l_discount"], pa.float64()), 0.05),
                    pc.less_equal(pc.cast(data["l_discount"], pa.float64()), 0.07),
                ),
                pc.less(pc.cast(data["l_quantity"], pa.float64()), 24),
            ),
        )
    )
    total = pc.sum(
        pc.multiply(pc.cast(d["l_extendedprice"], pa.float64()), pc.cast(d["l_discount"], pa.float64()))
    ).as_py()
    return float(total or 0.0)


def _q1(lineitem: Table, snapshot_id: int | None = None) -> pa.Table:
    """TPC-H Q1 (pricing summary) over shipments up to 1998-09-02."""
    scan = lineitem.scan(
        row_filter="l_shipdate <= '1998-09-02'",
        selected_fields=(
            "l_returnflag",
            "l_linestatus",
            "l_quantity",
            "l_extendedprice",
            "l_discount",
            "l_tax",
        ),
        snapshot_id=snapshot_id,
    )
    con = scan.to_duckdb("lineitem")
    return _query(
        con,
        """
        select l_returnflag, l_linestatus, sum(l_quantity) as sum_qty,
               sum(l_extendedprice) as sum_base_price,
               sum(l_extendedprice * (1 - l_discount)) as sum_disc_price,
               count(*) as count_order
        from lineitem group by all order by all
        """,
    )


def _q6(lineitem: Table, snapshot_id: int | None = None) -> tuple[float, Any]:
    """TPC-H Q6 (forecast revenue change) for 1995; returns revenue and the scan for its stats."""
    scan = lineitem.scan(
        row_filter="l_shipdate >= '1995-01-01' and l_shipdate < '1996-01-01' "
        "and l_discount between 0.05 and 0.07 and l_quantity < 24",
        selected_fields=("l_extendedprice", "l_discount"),
        snapshot_id=snapshot_id,
    )
    t = scan.to_arrow()
    revenue = (
        pc.sum(
            pc.multiply(pc.cast(t["l_extendedprice"], pa.float64()), pc.cast(t["l_discount"], pa.float64()))
        ).as_py()
        or 0.0
    )
    return float(revenue), scan


def _q3(orders: Table, lineitem: Table) -> pa.Table:
    """A TPC-H Q3-style join: top unshipped orders by revenue as of 1995-03-15."""
    con = orders.scan(
        row_filter="o_orderdate < '1995-03-15'",
        selected_fields=("o_orderkey", "o_orderdate", "o_shippriority"),
    ).to_duckdb("orders")
    lineitem.scan(
        row_filter="l_shipdate > '1995-03-15'",
        selected_fields=("l_orderkey", "l_extendedprice", "l_discount"),
    ).to_duckdb("lineitem", con)
    return _query(
        con,
        """
        select l_orderkey, sum(l_extendedprice * (1 - l_discount)) as revenue, o_orderdate
        from orders join lineitem on o_orderkey = l_orderkey
        group by l_orderkey, o_orderdate order by revenue desc, o_orderdate limit 5
        """,
    )


def _table_text(t: pa.Table, max_rows: int = 10) -> str:
    cols = t.column_names
    rows = [[_fmt(v) for v in r.values()] for r in t.slice(0, max_rows).to_pylist()]
    widths = [max([len(c)] + [len(r[i]) for r in rows]) for i, c in enumerate(cols)]
    line = "  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True))
    out = ["    " + line, "    " + "  ".join("-" * w for w in widths)]
    out += ["    " + "  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(out)


def _fmt(v: Any) -> str:
    if isinstance(v, float | Decimal):
        return f"{v:,.2f}"
    return str(v)


def _prepare_workdir(workdir: Path, fresh: bool, catalog: dict[str, str] | None = None) -> None:
    defaults = _catalog_properties(workdir)
    if fresh and (catalog is None or catalog == defaults):
        # the catalog and the warehouse go together: one without the other is a broken catalog
        # (elsewhere the demo's tables are dropped with purge before they are created again)
        shutil.rmtree(workdir / "warehouse", ignore_errors=True)
        (workdir / "catalog.db").unlink(missing_ok=True)
    workdir.mkdir(parents=True, exist_ok=True)


def _source_dir(workdir: Path, scale: float) -> Path:
    return workdir / "tpch" / f"sf{scale}"


def _catalog_properties(
    workdir: Path,
    warehouse: str | None = None,
    uri: str | None = None,
    extra: dict[str, str] | None = None,
) -> dict[str, str]:
    """The embedded defaults: a SQLite catalog file and a local warehouse, both under ``workdir``;
    ``warehouse`` / ``uri`` / ``extra`` properties (s3.endpoint, ...) replace or add to them. An
    http(s) ``uri`` is a REST catalog, whose server picks the warehouse unless one is given."""
    rest = bool(uri) and str(uri).startswith(("http://", "https://"))
    props = {
        "type": "rest" if rest else "sql",
        "uri": uri or f"sqlite:///{(workdir / 'catalog.db').resolve()}",
    }
    if warehouse or not rest:
        props["warehouse"] = warehouse or (workdir / "warehouse").resolve().as_uri()
    props.update(extra or {})
    return props


def _storage_tip(catalog: dict[str, str]) -> str | None:
    """Why an object store may have been unreachable: no endpoint means AWS itself."""
    from icefloe.catalog._config import catalog_properties

    merged = catalog_properties(CATALOG_NAME, **catalog)
    warehouse = merged.get("warehouse", "")
    if not warehouse.startswith(("s3://", "s3a://", "s3n://")) or merged.get("s3.endpoint"):
        return None
    return (
        "note: no s3.endpoint is set for catalog 'demo', so its S3 client talks to AWS. For another "
        "S3-compatible store give -p s3.endpoint=URL -p s3.access-key-id=... -p s3.secret-access-key=... "
        "-p s3.region=... -p s3.path-style-access=true, or export ICEFLOE_CATALOG__DEMO__S3__ENDPOINT=... "
        "and the others (scripts/seaweedfs.sh env DIR prints them for the project's SeaweedFS server)."
    )


def _create_tables(catalog: Any, orders_schema: pa.Schema, lineitem_schema: pa.Schema) -> tuple[Table, Table]:
    """Fresh ``tpch.orders`` (bucket(16, o_custkey)) and ``tpch.lineitem`` (month(l_shipdate))."""
    if not catalog.namespace_exists("tpch"):
        catalog.create_namespace("tpch")
    for name in ("tpch.orders", "tpch.lineitem"):
        if catalog.table_exists(name):
            catalog.drop_table(name, purge=True)
    orders = catalog.create_table("tpch.orders", schema=orders_schema, partition_by=["bucket(16, o_custkey)"])
    lineitem = catalog.create_table(
        "tpch.lineitem", schema=lineitem_schema, partition_by=["month(l_shipdate)"]
    )
    for t in (orders, lineitem):
        schema = t.schema()
        spec = ", ".join(f"{f.transform}({schema.column_name(f.source_id)})" for f in t.spec().fields)
        _say(f"    {t.name:<14} partitioned by {spec}")
    return orders, lineitem


def _print_summary(
    workdir: Path, tables: tuple[Table, ...], t_start: float, catalog: dict[str, str] | None = None
) -> None:
    _say("\nSummary")
    for t in tables:
        t = t.refresh()
        _say(f"  {t.name}: {len(t.snapshots())} snapshots, metadata {t.metadata_location}")
        for s in t.snapshots():
            p = s.summary.properties
            _say(
                f"    {s.snapshot_id}  {s.summary.operation.value:<9} +{p.get('added-records', '0'):>8} rows"
                f"  total {p.get('total-records', '?'):>8} rows in {p.get('total-data-files', '?')} files"
            )
    props = catalog or _catalog_properties(workdir)
    _say(f"  catalog: {_without_password(props['uri'])}")
    _say(f"  warehouse: {props.get('warehouse', '(chosen by the REST catalog)')}")
    _say(f"finished in {time.perf_counter() - t_start:.1f}s")


def _without_password(uri: str) -> str:
    scheme, sep, rest = uri.partition("://")
    userinfo, at, host = rest.rpartition("@")
    if not sep or not at or ":" not in userinfo:
        return uri
    return f"{scheme}://{userinfo.split(':', 1)[0]}:***@{host}"


def run(workdir: Path, scale: float, fresh: bool, catalog: dict[str, str] | None = None) -> None:
    """The pipeline on the Arrow engine (``--engine arrow``); ``catalog`` properties default to
    the embedded SQLite catalog and local warehouse under ``workdir``."""
    _prepare_workdir(workdir, fresh, catalog)
    t_start = time.perf_counter()
    src = _source_dir(workdir, scale)

    with _step(f"generating TPC-H data at scale factor {scale} (tpchgen-cli)"):
        _tpchgen(src, scale)
        orders_data = _plain(pq.read_table(src / "orders.parquet"))
        lineitem_data = _plain(pq.read_table(src / "lineitem.parquet"))
        _say(f"    orders: {orders_data.num_rows:,} rows, lineitem: {lineitem_data.num_rows:,} rows")

    props = catalog or _catalog_properties(workdir)
    cat = icefloe.load_catalog(CATALOG_NAME, **props)
    with _step("creating partitioned tables"):
        orders, lineitem = _create_tables(cat, orders_data.schema, lineitem_data.schema)

    # Hold back March 1995 shipments received after March: they arrive late, into an old partition.
    late_mask = pc.and_(
        pc.and_(
            pc.greater_equal(lineitem_data["l_shipdate"], pa.scalar(_LATE_FROM, pa.date32())),
            pc.less(lineitem_data["l_shipdate"], pa.scalar(_LATE_TO, pa.date32())),
        ),
        pc.greater_equal(lineitem_data["l_receiptdate"], pa.scalar(_LATE_TO, pa.date32())),
    )
    on_time = lineitem_data.filter(pc.invert(late_mask))
    late = lineitem_data.filter(late_mask)

    with _step("ingesting orders and lineitem"):
        orders.append(orders_data)
        lineitem.append(on_time)
        snap = lineitem.current_snapshot()
        assert snap is not None
        _say(
            f"    lineitem snapshot {snap.snapshot_id}: "
            f"{snap.summary.properties.get('added-data-files')} files, "
            f"{snap.summary.properties.get('added-records')} rows"
        )

    with _step("TPC-H Q1 (pricing summary)"):
        _say(_table_text(_q1(lineitem)))
    with _step("TPC-H Q3-style join (top unshipped orders)"):
        _say(_table_text(_q3(orders, lineitem)))
    with _step("TPC-H Q6 (forecast revenue, 1995)"):
        before_id = lineitem.current_snapshot().snapshot_id  # type: ignore[union-attr]
        revenue_before, scan = _q6(lineitem)
        st = scan.planning_stats
        _say(
            f"    revenue = {revenue_before:,.2f}; planning read {st.manifests_total - st.manifests_skipped} "
            f"of {st.manifests_total} manifests, kept {st.files_planned} files, "
            f"skipped {st.files_skipped_by_partition} by partition and {st.files_skipped_by_metrics} by stats"
        )

    with _step(
        f"late batch: {late.num_rows:,} shipments from {_LATE_FROM:%B %Y} received after the month arrive"
    ):
        lineitem.append(late)

    with _step("time travel: Q6 before and after the late batch"):
        revenue_after, _ = _q6(lineitem)
        revenue_then, _ = _q6(lineitem, snapshot_id=before_id)
        _say(f"    as of snapshot {before_id}: {revenue_then:,.2f}")
        _say(
            f"    now:                        {revenue_after:,.2f}  "
            f"(+{revenue_after - revenue_then:,.2f} from late data)"
        )
        expected = _q6_reference(lineitem_data)
        if abs(revenue_after - expected) > 1e-6 * max(1.0, expected):
            raise SystemExit(f"Q6 mismatch: table says {revenue_after}, source data says {expected}")
        _say(f"    matches Q6 computed directly on the source Parquet: {expected:,.2f}")
        count_now = lineitem.scan().count()
        count_then = lineitem.scan(snapshot_id=before_id).count()
        _say(f"    lineitem rows then/now: {count_then:,} / {count_now:,}")
        assert count_now == lineitem_data.num_rows, "every ingested row must be readable"

    _print_summary(workdir, (orders, lineitem), t_start, props)
    cat.close()


def _property(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="icefloe demo", description=__doc__.splitlines()[0] if __doc__ else "")
    p.add_argument("--workdir", type=Path, default=Path("demo-output"))
    p.add_argument("--scale", type=float, default=0.1, help="TPC-H scale factor (default 0.1)")
    p.add_argument("--keep", action="store_true", help="keep the tables of an earlier run")
    p.add_argument(
        "--engine",
        choices=("spark", "arrow"),
        default="spark",
        help="spark (default: local[2]; the whole life of the table, through the icefloe data "
        "source and Spark runners) or arrow (no JVM; ingest, queries, late data, time travel)",
    )
    p.add_argument(
        "--master", default="local[2]", help="Spark master URL (default local[2]; spark engine only)"
    )
    p.add_argument(
        "--warehouse",
        help="where the tables go (default: WORKDIR/warehouse), e.g. s3://bucket/demo; the store's "
        "settings come from -p s3.*=... or ICEFLOE_CATALOG__DEMO__S3__* variables",
    )
    p.add_argument(
        "--catalog-uri",
        help="catalog database URL (default: sqlite:///WORKDIR/catalog.db), "
        "e.g. postgresql+psycopg://user:password@127.0.0.1:5432/db, or a REST catalog's http(s) URL "
        "(with -p token=... or -p credential=ID:SECRET)",
    )
    p.add_argument(
        "-p",
        "--property",
        action="append",
        type=_property,
        default=[],
        metavar="KEY=VALUE",
        help="a property of the 'demo' catalog (FileIO settings too), repeatable: "
        "-p s3.endpoint=http://127.0.0.1:8333 -p s3.access-key-id=... -p s3.secret-access-key=... "
        "-p s3.region=us-east-1 -p s3.path-style-access=true; ICEFLOE_CATALOG__DEMO__<PROPERTY> "
        "variables work as well (scripts/seaweedfs.sh env DIR prints them)",
    )
    args = p.parse_args(argv)
    catalog = _catalog_properties(args.workdir, args.warehouse, args.catalog_uri, dict(args.property))
    try:
        if args.engine == "arrow":
            run(args.workdir, args.scale, fresh=not args.keep, catalog=catalog)
        else:
            from icefloe.cli._demo_spark import run_spark

            run_spark(args.workdir, args.scale, fresh=not args.keep, master=args.master, catalog=catalog)
    except IcefloeError as e:
        print(f"error: {e}", file=sys.stderr)
        tip = _storage_tip(catalog)
        if tip:
            print(tip, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
