"""Scan tasks: the picklable unit of reading work that planning hands to a reader or an engine."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icefloe.expressions import BooleanExpression
    from icefloe.manifest import DataFile

__all__ = ["FileScanTask"]


@dataclass(frozen=True, slots=True)
class FileScanTask:
    """Read ``file`` (or the byte range ``[start, start + length)`` of it, on row-group boundaries),
    keep the rows for which ``residual`` holds, and drop the rows that ``delete_files`` delete.

    ``residual`` is the part of the scan filter that partition values could not decide; it is
    unbound (by column name) so the task stays small and picklable for engines such as Spark.
    ``data_sequence_number`` is the file's data sequence number (the manifest entry's, inherited
    when ADDED), which a null ``_last_updated_sequence_number`` inherits (format v3); None when
    the task was not planned from a manifest.
    """

    file: DataFile
    residual: BooleanExpression
    delete_files: tuple[DataFile, ...] = field(default=())
    start: int = 0
    length: int | None = None
    data_sequence_number: int | None = None

    @property
    def file_path(self) -> str:
        return self.file.file_path

    @property
    def size_in_bytes(self) -> int:
        return self.length if self.length is not None else self.file.file_size_in_bytes
