"""The pure schema-evolution rules (icefloe.spec.schema_evolution), modelled on Iceberg Java's
TestSchemaUpdate: every operation, nested paths, moves, identifier fields, union by name, and
every refusal (with its typed error)."""

from __future__ import annotations

import json

import pytest

from icefloe.errors import IncompatibleSchemaChangeError, SchemaError
from icefloe.spec.schema import Schema
from icefloe.spec.schema_evolution import NAME_MAPPING_PROPERTY, SchemaEvolution
from icefloe.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
)

# Java's TestSchemaUpdate.SCHEMA, last column id 23
SCHEMA = Schema(
    NestedField(1, "id", IntegerType(), True),
    NestedField(2, "data", StringType(), False),
    NestedField(
        3,
        "preferences",
        StructType(
            NestedField(8, "feature1", BooleanType(), True), NestedField(9, "feature2", BooleanType())
        ),
        False,
        "struct of named boolean options",
    ),
    NestedField(
        4,
        "locations",
        MapType(
            10,
            StructType(
                NestedField(20, "address", StringType(), True),
                NestedField(21, "city", StringType(), True),
                NestedField(22, "state", StringType(), True),
                NestedField(23, "zip", IntegerType(), True),
            ),
            11,
            StructType(NestedField(12, "lat", FloatType(), True), NestedField(13, "long", FloatType(), True)),
            True,
        ),
        True,
        "map of address to coordinate",
    ),
    NestedField(
        5,
        "points",
        ListType(
            14,
            StructType(NestedField(15, "x", LongType(), True), NestedField(16, "y", LongType(), True)),
            False,
        ),
        False,
        "2-D cartesian points",
    ),
    NestedField(6, "doubles", ListType(17, DoubleType(), True), True),
    NestedField(
        7, "properties", MapType(18, StringType(), 19, StringType(), False), False, "string map of properties"
    ),
)
LAST = 23


def evo(schema: Schema = SCHEMA, last: int = LAST, **kw: object) -> SchemaEvolution:
    return SchemaEvolution(schema, last, **kw)  # type: ignore[arg-type]


def names(schema: Schema | StructType) -> list[str]:
    struct = schema.as_struct() if isinstance(schema, Schema) else schema
    return [f.name for f in struct.fields]


def test_no_changes_is_identical() -> None:
    e = evo()
    assert not e.has_changes
    assert e.apply() == SCHEMA
    assert e.last_column_id == LAST


# ------------------------------------------------------------------ add


def test_add_top_level_and_nested_fields_get_ids_from_last_column_id() -> None:
    e = evo()
    e.add_column("topLevel", BooleanType(), "a new top-level field")
    e.add_column("locations.alt", FloatType())  # map value struct, by the map's name
    e.add_column("points.element.z", LongType())  # list element struct, Java's full name
    e.add_column(("preferences", "feature3"), BooleanType())
    s = e.apply()
    assert s.find_field("topLevel").field_id == 24 and s.find_field("topLevel").doc == "a new top-level field"
    assert s.find_field("locations.value.alt").field_id == 25
    assert s.find_field("points.element.z").field_id == 26
    assert s.find_field("preferences.feature3").field_id == 27
    assert not s.find_field("points.element.z").required
    assert e.last_column_id == 27
    assert names(s)[-1] == "topLevel"


def test_add_nested_types_assign_fresh_ids_like_java() -> None:
    # Java: the new field's id first, then its type's (a struct's fields, then their children)
    e = evo()
    e.add_column(
        "locations2",
        MapType(
            1,
            StructType(NestedField(1, "address", StringType(), True)),
            2,
            StructType(NestedField(1, "lat", FloatType())),
        ),
    )
    e.add_column(
        "pts", ListType(1, StructType(NestedField(1, "x", LongType(), True), NestedField(2, "y", LongType())))
    )
    s = e.apply()
    m = s.find_field("locations2")
    assert m.field_id == 24
    assert isinstance(m.field_type, MapType) and (m.field_type.key_id, m.field_type.value_id) == (25, 26)
    assert s.find_field("locations2.key.address").field_id == 27
    assert s.find_field("locations2.value.lat").field_id == 28
    assert s.find_field("pts").field_id == 29
    assert s.find_field("pts.element").field_id == 30
    assert [s.find_field("pts.element.x").field_id, s.find_field("pts.element.y").field_id] == [31, 32]


