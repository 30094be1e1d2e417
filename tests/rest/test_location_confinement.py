"""The REST server keeps tables inside the locations it allows (the warehouse and
``--allow-location`` prefixes): every route that names a location refuses one outside with a 403
``ForbiddenException`` before anything is written or read; and files it holds that do not decode
are its own problem (500), except the one a client asks it to register (400)."""

from __future__ import annotations

import errno
import os
import re
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from icefloe.catalog.rest import RestCatalog
from icefloe.catalog.sql import SqlCatalog
from icefloe.errors import ConfigError, CorruptFileError, IcefloeError, ValidationError
from icefloe.io.local import local_path
from icefloe.rest import RestServer, RestServerProcess, main
from icefloe.rest._errors import to_rest_error
from icefloe.rest._locations import PATH_PROPERTIES, LocationPolicy
from icefloe.spec.schema import Schema

TOKEN = "confinement-token"
SCHEMA = {
    "type": "struct",
    "schema-id": 0,
    "fields": [{"id": 1, "name": "id", "type": "long", "required": True}],
}


def forbidden(response: httpx.Response) -> str:
    assert response.status_code == 403, response.text
    body = response.json()
    assert set(body) == {"error"}
    assert body["error"]["code"] == 403 and body["error"]["type"] == "ForbiddenException"
    assert "Traceback" not in response.text
    return str(body["error"]["message"])


def tree(root: Path) -> set[str]:
    """Every file and directory under ``root`` but the catalog's database."""
    return {str(p.relative_to(root)) for p in root.rglob("*") if not p.name.startswith("cat.db")}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    for name in ("wh", "wh2", "outside", "extra"):
        (tmp_path / name).mkdir()
    return tmp_path


@pytest.fixture
def backing(root: Path) -> Iterator[SqlCatalog]:
    cat = SqlCatalog("srv", uri=f"sqlite:///{root / 'cat.db'}", warehouse=(root / "wh").as_uri())
    cat.create_namespace("db")
    yield cat
    cat.close()


@pytest.fixture
def server(backing: SqlCatalog) -> Iterator[RestServer]:
    with RestServer(backing, tokens=[TOKEN]) as srv:
        yield srv


@pytest.fixture
def http(server: RestServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=20) as c:
        yield c


def create(http: httpx.Client, name: str = "t", **extra: Any) -> httpx.Response:
    return http.post("/v1/namespaces/db/tables", json={"name": name, "schema": SCHEMA, **extra})


def commit(http: httpx.Client, table: str, *updates: dict[str, Any]) -> httpx.Response:
    return http.post(f"/v1/namespaces/db/tables/{table}", json={"requirements": [], "updates": list(updates)})


def outside_locations(root: Path) -> list[str]:
    """Locations outside ``root/wh``, spelled every way a client might try."""
    wh = root / "wh"
    return [
        str(root / "outside" / "t"),  # a bare path
        (root / "outside" / "t").as_uri(),  # a file URI
        f"file:{root / 'outside' / 't'}",  # file:/path
        (root / "wh2" / "t").as_uri(),  # the warehouse's name is a prefix of it, not a parent
        str(root / "wh2"),
        f"{wh.as_uri()}/../outside/t",  # '..' escapes
        f"{wh}/db/../../outside/t",
        f"{wh.as_uri()}/./db/..//../outside",
        f"{wh.as_uri()}/%2e%2e/outside/t",  # a '..' once decoded
        f"file://otherhost{wh}/t",  # a file URI naming another host
        str(root),  # the warehouse's parent
        "s3://bucket/wh/t",  # another storage
        "relative/t",  # relative to the server's working directory
    ]


def inside_locations(root: Path) -> list[str]:
    wh = root / "wh"
    return [
        f"{wh.as_uri()}/db/t",
        f"{wh}/db/t",
        f"file:{wh}/db/t",
        f"file://localhost{wh}/db/t",
        f"FILE://{wh}//db/./t/",
        f"{wh.as_uri()}/x/../db/t",
        wh.as_uri(),  # the warehouse itself
    ]


