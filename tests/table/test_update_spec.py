"""``table.update_spec()``: every operation, Java's default names and field ids (Iceberg Java's
``TestUpdatePartitionSpec`` cases, replayed on committed tables), field-id recycling, spec
reuse, every refusal leaving the table unchanged, transactions, and scenario tests of spec
changes racing data commits and other spec changes."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import icefloe
from icefloe.catalog.memory import InMemoryCatalog
from icefloe.errors import ConflictError, PartitionSpecError, UnsupportedFeatureError, ValidationError
from icefloe.spec.partition import PartitionField, PartitionSpec
from icefloe.spec.partition_evolution import PartitionEvolution, default_field_name
from icefloe.spec.updates import (
    AddPartitionSpec,
    AssertDefaultSpecId,
    AssertLastAssignedPartitionId,
    SetDefaultSpec,
)
from icefloe.table import Table
from icefloe.testing import CommitFault, FaultInjectingCatalog
from icefloe.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    TruncateTransform,
    YearTransform,
)

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("ts", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("category", pa.string(), nullable=False),
        ("data", pa.string()),
        ("s", pa.struct([("a", pa.int32()), ("b", pa.string())])),
        ("d", pa.date32()),
    ]
)
# Java's TestUpdatePartitionSpec.PARTITIONED: identity(category), day(ts), bucket[16](id) "shard"
PARTITIONED = ["category", "day(ts)", "bucket(16, id)"]
ID, TS, CATEGORY, DATA, S, D, S_A = 1, 2, 3, 4, 5, 6, 7


def rows(n: int = 4, start: int = 0) -> pa.Table:
    base = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    return pa.table(
        {
            "id": pa.array(range(start, start + n), pa.int64()),
            "ts": pa.array(
                [base + dt.timedelta(hours=7 * i) for i in range(start, start + n)], SCHEMA.field("ts").type
            ),
            "category": [f"c{i % 2}" for i in range(start, start + n)],
            "data": [f"data{i}" for i in range(start, start + n)],
        }
    )


@pytest.fixture
def catalog(tmp_path: Path) -> InMemoryCatalog:
    wh = tmp_path / "wh"
    wh.mkdir()
    cat = InMemoryCatalog("m", warehouse=wh.as_uri())
    cat.create_namespace("ns")
    return cat


def fields(t: Table | PartitionSpec) -> list[tuple[int, int, str, str]]:
    """(source id, field id, name, transform) of every field, in order."""
    spec = t.spec() if isinstance(t, Table) else t
    return [(f.source_id, f.field_id, f.name, str(f.transform)) for f in spec.fields]


def partitioned(catalog: InMemoryCatalog, name: str = "ns.p") -> Table:
    t = catalog.create_table(name, schema=SCHEMA, partition_by=PARTITIONED)
    with t.update_spec() as u:
        u.rename_field("id_bucket", "shard")  # Java's PARTITIONED names the bucket field "shard"
    assert fields(t) == [
        (CATEGORY, 1000, "category", "identity"),
        (TS, 1001, "ts_day", "day"),
        (ID, 1002, "shard", "bucket[16]"),
    ]
    return t


def unpartitioned(catalog: InMemoryCatalog, name: str = "ns.u") -> Table:
    return catalog.create_table(name, schema=SCHEMA)


def unchanged(t: Table, location: str) -> None:
    assert t.metadata_location == location
    assert t.refresh().metadata_location == location


# ------------------------------------------------------------------ adding fields: Java's names


@pytest.mark.parametrize(
    ("term", "name", "transform"),
    [
        ("category", "category", "identity"),
        ("identity(category)", "category", "identity"),
        ("year(ts)", "ts_year", "year"),
        ("years(ts)", "ts_year", "year"),
        ("month(ts)", "ts_month", "month"),
        ("day(ts)", "ts_day", "day"),
        ("days(ts)", "ts_day", "day"),
        ("hour(ts)", "ts_hour", "hour"),
        ("hours(ts)", "ts_hour", "hour"),
        ("bucket(16, id)", "id_bucket_16", "bucket[16]"),
        ("bucket(id, 16)", "id_bucket_16", "bucket[16]"),
        ("truncate(4, data)", "data_trunc_4", "truncate[4]"),
        ("truncate(data, 4)", "data_trunc_4", "truncate[4]"),
        ("month(d)", "d_month", "month"),
        ("bucket(4, s.a)", "s.a_bucket_4", "bucket[4]"),
        ("s.b", "s.b", "identity"),
    ],
)
def test_add_field_to_unpartitioned_gets_javas_name_and_the_first_id(
    catalog: InMemoryCatalog, term: str, name: str, transform: str
) -> None:
    t = unpartitioned(catalog)
    assert t.metadata.last_partition_id == 999
    with t.update_spec() as u:
        u.add_field(term)
    (source_id, field_id, got_name, got_transform), *rest = fields(t)
    assert (field_id, got_name, got_transform, rest) == (1000, name, transform, [])
    assert t.schema().column_name(source_id) == name.split("_")[0] if transform != "identity" else name
    assert t.metadata.last_partition_id == 1000
    assert t.metadata.default_spec_id == 1
    assert [s.spec_id for s in t.metadata.partition_specs] == [0, 1]


def test_default_names_differ_from_create_table_names(catalog: InMemoryCatalog) -> None:
    """Java's create-table builder names bucket/truncate fields id_bucket, data_trunc; the
    update names them id_bucket_16, data_trunc_4 so that evolving a spec does not clash."""
    t = catalog.create_table("ns.c", schema=SCHEMA, partition_by=["bucket(16, id)", "truncate(4, data)"])
    assert [f.name for f in t.spec().fields] == ["id_bucket", "data_trunc"]
    with t.update_spec() as u:
        u.add_field("bucket(8, id)").add_field("truncate(2, data)")
    assert [f.name for f in t.spec().fields] == ["id_bucket", "data_trunc", "id_bucket_8", "data_trunc_2"]
    assert default_field_name("a.b", BucketTransform(3)) == "a.b_bucket_3"
    assert default_field_name("x", YearTransform()) == "x_year"


def test_add_named_field_and_identity(catalog: InMemoryCatalog) -> None:
    t = unpartitioned(catalog)
    with t.update_spec() as u:
        u.add_field("bucket(16, id)", "shard")
        u.add_identity("category")
        u.add_field("truncate(4, data)", name="prefix")
    assert fields(t) == [
        (ID, 1000, "shard", "bucket[16]"),
        (CATEGORY, 1001, "category", "identity"),
        (DATA, 1002, "prefix", "truncate[4]"),
    ]


def test_multiple_adds_in_order(catalog: InMemoryCatalog) -> None:
    t = unpartitioned(catalog)
    with t.update_spec() as u:
        u.add_field("category").add_field("day(ts)").add_field("bucket(16, id)", "shard")
        u.add_field("truncate(4, data)", "prefix")
    assert fields(t) == [
        (CATEGORY, 1000, "category", "identity"),
        (TS, 1001, "ts_day", "day"),
        (ID, 1002, "shard", "bucket[16]"),
        (DATA, 1003, "prefix", "truncate[4]"),
    ]


def test_add_to_existing_spec(catalog: InMemoryCatalog) -> None:
    t = partitioned(catalog)
    with t.update_spec() as u:
        u.add_field("truncate(4, data)")
    assert fields(t)[3:] == [(DATA, 1003, "data_trunc_4", "truncate[4]")]
    assert t.metadata.last_partition_id == 1003


def test_hour_next_to_an_existing_day_is_allowed(catalog: InMemoryCatalog) -> None:
    """Java allows a second time transform of a column when the first is already in the spec
    (existing metadata keeps working); only two added in the same update are redundant."""
    t = partitioned(catalog)
    with t.update_spec() as u:
        u.add_field("hour(ts)")
    assert fields(t)[1] == (TS, 1001, "ts_day", "day")
    assert fields(t)[3] == (TS, 1003, "ts_hour", "hour")
    with t.update_spec() as u:
        u.add_field("bucket(8, id)")  # a second bucket of id beside shard=bucket[16]
    assert fields(t)[4] == (ID, 1004, "id_bucket_8", "bucket[8]")


def test_case_insensitive_terms(catalog: InMemoryCatalog) -> None:
    t = unpartitioned(catalog)
    with pytest.raises(PartitionSpecError, match="no column named 'TS'"), t.update_spec() as u:
        u.add_field("hour(TS)")
    with t.update_spec(case_sensitive=False) as u:
        u.add_field("HOUR(TS)").add_field("Category")
    assert fields(t) == [(TS, 1000, "ts_hour", "hour"), (CATEGORY, 1001, "category", "identity")]


# ------------------------------------------------------------------ removing and renaming


@pytest.mark.parametrize(
    ("how", "kept"),
    [
        ("category", [(TS, 1001, "ts_day", "day"), (ID, 1002, "shard", "bucket[16]")]),
        ("shard", [(CATEGORY, 1000, "category", "identity"), (TS, 1001, "ts_day", "day")]),
        ("ts_day", [(CATEGORY, 1000, "category", "identity"), (ID, 1002, "shard", "bucket[16]")]),
        ("day(ts)", [(CATEGORY, 1000, "category", "identity"), (ID, 1002, "shard", "bucket[16]")]),
        ("bucket(16, id)", [(CATEGORY, 1000, "category", "identity"), (TS, 1001, "ts_day", "day")]),
        ("identity(category)", [(TS, 1001, "ts_day", "day"), (ID, 1002, "shard", "bucket[16]")]),
    ],
)
def test_remove_field_by_name_or_term_drops_it(catalog: InMemoryCatalog, how: str, kept: list[Any]) -> None:
    t = partitioned(catalog)
    with t.update_spec() as u:
        u.remove_field(how)
    assert fields(t) == kept  # v2: dropped, not replaced by a void field
    assert t.metadata.last_partition_id == 1002  # ids are never handed out again


def test_remove_every_field_makes_the_table_unpartitioned(catalog: InMemoryCatalog) -> None:
    t = partitioned(catalog)
    t.append(rows())
    with t.update_spec() as u:
        u.remove_field("category").remove_field("ts_day").remove_field("shard")
    assert t.spec().fields == ()
    t.append(rows(2, start=10))
    assert sorted(r["id"] for r in t.scan().to_arrow().to_pylist()) == [0, 1, 2, 3, 10, 11]
    new_files = [task.file for task in t.scan(row_filter="id >= 10").plan_files()]
    assert {f.spec_id for f in new_files} == {t.spec().spec_id} and all(f.partition == () for f in new_files)


def test_rename_field(catalog: InMemoryCatalog) -> None:
    t = partitioned(catalog)
    with t.update_spec() as u:
        u.rename_field("shard", "id_bucket")  # back to the create-table default
    assert fields(t) == [
        (CATEGORY, 1000, "category", "identity"),
        (TS, 1001, "ts_day", "day"),
        (ID, 1002, "id_bucket", "bucket[16]"),
    ]
    # an equal spec (same sources, transforms and names) exists: spec 0, reused
    assert t.metadata.default_spec_id == 0


def test_swap_names_is_allowed(catalog: InMemoryCatalog) -> None:
    t = unpartitioned(catalog)
    with t.update_spec() as u:
        u.add_field("bucket(4, id)", "a").add_field("bucket(8, id)", "b")
    with t.update_spec() as u:
        u.rename_field("a", "b").rename_field("b", "a")
    assert fields(t) == [(ID, 1000, "b", "bucket[4]"), (ID, 1001, "a", "bucket[8]")]


def test_multiple_changes(catalog: InMemoryCatalog) -> None:
    """Java's testMultipleChanges, v2 result."""
    t = partitioned(catalog)
    with t.update_spec() as u:
        u.rename_field("shard", "id_bucket").remove_field("day(ts)").add_field("truncate(4, data)", "prefix")
    assert fields(t) == [
        (CATEGORY, 1000, "category", "identity"),
        (ID, 1002, "id_bucket", "bucket[16]"),
        (DATA, 1003, "prefix", "truncate[4]"),
    ]


