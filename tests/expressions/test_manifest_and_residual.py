"""ManifestEvaluator over partition summaries and ResidualEvaluator over partition tuples:
examples, and soundness on random partitions of random rows."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from icefloe.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    BooleanExpression,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNaN,
    IsNull,
    LessThan,
    LessThanOrEqual,
    NotEqualTo,
    NotIn,
    NotNaN,
    NotNull,
    NotStartsWith,
    StartsWith,
    bind,
    parse,
)
from icefloe.expressions.visitors import ManifestEvaluator, ResidualEvaluator, expression_evaluator
from icefloe.manifest import ManifestFile, PartitionFieldSummary
from icefloe.spec.partition import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.types import DateType, DoubleType, IntegerType, NestedField, StringType
from icefloe.spec.values import to_bytes
from icefloe.transforms import parse_transform

SCHEMA = Schema(
    NestedField(1, "id", IntegerType()),
    NestedField(2, "s", StringType()),
    NestedField(3, "d", DoubleType()),
    NestedField(4, "dt", DateType()),
)
SPEC = PartitionSpec(
    PartitionField(1, 1000, parse_transform("truncate[10]"), "id_trunc"),
    PartitionField(2, 1001, parse_transform("identity"), "s"),
    PartitionField(3, 1002, parse_transform("identity"), "d"),
    PartitionField(4, 1003, parse_transform("month"), "dt_month"),
)


def _summary(t: Any, values: list[Any]) -> PartitionFieldSummary:
    ordered = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return PartitionFieldSummary(
        contains_null=any(v is None for v in values),
        contains_nan=any(isinstance(v, float) and math.isnan(v) for v in values),
        lower_bound=to_bytes(t, min(ordered)) if ordered else None,
        upper_bound=to_bytes(t, max(ordered)) if ordered else None,
    )


def _manifest(partitions: list[tuple[Any, ...]]) -> ManifestFile:
    ptype = SPEC.partition_type(SCHEMA)
    summaries = tuple(_summary(f.field_type, [p[i] for p in partitions]) for i, f in enumerate(ptype.fields))
    return ManifestFile(
        manifest_path="m.avro",
        manifest_length=1,
        partition_spec_id=0,
        added_snapshot_id=1,
        partitions=summaries,
    )


MANIFEST = _manifest([(10, "abc", 1.0, 5), (20, "abd", math.nan, 7), (30, None, 2.0, 6)])


def _eval(text: str, manifest: ManifestFile = MANIFEST) -> bool:
    return ManifestEvaluator(SPEC, SCHEMA, parse(text)).eval(manifest)


def test_manifest_examples() -> None:
    assert _eval("id < 11")
    assert not _eval("id < 10")
    assert _eval("id >= 39")
    assert not _eval("id >= 40")
    assert not _eval("id = 9")
    assert _eval("id in (5, 15)")
    assert not _eval("id in (1, 45)")
    assert _eval("s is null")
    assert _eval("s like 'ab%'")
    assert not _eval("s like 'b%'")
    assert _eval("s not like 'ab%'") is not False  # nulls present: might match
    assert _eval("d is nan")
    assert not _eval("d > 2")
    assert _eval("dt >= '1970-07-01'")
    assert not _eval("dt >= '1970-09-01'")
    assert _eval("id != 10")
    no_summaries = ManifestFile(
        manifest_path="m", manifest_length=1, partition_spec_id=0, added_snapshot_id=1
    )
    assert _eval("id = 1000", no_summaries)


def test_manifest_nulls_and_nans() -> None:
    all_null = _manifest([(None, None, None, None)])
    assert not _eval("id = 1", all_null)
    assert not _eval("s is not null", all_null)
    assert _eval("s is null", all_null)
    assert not _eval("d is not null", all_null)
    assert not _eval("d is nan", all_null)
    all_nan = _manifest([(1, "a", math.nan, 1)])
    assert not _eval("d is not nan", all_nan)
    assert not _eval("d = 1", all_nan)
    assert _eval("d is not null", all_nan)
    no_nulls = _manifest([(1, "abc", 1.0, 1), (2, "abd", 1.0, 1)])
    assert not _eval("s not like 'ab%'", no_nulls)
    assert not _eval("s is null", no_nulls)


def test_residuals() -> None:
    residuals = ResidualEvaluator(SPEC, SCHEMA, parse("id < 25 and s = 'a' and d > 0"))
    # id_trunc 10 covers 10..19: all < 25; s = 'a' decided; d partition 1.0 > 0.
    assert residuals.residual_for((10, "a", 1.0, 0)) == AlwaysTrue()
    # id_trunc 20 covers 20..29: undecided.
    assert residuals.residual_for((20, "a", 1.0, 0)) == LessThan("id", 25)
    assert residuals.residual_for((10, "b", 1.0, 0)) == AlwaysFalse()
    assert residuals.residual_for((30, "a", 1.0, 0)) == AlwaysFalse()
    unpartitioned = ResidualEvaluator(PartitionSpec(), SCHEMA, parse("id < 25 or s = 'a'"))
    assert unpartitioned.residual_for(()) == parse("id < 25 or s = 'a'")
    bound = residuals.bound_residual_for((20, "a", 1.0, 0))
    assert bound == bind(SCHEMA, LessThan("id", 25))


def test_residual_with_not_and_dates() -> None:
    residuals = ResidualEvaluator(SPEC, SCHEMA, parse("not dt < '1970-03-01' or id is null"))
    assert residuals.residual_for((None, None, None, 2)) == AlwaysTrue()
    assert residuals.residual_for((None, None, None, 1)) == AlwaysTrue()  # id_trunc null: id null
    assert ResidualEvaluator(SPEC, SCHEMA, IsNull("id")).residual_for((1, None, None, 1)) == AlwaysFalse()
    assert residuals.residual_for((0, None, None, 1)) == AlwaysFalse()


# ------------------------------------------------------------------ soundness

_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "id": st.integers(-30, 30),
    "s": st.text(alphabet="abc", max_size=3),
    "d": st.sampled_from([-1.0, 0.0, 2.5, math.nan]),
    "dt": st.integers(-70, 70),
}


def _predicate(data: st.DataObject) -> BooleanExpression:
    name = data.draw(st.sampled_from(sorted(_VALUES)))
    values = _VALUES[name]
    ops: list[Any] = [
        EqualTo,
        NotEqualTo,
        LessThan,
        LessThanOrEqual,
        GreaterThan,
        GreaterThanOrEqual,
        In,
        NotIn,
        IsNull,
        NotNull,
    ]
    if name == "s":
        ops += [StartsWith, NotStartsWith]
    if name == "d":
        ops += [IsNaN, NotNaN]
        values = values.filter(lambda v: not math.isnan(v))
    op = data.draw(st.sampled_from(ops))
    if op in (IsNull, NotNull, IsNaN, NotNaN):
        return op(name)  # type: ignore[no-any-return]
    if op in (In, NotIn):
        return op(name, data.draw(st.lists(values, min_size=1, max_size=3)))  # type: ignore[no-any-return]
    return op(name, data.draw(values))  # type: ignore[no-any-return]


@given(data=st.data())
def test_manifest_and_residual_soundness(data: st.DataObject) -> None:
    expr = _predicate(data)
    for _ in range(data.draw(st.integers(0, 2))):
        other = _predicate(data)
        expr = data.draw(st.sampled_from([expr & other, expr | other, ~expr]))
    rows = data.draw(
        st.lists(st.tuples(*(st.none() | _VALUES[n] for n in ("id", "s", "d", "dt"))), min_size=1, max_size=5)
    )
    partitions = [
        tuple(f.transform.apply(SCHEMA.find_type(f.source_id), row[f.source_id - 1]) for f in SPEC.fields)
        for row in rows
    ]
    matches = expression_evaluator(SCHEMA.as_struct(), bind(SCHEMA, expr))
    if any(matches(r) for r in rows):
        assert ManifestEvaluator(SPEC, SCHEMA, expr).eval(_manifest(partitions)), (expr, rows)
    residuals = ResidualEvaluator(SPEC, SCHEMA, expr)
    for row, partition in zip(rows, partitions, strict=True):
        residual = expression_evaluator(SCHEMA.as_struct(), bind(SCHEMA, residuals.residual_for(partition)))
        assert residual(row) == matches(row), (expr, row, residuals.residual_for(partition))


def test_manifest_bounds_decoded_once_across_evaluations(monkeypatch: Any) -> None:
    """The compiled evaluator decodes a summary's bounds once and keeps them on the summary, so
    planning the same (cached) manifest list again decodes nothing."""
    from icefloe.expressions.visitors import manifest_evaluator as me
    from icefloe.spec import values

    calls: list[Any] = []

    def counting_decoder(t: Any) -> Any:
        inner = values.bound_decoder(t)

        def decode(t: Any, b: bytes) -> Any:
            calls.append(t)
            return inner(t, b)

        return decode

    monkeypatch.setattr(me, "bound_decoder", counting_decoder)
    manifest = _manifest([(10, "abc", 1.0, 5), (20, "abd", 2.0, 7)])
    for text in ("id = 15", "id > 5", "id < 100 and id >= 0"):
        assert ManifestEvaluator(SPEC, SCHEMA, parse(text)).eval(manifest)
    assert len(calls) == 2  # lower and upper of id_trunc, once
    assert ManifestEvaluator(SPEC, SCHEMA, parse("s = 'abc' or s = 'x'")).eval(manifest)
    assert len(calls) == 4


def test_manifest_short_summary_list_might_match() -> None:
    """A list written with fewer summaries than the spec has fields knows nothing of the rest."""
    full = _manifest([(10, "abc", 1.0, 5)])
    assert full.partitions is not None
    short = ManifestFile(
        manifest_path="m",
        manifest_length=1,
        partition_spec_id=0,
        added_snapshot_id=1,
        partitions=full.partitions[:1],
    )
    for text in (
        "s = 'zzz'",
        "s is null",
        "d is nan",
        "d is not nan",
        "s not like 'a%'",
        "dt > '2000-01-01'",
    ):
        assert _eval(text, short), text
    assert not _eval("id = 1000", short)


def test_manifest_large_in_still_prunes_without_bounds() -> None:
    all_null = _manifest([(None, None, None, None)])
    assert not _eval(f"id in ({', '.join(str(i) for i in range(300))})", all_null)
    assert _eval(f"id in ({', '.join(str(i) for i in range(300))})", MANIFEST)
    # truncate[10] projects those 300 ids to 30 values, under the limit: still checked
    assert not _eval(f"id in ({', '.join(str(i) for i in range(1000, 1300))})", MANIFEST)
    many = ", ".join(f"'x{i}'" for i in range(300))
    assert _eval(f"s in ({many})", MANIFEST)  # over the limit: not checked against the bounds
    assert not _eval("s in ('x1', 'x2')", MANIFEST)
    assert not _eval("id in (1000, 1001)", MANIFEST)


def test_manifest_evaluator_is_shared_across_threads() -> None:
    from concurrent.futures import ThreadPoolExecutor

    ev = ManifestEvaluator(SPEC, SCHEMA, parse("id >= 20 and s like 'ab%'"))
    manifests = [_manifest([(i, "abc", 1.0, 5)]) for i in range(0, 100, 5)]
    expected = [ev.eval(m) for m in manifests]
    with ThreadPoolExecutor(4) as pool:
        for _ in range(5):
            assert list(pool.map(ev.eval, manifests)) == expected
    assert expected == [i >= 20 for i in range(0, 100, 5)]
