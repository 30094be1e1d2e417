"""Every table property icefloe reads is checked when it is set (issue 15, part 5): a value that
would break later writes or reads (``write.parquet.compression-codec=bogus``) is refused by the
commit that sets it, and the table keeps its old properties.

The list of properties is not kept by hand: it is every property-like string in icefloe's source,
so a new ``props.get("write.something")`` fails this test until it is registered in
:mod:`icefloe.spec.properties`."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pyarrow as pa
import pytest

import icefloe
from icefloe.errors import ConfigError
from icefloe.spec.properties import check_properties, checked_property

ROOT = Path(icefloe.__file__).parent
PROPERTY = re.compile(r"(write|commit|read|history|gc|schema)\.[a-z0-9][a-z0-9.\-]*[a-z0-9.]")

#: property-like names that are not table properties, with where they come from
NOT_TABLE_PROPERTIES = {
    "read.batch-size": "scan option (table.scan(options=...))",
    "read.fragment-readahead": "scan option",
    "read.batch-readahead": "scan option",
    "read.threads": "scan option",
}


def properties_in_source() -> set[str]:
    found: set[str] = set()
    for path in ROOT.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and PROPERTY.fullmatch(node.value)
            ):
                found.add(node.value)
    return found


def test_the_scan_finds_the_known_properties() -> None:
    found = properties_in_source()
    assert {
        "write.parquet.compression-codec",
        "write.metadata.metrics.default",
        "commit.retry.num-retries",
    } <= found
    assert len(found) > 30


@pytest.mark.parametrize("key", sorted(properties_in_source()))
def test_every_property_read_is_checked_when_set(key: str) -> None:
    if key in NOT_TABLE_PROPERTIES:
        return
    assert checked_property(key), (
        f"{key} is read by icefloe but not checked when set (icefloe.spec.properties)"
    )
    name = key + "col" if key.endswith(".") else key
    bad = "" if key.endswith(".path") else "bogus"
    with pytest.raises(ConfigError, match=re.escape(name)):
        check_properties({name: bad})


@pytest.mark.parametrize(
    ("key", "good"),
    [
        ("write.parquet.compression-codec", "ZSTD"),
        ("write.parquet.compression-codec", "uncompressed"),
        ("write.metadata.metrics.default", "truncate(8)"),
        ("write.metadata.metrics.column.a.b", "counts"),
        ("write.parquet.bloom-filter-enabled.column.id", "true"),
        ("write.distribution-mode", "hash"),
        ("schema.name-mapping.default", '[{"field-id": 1, "names": ["id"]}]'),
        ("write.data.path", "s3://bucket/data"),
    ],
)
def test_good_values_pass(key: str, good: str) -> None:
    check_properties({key: good})


@pytest.mark.parametrize(
    ("key", "bad"),
    [
        ("write.parquet.compression-codec", "bogus"),
        ("write.metadata.metrics.default", "bogus"),
        ("write.metadata.metrics.default", "truncate(0)"),
        ("write.metadata.metrics.column.id", "truncate"),
        ("schema.name-mapping.default", '[{"field-id": "x", "names": ["id"]}]'),
        ("schema.name-mapping.default", '{"field-id": 1}'),
    ],
)
def test_a_bad_value_is_refused_by_the_commit_that_sets_it(tmp_path: Path, key: str, bad: str) -> None:
    cat = icefloe.load_catalog(
        "reg", type="sql", uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=(tmp_path / "wh").as_uri()
    )
    cat.create_namespace("n")
    t = cat.create_table("n.t", schema=pa.schema([pa.field("id", pa.int64())]))
    before, props = t.metadata_location, dict(t.metadata.properties)
    with pytest.raises(ConfigError, match=re.escape(key)), t.transaction() as tx:
        tx.set_properties(**{key: bad})
    t = cat.load_table("n.t")
    assert t.metadata_location == before and t.metadata.properties == props
    t.append(pa.table({"id": [1, 2]}))  # the table still takes writes
    assert t.scan().to_arrow().num_rows == 2
    cat.close()
