"""Typed table-property reads: defaults only for absent keys, typed errors for bad values, and
the write paths that use them refuse a bad property before anything is written."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import icefloe
from icefloe.errors import ConfigError
from icefloe.spec.properties import bool_property, choice_property, int_property


def test_int_property() -> None:
    assert int_property({}, "k", 7) == 7
    assert int_property({"k": " 12 "}, "k", 7) == 12
    with pytest.raises(ConfigError, match=r"k='12x' is not an integer") as e:
        int_property({"k": "12x"}, "k", 7)
    assert e.value.context["property"] == "k" and "default is 7" in (e.value.hint or "")
    with pytest.raises(ConfigError, match="below its minimum 1"):
        int_property({"k": "0"}, "k", 7, minimum=1)


def test_bool_property() -> None:
    assert bool_property({}, "b", True) is True
    assert bool_property({"b": "FALSE"}, "b", True) is False
    with pytest.raises(ConfigError, match="is not a boolean"):
        bool_property({"b": "yes"}, "b", False)


def test_choice_property() -> None:
    choices = ("copy-on-write", "merge-on-read")
    assert choice_property({}, "m", "copy-on-write", choices, what="a write mode") == "copy-on-write"
    assert choice_property({"m": "Merge-On-Read"}, "m", "copy-on-write", choices, what="a write mode") == (
        "merge-on-read"
    )
    with pytest.raises(ConfigError, match="is not a write mode") as e:
        choice_property({"m": "mor"}, "m", "copy-on-write", choices, what="a write mode")
    assert "'merge-on-read'" in (e.value.hint or "")


BAD = [
    ("write.target-file-size-bytes", "big"),
    ("write.parquet.row-group-size-bytes", "0"),
    ("commit.retry.num-retries", "four"),
    ("commit.manifest-merge.enabled", "sometimes"),
    ("write.metadata.previous-versions-max", "x"),
    ("write.delete.mode", "mor"),
    ("write.merge.isolation-level", "serial"),
    ("history.expire.max-snapshot-age-ms", "5 days"),
    ("history.expire.min-snapshots-to-keep", "0"),
    ("history.expire.max-ref-age-ms", "-1"),
    ("gc.enabled", "no"),
    ("write.metadata.delete-after-commit.enabled", "yes"),
]


def _table(tmp_path: Path) -> tuple[icefloe.Catalog, icefloe.Table]:
    cat = icefloe.load_catalog(
        "props", type="sql", uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=(tmp_path / "wh").as_uri()
    )
    cat.create_namespace("n")
    t = cat.create_table("n.t", schema=pa.schema([pa.field("id", pa.int64())]))
    t.append(pa.table({"id": [1, 2]}))
    return cat, t


@pytest.mark.parametrize(("prop", "value"), BAD)
def test_a_bad_value_is_refused_when_set_and_the_table_stays_as_it_was(
    tmp_path: Path, prop: str, value: str
) -> None:
    cat, t = _table(tmp_path)
    before = t.metadata_location
    with pytest.raises(ConfigError, match=prop.replace(".", r"\.")), t.transaction() as tx:
        tx.set_properties(**{prop: value})
    t = cat.load_table("n.t")
    assert t.metadata_location == before and prop not in t.metadata.properties
    with pytest.raises(ConfigError, match=prop.replace(".", r"\.")):
        cat.create_table("n.other", schema=pa.schema([pa.field("id", pa.int64())]), properties={prop: value})
    assert not cat.table_exists("n.other")
    cat.close()


@pytest.mark.parametrize(("prop", "value"), BAD[:2])
def test_a_bad_value_set_by_another_engine_fails_the_write_before_any_file(
    tmp_path: Path, prop: str, value: str
) -> None:
    import dataclasses

    from icefloe.arrow.writer import write_data_files

    cat, t = _table(tmp_path)
    # Other engines do not check icefloe's kinds: the value is in the metadata they wrote.
    metadata = dataclasses.replace(t.metadata, properties={**t.metadata.properties, prop: value})
    with pytest.raises(ConfigError, match=prop.replace(".", r"\.")):
        write_data_files(t.io, metadata, pa.table({"id": [3]}))
    assert len(list((tmp_path / "wh").rglob("*.parquet"))) == 1  # only the first append's file
    cat.close()


def test_a_bad_retry_value_from_another_engine_fails_the_commit_and_cleans_up(tmp_path: Path) -> None:
    import dataclasses

    cat, t = _table(tmp_path)
    before = t.metadata_location
    bad = {**t.metadata.properties, "commit.retry.num-retries": "many"}
    t.metadata = dataclasses.replace(t.metadata, properties=bad)
    with pytest.raises(ConfigError, match=r"commit\.retry\.num-retries"):
        t.append(pa.table({"id": [3]}))
    assert cat.load_table("n.t").metadata_location == before
    assert len(list((tmp_path / "wh").rglob("*.parquet"))) == 1  # the new data file was removed
    assert len(list((tmp_path / "wh").rglob("*.avro"))) == 2  # the first commit's manifest + list
    cat.close()