# ------------------------------------------------------------------ the normalisation
@pytest.mark.parametrize(
    ("prefix", "location", "allowed"),
    [
        ("s3://b/wh", "s3://b/wh/t", True),
        ("s3://b/wh", "s3://b/wh", True),
        ("s3://b/wh/", "s3://b/wh//db///t/", True),
        ("s3://b/wh", "s3://b/wh2/t", False),  # a segment boundary
        ("s3://b/wh", "s3://b/w", False),
        ("s3://b/wh", "s3://b/wh/../wh2/t", False),
        ("s3://b/wh", "s3://b/wh/x/../t", True),
        ("s3://b/wh", "s3://b/../b/wh/t", False),  # above the bucket
        ("s3://b", "s3://b/wh/../../other/t", False),
        ("s3://b/wh", "S3://b/wh/t", True),  # schemes ignore case
        ("s3://b/wh", "s3a://b/wh/t", True),  # and aliases name the same storage
        ("s3://b/wh", "s3://B/wh/t", False),  # bucket names do not
        ("s3://b/wh", "s3://b/WH/t", False),  # nor keys
        ("s3://b/wh", "s3://b2/wh/t", False),
        ("s3://b/wh", "s3://b/wh/t?x=1", False),  # pyarrow would drop what follows '?' or '#'
        ("s3://b/wh", "s3://b/other#/../wh/t", False),
        ("s3://b/wh", "s3://b/wh%2F..%2F..%2Fother", False),  # decoded, it leaves the bucket
        ("s3://b/wh", "s3://b/wh%2Ft", False),  # the key "wh%2Ft" is not under "wh/"
        ("s3://b/wh", "gs://b/wh/t", False),
        ("hdfs://NameNode:8020/wh", "hdfs://namenode:8020/wh/t", True),  # host names ignore case
        ("hdfs://nn:8020/wh", "hdfs://nn:9000/wh/t", False),
        ("file:///data/wh", "/data/wh/t", True),
        ("/data/wh", "file:/data/wh/t", True),
        ("/data/wh", "file://localhost/data/wh/t", True),
        ("/data/wh", "file://host/data/wh/t", False),
        ("/data/wh", "/data/wh\\..\\x", False),  # a backslash is a name's character: beside wh
        ("/data/wh", "/data/wh2", False),
        ("/data/wh", "/data/wh/../../../../x", False),
        ("/data/wh", "", False),
        ("/", "/anything/at/all", True),
    ],
)
def test_location_normalisation(prefix: str, location: str, allowed: bool) -> None:
    assert LocationPolicy([prefix]).allows(location) is allowed


def test_relative_locations_are_resolved_against_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    policy = LocationPolicy([(tmp_path / "wh").as_uri()])
    assert policy.allows("wh/t") and policy.allows("file:wh/t")
    assert not policy.allows("wh2/t") and not policy.allows("../wh/t")
    assert LocationPolicy(["wh"]).allows((tmp_path / "wh" / "t").as_uri())


def test_no_prefix_allows_nothing_and_invalid_prefixes_are_refused() -> None:
    assert not LocationPolicy([]).allows("/x")
    for bad in ("file://otherhost/x", "s3://b/x?y", "/..", "\x00"):
        with pytest.raises(ConfigError, match="invalid allowed location"):
            LocationPolicy(["/ok", bad])


# ------------------------------------------------------------------ create table
def test_create_table_refuses_locations_outside(root: Path, http: httpx.Client, backing: SqlCatalog) -> None:
    before = tree(root)
    for i, location in enumerate(outside_locations(root)):
        message = forbidden(create(http, f"t{i}", location=location))
        assert "the table location" in message and "--allow-location" in message
        staged = create(http, f"s{i}", location=location, **{"stage-create": True})
        forbidden(staged)
    assert tree(root) == before
    assert backing.list_tables("db") == []