def test_remove_then_add_the_same_field_is_no_change(catalog: InMemoryCatalog) -> None:
    """Java's testNoEffectAddDeletedSameFieldWithSameName: re-adding what the same update removed
    undoes the removal (with or without the name)."""
    t = partitioned(catalog)
    loc = t.metadata_location
    with t.update_spec() as u:
        u.remove_field("shard").add_field("bucket(16, id)", "shard")
    with t.update_spec() as u:
        u.remove_field("shard").add_field("bucket(16, id)")
    unchanged(t, loc)


def test_remove_then_add_the_same_field_with_another_name_renames_it(catalog: InMemoryCatalog) -> None:
    t = partitioned(catalog)
    with t.update_spec() as u:
        u.remove_field("shard").add_field("bucket(16, id)", "new_shard")
    assert fields(t)[2] == (ID, 1002, "new_shard", "bucket[16]")


def test_remove_and_add_another_transform_under_the_same_name(catalog: InMemoryCatalog) -> None:
    """Java's testRemoveAndUpdateWithDifferentTransformation (v2)."""
    t = unpartitioned(catalog)
    with t.update_spec() as u:
        u.add_field("month(ts)", "ts_transformed")
    with t.update_spec() as u:
        u.remove_field("ts_transformed").add_field("day(ts)", "ts_transformed")
    assert fields(t) == [(TS, 1001, "ts_transformed", "day")]


