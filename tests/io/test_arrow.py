"""ArrowFileIO on the local file system, and its S3 configuration."""

from __future__ import annotations

import io as stdio
import pickle
from pathlib import Path

import fastavro
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from icefloe.errors import FileIOError
from icefloe.io import FileIO
from icefloe.io.arrow import ArrowFileIO


@pytest.mark.parametrize("prefix", ["", "file://"])
def test_write_read_delete(tmp_path: Path, prefix: str) -> None:
    io = ArrowFileIO()
    assert isinstance(io, FileIO)
    location = f"{prefix}{tmp_path}/dir/sub/f.bin"
    out = io.new_output(location)
    assert not out.exists()
    with out.create() as f:
        f.write(b"0123456789")
    assert out.exists() and io.exists(location)
    inp = io.new_input(location)
    assert len(inp) == 10
    with inp.open() as f:
        f.seek(4)
        assert f.read(3) == b"456"
    with inp.open(seekable=False) as f:
        assert f.read() == b"0123456789"
    with pytest.raises(FileIOError, match="already exists"):
        out.create()
    with out.create(overwrite=True) as f:
        f.write(b"new")
    assert len(io.new_input(location)) == 3
    io.delete(location)
    assert not io.exists(location)


def test_missing(tmp_path: Path) -> None:
    io = ArrowFileIO()
    missing = str(tmp_path / "missing")
    with pytest.raises(FileIOError) as info:
        io.new_input(missing).open()
    assert info.value.context["not_found"] is True
    with pytest.raises(FileIOError) as info:
        len(io.new_input(missing))
    assert info.value.context["not_found"] is True
    with pytest.raises(FileIOError) as info:
        io.delete(missing)
    assert info.value.context["not_found"] is True


def test_streams_work_with_parquet_and_fastavro(tmp_path: Path) -> None:
    io = ArrowFileIO()
    table = pa.table({"x": [1, 2, 3], "s": ["a", "b", None]})
    loc = str(tmp_path / "t.parquet")
    with io.new_output(loc).create() as f:
        pq.write_table(table, f)
    with io.new_input(loc).open() as f:
        assert pq.ParquetFile(f).read().equals(table)

    schema = {"type": "record", "name": "r", "fields": [{"name": "a", "type": "long"}]}
    buf = stdio.BytesIO()
    fastavro.writer(buf, schema, [{"a": 1}, {"a": 2}])
    loc = str(tmp_path / "a.avro")
    with io.new_output(loc).create() as f:
        f.write(buf.getvalue())
    with io.new_input(loc).open() as f:
        assert [r["a"] for r in fastavro.reader(f)] == [1, 2]  # type: ignore[call-overload,index]


def test_file_systems_are_cached_and_pickle(tmp_path: Path) -> None:
    io = ArrowFileIO({"x": "y"})
    fs1, _ = io.resolve(str(tmp_path / "a"))
    fs2, _ = io.resolve(f"file://{tmp_path}/b")
    assert fs1 is fs2
    clone = pickle.loads(pickle.dumps(io))
    assert clone.properties == {"x": "y"}
    assert clone.exists(str(tmp_path)) is True


def test_s3_properties_map_to_pyarrow() -> None:
    io = ArrowFileIO(
        {
            "s3.endpoint": "http://localhost:9000",
            "s3.access-key-id": "admin",
            "s3.secret-access-key": "password",
            "s3.region": "us-east-1",
            "s3.path-style-access": "true",
        }
    )
    fs, path = io.resolve("s3://bucket/warehouse/t/metadata/v1.metadata.json")
    assert isinstance(fs, pafs.S3FileSystem)
    assert path == "bucket/warehouse/t/metadata/v1.metadata.json"
    assert fs.region == "us-east-1"
    # One client per bucket, reused.
    assert io.resolve("s3a://bucket/other")[0] is fs
    assert io.resolve("s3://other-bucket/x")[0] is not fs
