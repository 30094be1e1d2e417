"""Manifests and manifest lists: the file-level index of an Iceberg snapshot.

A snapshot's manifest list names its manifests (with per-partition-field summaries used to skip
whole manifests); each manifest lists data or delete files with their partition tuple and column
metrics. Reading applies the spec's inheritance of snapshot ids and sequence numbers; writing
matches the Avro layout Iceberg Java produces.
"""

from icefloe.manifest._model import (
    UNASSIGNED_SEQ,
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    PartitionFieldSummary,
)
from icefloe.manifest.manifest_list import read_manifest_list, write_manifest_list
from icefloe.manifest.reader import read_manifest, read_manifest_metadata
from icefloe.manifest.writer import ManifestWriter

__all__ = [
    "UNASSIGNED_SEQ",
    "DataFile",
    "DataFileContent",
    "FileFormat",
    "ManifestContent",
    "ManifestEntry",
    "ManifestEntryStatus",
    "ManifestFile",
    "ManifestWriter",
    "PartitionFieldSummary",
    "read_manifest",
    "read_manifest_list",
    "read_manifest_metadata",
    "write_manifest_list",
]
