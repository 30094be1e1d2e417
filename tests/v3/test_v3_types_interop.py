"""icefloe writes format v3 tables with nanosecond timestamps, column defaults and ``unknown``;
Iceberg Java 1.10 reads them (via ../shared/oracle).

Expected rows come from a Python model of the writes, never from icefloe's read path.

``v3_nanos``     timestamp_ns + timestamptz_ns, partitioned by day(ts) and bucket(4, tz); appends
                 and a delete
``v3_defaults``  columns of many types added with defaults over old files (initial-default), an
                 append without them (write-default), a changed write default, a nested default
``v3_unknown``   an ``unknown`` column, later promoted to long

What each Java reader does with them (Iceberg 1.10.2 on Spark 3.5.8, the oracle's versions):

* Java's generic reader (``IcebergGenerics``, iceberg-data in the Spark runtime jar) reads all
  three tables: the checks below compare its rows with the model, and the files Java's scan
  planning keeps for nanosecond filters (its use of our bounds and partition values) with
  icefloe's. (Java 1.10's generic reader cannot apply a residual filter on a timestamp_ns
  column: "Not an instance of java.lang.Long"; so rows are compared unfiltered.)
* Spark 3.5 cannot read ``timestamp_ns`` or ``unknown`` columns (Java's ``TypeToSparkType``
  raises "Cannot convert unknown type to Spark"); the test records that error. Spark reads the
  defaults table and the table whose ``unknown`` column was promoted to long: their checksums
  (../shared/oracle/canon.py) are compared with the model's.
* PyIceberg 0.12 reads all of them (the nanosecond table through Arrow, as integers); DuckDB 1.5
  reads the defaults table (``verify_table``; it does not know ``timestamp_ns`` or ``unknown``).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import sys
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop"))

import interop_support as sup

NS = pa.timestamp("ns")
NS_TZ = pa.timestamp("ns", tz="UTC")
NS_SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("ts", NS), pa.field("tz", NS_TZ)])
BASE = 1_700_000_000_123_456_789  # 2023-11-14T22:13:20.123456789
UID = uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")
EPOCH_DATE = dt.date(1970, 1, 1)

# (column, operator, literal) filters Java and icefloe both plan and read on v3_nanos
NANO_FILTERS = [
    ("ts", "eq", "2023-11-14T22:13:20.123456789"),
    ("ts", "gt", "2023-11-14T22:13:20.123456789"),
    ("ts", "lt", "1970-01-01T00:00:00.000000000"),
    ("tz", "gt_eq", "2023-11-14T22:13:20.123456790+00:00"),
]
_OPS = {"eq": "=", "gt": ">", "lt": "<", "gt_eq": ">="}


@dataclasses.dataclass
class Built:
    name: str
    metadata_location: str
    rows: list[dict[str, Any]]  # canonical model rows of the current snapshot


def _nano_rows(ids: list[int], ts: list[int | None], tz: list[int | None]) -> pa.Table:
    return pa.table(
        {"id": pa.array(ids, pa.int64()), "ts": pa.array(ts, NS), "tz": pa.array(tz, NS_TZ)}, schema=NS_SCHEMA
    )


def _build_nanos(cat: Any) -> Built:
    t = cat.create_table(
        "v.v3_nanos",
        schema=NS_SCHEMA,
        partition_by=["day(ts)", "bucket(4, tz)"],
        properties={"format-version": "3"},
    )
    ts = [BASE - 1, BASE, BASE + 1, -1, -(86_400 * 10**9) * 500 + 3, None]
    tz = [BASE + 1, BASE, 5, None, BASE - 10**9, 1]
    t.append(_nano_rows(list(range(6)), ts, tz))
    t.append(_nano_rows([6, 7], [BASE + 3_600 * 10**9, 0], [BASE + 2, None]))
    t.delete("id = 2")
    model = [
        {"id": i, "ts": a, "tz": b}
        for i, a, b in zip(range(8), [*ts, BASE + 3_600 * 10**9, 0], [*tz, BASE + 2, None], strict=True)
        if i != 2
    ]
    return Built("v3_nanos", t.refresh().metadata_location, model)


def _days(d: dt.date) -> int:
    return (d - EPOCH_DATE).days


def _build_defaults(cat: Any) -> Built:
    base = pa.schema(
        [pa.field("id", pa.int64(), nullable=False), pa.field("s", pa.struct([pa.field("a", pa.int32())]))]
    )
    t = cat.create_table("v.v3_defaults", schema=base, properties={"format-version": "3"})
    s_type = base.field("s").type
    t.append(pa.table({"id": pa.array([1, 2], pa.int64()), "s": pa.array([{"a": 1}, None], s_type)}))
    with t.update_schema() as u:
        u.add_column("region", "string", required=True, default="EU")
        u.add_column("amount", "decimal(10, 2)", default=Decimal("1.50"))
        u.add_column("day", "date", default=dt.date(2024, 2, 29))
        u.add_column("n", "int", default=42)
        u.add_column("big", "long", default=-(2**40))
        u.add_column("ratio", "double", default=0.25)
        u.add_column("flag", "boolean", default=True)
        u.add_column("at", "timestamp", default=dt.datetime(2024, 1, 1, 10, 0, 0, 123456))
        u.add_column("at_tz", "timestamptz", default="2024-01-01T10:00:00.000001+00:00")
        u.add_column("uid", "uuid", default=UID)
        u.add_column("raw", "binary", default=b"\x00\xff")
        u.add_column("s.b", "long", default=7)
    # an append without the new columns: their write defaults are stored
    t.append(pa.table({"id": pa.array([3], pa.int64()), "s": pa.array([{"a": 3}], s_type)}))
    with t.update_schema() as u:
        u.update_column_default("region", "US")
        u.update_column_default("n", None)
    t.append(pa.table({"id": pa.array([4, 5], pa.int64()), "n": pa.array([None, 9], pa.int32())}))

    def row(i: int, s: Any, region: str, n: int | None) -> dict[str, Any]:
        return {
            "id": i,
            "s": s,
            "region": region,
            "amount": "1.50",
            "day": "2024-02-29",
            "n": n,
            "big": -(2**40),
            "ratio": 0.25,
            "flag": True,
            "at": 1_704_103_200_123_456,
            "at_tz": 1_704_103_200_000_001,
            "uid": str(UID),
            "raw": "00ff",
        }

    model = [
        row(1, {"a": 1, "b": 7}, "EU", 42),  # initial defaults over the first file
        row(2, None, "EU", 42),
        row(3, {"a": 3, "b": 7}, "EU", 42),  # write defaults stored by the second append
        row(4, None, "US", None),
        row(5, None, "US", 9),
    ]
    return Built("v3_defaults", t.metadata_location, model)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Built]:
    root = tmp_path_factory.mktemp("interop_v3_types")
    wh = root / "warehouse"
    wh.mkdir()
    cat = sup.icefloe_catalog("interop_v3_types", root / "catalog.db", wh)
    cat.create_namespace("v")
    out = {b.name: b for b in (_build_nanos(cat), _build_defaults(cat))}
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("u", pa.null())])
    t = cat.create_table("v.v3_unknown", schema=schema, properties={"format-version": "3"})
    t.append(pa.table({"id": pa.array([1, 2], pa.int64()), "u": pa.nulls(2)}))
    out["v3_unknown"] = Built("v3_unknown", t.metadata_location, [{"id": 1, "u": None}, {"id": 2, "u": None}])
    with t.update_schema() as u:
        u.update_column("u", field_type="long")
    t.append(pa.table({"id": pa.array([3], pa.int64()), "u": pa.array([30], pa.int64())}))
    out["v3_promoted"] = Built(
        "v3_promoted", t.metadata_location, [{"id": 1, "u": None}, {"id": 2, "u": None}, {"id": 3, "u": 30}]
    )
    return out


# The oracle side: runs with the oracle's Python (pyspark 3.5 + Iceberg 1.10.2 jars, PyIceberg 0.12).
ORACLE_SCRIPT = r"""
import decimal, json, sys
import canon
import spark_iceberg as si