def test_add_refusals() -> None:
    with pytest.raises(SchemaError, match="already exists"):
        evo().add_column("preferences.feature1", BooleanType())
    with pytest.raises(SchemaError, match="already exists"):
        evo().add_column("preferences", BooleanType())
    with pytest.raises(SchemaError, match="parent 'nope' is not a column"):
        evo().add_column("nope.x", BooleanType())
    with pytest.raises(SchemaError, match="not a struct"):
        evo().add_column("data.x", BooleanType())
    with pytest.raises(SchemaError, match="not a struct"):
        evo().add_column("doubles.x", BooleanType())  # list of primitives
    e = evo()
    e.add_column("new", BooleanType())
    with pytest.raises(SchemaError, match="already exists"):
        e.add_column("new", StringType())
    e = evo()
    e.delete_column("preferences")
    with pytest.raises(SchemaError, match="will be deleted"):
        e.add_column("preferences.feature3", BooleanType())


def test_add_required_column_is_incompatible_unless_allowed() -> None:
    with pytest.raises(IncompatibleSchemaChangeError, match="required column 'req'") as ei:
        evo().add_column("req", StringType(), required=True)
    assert ei.value.context["column"] == "req" and ei.value.hint
    e = evo(allow_incompatible_changes=True)
    e.add_column("req", StringType(), required=True)
    assert e.apply().find_field("req").required


def test_add_with_a_dot_in_the_name_by_tuple() -> None:
    e = evo()
    e.add_column(("a.b",), IntegerType())
    assert names(e.apply())[-1] == "a.b"


def test_delete_then_add_same_name_gets_a_new_id() -> None:
    s = Schema(NestedField(1, "id", IntegerType(), True), NestedField(2, "x", IntegerType()))
    e = evo(s, 2)
    e.delete_column("x")
    e.add_column("x", IntegerType())
    out = e.apply()
    assert out.find_field("x").field_id == 3
    e = evo()
    e.delete_column("preferences.feature1")
    e.add_column("preferences.feature1", BooleanType())
    pref = e.apply().find_field("preferences").field_type
    assert isinstance(pref, StructType)
    assert [(f.field_id, f.name) for f in pref.fields] == [(9, "feature2"), (24, "feature1")]


# ------------------------------------------------------------------ delete


def test_delete_fields_including_nested() -> None:
    for name, fid in [
        ("id", 1),
        ("preferences.feature1", 8),
        ("locations.value.lat", 12),
        ("points.element.x", 15),
    ]:
        e = evo()
        e.delete_column(name)
        assert fid not in e.apply().field_ids()


def test_delete_refusals() -> None:
    with pytest.raises(SchemaError, match="no such column"):
        evo().delete_column("col")
    with pytest.raises(SchemaError, match="element of a list cannot be deleted"):
        evo().delete_column("points.element")
    with pytest.raises(SchemaError, match="key of a map cannot be deleted"):
        evo().delete_column("locations.key")
    with pytest.raises(SchemaError, match="value of a map cannot be deleted"):
        evo().delete_column("properties.value")
    e = evo()
    e.rename_column("id", "id2")
    with pytest.raises(SchemaError, match="also changes it"):
        e.delete_column("id")
    e = evo()
    e.add_column("preferences.feature3", BooleanType())
    with pytest.raises(SchemaError, match="adds columns to it"):
        e.delete_column("preferences")
    e = evo()
    e.delete_column("id")
    for op in (
        lambda: e.rename_column("id", "x"),
        lambda: e.update_column("id", LongType()),
        lambda: e.update_column("id", doc="d"),
        lambda: e.move_first("id"),
    ):
        with pytest.raises(SchemaError, match="will be deleted"):
            op()


def test_deleting_every_column_of_a_struct_is_refused() -> None:
    e = evo()
    e.delete_column("preferences.feature1")
    e.delete_column("preferences.feature2")
    with pytest.raises(SchemaError, match="every column of 'preferences'"):
        e.apply()


# ------------------------------------------------------------------ rename