# ------------------------------------------------------------------ field ids: new, recycled


def test_new_fields_never_reuse_ids_of_removed_fields(catalog: InMemoryCatalog) -> None:
    t = partitioned(catalog)
    with t.update_spec() as u:
        u.remove_field("shard")
    with t.update_spec() as u:
        u.add_field("truncate(4, data)")
    assert fields(t)[-1] == (DATA, 1003, "data_trunc_4", "truncate[4]")


def test_a_field_of_an_earlier_spec_gets_its_id_back(catalog: InMemoryCatalog) -> None:
    """Java's recycleOrCreatePartitionField (v2): same source and transform in any earlier spec
    (and the same name, when one is given) -> that field's id and name."""
    t = catalog.create_table("ns.r", schema=SCHEMA, partition_by=["day(ts)"])
    with t.update_spec() as u:
        u.remove_field("ts_day").add_field("hour(ts)")
    assert fields(t) == [(TS, 1001, "ts_hour", "hour")]
    with t.update_spec() as u:
        u.remove_field("ts_hour").add_field("day(ts)")
    assert fields(t) == [(TS, 1000, "ts_day", "day")]  # id 1000 again, and spec 0 again
    assert t.metadata.default_spec_id == 0 and t.metadata.last_partition_id == 1001
    with t.update_spec() as u:
        u.add_field("hour(ts)", "by_hour")  # a name no earlier field had: a new id
    assert fields(t)[-1] == (TS, 1002, "by_hour", "hour")
    with t.update_spec() as u:
        u.remove_field("by_hour")
    with t.update_spec() as u:
        u.add_field("hour(ts)", "ts_hour")  # the name of an earlier field: its id
    assert fields(t)[-1] == (TS, 1001, "ts_hour", "hour")


