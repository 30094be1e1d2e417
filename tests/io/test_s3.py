"""ArrowFileIO on a real S3 API (the suite's SeaweedFS server), configured with Iceberg's property
names: exclusive create, reads, sizes, deletes, and typed errors for what goes wrong."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from icefloe.errors import FileIOError
from icefloe.io import load_file_io
from icefloe.io.arrow import ArrowFileIO

pytestmark = pytest.mark.s3


@pytest.fixture
def base(seaweedfs_server: Any) -> str:
    return seaweedfs_server.warehouse(f"io-{uuid.uuid4().hex[:8]}")


def test_load_file_io_picks_arrow_for_s3(seaweedfs_server: Any, base: str) -> None:
    io = load_file_io(seaweedfs_server.file_io_properties(), base)
    assert isinstance(io, ArrowFileIO)


def test_write_read_stat_delete(seaweedfs_server: Any, base: str) -> None:
    io = ArrowFileIO(seaweedfs_server.file_io_properties())
    location = f"{base}/a/b/file.bin"
    assert not io.exists(location)
    with io.new_output(location).create() as stream:
        stream.write(b"0123456789")
    assert io.exists(location) and io.new_input(location).exists()
    assert len(io.new_input(location)) == 10
    with io.new_input(location).open() as stream:
        stream.seek(4)
        assert stream.read(3) == b"456"
    with pytest.raises(FileIOError) as exists:
        io.new_output(location).create()
    assert exists.value.context["already_exists"]
    with io.new_output(location).create(overwrite=True) as stream:
        stream.write(b"new")
    assert len(io.new_input(location)) == 3
    io.delete(location)
    assert not io.exists(location)
    with pytest.raises(FileIOError) as missing:
        io.delete(location)
    assert missing.value.context["not_found"]
    with pytest.raises(FileIOError) as unreadable:
        io.new_input(location).open()
    assert unreadable.value.context["not_found"]


def test_wrong_credentials_are_a_typed_error(seaweedfs_server: Any, base: str) -> None:
    props = {**seaweedfs_server.file_io_properties(), "s3.secret-access-key": "wrong"}
    io = ArrowFileIO(props)
    with pytest.raises(FileIOError):
        io.exists(f"{base}/x")


def test_a_table_in_a_missing_bucket_fails_typed_and_is_not_created(seaweedfs_server: Any) -> None:
    """Opens are delayed (one PUT per small file), so a missing bucket shows when the first
    metadata file is closed: a FileIOError, and the catalog has no table."""
    import pyarrow as pa

    import icefloe

    warehouse = f"s3://no-such-bucket-{uuid.uuid4().hex[:6]}/wh"
    props = seaweedfs_server.file_io_properties()
    cat = icefloe.load_catalog("c", type="memory", warehouse=warehouse, **props)
    cat.create_namespace("db")
    with pytest.raises(FileIOError):
        cat.create_table("db.t", pa.schema([("id", pa.int64())]))
    assert not cat.table_exists("db.t")


def test_an_unreachable_endpoint_is_a_typed_error() -> None:
    io = ArrowFileIO({"s3.endpoint": "http://127.0.0.1:1", "s3.region": "us-east-1"})
    with pytest.raises(FileIOError):
        io.exists("s3://bucket/key")