def test_rename_keeps_ids_and_merges_with_updates() -> None:
    e = evo()
    e.rename_column("data", "json")
    e.rename_column("preferences", "options")
    e.rename_column("preferences.feature2", "newfeature")
    e.rename_column("locations.value.lat", "latitude")
    e.rename_column("points.element.x", "X")
    e.update_column("id", LongType())
    e.rename_column("id", "ID")
    s = e.apply()
    assert s.find_field(1).name == "ID" and s.find_field(1).field_type == LongType()
    assert s.column_name(9) == "options.newfeature"
    assert s.column_name(12) == "locations.value.latitude"
    assert s.column_name(15) == "points.element.X"
    assert s.find_field(3).doc == "struct of named boolean options"  # other attributes stay


def test_rename_refusals_and_swap() -> None:
    with pytest.raises(SchemaError, match="no such column"):
        evo().rename_column("col", "x")
    with pytest.raises(SchemaError, match="no name of its own"):
        evo().rename_column("points.element", "e")
    e = evo()
    e.rename_column("data", "id")
    with pytest.raises(SchemaError, match="two columns of the table would be named 'id'"):
        e.apply()
    e = evo()  # a swap is fine
    e.rename_column("data", "id")
    e.rename_column("id", "data")
    s = e.apply()
    assert (s.find_field("id").field_id, s.find_field("data").field_id) == (2, 1)


# ------------------------------------------------------------------ update


def test_allowed_promotions() -> None:
    s = Schema(
        NestedField(1, "i", IntegerType()),
        NestedField(2, "f", FloatType()),
        NestedField(3, "d", DecimalType(9, 2)),
        NestedField(4, "l", ListType(5, IntegerType())),
        NestedField(6, "m", MapType(7, StringType(), 8, FloatType())),
    )
    e = evo(s, 8)
    e.update_column("i", LongType())
    e.update_column("f", DoubleType())
    e.update_column("d", DecimalType(12, 2))
    e.update_column("l.element", LongType())
    e.update_column("m.value", DoubleType())
    out = e.apply()
    assert [out.find_type(i) for i in (1, 2, 3)] == [LongType(), DoubleType(), DecimalType(12, 2)]
    assert out.find_type("l") == ListType(5, LongType(), True)
    assert out.find_type("m") == MapType(7, StringType(), 8, DoubleType(), True)
    e = evo(s, 8)
    e.update_column("i", IntegerType())  # same type: no change
    assert e.apply() == s


@pytest.mark.parametrize(
    ("start", "target"),
    [
        (LongType(), IntegerType()),  # narrowing
        (StringType(), IntegerType()),
        (IntegerType(), StringType()),
        (DoubleType(), FloatType()),
        (DecimalType(12, 2), DecimalType(9, 2)),
        (DecimalType(9, 2), DecimalType(12, 3)),
        (IntegerType(), DoubleType()),
        (TimestampType(), TimestamptzType()),
        (DateType(), TimestampType()),  # only on format v3
    ],
)
def test_type_changes_outside_the_promotions_are_refused(start: object, target: object) -> None:
    s = Schema(NestedField(1, "col", start))  # type: ignore[arg-type]
    with pytest.raises(IncompatibleSchemaChangeError, match="cannot change column 'col'") as ei:
        evo(s, 1, allow_incompatible_changes=True).update_column("col", target)  # type: ignore[arg-type]
    assert "int -> long" in (ei.value.hint or "")


def test_date_to_timestamp_on_v3_only() -> None:
    s = Schema(NestedField(1, "d", DateType()))
    e = evo(s, 1, format_version=3)
    e.update_column("d", TimestampType())
    assert e.apply().find_type("d") == TimestampType()
    with pytest.raises(IncompatibleSchemaChangeError):
        evo(s, 1, format_version=3).update_column("d", TimestamptzType())


def test_update_refusals() -> None:
    with pytest.raises(SchemaError, match="no such column"):
        evo().update_column("col", LongType())
    with pytest.raises(IncompatibleSchemaChangeError, match="only primitive types"):
        evo().update_column("preferences", LongType())
    with pytest.raises(SchemaError, match="map keys cannot change"):
        evo().update_column("properties.key", BinaryType())
    with pytest.raises(SchemaError, match="map keys cannot change"):
        evo().update_column("locations.key", required=False)