def test_recycled_field_keeps_its_renamed_name(catalog: InMemoryCatalog) -> None:
    t = catalog.create_table("ns.r", schema=SCHEMA, partition_by=["bucket(16, id)"])
    with t.update_spec() as u:
        u.rename_field("id_bucket", "shard")
    with t.update_spec() as u:
        u.remove_field("shard")
    with t.update_spec() as u:
        u.add_field("bucket(16, id)")
    assert fields(t) == [(ID, 1000, "shard", "bucket[16]")]  # the newest spec's name of field 1000


def test_remove_and_add_many_times(catalog: InMemoryCatalog) -> None:
    """Java's testRemoveAndAddMultiTimes, one commit per step (v2)."""
    t = unpartitioned(catalog)
    steps = [
        lambda u: u.add_field("day(ts)", "ts_date"),
        lambda u: u.remove_field("day(ts)"),
        lambda u: u.add_field("day(ts)", "ts_date"),
        lambda u: u.remove_field("day(ts)"),
        lambda u: u.add_field("month(ts)"),
        lambda u: u.rename_field("ts_month", "ts_date"),
    ]
    for step in steps:
        with t.update_spec() as u:
            step(u)
    assert fields(t) == [(TS, 1001, "ts_date", "month")]


# ------------------------------------------------------------------ spec reuse and no-ops


def test_a_spec_equal_to_an_earlier_one_is_reused_by_id(catalog: InMemoryCatalog) -> None:
    t = catalog.create_table("ns.r", schema=SCHEMA, partition_by=["day(ts)"])
    with t.update_spec() as u:
        u.add_field("category")
    assert t.metadata.default_spec_id == 1
    with t.update_spec() as u:
        u.remove_field("category")
    assert t.metadata.default_spec_id == 0
    assert len(t.metadata.partition_specs) == 2
    with t.update_spec() as u:
        preview = u.add_field("category").apply()
        assert preview.spec_id == 1 and fields(preview) == fields(t.metadata.spec_by_id(1))
    assert t.metadata.default_spec_id == 1 and len(t.metadata.partition_specs) == 2


