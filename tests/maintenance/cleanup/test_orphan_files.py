"""``table.maintenance.remove_orphan_files``: locations compared the way Java's action compares
them, hidden paths, age threshold, dry runs, bad input, listings that never leave the location,
and the FileIO listing on the local file system and on S3."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from cleanup_checks import SCHEMA, assert_intact, files_under, local, referenced, rows

from icefloe.errors import FileIOError, UnsupportedFeatureError, ValidationError
from icefloe.maintenance.orphan_files import (
    EQUAL_SCHEMES_DEFAULT,
    OrphanOptions,
    find_orphans,
    is_hidden,
    to_file_uri,
)

DAY_S = 86_400


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def plant(path: str | Path, age_days: float = 4) -> str:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(b"orphan")
    old = time.time() - age_days * DAY_S
    os.utime(p, (old, old))
    return str(p)


def options(mode: str = "error", **kw: Any) -> OrphanOptions:
    return OrphanOptions(
        location="s3://b/t",
        older_than_ms=now_ms(),
        equal_schemes={**EQUAL_SCHEMES_DEFAULT, **kw.get("schemes", {})},
        equal_authorities=kw.get("authorities", {}),
        prefix_mismatch_mode=mode,
    )


# ------------------------------------------------------------------ comparing locations


def test_file_uri_forms_are_one_path() -> None:
    for form in (
        "file:/tmp/t/x.parquet",
        "file:///tmp/t/x.parquet",
        "/tmp/t/x.parquet",
        "file:/tmp//t/x.parquet",
    ):
        uri = to_file_uri(form, EQUAL_SCHEMES_DEFAULT, {})
        assert uri.path == "/tmp/t/x.parquet" and uri.authority is None
    s3 = to_file_uri("s3a://bucket/t/x", EQUAL_SCHEMES_DEFAULT, {})
    assert (s3.scheme, s3.authority, s3.path) == ("s3", "bucket", "/t/x")
    o = OrphanOptions(location="/tmp/t", older_than_ms=0)
    orphans, conflicts = find_orphans(
        ["/tmp/t/a", "file:/tmp/t/b", "file:///tmp/t/c", "/tmp/t/d"],
        ["file:///tmp/t/a", "/tmp/t/b", "file:/tmp/t/c"],
        o,
    )
    assert orphans == ["/tmp/t/d"] and not conflicts


def test_s3a_and_s3n_equal_s3_by_default_other_schemes_conflict() -> None:
    listed = ["s3://b/t/a", "s3a://b/t/b", "gs://b/t/c"]
    valid = ["s3a://b/t/a", "s3n://b/t/b", "s3://b/t/c"]
    orphans, conflicts = find_orphans(listed, valid, options())
    assert orphans == [] and conflicts == {("s3", "gs")}
    orphans, conflicts = find_orphans(listed, valid, options(schemes={"gs": "s3"}))
    assert orphans == [] and not conflicts


@pytest.mark.parametrize(("mode", "orphans"), [("error", []), ("ignore", []), ("delete", ["s3://other/t/a"])])
def test_prefix_mismatch_modes(mode: str, orphans: list[str]) -> None:
    found, conflicts = find_orphans(["s3://other/t/a", "s3://b/t/z"], ["s3://b/t/a"], options(mode))
    assert found == [*orphans, "s3://b/t/z"]
    assert conflicts == ({("b", "other")} if mode == "error" else set())
    # equal_authorities (keys may list several, comma-separated, as in Java)
    found, conflicts = find_orphans(
        ["s3://other/t/a"], ["s3://b/t/a"], options(mode, authorities={"other,third": "b"})
    )
    assert found == [] and not conflicts


def test_a_reference_without_scheme_or_authority_matches_any() -> None:
    found, conflicts = find_orphans(["s3://b/t/a", "s3://b/t/b"], ["/t/a", "s3:///t/b"], options())
    assert found == [] and not conflicts


def test_hidden_paths_follow_java() -> None:
    assert is_hidden("data/_temporary/0/x.parquet")
    assert is_hidden("data/.x.parquet.crc")
    assert is_hidden("_SUCCESS")
    assert not is_hidden("data/cat=a/x.parquet")
    assert is_hidden("data/_cat=a/x.parquet")
    assert not is_hidden("data/_cat=a/x.parquet", ("_cat=",))


# ------------------------------------------------------------------ on a table


def make_table(catalog: Any, **props: str) -> Any:
    t = catalog.create_table("ns.t", schema=SCHEMA, partition_by=["cat"], properties=props or None)
    t.append(rows(1, 2, cat="a"))
    t.append(rows(3, cat="b"))
    t.delete("id = 1")
    return t


def test_old_unreferenced_files_go_young_and_hidden_ones_stay(catalog: Any) -> None:
    t = make_table(catalog)
    root = local(t.location)
    orphans = [
        plant(f"{root}/data/cat=a/lost-{uuid.uuid4()}.parquet"),
        plant(f"{root}/data/cat=z/deep/er/lost.parquet"),
        plant(f"{root}/metadata/{uuid.uuid4()}-m0.avro"),
        plant(f"{root}/metadata/snap-1-1-{uuid.uuid4()}.avro"),
        plant(f"{root}/metadata/00042-{uuid.uuid4()}.metadata.json"),
        plant(f"{root}/stray.txt"),
    ]
    young = plant(f"{root}/data/cat=a/in-flight.parquet", age_days=1)
    hidden = [plant(f"{root}/data/_temporary/x.parquet"), plant(f"{root}/data/cat=a/.x.parquet.crc")]
    hint = plant(f"{root}/metadata/version-hint.text")
    kept = referenced(t)
    dry = t.maintenance.remove_orphan_files(dry_run=True)
    assert {local(p) for p in dry.orphan_files} == set(orphans) and dry.dry_run
    assert all(os.path.exists(p) for p in orphans)
    result = t.maintenance.remove_orphan_files()
    assert {local(p) for p in result} == set(orphans) and len(result) == len(orphans)
    assert not any(os.path.exists(p) for p in orphans)
    assert all(os.path.exists(p) for p in (young, *hidden, hint))
    assert files_under(t.location) == kept | {young, *hidden, hint}
    assert_intact(t)


def test_older_than_now_leaves_exactly_the_referenced_files(catalog: Any) -> None:
    t = make_table(catalog)
    root = local(t.location)
    plant(f"{root}/data/cat=a/lost.parquet", age_days=0)
    time.sleep(0.01)
    t.maintenance.remove_orphan_files(older_than=now_ms())
    assert files_under(t.location) == referenced(t)


def test_metadata_files_out_of_the_log_are_orphans(catalog: Any) -> None:
    t = make_table(catalog, **{"write.metadata.previous-versions-max": "2"})
    t.append(rows(9, cat="c"))
    metadata_files = {p for p in files_under(t.location) if p.endswith(".metadata.json")}
    assert len(metadata_files) > 3
    time.sleep(0.01)
    result = t.maintenance.remove_orphan_files(older_than=now_ms())
    assert len([p for p in result if p.endswith(".metadata.json")]) == len(metadata_files) - 3
    assert_intact(t)


def test_a_subdirectory_location_lists_only_there(catalog: Any) -> None:
    t = make_table(catalog)
    root = local(t.location)
    in_data = plant(f"{root}/data/cat=a/lost.parquet")
    in_metadata = plant(f"{root}/metadata/lost.avro")
    result = t.maintenance.remove_orphan_files(location=f"{t.location}/data")
    assert [local(p) for p in result] == [in_data]
    assert os.path.exists(in_metadata)


def test_symbolic_links_to_directories_are_not_followed(catalog: Any, tmp_path: Path) -> None:
    t = make_table(catalog)
    outside = tmp_path / "outside"
    victim = plant(outside / "precious.parquet")
    os.symlink(outside, Path(local(t.location)) / "data" / "link")
    result = t.maintenance.remove_orphan_files(older_than=now_ms())
    assert os.path.exists(victim)
    assert not any("precious" in p for p in result)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"older_than": "2999-01-01T00:00:00"}, "in the future"),
        ({"prefix_mismatch_mode": "sometimes"}, "prefix_mismatch_mode"),
        ({"location": "OUTSIDE"}, "not inside the table's location"),
        ({"location": "PARENT"}, "not inside the table's location"),
    ],
)
def test_bad_input_is_refused_before_anything_is_deleted(
    catalog: Any, tmp_path: Path, kwargs: dict[str, Any], match: str
) -> None:
    t = make_table(catalog)
    planted = plant(f"{local(t.location)}/data/lost.parquet")
    if kwargs.get("location") == "OUTSIDE":
        kwargs = {"location": (tmp_path / "elsewhere").as_uri()}
    elif kwargs.get("location") == "PARENT":
        kwargs = {"location": t.location.rsplit("/", 1)[0]}
    with pytest.raises(ValidationError, match=match):
        t.maintenance.remove_orphan_files(**kwargs)
    assert os.path.exists(planted)


def test_write_data_path_is_an_allowed_location(catalog: Any, tmp_path: Path) -> None:
    data = tmp_path / "elsewhere" / "data"
    t = make_table(catalog, **{"write.data.path": data.as_uri()})
    assert any(str(data) in p for p in referenced(t))
    lost = plant(data / "lost.parquet")
    result = t.maintenance.remove_orphan_files(location=data.as_uri())
    assert [local(p) for p in result] == [lost]
    assert_intact(t)


def test_an_unreadable_manifest_stops_the_removal(catalog: Any) -> None:
    t = make_table(catalog)
    lost = plant(f"{local(t.location)}/data/lost.parquet")
    snapshot = t.current_snapshot()
    assert snapshot is not None
    os.remove(local(snapshot.manifest_list))
    with pytest.raises(FileIOError, match="cannot be read"):
        t.maintenance.remove_orphan_files()
    assert os.path.exists(lost)


def test_a_file_io_that_cannot_list_is_refused(catalog: Any) -> None:
    from icefloe.testing import CountingFileIO

    t = make_table(catalog)
    t.io = CountingFileIO(t.io)
    with pytest.raises(UnsupportedFeatureError, match="cannot list"):
        t.maintenance.remove_orphan_files()


# ------------------------------------------------------------------ FileIO listings


def test_local_listing(tmp_path: Path) -> None:
    from icefloe.io.arrow import ArrowFileIO
    from icefloe.io.local import LocalFileIO

    plant(tmp_path / "a" / "b" / "f1", age_days=2)
    plant(tmp_path / "f2", age_days=0)
    (tmp_path / "empty").mkdir()
    for io in (LocalFileIO(), ArrowFileIO()):
        for prefix in (str(tmp_path), tmp_path.as_uri(), f"file:{tmp_path}"):
            listed = {i.location: i for i in io.list_prefix(prefix)}
            assert set(listed) == {f"{prefix}/a/b/f1", f"{prefix}/f2"}
            assert listed[f"{prefix}/f2"].size == 6
            assert abs(listed[f"{prefix}/a/b/f1"].modified_ms - (time.time() - 2 * DAY_S) * 1000) < 5000
            top = {(i.location.rsplit("/", 1)[1], i.is_dir) for i in io.list_prefix(prefix, recursive=False)}
            assert top == {("a", True), ("f2", False), ("empty", True)}
        assert list(io.list_prefix(str(tmp_path / "missing"))) == []


@pytest.mark.s3
def test_s3_listing_and_orphans(seaweedfs_server: Any, tmp_path: Path) -> None:
    import icefloe
    from icefloe.io.arrow import ArrowFileIO

    props = seaweedfs_server.file_io_properties()
    base = seaweedfs_server.warehouse(f"orphans-{uuid.uuid4().hex[:8]}")
    io = ArrowFileIO(props)
    for name in ("x/a.bin", "x/y/b.bin", "z.bin"):
        with io.new_output(f"{base}/{name}").create() as f:
            f.write(b"1234")
    assert {i.location for i in io.list_prefix(base)} == {
        f"{base}/x/a.bin",
        f"{base}/x/y/b.bin",
        f"{base}/z.bin",
    }
    assert {(i.location, i.is_dir) for i in io.list_prefix(base, recursive=False)} == {
        (f"{base}/x", True),
        (f"{base}/z.bin", False),
    }
    assert all(i.size == 4 and i.modified_ms > 0 for i in io.list_prefix(base))
    cat = icefloe.load_catalog(
        "s3", type="sql", uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=base, **props
    )
    cat.create_namespace("ns")
    t = make_table(cat)
    with t.io.new_output(f"{t.location}/data/lost.parquet").create() as f:
        f.write(b"x")
    with t.io.new_output(f"{t.location.replace('s3://', 's3a://', 1)}/data/lost2.parquet").create() as f:
        f.write(b"x")
    time.sleep(0.01)
    result = t.maintenance.remove_orphan_files(older_than=now_ms())
    assert set(result) == {f"{t.location}/data/lost.parquet", f"{t.location}/data/lost2.parquet"}
    listed = {i.location for i in t.io.list_prefix(t.location)}
    assert {p for p in listed} == {p for p in _referenced_s3(t)}
    t.append(rows(5, cat="q"))
    assert sorted(t.scan().to_arrow().column("id").to_pylist()) == [2, 3, 5]


def _referenced_s3(t: Any) -> set[str]:
    from icefloe.maintenance.reachability import LocalReachability, metadata_file_paths

    reach = LocalReachability(t.io).reachable(
        None,  # type: ignore[arg-type]
        [s.manifest_list for s in t.metadata.snapshots],
    )
    return (
        reach.manifests
        | reach.content
        | {s.manifest_list for s in t.metadata.snapshots}
        | set(metadata_file_paths(t.metadata, t.metadata_location))
    )