def test_requiredness() -> None:
    e = evo()
    e.update_column("id", required=False)
    e.update_column("doubles.element", required=False)
    e.update_column("locations.value", required=False)
    s = e.apply()
    assert not s.find_field("id").required
    assert s.find_type("doubles") == ListType(17, DoubleType(), False)
    locations = s.find_type("locations")
    assert isinstance(locations, MapType) and not locations.value_required
    with pytest.raises(IncompatibleSchemaChangeError, match="optional -> required"):
        evo().update_column("data", required=True)
    e = evo(allow_incompatible_changes=True)
    e.update_column("data", required=True)
    assert e.apply().find_field("data").required
    e = evo()  # required -> required is a no-op, allowed without the flag
    e.update_column("id", required=True)
    assert e.apply() == SCHEMA


def test_docs() -> None:
    e = evo()
    e.update_column("id", doc="the id")
    e.update_column("preferences.feature1", doc="f1")
    s = e.apply()
    assert s.find_field("id").doc == "the id" and s.find_field("preferences.feature1").doc == "f1"
    with pytest.raises(SchemaError, match="has no doc"):
        evo().update_column("points.element", doc="x")


def test_updates_of_added_columns() -> None:
    e = evo()
    e.add_column("new", IntegerType())
    e.update_column("new", LongType(), doc="widened")
    f = e.apply().find_field("new")
    assert (f.field_type, f.doc) == (LongType(), "widened")


# ------------------------------------------------------------------ moves


def test_moves_top_level_and_nested() -> None:
    e = evo()
    e.move_first("data")
    e.move_after("id", "locations")
    e.move_before("doubles", "data")
    e.move_first("preferences.feature2")
    e.move_after("points.element.x", "points.element.y")
    e.move_before("locations.value.long", "locations.value.lat")
    s = e.apply()
    assert names(s) == ["doubles", "data", "preferences", "locations", "id", "points", "properties"]
    assert names(s.find_type("preferences")) == ["feature2", "feature1"]  # type: ignore[arg-type]
    assert names(s.find_type("points.element")) == ["y", "x"]  # type: ignore[arg-type]
    assert names(s.find_type("locations.value")) == ["long", "lat"]  # type: ignore[arg-type]
    # moves do not change ids or identifier fields
    assert s.field_ids() == SCHEMA.field_ids()


def test_moves_of_added_columns_and_case_insensitive() -> None:
    e = evo(case_sensitive=False)
    e.add_column("ts", TimestamptzType())
    e.add_column("count", LongType())
    e.move_after("TS", "ID")
    e.move_before("Count", "ts")
    e.add_column("PREFERENCES.feature3", BooleanType())
    e.move_first("preferences.FEATURE3")
    s = e.apply()
    assert names(s)[:4] == ["id", "count", "ts", "data"]
    assert names(s.find_type("preferences")) == ["feature3", "feature1", "feature2"]  # type: ignore[arg-type]


def test_move_refusals() -> None:
    with pytest.raises(SchemaError, match="before itself"):
        evo().move_before("id", "id")
    with pytest.raises(SchemaError, match="after itself"):
        evo().move_after("id", "id")
    with pytest.raises(SchemaError, match="no such column"):
        evo().move_first("items")
    with pytest.raises(SchemaError, match="no such column"):
        evo().move_before("id", "items")
    with pytest.raises(SchemaError, match="different struct"):
        evo().move_before("preferences.feature1", "id")
    with pytest.raises(SchemaError, match="different struct"):
        evo().move_after("id", "preferences.feature1")
    with pytest.raises(SchemaError, match="cannot move"):
        evo().move_first("points.element")
    with pytest.raises(SchemaError, match="cannot move"):
        evo().move_first("locations.value")
    e = evo()
    e.move_after("id", "data")
    e.delete_column("data")
    with pytest.raises(SchemaError, match="deleted"):
        e.apply()