def test_apply_previews_a_new_spec_id(catalog: InMemoryCatalog) -> None:
    t = partitioned(catalog)
    u = t.update_spec()
    preview = u.add_field("hour(ts)").apply()
    assert preview.spec_id == 2 and fields(preview)[-1] == (TS, 1003, "ts_hour", "hour")
    assert u.last_partition_id == 1003
    loc = t.metadata_location
    u.abandon()
    unchanged(t, loc)
    with pytest.raises(ValidationError, match="already committed or abandoned"):
        u.add_field("month(d)")


def test_a_block_that_changes_nothing_commits_nothing(catalog: InMemoryCatalog) -> None:
    t = partitioned(catalog)
    loc = t.metadata_location
    with t.update_spec():
        pass
    with t.update_spec() as u:
        u.rename_field("shard", "shard")
    unchanged(t, loc)


def test_an_exception_in_the_block_commits_nothing(catalog: InMemoryCatalog) -> None:
    t = partitioned(catalog)
    loc = t.metadata_location
    with pytest.raises(RuntimeError, match="boom"), t.update_spec() as u:
        u.add_field("hour(ts)")
        raise RuntimeError("boom")
    unchanged(t, loc)


def test_add_non_default_spec(catalog: InMemoryCatalog) -> None:
    t = partitioned(catalog)
    default = t.metadata.default_spec_id
    with t.update_spec() as u:
        u.add_field("month(d)").add_non_default_spec()
    assert t.metadata.default_spec_id == default
    assert fields(t.metadata.spec_by_id(2))[-1] == (D, 1003, "d_month", "month")
    assert t.metadata.last_partition_id == 1003


def test_commit_requirements_and_updates(catalog: InMemoryCatalog, monkeypatch: pytest.MonkeyPatch) -> None:
    t = partitioned(catalog)
    seen: list[tuple[list[Any], list[Any]]] = []
    inner = catalog.commit_table

    def spy(identifier: Any, requirements: Any, updates: Any) -> Any:
        seen.append((list(requirements), list(updates)))
        return inner(identifier, requirements, updates)

    monkeypatch.setattr(catalog, "commit_table", spy)
    with t.update_spec() as u:
        u.add_field("hour(ts)")
    (requirements, updates), *more = seen
    assert not more
    assert AssertDefaultSpecId(1) in requirements and AssertLastAssignedPartitionId(1002) in requirements
    assert [type(x) for x in updates] == [AddPartitionSpec, SetDefaultSpec]
    assert updates[1] == SetDefaultSpec(-1)
    seen.clear()
    with t.update_spec() as u:
        u.remove_field("ts_hour")  # back to spec 1: no new spec, only SetDefaultSpec(1)
    (requirements, updates), *_ = seen
    assert updates == [SetDefaultSpec(1)]
    assert AssertDefaultSpecId(2) in requirements


# ------------------------------------------------------------------ refusals


def _refused(t: Table, change: Any, match: str, field: str | None = None) -> PartitionSpecError:
    loc = t.metadata_location
    with pytest.raises(PartitionSpecError, match=match) as ei, t.update_spec() as u:
        change(u)
    e = ei.value
    assert e.hint, "every refusal says what to do"
    if field is not None:
        assert e.context.get("partition_field") == field
    unchanged(t, loc)
    return e