jobs = json.load(open(sys.argv[1]))
spark = si.get_spark()
jvm = spark._jvm
UTC = jvm.java.time.ZoneOffset.UTC


def java_value(t, v):
    if v is None:
        return None
    if isinstance(t, dict):
        return {f["name"]: java_value(f["type"], v.getField(f["name"])) for f in t["fields"]}
    if t in ("int", "long"):
        return int(v)
    if t in ("float", "double"):
        return float(v)
    if t == "boolean":
        return bool(v)
    if t == "string":
        return str(v)
    if t.startswith("decimal"):  # py4j hands BigDecimal over as decimal.Decimal
        return format(v, "f") if isinstance(v, decimal.Decimal) else v.toPlainString()
    if t in ("date", "uuid"):
        return v.toString()
    if t == "timestamp":
        return v.toEpochSecond(UTC) * 10**6 + v.getNano() // 1000
    if t == "timestamptz":
        return v.toEpochSecond() * 10**6 + v.getNano() // 1000
    if t == "timestamp_ns":
        return v.toEpochSecond(UTC) * 10**9 + v.getNano()
    if t == "timestamptz_ns":
        return v.toEpochSecond() * 10**9 + v.getNano()
    if t == "binary":
        return bytes(jvm.org.apache.iceberg.util.ByteBuffers.toByteArray(v)).hex()
    raise TypeError(t)


