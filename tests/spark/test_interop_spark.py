"""Interop through Spark, both ways.

1. Spark writes through icefloe (several types, three partition transforms, two appends and a
   filtered overwrite); Iceberg Java 1.10, PyIceberg and DuckDB read every snapshot through the
   oracle's ``verify_table.py`` and must agree with the rows handed to Spark.
2. Spark reads, through icefloe, the reference tables written by Iceberg Java; every row must
   match the oracle's expected checksums. A snapshot with delete files or a v3 table may be
   refused with ``UnsupportedFeatureError``; different rows are always a failure.

Expected results are computed from the input rows and the oracle's ``canon.py``, never from
icefloe's read path.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import decimal
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop"))

import interop_support as sup

from icefloe.errors import NamespaceAlreadyExistsError, UnsupportedFeatureError

pytestmark = [pytest.mark.oracle, pytest.mark.java]

CATALOG = "spark_interop"
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("n", pa.int32()),
        ("s", pa.string()),
        ("d", pa.float64()),
        ("dec", pa.decimal128(10, 2)),
        ("dt", pa.date32()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("ntz", pa.timestamp("us")),
        ("flag", pa.bool_()),
        ("bin", pa.binary()),
        ("tags", pa.list_(pa.string())),
    ]
)
PARTITION_BY = ["bucket(4, id)", "day(ts)", "truncate(2, s)"]
OVERWRITE_FILTER = "id < 40"


def _batch(start: int, n: int, seed: int) -> pa.Table:
    """Deterministic rows with nulls, negative values, non-ASCII text and pre-1970 dates."""
    ids = list(range(start, start + n))
    base = dt.datetime(2024, 3, 1, tzinfo=dt.UTC)
    return pa.table(
        {
            "id": ids,
            "n": [None if i % 11 == 0 else (i * 7 + seed) % 1000 - 500 for i in ids],
            "s": [
                None if i % 13 == 0 else ["alpha", "beta", "gamma", "δέλτα"][i % 4] + str(i % 5) for i in ids
            ],
            "d": [None if i % 9 == 0 else (i - 50) / 7 for i in ids],
            "dec": [None if i % 8 == 0 else decimal.Decimal(i * 101 - 3000).scaleb(-2) for i in ids],
            "dt": [dt.date(1969, 12, 25) + dt.timedelta(days=i * 3) for i in ids],
            "ts": [None if i % 17 == 0 else base + dt.timedelta(hours=i * 5 + seed) for i in ids],
            "ntz": [dt.datetime(1999, 12, 31, 23, 59) + dt.timedelta(minutes=i * 37) for i in ids],
            "flag": [None if i % 5 == 0 else i % 2 == 0 for i in ids],
            "bin": [bytes([i % 256, seed]) if i % 6 else None for i in ids],
            "tags": [None if i % 10 == 0 else [f"t{j}" for j in range(i % 3)] for i in ids],
        },
        schema=SCHEMA,
    )


def _options(db: Path, warehouse: Path) -> dict[str, str]:
    return {"catalog": CATALOG, "catalog.uri": f"sqlite:///{db}", "catalog.warehouse": warehouse.as_uri()}


def _write(spark: Any, data: pa.Table, options: dict[str, str], mode: str, **extra: str) -> None:
    # Spark reads a naive Arrow timestamp as TIMESTAMP (with zone, in the UTC session zone); the
    # table column is timestamp without zone, so say so (same wall-clock value)
    df = spark.createDataFrame(data)
    df = df.selectExpr(*[f"cast({c} as timestamp_ntz) as {c}" if c == "ntz" else c for c in df.columns])
    w = df.write.format("icefloe").mode(mode)
    for k, v in {**options, **extra}.items():
        w = w.option(k, v)
    w.save("s.mixed")


@pytest.fixture(scope="module")
def spark_written(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The table written through Spark, with the expected (rows, checksum) of every snapshot."""
    sup.require_oracle()
    import icefloe.spark

    icefloe.spark.register(spark)
    root = tmp_path_factory.mktemp("spark_interop_w")
    db, wh = root / "catalog.db", root / "warehouse"
    wh.mkdir()
    cat = sup.icefloe_catalog(CATALOG, db, wh)
    cat.create_namespace("s")
    cat.create_table("s.mixed", schema=SCHEMA, partition_by=PARTITION_BY)
    opts = _options(db, wh)

    states: list[list[dict[str, Any]]] = []
    b1, b2, b3 = _batch(0, 60, 1), _batch(60, 60, 2), _batch(-30, 50, 3)  # b3: ids -30..19
    _write(spark, b1, opts, "append")
    states.append(sup.arrow_rows(b1))
    _write(spark, b2, opts, "append")
    states.append(states[-1] + sup.arrow_rows(b2))
    overwrite_note = ""
    try:
        # replaces the rows with id < 40 (whole files and copy-on-write rewrites) by b3
        _write(spark, b3, opts, "overwrite", **{"overwrite-filter": OVERWRITE_FILTER})
        states.append([r for r in states[-1] if r["id"] >= 40] + sup.arrow_rows(b3))
    except Exception as e:  # the overwrite producer is issue 4's; appends must still verify
        overwrite_note = str(e).splitlines()[0][:300]
    t = cat.load_table("s.mixed")
    snaps = t.snapshots()
    assert len(snaps) == len(states), (len(snaps), len(states), overwrite_note)
    expected = {}
    for snap, rows in zip(snaps, states, strict=True):
        schema = sup.schema_json(t.metadata_location, snap.snapshot_id)
        expected[snap.snapshot_id] = sup.checksum(schema, rows)
    return {
        "table": t,
        "expected": expected,
        "states": dict(zip([s.snapshot_id for s in snaps], states, strict=True)),
        "overwrite_note": overwrite_note,
        "root": root,
        "options": opts,
    }