def test_create_table_allows_locations_inside(root: Path, http: httpx.Client, backing: SqlCatalog) -> None:
    for i, location in enumerate(inside_locations(root)):
        r = create(http, f"t{i}", location=location)
        assert r.status_code == 200, (location, r.text)
        purged = http.delete(f"/v1/namespaces/db/tables/t{i}", params={"purgeRequested": "true"})
        assert purged.status_code == 204
    assert create(http, "default").status_code == 200  # no location: the warehouse's default
    assert backing.load_table("db.default").location == f"{(root / 'wh').as_uri()}/db/default"


@pytest.mark.parametrize("key", PATH_PROPERTIES)
def test_create_table_refuses_path_properties_outside(
    key: str, root: Path, http: httpx.Client, backing: SqlCatalog
) -> None:
    before = tree(root)
    for i, location in enumerate(outside_locations(root)):
        message = forbidden(create(http, f"t{i}", properties={key: location}))
        assert key in message
    forbidden(create(http, "s", properties={key: str(root / "outside")}, **{"stage-create": True}))
    assert tree(root) == before and backing.list_tables("db") == []
    inside = f"{(root / 'wh').as_uri()}/somewhere"
    r = create(http, "ok", properties={key: inside})
    assert r.status_code == 200 and backing.load_table("db.ok").properties[key] == inside


def test_namespace_locations_are_confined(root: Path, http: httpx.Client, backing: SqlCatalog) -> None:
    outside = (root / "outside").as_uri()
    forbidden(http.post("/v1/namespaces", json={"namespace": ["n"], "properties": {"location": outside}}))
    assert not backing.namespace_exists("n")
    forbidden(http.post("/v1/namespaces/db/properties", json={"updates": {"location": outside}}))
    assert "location" not in backing.load_namespace_properties("db")
    inside = f"{(root / 'wh').as_uri()}/elsewhere"
    ok = http.post("/v1/namespaces", json={"namespace": ["m"], "properties": {"location": inside}})
    assert ok.status_code == 200
    assert create(http, "t", location=None).status_code == 200  # in db: the warehouse's default

    # a namespace that points outside (set behind the server's back) gives no default there either
    backing.update_namespace_properties("db", updates={"location": outside})
    before = tree(root)
    assert "default location" in forbidden(create(http, "u"))
    forbidden(create(http, "v", **{"stage-create": True}))
    assert tree(root) == before


# ------------------------------------------------------------------ commits
def test_commits_refuse_set_location_and_path_properties_outside(
    root: Path, http: httpx.Client, backing: SqlCatalog
) -> None:
    assert create(http).status_code == 200
    current = backing.load_table("db.t").metadata_location
    before = tree(root)
    for location in outside_locations(root):
        assert "set-location" in forbidden(
            commit(http, "t", {"action": "set-location", "location": location})
        )
        for key in PATH_PROPERTIES:
            update = {"action": "set-properties", "updates": {"harmless": "x", key: location}}
            assert key in forbidden(commit(http, "t", update))
    # an allowed change in the same commit does not carry a refused one through
    mixed = commit(
        http,
        "t",
        {"action": "set-properties", "updates": {"a": "b"}},
        {"action": "set-location", "location": str(root / "outside")},
    )
    forbidden(mixed)
    assert tree(root) == before
    assert backing.load_table("db.t").metadata_location == current

    inside = f"{(root / 'wh').as_uri()}/db/moved"
    assert commit(http, "t", {"action": "set-location", "location": inside}).status_code == 200
    r = commit(http, "t", {"action": "set-properties", "updates": {"write.metadata.path": f"{inside}/md"}})
    assert r.status_code == 200 and r.json()["metadata-location"].startswith(f"{inside}/md/")