def rows(table, fields, expr=None):
    builder = jvm.org.apache.iceberg.data.IcebergGenerics.read(table)
    if expr is not None:
        builder = builder.where(expr)
    it = builder.build().iterator()
    out = []
    while it.hasNext():
        r = it.next()
        out.append({f["name"]: java_value(f["type"], r.getField(f["name"])) for f in fields})
    return out


result = {}
for job in jobs:
    table = si.java_table(spark, job["metadata"])
    fields = json.loads(jvm.org.apache.iceberg.SchemaParser.toJson(table.schema()))["fields"]
    entry = {"java_schema": json.loads(jvm.org.apache.iceberg.SchemaParser.toJson(table.schema())),
             "rows": rows(table, fields), "filters": []}
    for column, op, literal in job.get("filters", []):
        expr = getattr(jvm.org.apache.iceberg.expressions.Expressions, {"eq": "equal", "gt": "greaterThan",
                       "lt": "lessThan", "gt_eq": "greaterThanOrEqual"}[op])(column, literal)
        paths = []
        it = table.newScan().filter(expr).planFiles().iterator()
        while it.hasNext():
            paths.append(str(it.next().file().location()))
        entry["filters"].append({"paths": sorted(paths)})
    schema = canon.schema_for(canon.load_metadata_json(job["metadata"]))
    try:
        entry["spark"] = list(canon.checksum_rows(schema, si.read_metadata(spark, job["metadata"]).collect()))
    except Exception as e:  # noqa: BLE001 -- recorded, the test decides
        entry["spark_error"] = str(e).splitlines()[0][:300]
    from pyiceberg.table import StaticTable
    import pyarrow as pa
    arrow = StaticTable.from_metadata(job["metadata"]).scan().to_arrow()
    if job.get("nanos"):  # PyIceberg rows as integers: datetime cannot hold nanoseconds
        columns = {
            n: (arrow.column(n).cast(pa.int64()) if pa.types.is_timestamp(arrow.schema.field(n).type)
                else arrow.column(n)).to_pylist()
            for n in arrow.column_names
        }
        entry["pyiceberg_rows"] = [dict(zip(columns, vals)) for vals in zip(*columns.values())]
    else:
        entry["pyiceberg"] = list(canon.checksum_rows(schema, arrow.to_pylist()))
    result[job["name"]] = entry
