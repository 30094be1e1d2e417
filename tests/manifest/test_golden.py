"""Golden checks against tables written by Iceberg Java 1.10 (generated at $ICEFLOE_ORACLE_REF;
see the oracle harness README). Skipped when the reference tables are absent.

* every manifest list and manifest reads, and the live files and rows add up to the snapshot
  summaries in the metadata JSON (parsed directly with the json module);
* manifest-list counts agree with the entries of each manifest;
* the Avro schemas icefloe writes equal the ones Java wrote, field for field.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fastavro
import pytest

from icefloe.io.local import LocalFileIO
from icefloe.manifest import (
    DataFileContent,
    ManifestContent,
    ManifestEntryStatus,
    ManifestFile,
    ManifestWriter,
    read_manifest,
    read_manifest_list,
    write_manifest_list,
)
from icefloe.manifest._avro import struct_to_avro
from icefloe.manifest._schemas import manifest_entry_struct, manifest_list_struct
from icefloe.spec.partition import PartitionSpec
from icefloe.spec.schema import Schema

ORACLE_REF = Path(os.environ["ICEFLOE_ORACLE_REF"])
IO = LocalFileIO()


@pytest.fixture(scope="module")
def ref_tables() -> list[dict[str, Any]]:
    index = ORACLE_REF / "index.json"
    if not index.is_file():
        pytest.skip(f"Java reference tables not generated at {ORACLE_REF} (run the oracle harness)")
    tables = json.loads(index.read_text())["tables"]
    return [t for t in tables if Path(t["metadata_location"]).is_file()]


def _snapshots(table: dict[str, Any]) -> Iterator[tuple[int, dict[str, Any]]]:
    metadata = json.loads(Path(table["metadata_location"]).read_text())
    for snap in metadata.get("snapshots", []):
        yield metadata["format-version"], snap


def _avro(path: str) -> tuple[dict[str, str], dict[str, Any]]:
    with open(path, "rb") as fo:
        reader = fastavro.reader(fo)
        meta = dict(reader.metadata)
    return meta, json.loads(meta["avro.schema"])


def test_manifests_add_up_to_snapshot_summaries(ref_tables: list[dict[str, Any]]) -> None:
    checked = 0
    kinds: set[tuple[int, ManifestContent]] = set()
    for table in ref_tables:
        for format_version, snap in _snapshots(table):
            summary = snap["summary"]
            manifests = read_manifest_list(IO, snap["manifest-list"])
            totals = {"data_files": 0, "records": 0, "delete_files": 0, "pos": 0, "eq": 0}
            for m in manifests:
                kinds.add((format_version, m.content))
                entries = list(read_manifest(IO, m))
                by_status = {s: [e for e in entries if e.status == s] for s in ManifestEntryStatus}
                assert m.added_files_count == len(by_status[ManifestEntryStatus.ADDED])
                assert m.existing_files_count == len(by_status[ManifestEntryStatus.EXISTING])
                assert m.deleted_files_count == len(by_status[ManifestEntryStatus.DELETED])
                assert m.added_rows_count == sum(
                    e.data_file.record_count for e in by_status[ManifestEntryStatus.ADDED]
                )
                for e in entries:
                    f = e.data_file
                    assert f.spec_id == m.partition_spec_id
                    assert e.snapshot_id is not None
                    assert e.sequence_number is not None and e.file_sequence_number is not None
                    if e.status == ManifestEntryStatus.ADDED:
                        # (compaction adds files with their older data sequence number)
                        assert e.snapshot_id == m.added_snapshot_id
                        assert e.file_sequence_number == m.sequence_number
                    assert e.sequence_number <= m.sequence_number
                    if format_version == 1:
                        assert e.sequence_number == 0
                    if not e.is_live:
                        continue
                    assert e.sequence_number >= m.min_sequence_number
                    if f.content == DataFileContent.DATA:
                        assert m.content == ManifestContent.DATA
                        totals["data_files"] += 1
                        totals["records"] += f.record_count
                    else:
                        assert m.content == ManifestContent.DELETES
                        totals["delete_files"] += 1
                        key = "pos" if f.content == DataFileContent.POSITION_DELETES else "eq"
                        totals[key] += f.record_count
            assert totals["data_files"] == int(summary["total-data-files"]), snap
            assert totals["records"] == int(summary["total-records"]), snap
            assert totals["delete_files"] == int(summary.get("total-delete-files", 0)), snap
            assert totals["pos"] == int(summary.get("total-position-deletes", 0)), snap
            assert totals["eq"] == int(summary.get("total-equality-deletes", 0)), snap
            checked += 1
    assert checked > 10
    # v1 lists, v2 data and delete manifests and v3 (deletion vector) manifests were all covered
    assert {(1, ManifestContent.DATA), (2, ManifestContent.DELETES), (3, ManifestContent.DELETES)} <= kinds


def _manifest_paths(ref_tables: list[dict[str, Any]]) -> Iterator[tuple[str, str]]:
    for table in ref_tables:
        meta_dir = Path(table["metadata_location"]).parent
        for p in sorted(meta_dir.glob("*.avro")):
            yield ("list" if p.name.startswith("snap-") else "manifest"), str(p)


def test_written_avro_schemas_match_java(ref_tables: list[dict[str, Any]]) -> None:
    seen = 0
    for kind, path in _manifest_paths(ref_tables):
        meta, java_schema = _avro(path)
        version = int(meta["format-version"])
        if kind == "list":
            ours = struct_to_avro(manifest_list_struct(version), "manifest_file")
        else:
            schema = Schema.from_json(json.loads(meta["schema"]))
            spec = PartitionSpec.from_json(
                {"spec-id": int(meta["partition-spec-id"]), "fields": json.loads(meta["partition-spec"])}
            )
            ours = struct_to_avro(
                manifest_entry_struct(spec.partition_type(schema), version), "manifest_entry"
            )
        assert ours == java_schema, path
        seen += 1
    assert seen > 20


def test_rewritten_manifests_read_back_equal(ref_tables: list[dict[str, Any]], tmp_path: Path) -> None:
    """Re-writing each Java manifest with icefloe (EXISTING entries) keeps every value."""
    n = 0
    for table in ref_tables:
        for format_version, snap in _snapshots(table):
            for m in read_manifest_list(IO, snap["manifest-list"]):
                meta, _ = _avro(m.manifest_path)
                schema = Schema.from_json(json.loads(meta["schema"]))
                spec = PartitionSpec.from_json(
                    {"spec-id": m.partition_spec_id, "fields": json.loads(meta["partition-spec"])}
                )
                original = list(read_manifest(IO, m))
                out = str(tmp_path / f"re{n}.avro")
                n += 1
                with ManifestWriter(
                    IO, out, spec, schema, m.added_snapshot_id, m.content, format_version
                ) as w:
                    for e in original:
                        if e.status == ManifestEntryStatus.DELETED:
                            w.delete(e)
                        else:
                            w.existing(e)
                new = w.close()
                ours_meta, _ = _avro(out)
                for key in ("partition-spec-id", "format-version", "content"):
                    assert ours_meta.get(key) == meta.get(key), key
                for key in ("schema", "partition-spec", "iceberg.schema"):
                    assert json.loads(ours_meta[key]) == json.loads(meta[key]), key
                if m.partitions is not None:
                    assert new.partitions == m.partitions, m.manifest_path
                again = list(read_manifest(IO, dataclasses.replace(new, sequence_number=m.sequence_number)))
                assert [e.data_file for e in again] == [e.data_file for e in original]
                assert [e.sequence_number for e in again] == [e.sequence_number for e in original]
    assert n > 10


def test_written_list_metadata_matches_java(ref_tables: list[dict[str, Any]], tmp_path: Path) -> None:
    for table in ref_tables:
        for format_version, snap in _snapshots(table):
            if format_version == 3:
                continue
            java_meta, _ = _avro(snap["manifest-list"])
            manifests: list[ManifestFile] = read_manifest_list(IO, snap["manifest-list"])
            out = str(tmp_path / f"snap-{snap['snapshot-id']}.avro")
            write_manifest_list(
                IO,
                out,
                snap["snapshot-id"],
                snap.get("parent-snapshot-id"),
                snap.get("sequence-number", 0),
                manifests,
                format_version,
            )
            ours, _ = _avro(out)
            for key in ("snapshot-id", "parent-snapshot-id", "sequence-number", "format-version"):
                assert ours.get(key) == java_meta.get(key), (key, snap["manifest-list"])
            assert json.loads(ours["iceberg.schema"]) == json.loads(java_meta["iceberg.schema"])
            assert read_manifest_list(IO, out) == manifests


def test_v3_data_files_inherit_disjoint_row_ids(ref_tables: list[dict[str, Any]]) -> None:
    checked = 0
    for table in ref_tables:
        metadata = json.loads(Path(table["metadata_location"]).read_text())
        if metadata["format-version"] < 3:
            continue
        for snap in metadata["snapshots"]:
            ranges = sorted(
                (e.data_file.first_row_id, e.data_file.first_row_id + e.data_file.record_count)
                for m in read_manifest_list(IO, snap["manifest-list"])
                if m.content == ManifestContent.DATA
                for e in read_manifest(IO, m, discard_deleted=True)
                if e.data_file.first_row_id is not None
            )
            live_rows = int(snap["summary"]["total-records"])
            assert sum(end - start for start, end in ranges) == live_rows
            assert all(a[1] <= b[0] for a, b in itertools.pairwise(ranges))
            assert ranges[-1][1] == snap["first-row-id"] + snap["added-rows"]
            checked += 1
    assert checked