def test_a_create_transaction_cannot_commit_a_location_outside(
    root: Path, http: httpx.Client, backing: SqlCatalog
) -> None:
    staged = create(http, "s", **{"stage-create": True}).json()["metadata"]
    updates = [
        {"action": "assign-uuid", "uuid": staged["table-uuid"]},
        {"action": "upgrade-format-version", "format-version": 2},
        {"action": "add-schema", "schema": staged["schemas"][0]},
        {"action": "set-current-schema", "schema-id": -1},
        {"action": "add-spec", "spec": staged["partition-specs"][0]},
        {"action": "set-default-spec", "spec-id": -1},
        {"action": "add-sort-order", "sort-order": staged["sort-orders"][0]},
        {"action": "set-default-sort-order", "sort-order-id": -1},
    ]
    before = tree(root)
    for extra in (
        {"action": "set-location", "location": str(root / "outside" / "s")},
        {"action": "set-properties", "updates": {"write.metadata.path": str(root / "outside")}},
    ):
        body = {"requirements": [{"type": "assert-create"}], "updates": [*updates, extra]}
        forbidden(http.post("/v1/namespaces/db/tables/s", json=body))
    assert tree(root) == before and not backing.table_exists("db.s")
    body = {
        "requirements": [{"type": "assert-create"}],
        "updates": [*updates, {"action": "set-location", "location": staged["location"]}],
    }
    assert http.post("/v1/namespaces/db/tables/s", json=body).status_code == 200


def test_transactions_refuse_locations_outside(root: Path, http: httpx.Client, backing: SqlCatalog) -> None:
    for name in ("a", "b"):
        assert create(http, name).status_code == 200
    current = {name: backing.load_table(f"db.{name}").metadata_location for name in ("a", "b")}

    def change(name: str, update: dict[str, Any]) -> dict[str, Any]:
        return {"identifier": {"namespace": ["db"], "name": name}, "requirements": [], "updates": [update]}

    fine = {"action": "set-properties", "updates": {"k": "v"}}
    before = tree(root)
    for bad in (
        {"action": "set-location", "location": f"{(root / 'wh').as_uri()}/../outside/b"},
        {"action": "set-properties", "updates": {"write.data.path": (root / "wh2").as_uri()}},
    ):
        body = {"table-changes": [change("a", fine), change("b", bad)]}
        assert "'db.b'" in forbidden(http.post("/v1/transactions/commit", json=body))
    assert tree(root) == before
    assert {n: backing.load_table(f"db.{n}").metadata_location for n in ("a", "b")} == current
    body = {"table-changes": [change("a", fine), change("b", fine)]}
    assert http.post("/v1/transactions/commit", json=body).status_code == 204


# ------------------------------------------------------------------ register
def _metadata_file(backing: SqlCatalog, root: Path, name: str, **create_args: Any) -> Path:
    """A valid metadata file of a table made by the backing catalog directly (no policy there),
    copied to ``root/name``; the table itself is dropped again."""
    source = "db.src_" + re.sub(r"\W", "_", name)
    table = backing.create_table(source, Schema.from_json(SCHEMA), **create_args)
    target = root / name
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(local_path(table.metadata_location), target)
    backing.drop_table(source)
    return target


def register(http: httpx.Client, location: str, name: str = "r", **extra: Any) -> httpx.Response:
    return http.post(
        "/v1/namespaces/db/register", json={"name": name, "metadata-location": location, **extra}
    )


def test_register_refuses_a_metadata_file_outside(
    root: Path, http: httpx.Client, backing: SqlCatalog
) -> None:
    valid = _metadata_file(backing, root, "outside/v1.metadata.json")  # its table lies in wh
    assert create(http, "t").status_code == 200
    current = backing.load_table("db.t").metadata_location
    before = tree(root)
    for location in (str(valid), valid.as_uri(), f"{(root / 'wh').as_uri()}/../outside/v1.metadata.json"):
        assert "the metadata file to register" in forbidden(register(http, location))
        forbidden(register(http, location, name="t", overwrite=True))
    assert tree(root) == before
    assert not backing.table_exists("db.r")
    assert backing.load_table("db.t").metadata_location == current