REFUSALS: dict[str, tuple[Any, str, str | None]] = {
    # Java's messages start with: Cannot add duplicate partition field
    "duplicate_identity_by_name": (lambda u: u.add_field("category"), "already has it", "category"),
    "duplicate_identity_by_add_identity": (
        lambda u: u.add_identity("category"),
        "already has it",
        "category",
    ),
    "duplicate_transform": (lambda u: u.add_field("bucket(16, id)"), "already has it", "shard"),
    "duplicate_named": (lambda u: u.add_field("bucket(16, id)", "b16"), "already has it", "shard"),
    "added_twice": (
        lambda u: u.add_field("truncate(4, data)", "prefix").add_field("truncate(4, data)"),
        "twice",
        "prefix",
    ),
    "added_name_twice": (
        lambda u: u.add_field("truncate(4, data)", "prefix").add_field("truncate(6, data)", "prefix"),
        "already added",
        "prefix",
    ),
    "name_of_an_existing_field": (lambda u: u.add_field("hour(ts)", "shard"), "named 'shard'", "shard"),
    # Cannot add redundant partition field
    "redundant_time_in_one_update": (
        lambda u: u.add_field("hour(ts)").add_field("month(ts)"),
        "redundant",
        "ts_month",
    ),
    # Cannot find partition field to remove
    "remove_unknown_name": (lambda u: u.remove_field("moon"), "no such field", "moon"),
    "remove_unknown_term": (lambda u: u.remove_field("hour(ts)"), "no such field", "hour(ts)"),
    "remove_unknown_column": (lambda u: u.remove_field("bucket(4, nope)"), "no such field", None),
    # Cannot delete newly added field
    "remove_added_by_name": (
        lambda u: u.add_field("truncate(4, data)", "prefix").remove_field("prefix"),
        "added in this update",
        "prefix",
    ),
    "remove_added_by_term": (
        lambda u: u.add_field("truncate(4, data)", "prefix").remove_field("truncate(4, data)"),
        "added in this update",
        "prefix",
    ),
    # Cannot find partition field to rename / Cannot rename newly added partition field
    "rename_unknown": (lambda u: u.rename_field("shake", "seal"), "no such field", "shake"),
    "rename_added": (
        lambda u: u.add_field("truncate(4, data)", "data_trunc").rename_field("data_trunc", "prefix"),
        "added in this update",
        "data_trunc",
    ),
    # Cannot rename and delete / Cannot delete and rename
    "rename_then_remove": (
        lambda u: u.rename_field("shard", "id_bucket").remove_field("bucket(16, id)"),
        "rename and remove",
        "shard",
    ),
    "remove_then_rename": (
        lambda u: u.remove_field("bucket(16, id)").rename_field("shard", "id_bucket"),
        "remove and rename",
        "shard",
    ),
    # checked when the spec is built
    "rename_to_an_existing_name": (lambda u: u.rename_field("shard", "ts_day"), "used twice", "ts_day"),
    "name_of_another_column": (lambda u: u.add_field("hour(ts)", "data"), "name of column 'data'", "data"),
    "rename_to_another_column": (
        lambda u: u.rename_field("shard", "id_x").rename_field("ts_day", "id"),
        "column 'id'",
        "id",
    ),
    # the term itself
    "unknown_column": (lambda u: u.add_field("day(nope)"), "no column named 'nope'", None),
    "transform_of_wrong_type": (lambda u: u.add_field("day(id)"), "does not apply", None),
    "unknown_transform": (lambda u: u.add_field("week(ts)"), "unknown partition transform", None),
    "bad_bucket": (lambda u: u.add_field("bucket(x, id)"), "integer bucket count", None),
    "struct_source": (lambda u: u.add_field("s"), "not a primitive", None),
    "void": (lambda u: u.add_field("void(data)"), "void", None),
    "empty_name": (lambda u: u.add_field("hour(ts)", ""), "non-empty", None),
}


@pytest.mark.parametrize("case", list(REFUSALS))
def test_refusals_leave_the_table_unchanged(catalog: InMemoryCatalog, case: str) -> None:
    change, match, field = REFUSALS[case]
    t = partitioned(catalog)
    _refused(t, change, match, field)


def test_a_refused_call_changes_nothing_in_the_block(catalog: InMemoryCatalog) -> None:
    """A call that raises leaves the block as it was: catching the error and going on commits
    the other calls only."""
    t = partitioned(catalog)
    with t.update_spec() as u:
        u.add_field("hour(ts)")
        with pytest.raises(PartitionSpecError):
            u.add_field("month(ts)")  # redundant with hour(ts): refused, nothing recorded
        with pytest.raises(PartitionSpecError):
            u.add_field("bucket(8, id)", "shard")  # name taken: refused before anything is kept
        u.add_field("bucket(8, id)")
    assert [f.name for f in t.spec().fields][3:] == ["ts_hour", "id_bucket_8"]


def test_format_version_1_is_refused(tmp_path: Path) -> None:
    spec = PartitionSpec(PartitionField(1, 1000, IdentityTransform(), "id"))
    from icefloe.spec.schema import Schema
    from icefloe.spec.types import LongType, NestedField

    schema = Schema(NestedField(1, "id", LongType(), True))
    with pytest.raises(UnsupportedFeatureError, match="format version 1"):
        PartitionEvolution(spec, schema, 1000, [spec], format_version=1)


