"""Schema JSON that the spec does not allow is refused when the metadata is read (issue 15: a
field named ``null``, ``true`` or ``""`` or with id -1 used to load and then read as all nulls)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import icefloe
from icefloe.errors import InvalidMetadataError, SchemaError
from icefloe.spec.schema import Schema

GOOD = {"id": 1, "name": "a", "required": False, "type": "long"}


def _schema(*fields: dict[str, Any]) -> dict[str, Any]:
    return {"type": "struct", "schema-id": 0, "fields": list(fields)}


@pytest.mark.parametrize(
    "bad",
    [
        {**GOOD, "name": None},
        {**GOOD, "name": True},
        {**GOOD, "name": ""},
        {**GOOD, "name": 7},
        {**GOOD, "id": -1},
        {**GOOD, "id": "1"},
        {**GOOD, "id": True},
        {**GOOD, "id": 1.5},
        {**GOOD, "required": "false"},
        {**GOOD, "required": 0},
        {**GOOD, "doc": 3},
        {**GOOD, "type": {"type": "list", "element-id": -2, "element": "int", "element-required": False}},
        {**GOOD, "type": {"type": "list", "element-id": 2, "element": "int", "element-required": None}},
        {
            **GOOD,
            "type": {
                "type": "map",
                "key-id": 2,
                "key": "int",
                "value-id": "3",
                "value": "int",
                "value-required": False,
            },
        },
        {**GOOD, "type": {"type": "struct", "fields": {"id": 2}}},
        "a",
    ],
)
def test_malformed_fields_are_refused(bad: Any) -> None:
    with pytest.raises(SchemaError):
        Schema.from_json(_schema(bad))


def test_an_id_used_twice_anywhere_in_the_tree_is_refused() -> None:
    nested = {
        "id": 2,
        "name": "s",
        "required": False,
        "type": {"type": "struct", "fields": [{**GOOD, "name": "x"}]},
    }
    with pytest.raises(SchemaError, match="duplicate field id 1"):
        Schema.from_json(_schema(GOOD, nested))


def test_bad_schema_ids_are_refused() -> None:
    with pytest.raises(SchemaError):
        Schema.from_json({**_schema(GOOD), "schema-id": "0"})
    with pytest.raises(SchemaError):
        Schema.from_json({**_schema(GOOD), "identifier-field-ids": ["1"]})


def test_good_schemas_still_parse() -> None:
    s = Schema.from_json(
        _schema(
            {**GOOD, "required": True},
            {
                "id": 2,
                "name": "l",
                "required": False,
                "doc": "d",
                "type": {"type": "list", "element-id": 3, "element": "int", "element-required": True},
            },
        )
        | {"identifier-field-ids": [1]}
    )
    assert [f.name for f in s.fields] == ["a", "l"] and s.identifier_field_ids == (1,)


@pytest.mark.parametrize("name", [None, True, ""])
def test_a_table_whose_metadata_has_a_bad_field_name_fails_to_load_typed(tmp_path: Path, name: Any) -> None:
    cat = icefloe.load_catalog(
        "strict", type="sql", uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=(tmp_path / "wh").as_uri()
    )
    cat.create_namespace("n")
    t = cat.create_table("n.t", schema=pa.schema([pa.field("id", pa.int64())]))
    t.append(pa.table({"id": [1, 2]}))
    path = Path(t.metadata_location.removeprefix("file://"))
    doc = json.loads(path.read_text())
    doc["schemas"][0]["fields"][0]["name"] = name
    path.write_text(json.dumps(doc))
    with pytest.raises(InvalidMetadataError, match="field name"):
        cat.load_table("n.t")
    cat.close()