def test_register_checks_the_location_before_reading_the_file(root: Path, http: httpx.Client) -> None:
    """A named pipe blocks whoever opens it for reading until a writer comes: a server that read
    a refused file would never answer, and a reader waiting on the pipe shows as a writer that
    can open it without blocking (otherwise ENXIO). The allowed pipe shows the probe works."""

    def reader_waiting(fifo: Path) -> bool:
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as e:
            assert e.errno == errno.ENXIO
            return False
        os.close(fd)  # releases the reader: it reads an empty file
        return True

    refused = root / "outside" / "pipe.metadata.json"
    os.mkfifo(refused)
    try:
        forbidden(register(http, str(refused)))
    finally:
        assert not reader_waiting(refused), "the server opened a file it refused"

    allowed = root / "wh" / "pipe.metadata.json"
    os.mkfifo(allowed)
    answer: list[httpx.Response] = []
    request = threading.Thread(target=lambda: answer.append(register(http, str(allowed))))
    request.start()
    deadline = time.monotonic() + 20
    while not reader_waiting(allowed):
        assert time.monotonic() < deadline, "the server never opened the allowed file"
        time.sleep(0.02)
    request.join(timeout=20)
    assert answer and answer[0].status_code != 403  # read (and found not to be metadata)


def test_register_checks_where_the_registered_metadata_points(
    root: Path, http: httpx.Client, backing: SqlCatalog
) -> None:
    elsewhere = _metadata_file(
        backing, root, "wh/elsewhere.metadata.json", location=str(root / "outside" / "x")
    )
    assert "registered table's location" in forbidden(register(http, elsewhere.as_uri()))
    for key in PATH_PROPERTIES:
        moved = _metadata_file(
            backing, root, f"wh/{key}.metadata.json", properties={key: (root / "wh2").as_uri()}
        )
        assert key in forbidden(register(http, moved.as_uri()))
    assert not backing.table_exists("db.r")
    inside = _metadata_file(backing, root, "wh/fine.metadata.json")
    assert register(http, inside.as_uri()).status_code == 200


# ------------------------------------------------------------------ more allowed locations
def test_allowed_locations_extend_the_warehouse(root: Path, backing: SqlCatalog) -> None:
    extra = (root / "extra").as_uri()
    elsewhere = _metadata_file(backing, root, "extra/v1.metadata.json", location=f"{extra}/src")
    with (
        RestServer(backing, tokens=[TOKEN], allowed_locations=[extra]) as srv,
        httpx.Client(base_url=srv.url, headers={"Authorization": f"Bearer {TOKEN}"}) as http,
    ):
        assert create(http, "x", location=f"{extra}/x").status_code == 200
        assert create(http, "w").status_code == 200  # the warehouse stays allowed
        assert register(http, str(elsewhere)).status_code == 200
        forbidden(create(http, "y", location=(root / "outside").as_uri()))
        forbidden(create(http, "z", location=f"{extra}2/z"))
    assert backing.load_table("db.x").location == f"{extra}/x"


def test_allow_location_on_the_command_line(root: Path) -> None:
    extra = str(root / "extra")
    wh = (root / "wh").as_uri()
    with (
        RestServerProcess("memory:", wh, token=TOKEN, allowed_locations=[extra]) as srv,
        httpx.Client(base_url=srv.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=20) as http,
    ):
        assert http.post("/v1/namespaces", json={"namespace": ["db"]}).status_code == 200
        assert create(http, "x", location=f"file://{extra}/x").status_code == 200
        assert create(http, "w").status_code == 200
        forbidden(create(http, "y", location=str(root / "outside")))
    assert any((root / "extra" / "x" / "metadata").iterdir())


