"""Namespace and table names cannot escape the warehouse (issue 9, defect 2).

Names become path segments of table locations (``<warehouse>/<namespace>/<table>``), so a name
holding a path separator, ``.``/``..``, nothing, or a control character is refused with a
`ValidationError` by every operation of every catalog (the REST client before it sends anything,
the REST server with a 400 ``BadRequestException``), and nothing is written anywhere. Legitimate
names (dots inside a table name, any script, spaces, dashes) keep working.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from icefloe.catalog import Catalog
from icefloe.catalog.rest import RestCatalog
from icefloe.catalog.sql import SqlCatalog
from icefloe.errors import ValidationError
from icefloe.rest import RestServer
from icefloe.spec.schema import Schema

from .conftest import make_schema

BAD_NAMES = [
    "../../../escaped",
    "..",
    ".",
    "a/b",
    "/absolute",
    "a\\b",
    "..\\..\\escaped",
    "",
    "nul\x00byte",
    "new\nline",
    "tab\there",
    "del\x7f",
]
GOOD_TABLE_NAMES = ["a.b", "...", "ünïcödé", "日本語", "with space", "da-sh", "under_score", "CamelCase1"]
GOOD_NAMESPACES = ["ünï", "with space", "da-sh", "under_score", "日本"]
# files a catalog database writes next to the warehouse; everything else must stay as it was
_DATABASE_SUFFIXES = (".db", ".db-wal", ".db-shm", ".db-journal")


@pytest.fixture
def warehouse_dir(tmp_path: Path) -> Path:
    # deep enough that '../../../escaped' from <warehouse>/ns/ still lands inside tmp_path
    wh = tmp_path / "deep" / "er" / "wh"
    wh.mkdir(parents=True)
    return wh


def tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if not p.name.endswith(_DATABASE_SUFFIXES)}


def refused(catalog: Catalog, call: Callable[[], object]) -> ValidationError:
    with pytest.raises(ValidationError) as info:
        call()
    error = info.value
    assert error.hint, "the error must say what to do"
    if isinstance(catalog, RestCatalog):
        # refused by the client: an error answered by the server would carry its HTTP status
        assert "status" not in error.context
    return error


@pytest.fixture
def populated(catalog: Catalog, schema: Schema) -> Catalog:
    catalog.create_namespace("ns")
    catalog.create_table("ns.existing", schema)
    return catalog


TABLE_OPERATIONS: dict[str, Callable[[Catalog, Schema, tuple[str, ...]], object]] = {
    "create_table": lambda c, s, ident: c.create_table(ident, s),
    "stage_create_table": lambda c, s, ident: c.stage_create_table(ident, s),
    "register_table": lambda c, s, ident: c.register_table(
        ident, c.load_table("ns.existing").metadata_location
    ),
    "rename_table_to": lambda c, s, ident: c.rename_table("ns.existing", ident),
    "rename_table_from": lambda c, s, ident: c.rename_table(ident, "ns.renamed"),
    "load_table": lambda c, s, ident: c.load_table(ident),
    "table_exists": lambda c, s, ident: c.table_exists(ident),
    "drop_table": lambda c, s, ident: c.drop_table(ident, purge=True),
}


@pytest.mark.parametrize("name", BAD_NAMES, ids=repr)
def test_bad_table_name_is_refused_and_nothing_is_written(
    populated: Catalog, schema: Schema, tmp_path: Path, name: str
) -> None:
    before = tree(tmp_path)
    for operation, call in TABLE_OPERATIONS.items():
        error = refused(populated, lambda call=call: call(populated, schema, ("ns", name)))
        assert tree(tmp_path) == before, operation
        assert "name" in str(error), operation
    assert populated.list_tables("ns") == [("ns", "existing")]
    assert populated.load_table("ns.existing").identifier == ("ns", "existing")


@pytest.mark.parametrize("level", ["..", "../../escaped", "a\\b", "nul\x00byte", "dot.ted"], ids=repr)
def test_bad_namespace_level_in_a_table_identifier_is_refused(
    populated: Catalog, schema: Schema, tmp_path: Path, level: str
) -> None:
    before = tree(tmp_path)
    for operation, call in TABLE_OPERATIONS.items():
        refused(populated, lambda call=call: call(populated, schema, ("ns", level, "t")))
        assert tree(tmp_path) == before, operation


@pytest.mark.parametrize("level", BAD_NAMES, ids=repr)
def test_bad_namespace_is_refused_by_every_namespace_operation(
    catalog: Catalog, tmp_path: Path, level: str
) -> None:
    catalog.create_namespace("ns")
    before = tree(tmp_path)
    for call in (
        lambda: catalog.create_namespace(("ns", level)),
        lambda: catalog.create_namespace((level,)),
        lambda: catalog.load_namespace_properties(("ns", level)),
        lambda: catalog.drop_namespace(("ns", level)),
        lambda: catalog.list_tables(("ns", level)),
    ):
        refused(catalog, call)
    assert tree(tmp_path) == before
    assert catalog.list_namespaces() == [("ns",)]


def test_string_identifiers_with_path_segments_are_refused(catalog: Catalog, schema: Schema) -> None:
    catalog.create_namespace("ns")
    for text in ("ns./etc", "ns..t", "ns.a/b", "ns.t/../../x"):
        refused(catalog, lambda text=text: catalog.create_table(text, schema))
    assert catalog.list_tables("ns") == []


@pytest.mark.parametrize("name", GOOD_TABLE_NAMES)
def test_legitimate_table_names_keep_working(
    catalog: Catalog, schema: Schema, warehouse_dir: Path, name: str
) -> None:
    catalog.create_namespace("ns")
    table = catalog.create_table(("ns", name), schema)
    assert table.metadata.location == f"{warehouse_dir.as_uri()}/ns/{name}"
    assert catalog.load_table(("ns", name)).identifier == ("ns", name)
    assert catalog.list_tables("ns") == [("ns", name)]
    renamed = catalog.rename_table(("ns", name), ("ns", f"{name}-2"))
    assert renamed.identifier == ("ns", f"{name}-2")
    catalog.drop_table(("ns", f"{name}-2"))
    assert catalog.list_tables("ns") == []


@pytest.mark.parametrize("level", GOOD_NAMESPACES)
def test_legitimate_namespace_names_keep_working(
    catalog: Catalog, schema: Schema, warehouse_dir: Path, level: str
) -> None:
    catalog.create_namespace((level,))
    table = catalog.create_table((level, "t"), schema)
    assert table.metadata.location == f"{warehouse_dir.as_uri()}/{level}/t"
    assert catalog.list_namespaces() == [(level,)]


def test_default_location_stays_inside_the_namespace_location(
    catalog: Catalog, schema: Schema, warehouse_dir: Path
) -> None:
    if isinstance(catalog, RestCatalog):
        pytest.skip("the REST server chooses default locations (its catalog runs this test)")
    custom = warehouse_dir / "custom"
    catalog.create_namespace("ns", {"location": custom.as_uri()})
    catalog.create_namespace("plain")
    assert catalog.create_table("ns.t", schema).metadata.location == f"{custom.as_uri()}/t"
    # Even a name that got past the identifier checks cannot leave the namespace's location:
    # the computed location is checked structurally.
    for ident in (
        ("ns", ".."),
        ("ns", "../x"),
        ("plain", ".."),
        ("plain", "a/../../x"),
        ("plain", "a\\..\\.."),
    ):
        with pytest.raises(ValidationError, match="would not lie inside"):
            catalog._default_location(ident)


# ------------------------------------------------------------------ the REST server, over HTTP
TOKEN = "identifier-safety-token"


@pytest.fixture
def server_root(tmp_path: Path) -> Path:
    root = tmp_path / "server" / "deep" / "er"
    (root / "wh").mkdir(parents=True)
    return root


@pytest.fixture
def http(server_root: Path) -> Iterator[httpx.Client]:
    backing = SqlCatalog(
        "srv", uri=f"sqlite:///{server_root.parent / 'cat.db'}", warehouse=(server_root / "wh").as_uri()
    )
    backing.create_namespace("ns")
    backing.create_table("ns.existing", make_schema())
    try:
        with (
            RestServer(backing, tokens=[TOKEN]) as server,
            httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {TOKEN}"}) as client,
        ):
            yield client
    finally:
        backing.close()


def _create_body(name: str) -> dict[str, Any]:
    return {"name": name, "schema": make_schema().to_json()}


def _ident(name: str) -> dict[str, Any]:
    return {"namespace": ["ns"], "name": name}


# (method, path, json body): a bad name in the path or in the body
def _requests(name: str, quoted: str) -> list[tuple[str, str, dict[str, Any] | None]]:
    return [
        ("POST", "/v1/namespaces/ns/tables", _create_body(name)),
        ("POST", "/v1/namespaces/ns/tables", {**_create_body(name), "stage-create": True}),
        ("POST", "/v1/namespaces/ns/register", {"name": name, "metadata-location": "unused"}),
        ("POST", "/v1/tables/rename", {"source": _ident("existing"), "destination": _ident(name)}),
        ("POST", "/v1/tables/rename", {"source": _ident(name), "destination": _ident("renamed")}),
        ("POST", "/v1/namespaces", {"namespace": ["ns", name]}),
        ("GET", f"/v1/namespaces/ns/tables/{quoted}", None),
        ("DELETE", f"/v1/namespaces/ns/tables/{quoted}?purgeRequested=true", None),
        ("POST", f"/v1/namespaces/ns/tables/{quoted}", {"requirements": [], "updates": []}),
        ("GET", f"/v1/namespaces/ns%1F{quoted}", None),
        ("POST", f"/v1/namespaces/ns%1F{quoted}/tables", _create_body("t")),
    ]


def _percent_encoded(name: str) -> str:
    # every byte encoded, dots too, so that no client normalises '..' away before sending
    return "".join(f"%{b:02X}" for b in name.encode())


@pytest.mark.parametrize("name", [n for n in BAD_NAMES if n != ""], ids=repr)
def test_rest_server_answers_bad_names_with_a_typed_400(
    http: httpx.Client, server_root: Path, name: str
) -> None:
    before = tree(server_root.parent.parent)
    for method, path, body in _requests(name, _percent_encoded(name)):
        response = http.request(method, path, json=body)
        assert response.status_code == 400, (method, path, response.text)
        error = response.json()["error"]
        assert (error["type"], error["code"]) == ("BadRequestException", 400), (method, path, error)
        assert error["message"]
    assert tree(server_root.parent.parent) == before
    tables = http.get("/v1/namespaces/ns/tables").json()["identifiers"]
    assert tables == [{"namespace": ["ns"], "name": "existing"}]
