"""What to raise when a file's bytes do not decode: one rule for every reader of table files.

Decoders (pyarrow.parquet, fastavro, json, the Puffin reader) fail with their own exceptions:
``ArrowInvalid`` for a missing footer, ``OSError`` for a bad ZSTD frame or thrift header,
``zlib.error``, ``IndexError`` or ``SchemaParseException`` inside an Avro file. The places where
bytes become objects wrap the decode calls in ``with decoding(path, file_kind):`` (entered once per
file or per stream of batches, never per batch), which turns them into typed errors::

    an IcefloeError            -> unchanged (a FileIOError also gets ``path`` and ``file_kind``,
                                  and a hint when the file is missing)
    an OSError from storage    -> FileIOError naming the file (errno set, or an object store's error)
    anything else              -> CorruptFileError naming the file and its kind

``MemoryError`` (running out of memory says nothing about the file) and ``BaseException`` s that
are not ``Exception`` (KeyboardInterrupt, GeneratorExit) pass untouched.
"""

from __future__ import annotations

from types import TracebackType

from icefloe.errors import CorruptFileError, FileIOError, IcefloeError

__all__ = [
    "DATA_FILE",
    "DELETION_VECTOR",
    "EQUALITY_DELETE_FILE",
    "MANIFEST",
    "MANIFEST_LIST",
    "POSITION_DELETE_FILE",
    "TABLE_METADATA",
    "decode_failure",
    "decoding",
    "note_file",
]

DATA_FILE = "data file"
POSITION_DELETE_FILE = "position delete file"
EQUALITY_DELETE_FILE = "equality delete file"
DELETION_VECTOR = "deletion vector"
MANIFEST = "manifest"
MANIFEST_LIST = "manifest list"
TABLE_METADATA = "table metadata"

# pyarrow reports decompression and thrift failures as OSError too; these markers (and an errno)
# tell the storage failures apart, which a retry can fix.
_STORAGE_MARKERS = ("AWS Error", "Azure Error", "GCS Error", "google::cloud", "HDFS", "Connection")
_MAX_REASON = 400


def decode_failure(error: Exception, path: str, file_kind: str) -> IcefloeError:
    """The typed error for ``error`` (not an IcefloeError), raised while reading ``file_kind`` at
    ``path``. Raise it ``from error``."""
    text = str(error)
    reason = f"{type(error).__name__}: {text}" if text else type(error).__name__
    if len(reason) > _MAX_REASON:
        reason = reason[:_MAX_REASON] + "..."
    if isinstance(error, OSError) and (error.errno is not None or any(m in text for m in _STORAGE_MARKERS)):
        err = FileIOError(
            f"cannot read {file_kind} {path!r}: {reason}",
            location=path,
            path=path,
            file_kind=file_kind,
            not_found=isinstance(error, FileNotFoundError),
        )
        err.errno = error.errno
        return err
    return CorruptFileError.of(path, file_kind, reason)


def note_file(error: IcefloeError, path: str, file_kind: str) -> None:
    """Attach ``path`` and ``file_kind`` to a FileIOError raised while reading the file (and a hint
    when the file is missing)."""
    if not isinstance(error, FileIOError):
        return
    error.context.setdefault("path", path)
    error.context.setdefault("file_kind", file_kind)
    if error.hint is None and error.context.get("not_found"):
        error.hint = (
            f"the table references a {file_kind} that no longer exists; restore it, or roll the "
            "table back to a snapshot that does not reference it"
        )


class decoding:
    """Context manager (named like a function: ``with decoding(path, kind):``): exceptions of the
    decoder inside become typed errors naming the file."""

    __slots__ = ("file_kind", "path")

    def __init__(self, path: str, file_kind: str) -> None:
        self.path = path
        self.file_kind = file_kind

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        if error is None or not isinstance(error, Exception) or isinstance(error, MemoryError):
            return
        if isinstance(error, IcefloeError):
            note_file(error, self.path, self.file_kind)
            return
        raise decode_failure(error, self.path, self.file_kind) from error


#: Parquet pages written with a CRC-32 (icefloe's and parquet-mr's writers) are verified when
#: read, so a damaged page raises instead of decoding as other values; pages without one are read
#: as they are. Pass as ``pq.ParquetFile(..., **PARQUET_READ)``.
PARQUET_READ: dict[str, bool] = {"page_checksum_verification": True}
