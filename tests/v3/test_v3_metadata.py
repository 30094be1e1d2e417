"""Format v3 tables: creating, upgrading (never downgrading) and row lineage at commit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from icefloe.errors import UnsupportedFeatureError, ValidationError
from icefloe.manifest import read_manifest, read_manifest_list
from icefloe.spec.metadata_builder import TableMetadataBuilder
from icefloe.spec.table_metadata import read_metadata_json

from .conftest import SCHEMA, rows


def _json(t: Any) -> dict[str, Any]:
    return json.loads(Path(t.metadata_location.removeprefix("file://")).read_text())


def test_create_v3_table(catalog: Any) -> None:
    t = catalog.create_table("ns.t", schema=SCHEMA, properties={"format-version": "3"})
    assert t.format_version == 3
    doc = _json(t)
    assert doc["format-version"] == 3 and doc["next-row-id"] == 0
    assert "format-version" not in doc["properties"]


def test_row_lineage_assigned_at_commit(catalog: Any) -> None:
    t = catalog.create_table("ns.t", schema=SCHEMA, properties={"format-version": "3"})
    t.append(rows(range(10)))
    s1 = t.current_snapshot()
    assert (s1.first_row_id, s1.added_rows, t.metadata.next_row_id) == (0, 10, 10)
    t.append(rows(range(10, 15)))
    s2 = t.current_snapshot()
    assert (s2.first_row_id, s2.added_rows, t.metadata.next_row_id) == (10, 5, 15)
    # manifests get first_row_id in the manifest list; data files inherit theirs
    firsts = sorted(
        (e.data_file.first_row_id, e.data_file.record_count)
        for m in read_manifest_list(t.io, s2.manifest_list)
        for e in read_manifest(t.io, m)
    )
    assert firsts == [(0, 10), (10, 5)]
    doc = _json(t)
    assert doc["next-row-id"] == 15
    snap = next(s for s in doc["snapshots"] if s["snapshot-id"] == s2.snapshot_id)
    assert (snap["first-row-id"], snap["added-rows"]) == (10, 5)
    # and the file parses back to the same metadata
    assert read_metadata_json(json.dumps(doc)).next_row_id == 15


@pytest.mark.parametrize("start", [1, 2])
def test_upgrade_to_v3(catalog: Any, start: int) -> None:
    t = catalog.create_table("ns.t", schema=SCHEMA, properties={"format-version": str(start)})
    if start == 1:
        t.upgrade_format_version(2)
        assert t.format_version == 2
    else:
        t.append(rows(range(4)))  # written before the upgrade: no row ids yet
    t.upgrade_format_version(3)
    assert t.format_version == 3 and t.metadata.next_row_id == 0
    assert catalog.load_table("ns.t").format_version == 3
    t.append(rows(range(4, 7)))
    snap = t.current_snapshot()
    # the first v3 snapshot gives row ids to the old manifest's rows too
    before = 4 if start == 2 else 0
    assert (snap.first_row_id, snap.added_rows) == (0, before + 3)
    assert t.metadata.next_row_id == before + 3
    assert sorted(r["id"] for r in t.scan().to_arrow().to_pylist()) == list(range(0 if start == 2 else 4, 7))


def test_upgrade_is_idempotent_and_never_down(catalog: Any) -> None:
    t = catalog.create_table("ns.t", schema=SCHEMA, properties={"format-version": "3"})
    loc = t.metadata_location
    t.upgrade_format_version(3)
    assert t.metadata_location == loc  # nothing committed
    with pytest.raises(ValidationError, match="downgrade"):
        t.upgrade_format_version(2)
    with pytest.raises(UnsupportedFeatureError):
        t.upgrade_format_version(4)


def test_builder_rules() -> None:
    b = TableMetadataBuilder.empty(2)
    b.upgrade_format_version(3)
    assert b.next_row_id == 0
    with pytest.raises(UnsupportedFeatureError, match="v1 to v3"):
        TableMetadataBuilder.empty(4)
