"""Namespace behaviour, identical for every catalog."""

from __future__ import annotations

import pytest

from icefloe.catalog import Catalog, PropertiesUpdateSummary, to_identifier, to_namespace
from icefloe.errors import (
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    ValidationError,
)
from icefloe.spec.schema import Schema


def test_identifier_forms() -> None:
    assert to_identifier("ns.tbl") == ("ns", "tbl")
    assert to_identifier("a.b.tbl") == ("a", "b", "tbl")
    assert to_identifier(("a", "b", "tbl")) == ("a", "b", "tbl")
    assert to_identifier(["a", "tbl"]) == ("a", "tbl")
    assert to_namespace("a.b") == ("a", "b")
    assert to_namespace(()) == ()
    assert to_namespace("") == ()


@pytest.mark.parametrize("bad", ["tbl", "", "ns..tbl", ("tbl",), ("ns", ""), ("a.b", "t")])
def test_bad_identifiers(bad: object) -> None:
    with pytest.raises(ValidationError) as e:
        to_identifier(bad)  # type: ignore[arg-type]
    assert e.value.hint


def test_create_list_exists(catalog: Catalog) -> None:
    assert catalog.list_namespaces() == []
    catalog.create_namespace("db")
    catalog.create_namespace(("db", "inner"), {"owner": "me"})
    catalog.create_namespace("other")
    assert catalog.namespace_exists("db")
    assert catalog.namespace_exists("db.inner")
    assert not catalog.namespace_exists("nope")
    assert catalog.list_namespaces() == [("db",), ("other",)]
    assert catalog.list_namespaces("db") == [("db", "inner")]
    assert catalog.list_namespaces(("db", "inner")) == []
    with pytest.raises(NoSuchNamespaceError):
        catalog.list_namespaces("nope")


def test_parents_exist_implicitly(catalog: Catalog) -> None:
    catalog.create_namespace("a.b.c")
    assert catalog.namespace_exists("a")
    assert catalog.namespace_exists("a.b")
    assert catalog.list_namespaces() == [("a",)]
    assert catalog.list_namespaces("a") == [("a", "b")]
    assert catalog.list_namespaces("a.b") == [("a", "b", "c")]
    # a parent with children is not empty
    with pytest.raises(NamespaceNotEmptyError):
        catalog.drop_namespace("a")
    with pytest.raises(NamespaceAlreadyExistsError):
        catalog.create_namespace("a")


def test_like_wildcards_are_literal(catalog: Catalog) -> None:
    catalog.create_namespace("a_b")
    assert not catalog.namespace_exists("axb")
    catalog.create_namespace("a%c.d")
    assert not catalog.namespace_exists("abc")
    assert catalog.list_namespaces("a%c") == [("a%c", "d")]


def test_duplicate_namespace(catalog: Catalog) -> None:
    catalog.create_namespace("db", {"k": "v"})
    with pytest.raises(NamespaceAlreadyExistsError):
        catalog.create_namespace("db", {"k": "other"})
    assert catalog.load_namespace_properties("db") == {"k": "v"}


def test_properties(catalog: Catalog) -> None:
    catalog.create_namespace("db", {"a": "1", "b": "2"})
    assert catalog.load_namespace_properties("db") == {"a": "1", "b": "2"}
    summary = catalog.update_namespace_properties("db", removals=["a", "zz"], updates={"b": "3", "c": "4"})
    assert summary == PropertiesUpdateSummary(removed=["a"], updated=["b", "c"], missing=["zz"])
    assert catalog.load_namespace_properties("db") == {"b": "3", "c": "4"}
    # removing every property keeps the namespace
    catalog.update_namespace_properties("db", removals=["b", "c"])
    assert catalog.namespace_exists("db")
    assert catalog.load_namespace_properties("db") == {}


def test_properties_errors_leave_state(catalog: Catalog) -> None:
    catalog.create_namespace("db", {"a": "1"})
    with pytest.raises(ValidationError):
        catalog.update_namespace_properties("db", removals=["a"], updates={"a": "2"})
    assert catalog.load_namespace_properties("db") == {"a": "1"}
    with pytest.raises(NoSuchNamespaceError):
        catalog.update_namespace_properties("nope", updates={"a": "2"})
    with pytest.raises(NoSuchNamespaceError):
        catalog.load_namespace_properties("nope")
    assert not catalog.namespace_exists("nope")


def test_drop_namespace(catalog: Catalog, schema: Schema) -> None:
    catalog.create_namespace("db")
    catalog.create_table("db.t", schema)
    with pytest.raises(NamespaceNotEmptyError) as e:
        catalog.drop_namespace("db")
    assert "t" in str(e.value)
    assert catalog.namespace_exists("db")
    catalog.drop_table("db.t")
    catalog.drop_namespace("db")
    assert not catalog.namespace_exists("db")
    with pytest.raises(NoSuchNamespaceError):
        catalog.drop_namespace("db")


def test_root_cannot_be_created(catalog: Catalog) -> None:
    with pytest.raises(ValidationError):
        catalog.create_namespace(())