def test_void_field_of_an_upgraded_v1_table_gives_its_name_up() -> None:
    """A v2 table upgraded from v1 may hold void fields; adding a field under a void field's
    name renames the void field to <name>_<id>, as Java does."""
    from icefloe.spec.schema import Schema
    from icefloe.spec.types import LongType, NestedField, StringType
    from icefloe.transforms import VoidTransform

    schema = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "c", StringType()))
    spec = PartitionSpec(
        PartitionField(2, 1000, VoidTransform(), "c"), PartitionField(1, 1001, BucketTransform(4), "b")
    )
    evo = PartitionEvolution(spec, schema, 1001, [spec])
    evo.add_field("c")
    assert fields(evo.apply()) == [
        (2, 1000, "c_1000", "void"),
        (1, 1001, "b", "bucket[4]"),
        (2, 1002, "c", "identity"),
    ]


# ------------------------------------------------------------------ writes use the new spec


def test_writes_use_the_new_default_spec(catalog: InMemoryCatalog) -> None:
    t = catalog.create_table("ns.w", schema=SCHEMA, partition_by=["day(ts)"])
    t.append(rows(2))
    with t.update_spec() as u:
        u.remove_field("ts_day").add_field("hour(ts)").add_identity("category")
    t.append(rows(2, start=2))
    by_spec: dict[int, list[Any]] = {}
    for task in t.scan().plan_files():
        by_spec.setdefault(task.file.spec_id, []).append(task.file)
    assert sorted(by_spec) == [0, 1]
    for f in by_spec[1]:
        assert len(f.partition) == 2
        assert "/ts_hour=2024-01-01-" in f.file_path and "/category=c" in f.file_path
    for f in by_spec[0]:
        assert len(f.partition) == 1 and "/ts_day=2024-01-01/" in f.file_path
    assert sorted(r["id"] for r in t.scan().to_arrow().to_pylist()) == [0, 1, 2, 3]


def test_transaction_spec_change_then_write_commits_once(catalog: InMemoryCatalog) -> None:
    t = catalog.create_table("ns.tx", schema=SCHEMA, partition_by=["day(ts)"])
    t.append(rows(2))
    before = len(t.metadata.metadata_log)
    with t.transaction() as tx:
        with tx.update_spec() as u:
            u.add_field("bucket(4, id)")
        tx.append(rows(2, start=2))
        with tx.update_spec() as u:  # a second change in the same transaction builds on the first
            u.rename_field("id_bucket_4", "b4")
    assert len(t.metadata.metadata_log) == before + 1
    assert fields(t) == [(TS, 1000, "ts_day", "day"), (ID, 1001, "b4", "bucket[4]")]
    specs = {task.file.spec_id for task in t.scan(row_filter="id >= 2").plan_files()}
    assert specs == {1}  # written under the first change's spec, before the rename
    assert sorted(r["id"] for r in t.scan().to_arrow().to_pylist()) == [0, 1, 2, 3]


def test_transaction_schema_change_then_partition_by_the_new_column(catalog: InMemoryCatalog) -> None:
    t = catalog.create_table("ns.tx2", schema=SCHEMA)
    with t.transaction() as tx:
        with tx.update_schema() as us:
            us.add_column("region", pa.string())
        with tx.update_spec() as u:
            u.add_identity("region")
        tx.append(pa.table({"id": [1], "ts": rows(1)["ts"], "category": ["c"], "region": ["eu"]}))
    (task,) = t.scan().plan_files()
    assert "/region=eu/" in task.file.file_path


def test_public_api(catalog: InMemoryCatalog) -> None:
    t = partitioned(catalog)
    assert isinstance(t.update_spec(), icefloe.UpdateSpec)
    assert "UpdateSpec" in icefloe.__all__


# ------------------------------------------------------------------ concurrency scenarios


@pytest.fixture
def faulty(tmp_path: Path) -> FaultInjectingCatalog:
    wh = tmp_path / "fwh"
    wh.mkdir()
    cat = FaultInjectingCatalog(InMemoryCatalog("m", warehouse=wh.as_uri()))
    cat.create_namespace("ns")
    return cat


