"""Null structs whose required fields icefloe fills with placeholder values (bug B of the
differential harness): Iceberg Java 1.10 (Spark), PyIceberg and DuckDB read the structs back as
null, and the valid rows with their values.

Under a null struct, a required field still needs a value in the Parquet column (the writer
rejects nulls in a non-nullable column); icefloe writes a placeholder that readers must never
show. The columns cover the placeholders that used to fail (every decimal precision and scale,
uuid) and the nested ones (structs, lists and maps of required values). ``time`` is left out:
Spark cannot read it (see test_icefloe_writes).
"""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import interop_support as sup
import pyarrow as pa
import pytest

NS = "nulls"
NAME = "null_structs"


def _dec(p: int, s: int) -> pa.DataType:
    return pa.decimal128(p, s)


def _req(name: str, t: pa.DataType) -> pa.Field:
    return pa.field(name, t, nullable=False)


# column -> (Arrow type of the required field "v", its value in the valid row)
CASES: dict[str, tuple[pa.DataType, Any]] = {
    "dec_1_1": (_dec(1, 1), Decimal("0.7")),
    "dec_9_1": (_dec(9, 1), Decimal("12345678.9")),
    "dec_18_17": (_dec(18, 17), Decimal("1.23456789012345678")),
    "dec_38_0": (_dec(38, 0), Decimal("9" * 28)),
    "dec_38_20": (_dec(38, 20), Decimal("-12345678.12345678901234567890")),
    "dec_38_38": (_dec(38, 38), None),  # null in every row: canon.py has 28 digits of precision
    "uuid": (pa.uuid(), uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")),
    "fixed": (pa.binary(3), b"abc"),
    "binary": (pa.binary(), b"\x00\xff"),
    "string": (pa.string(), "héllo"),
    "boolean": (pa.bool_(), True),
    "long": (pa.int64(), 2**40),
    "double": (pa.float64(), -2.25),
    "date": (pa.date32(), dt.date(1969, 7, 20)),
    "ts": (pa.timestamp("us"), dt.datetime(1900, 1, 1, 0, 0, 1)),
    "tstz": (pa.timestamp("us", tz="UTC"), dt.datetime(2030, 5, 6, 7, 8, 9, tzinfo=dt.UTC)),
    "struct": (
        pa.struct([_req("d", _dec(9, 1)), _req("f", pa.binary(2))]),
        {"d": Decimal("1.5"), "f": b"xy"},
    ),
    "list": (pa.list_(_req("element", _dec(9, 1))), [Decimal("1.0"), Decimal("-2.5")]),
    "map": (pa.map_(_req("key", pa.string()), _req("value", _dec(5, 5))), [("k", Decimal("0.12345"))]),
    "deep": (
        pa.struct(
            [
                _req(
                    "t",
                    pa.struct(
                        [_req("l", pa.list_(_req("element", _dec(38, 20)))), pa.field("o", pa.string())]
                    ),
                )
            ]
        ),
        {"t": {"l": [Decimal("0." + "1" * 20)], "o": None}},
    ),
}


def _data() -> pa.Table:
    """Row 1: every struct null. Row 2: every struct valid (those without a value: null).
    Row 3: every other struct null."""
    fields = [pa.field("id", pa.int64(), nullable=False)]
    columns: list[pa.Array] = [pa.array([1, 2, 3], pa.int64())]
    for i, (name, (t, value)) in enumerate(CASES.items()):
        struct_type = pa.struct([_req("v", t)])
        fields.append(pa.field(f"s_{name}", struct_type))
        if value is None:
            v, mask = pa.nulls(3, t), pa.array([True, True, True])
        else:
            v = pa.array([value, value, value], t)  # pyarrow builds uuid arrays only at this level
            mask = pa.array([True, False, i % 2 == 0])
        columns.append(pa.StructArray.from_arrays([v], fields=list(struct_type), mask=mask))
    return pa.Table.from_arrays(columns, schema=pa.schema(fields))


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("null_structs")
    (root / "warehouse").mkdir()
    cat = sup.icefloe_catalog("interop_nulls", root / "catalog.db", root / "warehouse")
    cat.create_namespace(NS)
    return cat


@pytest.fixture(scope="module")
def written(catalog: Any) -> tuple[str, int, list[dict[str, Any]]]:
    """The table's metadata location, its one snapshot and the rows handed to ``append``."""
    data = _data()
    t = catalog.create_table(f"{NS}.{NAME}", schema=data.schema)
    t.append(data)
    t = t.refresh()
    snapshot = t.current_snapshot()
    assert snapshot is not None
    return t.metadata_location, snapshot.snapshot_id, sup.arrow_rows(data)


def test_icefloe_reads_the_null_structs_back(
    catalog: Any, written: tuple[str, int, list[dict[str, Any]]]
) -> None:
    """Baseline for the engines below: icefloe's own read equals what was written."""
    location, sid, rows = written
    got = sup.arrow_rows(catalog.load_table(f"{NS}.{NAME}").scan().to_arrow())
    assert not sup.diff_rows(sup.schema_json(location, sid), got, rows, "icefloe", "written")


@pytest.mark.oracle
@pytest.mark.java
def test_engines_read_null_structs_with_placeholders(
    written: tuple[str, int, list[dict[str, Any]]], oracle_available: None, tmp_path: Path
) -> None:
    location, sid, rows = written
    schema = sup.schema_json(location, sid)
    job = sup.VerifyJob(
        name=NAME,
        metadata_location=location,
        current_snapshot_id=sid,
        snapshots={sid: sup.checksum(schema, rows)},
    )
    outcome = sup.run_verify_batch([job], tmp_path)[NAME]
    if outcome.problems:
        pytest.fail(sup.format_outcome(outcome), pytrace=False)