def test_invalid_allow_location_stops_the_server(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--uri", "memory:", "--warehouse", (root / "wh").as_uri(), "--token", TOKEN, "--port", "0"]
    assert main([*args, "--allow-location", "file://otherhost/data"]) == 2
    assert "invalid allowed location" in capsys.readouterr().err


# ------------------------------------------------------------------ the client
def test_the_client_raises_a_typed_error_with_the_servers_hint(
    root: Path, server: RestServer, backing: SqlCatalog
) -> None:
    cat = RestCatalog("c", uri=server.url, token=TOKEN)
    try:
        schema = Schema.from_json(SCHEMA)
        with pytest.raises(ValidationError) as refused:
            cat.create_table("db.t", schema, location=(root / "outside").as_uri())
        assert isinstance(refused.value, ConfigError)
        assert refused.value.context["status"] == 403
        assert refused.value.context["error_type"] == "ForbiddenException"
        assert refused.value.hint is not None and "--allow-location" in refused.value.hint
        with pytest.raises(ConfigError, match="metadata file to register"):
            cat.register_table("db.r", str(root / "outside" / "v1.metadata.json"))

        table = cat.create_table("db.t", schema)
        with (
            pytest.raises(ConfigError, match=r"write\.metadata\.path") as commit_refused,
            table.transaction() as tx,
        ):
            tx.set_properties(**{"write.metadata.path": str(root / "outside")})
        assert commit_refused.value.context["status"] == 403
        assert backing.load_table("db.t").metadata_location == table.metadata_location
    finally:
        cat.close()


# ------------------------------------------------------------------ damaged files
def test_a_damaged_metadata_file_is_a_server_error_but_a_bad_file_to_register(
    root: Path, http: httpx.Client, backing: SqlCatalog
) -> None:
    assert create(http).status_code == 200
    location = backing.load_table("db.t").metadata_location
    damaged = Path(local_path(location))
    damaged.write_bytes(damaged.read_bytes()[:40])  # truncated

    r = http.get("/v1/namespaces/db/tables/t")
    assert r.status_code == 500, r.text
    error = r.json()["error"]
    assert error["type"] == "InternalServerError" and error["code"] == 500
    assert location in error["message"]  # the table's own file: its name tells nothing new
    assert "Traceback" not in r.text and 'File "' not in r.text

    copy = root / "wh" / "copy.metadata.json"
    shutil.copyfile(damaged, copy)
    r = register(http, copy.as_uri())
    assert r.status_code == 400, r.text
    assert r.json()["error"]["type"] == "BadRequestException"
    assert str(copy) in r.json()["error"]["message"] and "Traceback" not in r.text
    assert not backing.table_exists("db.r")


def test_corrupt_text_that_is_no_file_stays_a_bad_request() -> None:
    from_file = to_rest_error(CorruptFileError.of("s3://b/t/m.json", "table metadata", "truncated"))
    assert (from_file.status, from_file.type) == (500, "InternalServerError")
    no_file = to_rest_error(CorruptFileError.of(None, "table metadata", "not JSON"))
    assert (no_file.status, no_file.type) == (400, "BadRequestException")
    assert to_rest_error(IcefloeError("x")).status == 500


def test_purge_deletes_nothing_outside_the_allowed_locations(
    root: Path, backing: SqlCatalog, http: httpx.Client
) -> None:
    """A table whose metadata references files outside the allowed locations (here written there
    through a write.data.path set behind the server's back) is purged inside them only."""
    import pyarrow as pa

    outside = root / "outside" / "data"
    table = backing.create_table(
        ("db", "refs_outside"),
        pa.schema([("id", pa.int64())]),
        properties={"write.data.path": outside.as_uri()},
    )
    table.append(pa.table({"id": [1, 2, 3]}))
    data_files = sorted(tree(outside))
    assert data_files and all(p.endswith(".parquet") for p in data_files)
    inside_before = tree(root / "wh")
    assert inside_before

    response = http.delete("/v1/namespaces/db/tables/refs_outside", params={"purgeRequested": "true"})
    assert response.status_code == 204, response.text
    assert sorted(tree(outside)) == data_files  # untouched
    assert not any(".metadata.json" in p or p.endswith(".avro") for p in tree(root / "wh"))

    # the same catalog used directly (no server, no filter) purges everything it references
    backing.purge_filter = None
    again = backing.create_table(
        ("db", "direct"), pa.schema([("id", pa.int64())]), properties={"write.data.path": outside.as_uri()}
    )
    again.append(pa.table({"id": [4]}))
    report = backing.drop_table(("db", "direct"), purge=True)
    assert report is not None and report.complete and not report.outside
    assert sorted(tree(outside)) == data_files


def test_purge_filter_is_reported(root: Path) -> None:
    import pyarrow as pa

    cat = SqlCatalog("f", uri=f"sqlite:///{root / 'f.db'}", warehouse=(root / "wh").as_uri())
    cat.create_namespace("db")
    outside = root / "outside" / "f"
    t = cat.create_table(
        ("db", "t"), pa.schema([("id", pa.int64())]), properties={"write.data.path": outside.as_uri()}
    )
    t.append(pa.table({"id": [1]}))
    cat.purge_filter = LocationPolicy([(root / "wh").as_uri()]).allows
    report = cat.drop_table(("db", "t"), purge=True)
    assert report is not None and not report.complete
    assert len(report.outside) == 1 and report.outside[0].startswith(outside.as_uri())
    assert len(tree(outside)) == 1
    cat.close()


def test_register_reads_the_metadata_file_once(
    root: Path, http: httpx.Client, backing: SqlCatalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server reads the file to check where it points and registers what it read: one read
    per register, a new name or an overwrite."""
    import icefloe.catalog._base as base
    import icefloe.rest._app as app

    reads: list[str] = []

    def counting(module: Any) -> Any:
        real = module.read_metadata_file

        def read(io: Any, location: str) -> Any:
            reads.append(location)
            return real(io, location)

        return read

    monkeypatch.setattr(app, "read_metadata_file", counting(app))
    monkeypatch.setattr(base, "read_metadata_file", counting(base))
    first = _metadata_file(backing, root, "wh/once.metadata.json")
    second = _metadata_file(backing, root, "wh/twice.metadata.json")
    reads.clear()
    answer = register(http, first.as_uri())
    assert answer.status_code == 200, answer.text
    assert reads == [first.as_uri()]
    reads.clear()
    answer = register(http, second.as_uri(), overwrite=True)
    assert answer.status_code == 200, answer.text
    assert reads == [second.as_uri()]
    assert answer.json()["metadata-location"] == second.as_uri()
    assert backing.load_table("db.r").metadata_location == second.as_uri()
    # Registering over an existing name without overwrite reads the file (to check it) and
    # changes nothing.
    answer = register(http, first.as_uri())
    assert answer.status_code == 409, answer.text
    assert backing.load_table("db.r").metadata_location == second.as_uri()


def test_a_server_in_front_of_a_rest_catalog_registers_through_it(
    root: Path, server: RestServer, backing: SqlCatalog
) -> None:
    """A server whose catalog is itself a REST client passes the register on (its catalog
    registers by asking the server behind it, which reads and checks the file itself)."""
    inside = _metadata_file(backing, root, "wh/proxied.metadata.json")
    outside = _metadata_file(backing, root, "outside/proxied.metadata.json")
    client = RestCatalog("inner", uri=server.url, token=TOKEN)
    try:
        with (
            RestServer(client, tokens=[TOKEN], allowed_locations=[root.as_uri()]) as front,
            httpx.Client(
                base_url=front.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=20
            ) as http,
        ):
            answer = register(http, inside.as_uri(), name="p")
            assert answer.status_code == 200, answer.text
            # allowed by the front server, refused by the one behind it (outside its warehouse):
            # the front server passes the refusal on
            answer = register(http, outside.as_uri(), name="q")
            assert "outside the locations this server allows" in forbidden(answer)
    finally:
        client.close()
    assert backing.load_table("db.p").metadata_location == inside.as_uri()
    assert not backing.table_exists("db.q")


def test_an_upstream_refusal_is_passed_on_and_nothing_else_is() -> None:
    """What icefloe's REST client raises for a 403 ForbiddenException of the server behind a
    server is answered as that 403; a 401 there (the front server's own credentials) is not."""
    forbidden_upstream = ConfigError("refused", status=403, error_type="ForbiddenException")
    assert (to_rest_error(forbidden_upstream).status, to_rest_error(forbidden_upstream).type) == (
        403,
        "ForbiddenException",
    )
    unauthorized = ConfigError("bad token", status=401, error_type="NotAuthorizedException")
    assert to_rest_error(unauthorized).status != 403
    assert to_rest_error(ConfigError("no status")).status != 403