def test_spec_change_racing_a_data_append_both_land(faulty: FaultInjectingCatalog) -> None:
    """Setup: a table partitioned by day(ts). We change its spec; another writer appends in the
    window before our swap. Both land: the append changed no spec. The append's files keep
    the spec it wrote them with."""
    t = faulty.create_table("ns.t", schema=SCHEMA, partition_by=["day(ts)"])
    t.append(rows(2))
    other = faulty.load_table("ns.t")
    faulty.before_next_swap(lambda: other.append(rows(2, start=2)))
    with t.update_spec() as u:
        u.add_field("hour(ts)")
    t.refresh()
    assert t.metadata.default_spec_id == 1
    assert sorted(r["id"] for r in t.scan().to_arrow().to_pylist()) == [0, 1, 2, 3]
    assert {task.file.spec_id for task in t.scan().plan_files()} == {0}
    # a stale handle that never saw an append still changes the spec
    stale = faulty.load_table("ns.t")
    t.append(rows(1, start=4))
    with stale.update_spec() as u:
        u.add_identity("category")
    assert sorted(r["id"] for r in stale.refresh().scan().to_arrow().to_pylist()) == [0, 1, 2, 3, 4]
    assert [f.name for f in stale.spec().fields] == ["ts_day", "ts_hour", "category"]


def test_spec_change_racing_a_spec_change_fails_typed(faulty: FaultInjectingCatalog) -> None:
    """Two writers change the spec from the same base: the second fails with ConflictError and
    nothing of it lands; the first one's change is intact."""
    faulty.create_table("ns.t", schema=SCHEMA, partition_by=["day(ts)"])
    mine = faulty.load_table("ns.t")
    theirs = faulty.load_table("ns.t")
    with theirs.update_spec() as u:
        u.add_field("bucket(4, id)")
    with (
        pytest.raises(ConflictError, match="partition spec changed concurrently") as ei,
        mine.update_spec() as u,
    ):
        u.add_identity("category")
    assert ei.value.hint and "refresh" in ei.value.hint
    assert [f.name for f in mine.refresh().spec().fields] == ["ts_day", "id_bucket_4"]
    # racing in the commit window as well
    faulty.before_next_swap(lambda: theirs.refresh().update_spec().add_field("truncate(2, data)").commit())
    with pytest.raises(ConflictError), mine.update_spec() as u:
        u.add_identity("category")
    assert [f.name for f in mine.refresh().spec().fields] == ["ts_day", "id_bucket_4", "data_trunc_2"]
    assert mine.metadata.last_partition_id == 1002


def test_spec_change_racing_a_non_default_spec_change_fails_typed(faulty: FaultInjectingCatalog) -> None:
    """A concurrent spec that was added without becoming the default still moved
    last-partition-id: field ids could clash, so this is a conflict too."""
    t = faulty.create_table("ns.t", schema=SCHEMA, partition_by=["day(ts)"])
    other = faulty.load_table("ns.t")
    faulty.before_next_swap(lambda: other.update_spec().add_field("month(d)").add_non_default_spec().commit())
    with pytest.raises(ConflictError), t.update_spec() as u:
        u.add_identity("category")
    assert t.refresh().metadata.default_spec_id == 0


def test_lost_swap_is_retried(faulty: FaultInjectingCatalog) -> None:
    t = faulty.create_table("ns.t", schema=SCHEMA)
    faulty.inject(CommitFault.LOST_SWAP, CommitFault.LOST_SWAP)
    with t.update_spec() as u:
        u.add_field("day(ts)")
    assert faulty.pending_faults == 0
    assert [f.name for f in t.refresh().spec().fields] == ["ts_day"]


def test_transforms_of_added_fields() -> None:
    """The transforms of added fields are icefloe's transform values (equal to parsed ones)."""
    from icefloe.spec.schema import Schema
    from icefloe.spec.types import DateType, LongType, NestedField, StringType, TimestamptzType

    schema = Schema(
        NestedField(1, "id", LongType(), True),
        NestedField(2, "ts", TimestamptzType(), True),
        NestedField(3, "s", StringType()),
        NestedField(4, "d", DateType()),
    )
    evo = PartitionEvolution(PartitionSpec(), schema, 999, [PartitionSpec()])
    for term in ("bucket(3, id)", "hour(ts)", "truncate(1, s)", "year(d)"):
        evo.add_field(term)
    assert [f.transform for f in evo.apply().fields] == [
        BucketTransform(3),
        HourTransform(),
        TruncateTransform(1),
        YearTransform(),
    ]
    assert DayTransform() != MonthTransform()