def test_spark_reads_back_what_spark_wrote(spark: Any, spark_written: dict[str, Any]) -> None:
    """Baseline: tells a writer bug from a reader bug when the oracle disagrees."""
    t = spark_written["table"]
    for sid, rows in spark_written["states"].items():
        r = spark.read.format("icefloe")
        for k, v in {**spark_written["options"], "snapshot-id": str(sid)}.items():
            r = r.option(k, v)
        got = r.load("s.mixed").toArrow()
        schema = sup.schema_json(t.metadata_location, sid)
        diff = sup.diff_rows(schema, sup.arrow_rows(got), rows, "spark", "written")
        assert not diff, f"@{sid}: {diff}"


def test_oracle_verifies_spark_written_table(spark_written: dict[str, Any]) -> None:
    t = spark_written["table"]
    job = sup.VerifyJob(
        name="spark_mixed",
        metadata_location=t.metadata_location,
        current_snapshot_id=t.current_snapshot().snapshot_id,
        snapshots=spark_written["expected"],
    )
    outcome = sup.run_verify_batch([job], spark_written["root"] / "verify")["spark_mixed"]
    assert not outcome.problems, sup.format_outcome(outcome)
    if spark_written["overwrite_note"]:
        pytest.xfail(
            f"appends verified; the filtered overwrite is not available: {spark_written['overwrite_note']}"
        )
    assert [s.summary.operation.value for s in t.snapshots()] == ["append", "append", "overwrite"]


# ---------------------------------------------------------------- Spark reads the Java tables

# every table at its current snapshot; these also at every snapshot and ref (time travel)
ALL_SNAPSHOTS = {"snapshots_refs", "partition_evolution", "schema_evolution"}


