"""The planner's manifest-list pre-filter (``read_manifest_list_selected``): evaluating partition
summaries and live counts before ManifestFile objects are built keeps exactly the manifests the
object path keeps, in list order, and shares the process-wide cache with
``read_manifest_list`` (which still returns every manifest)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icefloe.expressions import (
    And,
    BooleanExpression,
    EqualTo,
    GreaterThan,
    In,
    IsNull,
    LessThan,
    NotNull,
    Or,
    StartsWith,
    bind,
)
from icefloe.expressions.visitors import ManifestEvaluator
from icefloe.io.local import LocalFileIO
from icefloe.manifest import ManifestContent, ManifestFile, PartitionFieldSummary, read_manifest_list
from icefloe.manifest.manifest_list import (
    clear_manifest_list_cache,
    read_manifest_list_selected,
    write_manifest_list,
)
from icefloe.spec.partition import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.types import IntegerType, NestedField, StringType
from icefloe.spec.values import to_bytes
from icefloe.transforms import IdentityTransform

IO = LocalFileIO()
SCHEMA = Schema(NestedField(1, "x", IntegerType(), False), NestedField(2, "s", StringType(), False))
SPECS = {
    0: PartitionSpec(
        PartitionField(1, 1000, IdentityTransform(), "x"),
        PartitionField(2, 1001, IdentityTransform(), "s"),
        spec_id=0,
    ),
    1: PartitionSpec(PartitionField(1, 1000, IdentityTransform(), "x"), spec_id=1),
}
_names = itertools.count()


@st.composite
def _summary(draw: Any, kind: str) -> PartitionFieldSummary:
    contains_null = draw(st.booleans())
    if draw(st.integers(0, 5)) == 0:  # every value null: no bounds
        return PartitionFieldSummary(True, None, None, None)
    if kind == "int":
        lo, hi = sorted(draw(st.lists(st.integers(-20, 20), min_size=2, max_size=2)))
        t: Any = IntegerType()
    else:
        lo, hi = sorted(draw(st.lists(st.text("abc", max_size=3), min_size=2, max_size=2)))
        t = StringType()
    return PartitionFieldSummary(contains_null, None, to_bytes(t, lo), to_bytes(t, hi))


@st.composite
def _manifest(draw: Any) -> ManifestFile:
    spec_id = draw(st.sampled_from([0, 1]))
    parts: tuple[PartitionFieldSummary, ...] | None
    if draw(st.integers(0, 6)) == 0:
        parts = None
    else:
        parts = (draw(_summary("int")),) + ((draw(_summary("str")),) if spec_id == 0 else ())
        if spec_id == 0 and draw(st.integers(0, 5)) == 0:
            parts = parts[:1]  # written by an older version of the spec: a summary missing
    return ManifestFile(
        manifest_path=f"/m/{next(_names)}.avro",
        manifest_length=100,
        partition_spec_id=spec_id,
        content=draw(st.sampled_from(list(ManifestContent))),
        sequence_number=1,
        min_sequence_number=1,
        added_snapshot_id=1,
        added_files_count=draw(st.integers(0, 2)),
        existing_files_count=draw(st.integers(0, 2)),
        deleted_files_count=draw(st.integers(0, 2)),
        added_rows_count=3,
        existing_rows_count=3,
        deleted_rows_count=0,
        partitions=parts,
    )


_int = st.integers(-25, 25)
_leaf = st.one_of(
    _int.map(lambda v: EqualTo("x", v)),
    _int.map(lambda v: LessThan("x", v)),
    _int.map(lambda v: GreaterThan("x", v)),
    st.lists(_int, min_size=1, max_size=3).map(lambda vs: In("x", vs)),
    st.text("abc", max_size=2).map(lambda v: EqualTo("s", v)),
    st.text("abc", min_size=1, max_size=2).map(lambda v: StartsWith("s", v)),
    st.sampled_from([IsNull("x"), NotNull("s")]),
)
_filters = st.recursive(
    _leaf,
    lambda inner: st.tuples(inner, inner).flatmap(lambda p: st.sampled_from([And(*p), Or(*p)])),
    max_leaves=4,
)


def _object_path(manifests: list[ManifestFile], row_filter: BooleanExpression) -> list[ManifestFile]:
    """What the planner kept before the pre-filter: live manifests whose summaries may match."""
    evaluators = {sid: ManifestEvaluator(spec, SCHEMA, row_filter) for sid, spec in SPECS.items()}
    return [
        m
        for m in manifests
        if (m.has_added_files() or m.has_existing_files()) and evaluators[m.partition_spec_id].eval(m)
    ]


def _selector(row_filter: BooleanExpression) -> Any:
    evaluators = {sid: ManifestEvaluator(spec, SCHEMA, row_filter) for sid, spec in SPECS.items()}

    def keep(spec_id: int, content: Any, added: Any, existing: Any, partitions: Any) -> bool:
        if added == 0 and existing == 0:
            return False
        return evaluators[spec_id].eval_summaries(partitions)

    return keep


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(manifests=st.lists(_manifest(), max_size=12), row_filter=_filters, warm_first=st.booleans())
def test_prefilter_keeps_what_the_object_path_keeps(
    tmp_path: Path, manifests: list[ManifestFile], row_filter: BooleanExpression, warm_first: bool
) -> None:
    path = str(tmp_path / f"snap-{next(_names)}.avro")
    write_manifest_list(IO, path, 1, None, 1, manifests)
    bound = bind(SCHEMA, row_filter)
    clear_manifest_list_cache()
    if warm_first:  # every object already built by a full read
        read_manifest_list(IO, path)
    total, kept = read_manifest_list_selected(IO, path, _selector(bound))
    full = read_manifest_list(IO, path)  # after the selective read: still every manifest
    uncached = read_manifest_list(IO, path, cache=False)
    assert full == uncached
    assert total == len(manifests) == len(full)
    assert kept == _object_path(uncached, bound)
    # Objects built by the selective read are the ones the full read returns (one cache entry).
    by_path = {m.manifest_path: m for m in full}
    assert all(by_path[m.manifest_path] is m for m in kept)
    again_total, again = read_manifest_list_selected(IO, path, _selector(bound))
    assert (again_total, again) == (total, kept)
    assert all(a is b for a, b in zip(again, kept, strict=True))


def test_selected_read_without_cache_and_a_keep_nothing_selector(tmp_path: Path) -> None:
    ms = [
        ManifestFile(
            manifest_path=f"/m/{i}.avro",
            manifest_length=10,
            partition_spec_id=1,
            sequence_number=1,
            min_sequence_number=1,
            added_snapshot_id=1,
            added_files_count=1,
            existing_files_count=0,
            deleted_files_count=0,
            added_rows_count=1,
            existing_rows_count=0,
            deleted_rows_count=0,
            partitions=(
                PartitionFieldSummary(False, None, to_bytes(IntegerType(), i), to_bytes(IntegerType(), i)),
            ),
        )
        for i in range(5)
    ]
    path = str(tmp_path / "snap.avro")
    write_manifest_list(IO, path, 1, None, 1, ms)
    clear_manifest_list_cache()
    seen: list[tuple[int, ManifestContent]] = []

    def keep_none(spec_id: int, content: ManifestContent, added: Any, existing: Any, partitions: Any) -> bool:
        seen.append((spec_id, content))
        return False

    assert read_manifest_list_selected(IO, path, keep_none, cache=False) == (5, [])
    assert seen == [(1, ManifestContent.DATA)] * 5
    total, kept = read_manifest_list_selected(IO, path, _selector(bind(SCHEMA, EqualTo("x", 3))), cache=False)
    assert total == 5 and [m.manifest_path for m in kept] == ["/m/3.avro"]
    assert kept == [m for m in read_manifest_list(IO, path) if m.manifest_path == "/m/3.avro"]