def test_move_deleted_then_readded_column() -> None:
    s = Schema(
        NestedField(1, "id", LongType(), True),
        NestedField(2, "data", StringType()),
        NestedField(3, "data_1", StringType()),
    )
    e = evo(s, 3)
    e.delete_column("id")
    e.add_column("id", IntegerType())
    e.move_after("id", "data")
    out = e.apply()
    assert [(f.field_id, f.name) for f in out.fields] == [(2, "data"), (4, "id"), (3, "data_1")]


# ------------------------------------------------------------------ identifier fields


def test_identifier_fields_set_renamed_and_cleared() -> None:
    e = evo()
    e.set_identifier_fields("id")
    with_id = e.apply()
    assert with_id.identifier_field_ids == (1,)
    e = evo(with_id)
    e.rename_column("id", "id2")
    assert e.apply().identifier_field_ids == (1,)
    e = evo(with_id)
    e.set_identifier_fields()
    e.delete_column("id")
    assert e.apply().identifier_field_ids == ()
    e = evo(with_id)
    e.delete_column("id")
    e.set_identifier_fields()
    assert e.apply().identifier_field_ids == ()


def test_identifier_fields_new_and_nested() -> None:
    e = evo(allow_incompatible_changes=True)
    e.add_column("new_field", StringType(), required=True)
    e.add_column("out", StructType(NestedField(1, "nested", StringType(), True)), required=True)
    e.set_identifier_fields("id", "new_field", "out.nested")
    s = e.apply()
    assert set(s.identifier_field_ids) == {1, 24, 26}
    # Java's message for a struct holding an identifier field
    e = evo(s, 26)
    e.delete_column("out")
    with pytest.raises(IncompatibleSchemaChangeError, match=r"contains identifier field 'out\.nested'"):
        e.apply()
    e = evo(s, 26)
    e.delete_column("id")
    with pytest.raises(IncompatibleSchemaChangeError, match="cannot delete identifier field 'id'") as ei:
        e.apply()
    assert "set_identifier_fields" in (ei.value.hint or "")


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("unknown", "not in the schema"),
        ("locations", "not a primitive"),
        ("data", "optional"),
        ("locations.key.zip", "inside 'locations'"),
        ("points.element.x", "inside 'points'"),
        ("preferences.feature1", "optional struct 'preferences'"),
        ("dbl", "float and double"),
        ("flt", "float and double"),
    ],
)
def test_identifier_field_refusals(name: str, why: str) -> None:
    e = evo(allow_incompatible_changes=True)
    e.add_column("dbl", DoubleType(), required=True)
    e.add_column("flt", FloatType(), required=True)
    e.set_identifier_fields(name)
    with pytest.raises(SchemaError, match=why):
        e.apply()


# ------------------------------------------------------------------ union by name


def test_union_adds_widens_relaxes_and_keeps() -> None:
    base = Schema(
        NestedField(1, "id", IntegerType(), True),
        NestedField(2, "s", StructType(NestedField(3, "x", FloatType()))),
        NestedField(4, "l", ListType(5, StructType(NestedField(6, "a", IntegerType())))),
        NestedField(7, "m", MapType(8, StringType(), 9, StructType(NestedField(10, "v", DecimalType(9, 2))))),
        NestedField(11, "keep", LongType()),
    )
    new = Schema(
        NestedField(100, "id", LongType(), False, "the id"),
        NestedField(
            101, "s", StructType(NestedField(102, "x", DoubleType()), NestedField(103, "y", StringType()))
        ),
        NestedField(
            104,
            "l",
            ListType(
                105, StructType(NestedField(106, "a", IntegerType()), NestedField(107, "b", DateType()))
            ),
        ),
        NestedField(
            108,
            "m",
            MapType(
                109,
                StringType(),
                110,
                StructType(
                    NestedField(111, "v", DecimalType(12, 2)), NestedField(112, "w", BooleanType(), True)
                ),
            ),
        ),
        NestedField(113, "keep", IntegerType()),  # narrower: ignored
        NestedField(114, "n", StructType(NestedField(115, "q", IntegerType(), True))),
    )
    e = evo(base, 11)
    e.union_by_name(new)
    out = e.apply()
    assert out.find_field("id") == NestedField(1, "id", LongType(), False, "the id")
    assert out.find_type("s.x") == DoubleType()
    assert out.find_type("keep") == LongType()
    assert out.find_type("m.value.v") == DecimalType(12, 2)
    # nested additions first (Java's post-order), then the top-level ones
    assert [out.find_field(n).field_id for n in ("s.y", "l.element.b", "m.value.w", "n", "n.q")] == [
        12,
        13,
        14,
        15,
        16,
    ]
    assert not out.find_field("m.value.w").required  # added columns are optional...
    assert out.find_field("n.q").required  # ...their own children keep their requiredness
    assert names(out) == ["id", "s", "l", "m", "keep", "n"]


