"""The spec's rules for which delete files apply to a data file, table-driven.

Each case: a data file (spec, partition, data sequence number) and one delete file (kind, spec,
partition, data sequence number, referenced file / bounds); expected: applies or not.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from icefloe.errors import InvalidMetadataError
from icefloe.manifest import DataFile, DataFileContent, FileFormat, ManifestEntry, ManifestEntryStatus
from icefloe.scan.delete_index import DeleteFileIndex, referenced_data_file
from icefloe.spec.partition import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.types import IntegerType, NestedField, StringType
from icefloe.spec.values import to_bytes
from icefloe.transforms import BucketTransform, IdentityTransform

PATH_ID = 2147483546
SCHEMA = Schema(
    NestedField(1, "id", IntegerType(), required=False),
    NestedField(2, "s", StringType(), required=False),
)
UNPARTITIONED = PartitionSpec(spec_id=0)
BY_BUCKET = PartitionSpec(PartitionField(1, 1000, BucketTransform(4), "id_bucket"), spec_id=1)
BY_ID = PartitionSpec(PartitionField(1, 1000, IdentityTransform(), "id"), spec_id=2)
SPECS = {s.spec_id: s for s in (UNPARTITIONED, BY_BUCKET, BY_ID)}
DATA_PATH = "s3://b/t/data/a.parquet"


def data_file(
    path: str = DATA_PATH, spec_id: int = 1, partition: tuple[Any, ...] = (0,), **kw: Any
) -> DataFile:
    return DataFile(
        file_path=path,
        file_format=FileFormat.PARQUET,
        partition=partition,
        record_count=10,
        file_size_in_bytes=100,
        spec_id=spec_id,
        **kw,
    )


def pos_delete(name: str = "pos", spec_id: int = 1, partition: tuple[Any, ...] = (0,), **kw: Any) -> DataFile:
    return DataFile(
        content=DataFileContent.POSITION_DELETES,
        file_path=f"s3://b/t/data/{name}-deletes.parquet",
        file_format=FileFormat.PARQUET,
        partition=partition,
        record_count=1,
        file_size_in_bytes=50,
        spec_id=spec_id,
        **kw,
    )


def eq_delete(
    name: str = "eq",
    spec_id: int = 1,
    partition: tuple[Any, ...] = (0,),
    ids: tuple[int, ...] = (1,),
    **kw: Any,
) -> DataFile:
    return DataFile(
        content=DataFileContent.EQUALITY_DELETES,
        file_path=f"s3://b/t/data/{name}-eq-deletes.parquet",
        file_format=FileFormat.PARQUET,
        partition=partition,
        record_count=1,
        file_size_in_bytes=50,
        equality_ids=ids,
        spec_id=spec_id,
        **kw,
    )


def entry(
    f: DataFile, seq: int | None, status: ManifestEntryStatus = ManifestEntryStatus.ADDED
) -> ManifestEntry:
    return ManifestEntry(status, 1, seq, seq, f)


@dataclass(frozen=True)
class Case:
    name: str
    data_seq: int
    data: DataFile
    delete_seq: int
    delete: DataFile
    applies: bool


def _bounds(path: str) -> dict[str, Any]:
    raw = path.encode()
    return {"lower_bounds": {PATH_ID: raw}, "upper_bounds": {PATH_ID: raw}}


CASES = [
    # position deletes: data_seq <= delete_seq, same spec and partition
    Case("pos: delete seq greater", 3, data_file(), 4, pos_delete(), True),
    Case("pos: equal sequence numbers", 4, data_file(), 4, pos_delete(), True),
    Case("pos: delete older than data", 5, data_file(), 4, pos_delete(), False),
    Case("pos: other partition", 3, data_file(), 4, pos_delete(partition=(1,)), False),
    Case("pos: other spec, same tuple", 3, data_file(), 4, pos_delete(spec_id=2), False),
    Case(
        "pos: unpartitioned delete is not global",
        3,
        data_file(),
        4,
        pos_delete(spec_id=0, partition=()),
        False,
    ),
    Case(
        "pos: referenced_data_file is this file",
        3,
        data_file(),
        4,
        pos_delete(referenced_data_file=DATA_PATH),
        True,
    ),
    Case(
        "pos: referenced_data_file is another file",
        3,
        data_file(),
        4,
        pos_delete(referenced_data_file="s3://b/t/data/b.parquet"),
        False,
    ),
    Case(
        "pos: referenced_data_file, delete older",
        5,
        data_file(),
        4,
        pos_delete(referenced_data_file=DATA_PATH),
        False,
    ),
    Case("pos: single-path bounds name this file", 3, data_file(), 4, pos_delete(**_bounds(DATA_PATH)), True),
    Case(
        "pos: single-path bounds name another file",
        3,
        data_file(),
        4,
        pos_delete(**_bounds("s3://b/t/data/b.parquet")),
        False,
    ),
    Case(
        "pos: path outside the bounds",
        3,
        data_file(),
        4,
        pos_delete(lower_bounds={PATH_ID: b"s3://b/t/data/m"}, upper_bounds={PATH_ID: b"s3://b/t/data/z"}),
        False,
    ),
    Case(
        "pos: path inside the bounds",
        3,
        data_file(),
        4,
        pos_delete(lower_bounds={PATH_ID: b"s3://b/t/data/0"}, upper_bounds={PATH_ID: b"s3://b/t/data/b"}),
        True,
    ),
    # equality deletes: data_seq < delete_seq, same spec and partition, or unpartitioned (global)
    Case("eq: delete seq greater", 3, data_file(), 4, eq_delete(), True),
    Case("eq: equal sequence numbers do not apply", 4, data_file(), 4, eq_delete(), False),
    Case("eq: delete older than data", 5, data_file(), 4, eq_delete(), False),
    Case("eq: other partition", 3, data_file(), 4, eq_delete(partition=(2,)), False),
    Case("eq: other partitioned spec", 3, data_file(), 4, eq_delete(spec_id=2), False),
    Case("eq: global (unpartitioned spec)", 3, data_file(), 4, eq_delete(spec_id=0, partition=()), True),
    Case("eq: global, equal seq", 4, data_file(), 4, eq_delete(spec_id=0, partition=()), False),
    Case(
        "eq: global applies to unpartitioned data",
        1,
        data_file(spec_id=0, partition=()),
        2,
        eq_delete(spec_id=0, partition=()),
        True,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_scoping_rules(case: Case) -> None:
    index = DeleteFileIndex([entry(case.delete, case.delete_seq)], SPECS, SCHEMA)
    got = index.for_data_file(case.data_seq, case.data)
    assert (got == (case.delete,)) is case.applies
    assert got in ((), (case.delete,))


def _int_bounds(lo: int | None, hi: int | None, nulls: int | None = 0, values: int = 5) -> dict[str, Any]:
    out: dict[str, Any] = {
        "value_counts": {1: values},
        "null_value_counts": None if nulls is None else {1: nulls},
    }
    out["lower_bounds"] = {} if lo is None else {1: to_bytes(IntegerType(), lo)}
    out["upper_bounds"] = {} if hi is None else {1: to_bytes(IntegerType(), hi)}
    return out


METRIC_CASES = [
    ("disjoint ranges", _int_bounds(0, 10), _int_bounds(20, 30), False),
    ("touching ranges", _int_bounds(0, 10), _int_bounds(10, 30), True),
    ("overlapping", _int_bounds(0, 10), _int_bounds(5, 30), True),
    ("no delete bounds", _int_bounds(0, 10), _int_bounds(None, None), True),
    ("nulls on both sides may match", _int_bounds(0, 10, nulls=1), _int_bounds(20, 30, nulls=1), True),
    ("unknown null counts", _int_bounds(0, 10, nulls=None), _int_bounds(20, 30, nulls=None), True),
    ("null only in data", _int_bounds(0, 10, nulls=1), _int_bounds(20, 30), False),
    (
        "all-null delete vs non-null data",
        _int_bounds(0, 10),
        _int_bounds(None, None, nulls=3, values=3),
        False,
    ),
]


@pytest.mark.parametrize(("name", "data_metrics", "delete_metrics", "applies"), METRIC_CASES)
def test_equality_metrics_pruning(
    name: str, data_metrics: dict[str, Any], delete_metrics: dict[str, Any], applies: bool
) -> None:
    d = eq_delete(**delete_metrics)
    index = DeleteFileIndex([entry(d, 4)], SPECS, SCHEMA)
    assert (index.for_data_file(3, data_file(**data_metrics)) == (d,)) is applies


def test_many_files_sorted_by_sequence_number() -> None:
    deletes = [(seq, pos_delete(f"p{seq}")) for seq in (7, 2, 5, 9, 3)]
    eqs = [(seq, eq_delete(f"e{seq}")) for seq in (6, 1, 4)]
    index = DeleteFileIndex([entry(f, s) for s, f in [*deletes, *eqs]], SPECS, SCHEMA)
    got = index.for_data_file(5, data_file())
    paths = {f.file_path for f in got}
    assert paths == {pos_delete(f"p{s}").file_path for s in (5, 7, 9)} | {eq_delete("e6").file_path}
    assert len(index) == 8


def test_deleted_entries_are_ignored() -> None:
    d = pos_delete()
    index = DeleteFileIndex([entry(d, 4, ManifestEntryStatus.DELETED)], SPECS, SCHEMA)
    assert index.is_empty()
    assert index.for_data_file(1, data_file()) == ()


def test_deletion_vector_needs_referenced_file() -> None:
    dv = pos_delete(referenced_data_file=DATA_PATH, content_offset=4, content_size_in_bytes=40)
    dv = DataFile(**{**_fields(dv), "file_format": FileFormat.PUFFIN})
    index = DeleteFileIndex([entry(dv, 4)], SPECS, SCHEMA)
    assert index.has_deletion_vectors
    assert index.for_data_file(4, data_file()) == (dv,)
    assert index.for_data_file(5, data_file()) == ()
    assert index.for_data_file(4, data_file(path="s3://b/t/data/other.parquet")) == ()
    bad = DataFile(**{**_fields(pos_delete()), "file_format": FileFormat.PUFFIN})
    with pytest.raises(InvalidMetadataError, match="referenced_data_file"):
        DeleteFileIndex([entry(bad, 4)], SPECS, SCHEMA)


def _fields(f: DataFile) -> dict[str, Any]:
    return {name: getattr(f, name) for name in DataFile.__dataclass_fields__}


def test_bad_entries_are_typed_errors() -> None:
    with pytest.raises(InvalidMetadataError, match="sequence number"):
        DeleteFileIndex([entry(pos_delete(), None)], SPECS, SCHEMA)
    with pytest.raises(InvalidMetadataError, match="equality_ids"):
        DeleteFileIndex([entry(eq_delete(ids=()), 3)], SPECS, SCHEMA)
    with pytest.raises(InvalidMetadataError, match="unknown partition spec"):
        DeleteFileIndex([entry(eq_delete(spec_id=9), 3)], SPECS, SCHEMA)
    with pytest.raises(InvalidMetadataError, match="data file"):
        DeleteFileIndex([entry(data_file(), 3)], SPECS, SCHEMA)


def test_referenced_data_file_rule() -> None:
    assert referenced_data_file(pos_delete(referenced_data_file="x")) == "x"
    assert referenced_data_file(pos_delete(**_bounds("y"))) == "y"
    assert (
        referenced_data_file(pos_delete(lower_bounds={PATH_ID: b"a"}, upper_bounds={PATH_ID: b"b"})) is None
    )
    assert referenced_data_file(eq_delete()) is None