@pytest.fixture(scope="module")
def java_tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Hadoop-catalog reference tables registered in an icefloe catalog, and a copy of the
    oracle's JdbcCatalog database (the cache stays untouched)."""
    ref = sup.ensure_reference_tables()
    root = tmp_path_factory.mktemp("spark_interop_r")
    wh = root / "warehouse"
    wh.mkdir()
    idx = json.loads((ref / "index.json").read_text())
    reg_db = root / "catalog.db"
    cat = sup.icefloe_catalog("spark_ref", reg_db, wh)
    options: dict[str, dict[str, str]] = {}
    for e in idx["tables"]:
        key = f"{e['catalog']}.{e['table']}"
        if e.get("catalog_kind") == "jdbc-sqlite":
            copy = root / "oracle-jdbc.db"
            if not copy.exists():
                shutil.copyfile(idx["catalog_db"], copy)
            options[key] = {
                "catalog": idx["jdbc_catalog_name"],
                "catalog.uri": f"sqlite:///{copy}",
                "catalog.warehouse": wh.as_uri(),
                "path": e["table"],
            }
            continue
        ns = f"{e['catalog']}_ref"
        ident = f"{ns}.{e['table'].split('.')[-1]}"
        with contextlib.suppress(NamespaceAlreadyExistsError):
            cat.create_namespace(ns)
        try:
            cat.register_table(ident, Path(e["metadata_location"]).as_uri())
        except UnsupportedFeatureError:
            continue  # e.g. a v3 table refused at load; test_reads_reference covers that
        options[key] = {
            "catalog": "spark_ref",
            "catalog.uri": f"sqlite:///{reg_db}",
            "catalog.warehouse": wh.as_uri(),
            "path": ident,
        }
    return {"ref": ref, "index": idx, "options": options}


def _targets(expected: dict[str, Any], everything: bool) -> list[tuple[str, dict[str, str], int]]:
    cur = expected["current_snapshot_id"]
    out: list[tuple[str, dict[str, str], int]] = [("current", {}, cur)]
    if everything:
        out += [(f"snapshot-id={s}", {"snapshot-id": str(s)}, int(s)) for s in expected["snapshots"]]
        for name, r in expected["refs"].items():
            kind = "branch" if r.get("type", "branch") == "branch" else "tag"
            out.append((f"{kind}={name}", {kind: name}, r["snapshot_id"]))
    return out


def test_spark_reads_java_reference_tables(spark: Any, java_tables: dict[str, Any]) -> None:
    import icefloe.spark

    icefloe.spark.register(spark)
    ref = java_tables["ref"]
    problems: list[str] = []
    refused: list[str] = []
    checked = 0
    for e in java_tables["index"]["tables"]:
        key = f"{e['catalog']}.{e['table']}"
        opts = java_tables["options"].get(key)
        if opts is None:
            refused.append(f"{key}: not loadable")
            continue
        expected = json.loads((ref / e["expected"]).read_text())
        meta = sup.load_metadata(e["metadata_location"])
        everything = e["table"].split(".")[-1] in ALL_SNAPSHOTS
        for label, extra, sid in _targets(expected, everything):
            want = expected["snapshots"][str(sid)]
            schema = sup.schema_json(e["metadata_location"], sid)
            r = spark.read.format("icefloe")
            for k, v in {**opts, **extra}.items():
                if k != "path":
                    r = r.option(k, v)
            try:
                got = r.load(opts["path"]).toArrow()
            except Exception as ex:
                text = str(ex)
                deletes = _has_deletes(meta, sid)
                if ("UnsupportedFeatureError" in text or "not supported" in text) and (
                    deletes or expected["format_version"] >= 3 or _has_time(schema)
                ):
                    refused.append(f"{key} {label}: {text.splitlines()[0][:200]}")
                    continue
                problems.append(f"{key} {label}: {type(ex).__name__}: {text[:600]}")
                continue
            checked += 1
            n, ck = sup.checksum(schema, sup.arrow_rows(got))
            if (n, ck) != (want["row_count"], want["checksum"]):
                problems.append(f"{key} {label}: {n}/{ck} != expected {want['row_count']}/{want['checksum']}")
    assert not problems, "\n".join(problems) + ("\nrefused:\n" + "\n".join(refused) if refused else "")
    assert checked >= len(java_tables["index"]["tables"]) // 2, refused


def _has_deletes(meta: dict[str, Any], snapshot_id: int) -> bool:
    snap = next(s for s in meta["snapshots"] if s["snapshot-id"] == snapshot_id)
    return int(snap.get("summary", {}).get("total-delete-files", "0")) > 0


def _has_time(schema: dict[str, Any]) -> bool:
    return any(f["type"] == "time" for f in schema["fields"])