def test_union_without_relaxing_required() -> None:
    base = Schema(NestedField(1, "id", LongType(), True))
    e = evo(base, 1)
    e.union_by_name(Schema(NestedField(5, "id", LongType(), False)), relax_required=False)
    assert e.apply() == base


def test_union_refusals() -> None:
    base = Schema(
        NestedField(1, "a", StringType()), NestedField(2, "s", StructType(NestedField(3, "x", IntegerType())))
    )
    with pytest.raises(IncompatibleSchemaChangeError, match="from string to int"):
        evo(base, 3).union_by_name(Schema(NestedField(1, "a", IntegerType())))
    with pytest.raises(IncompatibleSchemaChangeError, match="cannot merge column 's'"):
        evo(base, 3).union_by_name(Schema(NestedField(1, "s", IntegerType())))
    with pytest.raises(IncompatibleSchemaChangeError, match="cannot merge column 'a'"):
        evo(base, 3).union_by_name(Schema(NestedField(1, "a", ListType(2, StringType()))))


def test_union_case_insensitive() -> None:
    base = Schema(NestedField(1, "Id", IntegerType()))
    e = evo(base, 1, case_sensitive=False)
    e.union_by_name(Schema(NestedField(1, "ID", LongType()), NestedField(2, "x", StringType())))
    out = e.apply()
    assert [(f.field_id, f.name, f.field_type) for f in out.fields] == [
        (1, "Id", LongType()),
        (2, "x", StringType()),
    ]
    e = evo(base, 1)  # case-sensitive: ID is a new column
    e.union_by_name(Schema(NestedField(1, "ID", LongType())))
    assert names(e.apply()) == ["Id", "ID"]


# ------------------------------------------------------------------ table properties


def test_property_updates_follow_renames_and_deletes() -> None:
    props = {
        "write.metadata.metrics.column.data": "full",
        "write.parquet.bloom-filter-enabled.column.id": "true",
        "write.metadata.metrics.column.doubles": "none",
        "unrelated": "x",
        NAME_MAPPING_PROPERTY: json.dumps(
            [
                {"field-id": 1, "names": ["id"]},
                {"field-id": 2, "names": ["data"]},
                {"field-id": 3, "names": ["preferences"], "fields": [{"field-id": 8, "names": ["feature1"]}]},
            ]
        ),
    }
    e = evo()
    e.rename_column("data", "json")
    e.delete_column("doubles")
    e.rename_column("id", "data")  # "data" now means id 1: taken away from field 2
    e.add_column("preferences.feature3", BooleanType())
    e.add_column("top", StructType(NestedField(1, "a", IntegerType())))
    sets, removals = e.property_updates(props, e.apply())
    assert sets["write.metadata.metrics.column.json"] == "full"
    assert sets["write.parquet.bloom-filter-enabled.column.data"] == "true"
    assert "write.metadata.metrics.column.doubles" in removals
    assert "write.parquet.bloom-filter-enabled.column.id" in removals
    assert "write.metadata.metrics.column.data" in removals  # it followed field 2 to "json"
    mapping = json.loads(sets[NAME_MAPPING_PROPERTY])
    assert mapping[0] == {"field-id": 1, "names": ["id", "data"]}
    assert mapping[1] == {"field-id": 2, "names": ["json"]}
    assert mapping[2]["fields"][-1] == {"field-id": 24, "names": ["feature3"]}
    assert mapping[-1] == {"field-id": 25, "names": ["top"], "fields": [{"field-id": 26, "names": ["a"]}]}


