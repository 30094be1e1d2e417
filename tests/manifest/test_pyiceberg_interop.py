"""Cross-check: manifests and manifest lists written by icefloe read the same in PyIceberg 0.12
(test-only dependency)."""

from __future__ import annotations

import struct
from itertools import count
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.io.local import LocalFileIO
from icefloe.manifest import DataFile, ManifestWriter, read_manifest, read_manifest_list, write_manifest_list
from icefloe.spec.partition import PartitionSpec
from icefloe.spec.types import DoubleType

from ._strategies import ALL_TYPES_SPEC, SCHEMA, data_files

pyiceberg_manifest = pytest.importorskip("pyiceberg.manifest")
pyiceberg_pyarrow = pytest.importorskip("pyiceberg.io.pyarrow")

IO = LocalFileIO()
# PyIceberg 0.12 cannot resolve a reference to an Avro named type defined earlier in the schema
# (two partition fields of the same decimal type), which Iceberg Java and icefloe write; leave the
# duplicate out here.
SPEC = PartitionSpec(*(f for f in ALL_TYPES_SPEC.fields if f.source_id != 8), spec_id=3)
PARTITION_TYPE = SPEC.partition_type(SCHEMA)
_names = count()


def _as_dict(m: dict[int, Any] | None) -> dict[int, Any]:
    return dict(m or {})


@settings(max_examples=15)
@given(files=st.lists(data_files(PARTITION_TYPE, SPEC.spec_id), min_size=1, max_size=4))
def test_pyiceberg_reads_icefloe_manifests(
    tmp_path_factory: pytest.TempPathFactory, files: list[DataFile]
) -> None:
    tmp = tmp_path_factory.getbasetemp()
    n = next(_names)
    manifest_path, list_path = str(tmp / f"pi-m{n}.avro"), str(tmp / f"pi-l{n}.avro")
    with ManifestWriter(IO, manifest_path, SPEC, SCHEMA, 77) as w:
        for f in files:
            w.add(f)
    write_manifest_list(IO, list_path, 77, 76, 12, [w.close()])

    pio = pyiceberg_pyarrow.PyArrowFileIO()
    (theirs_m,) = list(pyiceberg_manifest.read_manifest_list(pio.new_input(list_path)))
    (ours_m,) = read_manifest_list(IO, list_path)
    assert theirs_m.manifest_path == ours_m.manifest_path
    assert theirs_m.manifest_length == ours_m.manifest_length
    assert theirs_m.sequence_number == ours_m.sequence_number == 12
    assert theirs_m.added_snapshot_id == 77
    assert theirs_m.added_files_count == len(files)
    assert theirs_m.added_rows_count == sum(f.record_count for f in files)
    assert [(p.contains_null, p.contains_nan, p.lower_bound, p.upper_bound) for p in theirs_m.partitions] == [
        (p.contains_null, p.contains_nan, p.lower_bound, p.upper_bound) for p in ours_m.partitions or ()
    ]

    theirs = theirs_m.fetch_manifest_entry(pio, discard_deleted=False)
    ours = list(read_manifest(IO, ours_m))
    assert len(theirs) == len(ours) == len(files)
    for t, o, f in zip(theirs, ours, files, strict=True):
        assert o.data_file == f
        assert (int(t.status), t.snapshot_id, t.sequence_number, t.file_sequence_number) == (
            int(o.status),
            o.snapshot_id,
            o.sequence_number,
            o.file_sequence_number,
        )
        td = t.data_file
        assert int(td.content) == int(f.content)
        assert td.file_path == f.file_path
        assert str(td.file_format.value).upper() == f.file_format.value
        for i, (a, b) in enumerate(zip(list(td.partition), f.partition, strict=True)):
            if isinstance(PARTITION_TYPE.fields[i].field_type, DoubleType) and b is not None:
                # PyIceberg 0.12's Cython decoder reads Avro doubles at float precision.
                b = struct.unpack("<f", struct.pack("<f", b))[0] if abs(b) < 3.4e38 else a
            assert a == b, (i, a, b, PARTITION_TYPE.fields[i])
        assert td.record_count == f.record_count
        assert td.file_size_in_bytes == f.file_size_in_bytes
        for name in (
            "column_sizes",
            "value_counts",
            "null_value_counts",
            "nan_value_counts",
            "lower_bounds",
            "upper_bounds",
        ):
            assert _as_dict(getattr(td, name)) == _as_dict(getattr(f, name)), name
        assert td.key_metadata == f.key_metadata
        assert list(td.split_offsets or []) == list(f.split_offsets or [])
        assert td.sort_order_id == f.sort_order_id


def test_icefloe_reads_pyiceberg_written_manifest(tmp_path: Path) -> None:
    """The other direction, through PyIceberg's own manifest writer (unpartitioned, v2)."""
    from pyiceberg.manifest import DataFile as PDataFile
    from pyiceberg.manifest import DataFileContent as PContent
    from pyiceberg.manifest import FileFormat as PFormat
    from pyiceberg.manifest import ManifestEntry as PEntry
    from pyiceberg.manifest import ManifestEntryStatus as PStatus
    from pyiceberg.manifest import write_manifest
    from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
    from pyiceberg.schema import Schema as PSchema
    from pyiceberg.typedef import Record
    from pyiceberg.types import LongType as PLong
    from pyiceberg.types import NestedField as PField

    pio = pyiceberg_pyarrow.PyArrowFileIO()
    path = str(tmp_path / "py.avro")
    pdf = PDataFile.from_args(
        content=PContent.DATA,
        file_path="/data/a.parquet",
        file_format=PFormat.PARQUET,
        partition=Record(),
        record_count=3,
        file_size_in_bytes=10,
        lower_bounds={1: b"\x01" + b"\x00" * 7},
    )
    with write_manifest(
        format_version=2,
        spec=UNPARTITIONED_PARTITION_SPEC,
        schema=PSchema(PField(1, "x", PLong(), required=False)),
        output_file=pio.new_output(path),
        snapshot_id=5,
        avro_compression="deflate",
    ) as w:
        w.add_entry(PEntry.from_args(status=PStatus.ADDED, snapshot_id=5, data_file=pdf))
        pm = w.to_manifest_file()
    list_path = str(tmp_path / "l.avro")
    from icefloe.manifest import ManifestContent, ManifestFile

    write_manifest_list(
        IO,
        list_path,
        5,
        None,
        1,
        [
            ManifestFile(
                manifest_path=path,
                manifest_length=pm.manifest_length,
                partition_spec_id=0,
                content=ManifestContent.DATA,
                added_snapshot_id=5,
                added_files_count=1,
                existing_files_count=0,
                deleted_files_count=0,
                added_rows_count=3,
                existing_rows_count=0,
                deleted_rows_count=0,
                partitions=(),
            )
        ],
    )
    (m,) = read_manifest_list(IO, list_path)
    (e,) = read_manifest(IO, m)
    assert (e.snapshot_id, e.sequence_number) == (5, 1)
    assert e.data_file.file_path == "/data/a.parquet"
    assert e.data_file.partition == ()
    assert e.data_file.lower_bounds == {1: b"\x01" + b"\x00" * 7}
