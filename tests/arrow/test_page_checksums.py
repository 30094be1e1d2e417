"""Data files carry a CRC-32 per Parquet page: a bit flipped inside a page is detected by a
reader that verifies them, instead of silently decoding a changed value (issue 15's fuzzing:
63 of 500 page flips read as other values without checksums, 0 with)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import icefloe


def test_pages_of_written_files_carry_checksums(tmp_path: Path) -> None:
    cat = icefloe.load_catalog(
        "ck", type="sql", uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=(tmp_path / "wh").as_uri()
    )
    cat.create_namespace("n")
    t = cat.create_table("n.t", schema=pa.schema([pa.field("id", pa.int64()), pa.field("v", pa.float64())]))
    t.append(pa.table({"id": list(range(10_000)), "v": [i / 7 for i in range(10_000)]}))
    (task,) = list(t.scan().plan_files())
    path = Path(task.file.file_path.removeprefix("file://"))
    data = bytearray(path.read_bytes())
    assert pq.read_table(pa.BufferReader(bytes(data)), page_checksum_verification=True).num_rows == 10_000
    meta = pq.ParquetFile(pa.BufferReader(bytes(data))).metadata.row_group(0).column(1)
    start = meta.dictionary_page_offset or meta.data_page_offset
    data[start + meta.total_compressed_size // 2] ^= 0x10  # inside the column's pages
    with pytest.raises(OSError, match=r"(?i)crc|checksum"):
        pq.read_table(pa.BufferReader(bytes(data)), page_checksum_verification=True)
    cat.close()


@pytest.mark.parametrize("rows", [10_000, 300_000], ids=["grouped-small-file", "per-file"])
def test_a_damaged_page_is_a_typed_error_on_read(tmp_path: Path, rows: int) -> None:
    """Reads verify the CRCs: the flipped page raises CorruptFileError naming the file, through
    the grouped small-file scan and the per-file reader alike, instead of returning other values."""
    cat = icefloe.load_catalog(
        "ck", type="sql", uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=(tmp_path / "wh").as_uri()
    )
    cat.create_namespace("n")
    t = cat.create_table("n.t", schema=pa.schema([pa.field("id", pa.int64()), pa.field("v", pa.float64())]))
    t.append(pa.table({"id": list(range(rows)), "v": [i / 7 for i in range(rows)]}))
    (task,) = list(t.scan().plan_files())
    path = Path(task.file.file_path.removeprefix("file://"))
    data = bytearray(path.read_bytes())
    meta = pq.ParquetFile(pa.BufferReader(bytes(data))).metadata.row_group(0).column(1)
    start = meta.dictionary_page_offset or meta.data_page_offset
    data[start + meta.total_compressed_size // 2] ^= 0x10
    path.write_bytes(bytes(data))
    with pytest.raises(icefloe.CorruptFileError) as e:
        t.scan().to_arrow()
    assert path.name in str(e.value)
    cat.close()