def test_map_key_fields_cannot_change() -> None:
    # Java: "Cannot alter map keys" / "Cannot add fields to map keys"
    for change in (
        lambda e: e.rename_column("locations.key.city", "town"),
        lambda e: e.add_column("locations.key.zip4", IntegerType()),
        lambda e: e.delete_column("locations.key.city"),
        lambda e: e.move_first("locations.key.city"),
        lambda e: e.update_column("locations.key.zip", LongType()),
        lambda e: e.update_column("locations.key.zip", doc="zip"),
        lambda e: e.update_column("locations.key.zip", required=False),
    ):
        with pytest.raises(SchemaError, match="map keys cannot change"):
            change(evo())
    e = evo()  # no-ops are fine
    e.update_column("locations.key.zip", IntegerType(), required=True)
    assert e.apply() == SCHEMA


def test_check_table_partition_and_sort_sources() -> None:
    from icefloe.spec.metadata_builder import TableMetadataBuilder
    from icefloe.spec.partition import PartitionField, PartitionSpec
    from icefloe.spec.sort_order import UNSORTED_SORT_ORDER, SortField, SortOrder
    from icefloe.transforms import BucketTransform, DayTransform, IdentityTransform, VoidTransform

    schema = Schema(
        NestedField(1, "id", IntegerType(), True),
        NestedField(2, "d", DateType()),
        NestedField(3, "e", DateType()),
        NestedField(4, "gone", StringType()),
    )

    def metadata(*fields: PartitionField, order: SortOrder = UNSORTED_SORT_ORDER) -> object:
        return TableMetadataBuilder.new_table(schema, PartitionSpec(*fields), order, "file:///tmp/x").build()

    md = metadata(
        PartitionField(1, 1000, BucketTransform(4), "id_bucket"),
        PartitionField(2, 1001, IdentityTransform(), "d"),
        PartitionField(3, 1002, DayTransform(), "e_day"),
        PartitionField(4, 1003, VoidTransform(), "gone"),
    )
    e = evo(schema, 4)
    e.delete_column("gone")  # a void partition field does not hold it
    e.update_column("id", LongType())  # bucket(int) == bucket(long)
    e.check_table(md, e.apply())  # type: ignore[arg-type]
    e = evo(schema, 4)
    e.delete_column("d")
    with pytest.raises(
        IncompatibleSchemaChangeError, match="partition field 'd' of the table's partition spec"
    ):
        e.check_table(md, e.apply())  # type: ignore[arg-type]
    # date -> timestamp (v3): day partitions keep their values, identity ones do not
    e = evo(schema, 4, format_version=3)
    e.update_column("e", TimestampType())
    e.check_table(md, e.apply())  # type: ignore[arg-type]
    e = evo(schema, 4, format_version=3)
    e.update_column("d", TimestampType())
    with pytest.raises(IncompatibleSchemaChangeError, match="would give other values"):
        e.check_table(md, e.apply())  # type: ignore[arg-type]
    md = metadata(order=SortOrder(1, [SortField(4, IdentityTransform())]))
    e = evo(schema, 4)
    e.delete_column("gone")
    with pytest.raises(IncompatibleSchemaChangeError, match="sort order uses it"):
        e.check_table(md, e.apply())  # type: ignore[arg-type]


def test_name_mapping_takes_reassigned_names_away_at_every_level() -> None:
    mapping = [
        {
            "field-id": 3,
            "names": ["preferences"],
            "fields": [{"field-id": 10, "names": ["feature1"]}, {"field-id": 11, "names": ["feature2"]}],
        }
    ]
    e = evo()
    e.delete_column("preferences.feature2")
    e.add_column("preferences.feature2", BooleanType())  # the name now means the new field
    sets, _ = e.property_updates({NAME_MAPPING_PROPERTY: json.dumps(mapping)}, e.apply())
    fields = json.loads(sets[NAME_MAPPING_PROPERTY])[0]["fields"]
    assert fields == [
        {"field-id": 10, "names": ["feature1"]},
        {"field-id": 11, "names": []},
        {"field-id": 24, "names": ["feature2"]},
    ]
    # a mapping that does not parse is left alone, as in Java
    assert e.property_updates({NAME_MAPPING_PROPERTY: "{nope"}, e.apply()) == ({}, [])