json.dump(result, open(sys.argv[2], "w"))
"""


@pytest.fixture(scope="module")
def java(built: dict[str, Built], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    sup.require_oracle()
    d = tmp_path_factory.mktemp("java_v3_types")
    jobs = [
        {
            "name": b.name,
            "metadata": b.metadata_location,
            "filters": NANO_FILTERS if b.name == "v3_nanos" else [],
            "nanos": b.name == "v3_nanos",
        }
        for b in built.values()
    ]
    (d / "jobs.json").write_text(json.dumps(jobs))
    (d / "oracle.py").write_text(ORACLE_SCRIPT)
    proc = sup.run_oracle_script(
        [str(d / "oracle.py"), str(d / "jobs.json"), str(d / "out.json")], timeout_s=600
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    result: dict[str, Any] = json.loads((d / "out.json").read_text())
    return result


def _by_id(rows: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    return {r["id"]: r for r in rows}


@pytest.mark.oracle
@pytest.mark.java
@pytest.mark.parametrize("name", ["v3_nanos", "v3_defaults", "v3_unknown", "v3_promoted"])
def test_java_generic_reader_reads_icefloe_v3_types(
    built: dict[str, Built], java: dict[str, Any], name: str
) -> None:
    assert _by_id(java[name]["rows"]) == _by_id(built[name].rows)


@pytest.mark.oracle
@pytest.mark.java
def test_java_parses_icefloe_defaults_to_the_same_json(built: dict[str, Built], java: dict[str, Any]) -> None:
    ours = sup.schema_json(built["v3_defaults"].metadata_location)
    theirs = java["v3_defaults"]["java_schema"]

    def defaults(fields: list[dict[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields:
            out[f["name"]] = (f.get("initial-default"), f.get("write-default"))
            if isinstance(f["type"], dict) and f["type"]["type"] == "struct":
                out.update({f"{f['name']}.{k}": v for k, v in defaults(f["type"]["fields"]).items()})
        return out

    mine, java_view = defaults(ours["fields"]), defaults(theirs["fields"])
    assert java_view == mine  # Java reads every default to the same value and writes it back alike
    assert mine["region"] == ("EU", "US") and mine["amount"] == ("1.50", "1.50")


@pytest.mark.oracle
@pytest.mark.java
def test_java_prunes_and_filters_ns_like_the_model(built: dict[str, Built], java: dict[str, Any]) -> None:
    from icefloe.expressions import parse
    from icefloe.io.local import LocalFileIO
    from icefloe.scan.planner import plan_files
    from icefloe.spec.table_metadata import read_metadata_json
    from icefloe.spec.types import TimestampNsType, TimestamptzNsType
    from icefloe.spec.values import from_json_value

    md = read_metadata_json(Path(sup.local_path(built["v3_nanos"].metadata_location)).read_text())
    model = built["v3_nanos"].rows
    for (column, op, literal), got in zip(NANO_FILTERS, java["v3_nanos"]["filters"], strict=True):
        text = f"{column} {_OPS[op]} '{literal}'"
        ours = plan_files(LocalFileIO(), md, md.current_snapshot(), row_filter=parse(text))
        assert got["paths"] == sorted(task.file.file_path for task in ours), (column, op, literal)
        # the files Java keeps hold every matching row (read with plain pyarrow, not icefloe)
        kept = {i for path in got["paths"] for i in pq.read_table(sup.local_path(path))["id"].to_pylist()}
        value = from_json_value(TimestampNsType() if column == "ts" else TimestamptzNsType(), literal)
        want = {r["id"] for r in model if r[column] is not None and _compare(op, r[column], value)}
        assert want <= kept, (column, op, literal)
        assert want, "each filter matches some row"


@pytest.mark.oracle
@pytest.mark.java
def test_pyiceberg_reads_icefloe_nanoseconds(built: dict[str, Built], java: dict[str, Any]) -> None:
    assert _by_id(java["v3_nanos"]["pyiceberg_rows"]) == _by_id(built["v3_nanos"].rows)


@pytest.mark.oracle
@pytest.mark.java
def test_spark_35_cannot_read_timestamp_ns_or_unknown(java: dict[str, Any]) -> None:
    """Documents Iceberg 1.10's Spark 3.5 integration: no Spark type for these v3 types."""
    for name, type_name in (("v3_nanos", "timestamp_ns"), ("v3_unknown", "unknown")):
        assert "spark_error" in java[name], f"Spark 3.5 read {name}: update docs/format-v3.md"
        assert type_name in java[name]["spark_error"]


@pytest.mark.oracle
@pytest.mark.java
@pytest.mark.parametrize("name", ["v3_defaults", "v3_promoted"])
def test_spark_and_pyiceberg_read_defaults_and_promoted_unknown(
    built: dict[str, Built], java: dict[str, Any], name: str
) -> None:
    b = built[name]
    want = list(sup.checksum(sup.schema_json(b.metadata_location), _oracle_rows(b.rows)))
    assert java[name]["spark"] == want
    assert java[name]["pyiceberg"] == want


@pytest.mark.oracle
def test_duckdb_reads_defaults(
    built: dict[str, Built], oracle_available: None, tmp_path_factory: pytest.TempPathFactory
) -> None:
    b = built["v3_defaults"]
    current = sup.load_metadata(b.metadata_location)["current-snapshot-id"]
    job = sup.VerifyJob(
        name=b.name,
        metadata_location=b.metadata_location,
        current_snapshot_id=current,
        snapshots={current: sup.checksum(sup.schema_json(b.metadata_location), _oracle_rows(b.rows))},
    )
    outcomes = sup.run_verify_batch(
        [job], tmp_path_factory.mktemp("verify_v3_defaults"), engines=("duckdb",), consistency=False
    )
    problems = [sup.format_outcome(o) for o in outcomes.values() if o.problems]
    assert not problems, "\n\n".join(problems)


def _compare(op: str, a: int, b: int) -> bool:
    return {"eq": a == b, "gt": a > b, "lt": a < b, "gt_eq": a >= b}[op]


def _oracle_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Model rows in the value forms the oracle's checksum takes (canon.py)."""
    convert = {
        "amount": Decimal,
        "day": dt.date.fromisoformat,
        "at": lambda v: dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=v),
        "at_tz": lambda v: dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=v),
        "uid": uuid.UUID,
        "raw": bytes.fromhex,
    }
    return [{k: convert[k](v) if k in convert and v is not None else v for k, v in r.items()} for r in rows]
