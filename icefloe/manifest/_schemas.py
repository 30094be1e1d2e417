"""The Iceberg structs of manifest entries and manifest-list entries, per format version, with
the field ids, names, order and docs Iceberg Java writes."""

from __future__ import annotations

from functools import lru_cache

from icefloe.errors import UnsupportedFeatureError
from icefloe.spec.types import (
    BinaryType,
    BooleanType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
)

__all__ = ["check_format_version", "data_file_struct", "manifest_entry_struct", "manifest_list_struct"]

_I, _L, _S, _B = IntegerType(), LongType(), StringType(), BinaryType()


def check_format_version(format_version: int) -> None:
    if format_version not in (1, 2, 3):
        raise UnsupportedFeatureError(
            f"format version {format_version} is not supported", hint="use format version 1, 2 or 3"
        )


def _req(fid: int, name: str, t: IcebergType, doc: str | None = None) -> NestedField:
    return NestedField(fid, name, t, True, doc)


def _opt(fid: int, name: str, t: IcebergType, doc: str | None = None) -> NestedField:
    return NestedField(fid, name, t, False, doc)


def _int_map(fid: int, name: str, key_id: int, value_type: IcebergType, doc: str) -> NestedField:
    return _opt(fid, name, MapType(key_id, _I, key_id + 1, value_type, True), doc)


def data_file_struct(partition_type: StructType, format_version: int) -> StructType:
    check_format_version(format_version)
    v1 = format_version == 1
    fields: list[NestedField] = []
    if not v1:
        fields.append(
            _req(134, "content", _I, "Contents of the file: 0=data, 1=position deletes, 2=equality deletes")
        )
    fields += [
        _req(100, "file_path", _S, "Location URI with FS scheme"),
        _req(101, "file_format", _S, "File format name: avro, orc, or parquet"),
        _req(
            102,
            "partition",
            partition_type,
            None if v1 else "Partition data tuple, schema based on the partition spec",
        ),
        _req(103, "record_count", _L, "Number of records in the file"),
        _req(104, "file_size_in_bytes", _L, "Total file size in bytes"),
    ]
    if v1:
        fields.append(_req(105, "block_size_in_bytes", _L))
    fields += [
        _int_map(108, "column_sizes", 117, _L, "Map of column id to total size on disk"),
        _int_map(109, "value_counts", 119, _L, "Map of column id to total count, including null and NaN"),
        _int_map(110, "null_value_counts", 121, _L, "Map of column id to null value count"),
        _int_map(137, "nan_value_counts", 138, _L, "Map of column id to number of NaN values in the column"),
        _int_map(125, "lower_bounds", 126, _B, "Map of column id to lower bound"),
        _int_map(128, "upper_bounds", 129, _B, "Map of column id to upper bound"),
        _opt(131, "key_metadata", _B, "Encryption key metadata blob"),
        _opt(132, "split_offsets", ListType(133, _L, True), "Splittable offsets"),
    ]
    if not v1:
        fields.append(_opt(135, "equality_ids", ListType(136, _I, True), "Equality comparison field IDs"))
    fields.append(_opt(140, "sort_order_id", _I, "Sort order ID"))
    if format_version >= 3:
        fields.append(
            _opt(142, "first_row_id", _L, "The first row ID assigned to the first row in the data file")
        )
    if not v1:
        fields.append(
            _opt(
                143,
                "referenced_data_file",
                _S,
                "Fully qualified location (URI with FS scheme) of a data file that all deletes reference",
            )
        )
    if format_version >= 3:
        fields += [
            _opt(144, "content_offset", _L, "The offset in the file where the content starts"),
            _opt(145, "content_size_in_bytes", _L, "The length of referenced content stored in the file"),
        ]
    return StructType(*fields)


def manifest_entry_struct(partition_type: StructType, format_version: int) -> StructType:
    fields = [_req(0, "status", _I), _opt(1, "snapshot_id", _L)]
    if format_version >= 2:
        fields += [_opt(3, "sequence_number", _L), _opt(4, "file_sequence_number", _L)]
    fields.append(_req(2, "data_file", data_file_struct(partition_type, format_version)))
    return StructType(*fields)


@lru_cache(maxsize=4)
def manifest_list_struct(format_version: int) -> StructType:
    check_format_version(format_version)
    summary = StructType(
        _req(509, "contains_null", BooleanType(), "True if any file has a null partition value"),
        _opt(518, "contains_nan", BooleanType(), "True if any file has a nan partition value"),
        _opt(510, "lower_bound", _B, "Partition lower bound for all files"),
        _opt(511, "upper_bound", _B, "Partition upper bound for all files"),
    )
    partitions = _opt(507, "partitions", ListType(508, summary, True), "Summary for each partition")
    head = [
        _req(500, "manifest_path", _S, "Location URI with FS scheme"),
        _req(501, "manifest_length", _L, "Total file size in bytes"),
        _req(502, "partition_spec_id", _I, "Spec ID used to write"),
    ]
    key_metadata = _opt(519, "key_metadata", _B, "Encryption key metadata blob")
    if format_version == 1:
        return StructType(
            *head,
            _req(503, "added_snapshot_id", _L, "Snapshot ID that added the manifest"),
            _opt(504, "added_files_count", _I, "Added entry count"),
            _opt(505, "existing_files_count", _I, "Existing entry count"),
            _opt(506, "deleted_files_count", _I, "Deleted entry count"),
            partitions,
            _opt(512, "added_rows_count", _L, "Added rows count"),
            _opt(513, "existing_rows_count", _L, "Existing rows count"),
            _opt(514, "deleted_rows_count", _L, "Deleted rows count"),
            key_metadata,
        )
    fields = [
        *head,
        _req(517, "content", _I, "Contents of the manifest: 0=data, 1=deletes"),
        _req(515, "sequence_number", _L, "Sequence number when the manifest was added"),
        _req(516, "min_sequence_number", _L, "Lowest sequence number in the manifest"),
        _req(503, "added_snapshot_id", _L, "Snapshot ID that added the manifest"),
        _req(504, "added_files_count", _I, "Added entry count"),
        _req(505, "existing_files_count", _I, "Existing entry count"),
        _req(506, "deleted_files_count", _I, "Deleted entry count"),
        _req(512, "added_rows_count", _L, "Added rows count"),
        _req(513, "existing_rows_count", _L, "Existing rows count"),
        _req(514, "deleted_rows_count", _L, "Deleted rows count"),
        partitions,
        key_metadata,
    ]
    if format_version >= 3:
        fields.append(
            _opt(520, "first_row_id", _L, "Starting row ID to assign to new rows in ADDED data files")
        )
    return StructType(*fields)
