"""``table.maintenance.rewrite_manifests``: entries clustered by partition into manifests of
``commit.manifest.target-size-bytes``, a ``replace`` snapshot with Java's summary keys, entries
kept as they were (status EXISTING, snapshot ids and sequence numbers)."""

from __future__ import annotations

import itertools

import pytest
from rewrite_checks import (
    MOR,
    check_snapshots_intact,
    every_snapshot_rows,
    files_under,
    live_entries,
    make_table,
    orphans,
    rows,
    table_rows,
)

from icefloe.errors import ConfigError, ValidationError
from icefloe.maintenance.rewrite_manifests import partition_sort_key
from icefloe.manifest import ManifestContent, ManifestEntryStatus, read_manifest, read_manifest_list


def _manifests(t: object, content: ManifestContent = ManifestContent.DATA) -> list:
    snap = t.current_snapshot()  # type: ignore[attr-defined]
    return [m for m in read_manifest_list(t.io, snap.manifest_list) if m.content == content]  # type: ignore[attr-defined]


def test_manifests_are_merged_and_entries_kept(catalog: object) -> None:
    t = make_table(catalog, "merge", files=12)
    before = every_snapshot_rows(t)
    entries = {
        e.data_file.file_path: (e.snapshot_id, e.sequence_number, e.file_sequence_number)
        for e in live_entries(t)
    }
    assert len(_manifests(t)) == 12
    result = t.maintenance.rewrite_manifests()
    assert len(result.rewritten_manifests) == 12 and len(result.added_manifests) == 1
    snap = t.current_snapshot()
    assert result.snapshot_id == snap.snapshot_id and snap.summary.operation.value == "replace"
    props = snap.summary.props
    assert (props["manifests-created"], props["manifests-replaced"], props["manifests-kept"]) == (
        "1",
        "12",
        "0",
    )
    assert props["entries-processed"] == "24" and props["total-data-files"] == "24"
    (m,) = _manifests(t)
    assert m.added_snapshot_id == snap.snapshot_id and m.sequence_number == snap.sequence_number
    got = list(read_manifest(t.io, m))
    assert {e.status for e in got} == {ManifestEntryStatus.EXISTING}
    assert {
        e.data_file.file_path: (e.snapshot_id, e.sequence_number, e.file_sequence_number) for e in got
    } == entries
    check_snapshots_intact(t, before)
    assert orphans(t) == set()


def test_entries_are_clustered_by_partition(catalog: object) -> None:
    t = make_table(catalog, "cluster", files=12, partition_by=["bucket(8, id)"])
    total = sum(m.manifest_length for m in _manifests(t))
    with t.transaction() as tx:
        tx.set_properties(**{"commit.manifest.target-size-bytes": str(total // 3 + 1)})
    expected = table_rows(t)
    t.maintenance.rewrite_manifests()
    manifests = _manifests(t)
    assert len(manifests) == 3
    ranges = []
    for m in manifests:
        keys = [partition_sort_key(e.data_file.partition) for e in read_manifest(t.io, m)]
        ranges.append((min(keys), max(keys)))
    ranges.sort()
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(ranges))
    assert table_rows(t) == expected


def test_delete_manifests_too_and_other_specs_kept(catalog: object) -> None:
    t = make_table(catalog, "deletes", files=4, properties=MOR)
    for i in (1, 3, 5):
        t.delete(f"id = {i}")
    with t.update_spec() as u:
        u.add_field("bucket(2, id)")
    t.append(rows(range(900, 910)))
    t.append(rows(range(910, 920)))
    expected = table_rows(t)
    old_spec = [m for m in _manifests(t) if m.partition_spec_id == 0]
    result = t.maintenance.rewrite_manifests()  # the current spec: its two manifests
    assert {m.partition_spec_id for m in result.rewritten_manifests} == {1}
    assert [m.manifest_path for m in _manifests(t) if m.partition_spec_id == 0] == [
        m.manifest_path for m in old_spec
    ]
    result = t.maintenance.rewrite_manifests(options={"spec-id": 0})
    assert {m.content for m in result.rewritten_manifests} == {ManifestContent.DATA, ManifestContent.DELETES}
    assert len(_manifests(t, ManifestContent.DELETES)) == 1
    assert table_rows(t) == expected


def test_nothing_to_do_and_bad_options(catalog: object) -> None:
    t = make_table(catalog, "single", files=1)
    assert t.maintenance.rewrite_manifests().snapshot_id is None
    location, on_disk = t.metadata_location, files_under(t.location)
    with pytest.raises(ConfigError, match="does not know"):
        t.maintenance.rewrite_manifests(options={"target-size-bytes": "10"})
    with pytest.raises(ValidationError, match="spec"):
        t.maintenance.rewrite_manifests(options={"spec-id": 7})
    with pytest.raises(ConfigError):
        t.maintenance.rewrite_manifests(options={"use-caching": "sometimes"})
    assert t.refresh().metadata_location == location and files_under(t.location) == on_disk
