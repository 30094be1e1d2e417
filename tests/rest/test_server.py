"""The REST catalog server, request by request: security, validation, typed errors, commits."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from icefloe.catalog import Catalog
from icefloe.catalog.memory import InMemoryCatalog
from icefloe.errors import ConfigError
from icefloe.rest import RestServer, is_loopback, main

SCHEMA = {
    "type": "struct",
    "schema-id": 0,
    "fields": [
        {"id": 1, "name": "id", "type": "long", "required": True},
        {"id": 2, "name": "s", "type": "string", "required": False},
    ],
}


def error(response: httpx.Response, status: int, kind: str) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"}
    assert body["error"]["code"] == status and body["error"]["type"] == kind
    assert "Traceback" not in response.text
    return str(body["error"]["message"])


def create(http: httpx.Client, name: str = "t", **extra: Any) -> dict[str, Any]:
    r = http.post("/v1/namespaces/db/tables", json={"name": name, "schema": SCHEMA, **extra})
    assert r.status_code == 200, r.text
    return dict(r.json())


@pytest.fixture
def db(http: httpx.Client) -> httpx.Client:
    assert (
        http.post("/v1/namespaces", json={"namespace": ["db"], "properties": {"o": "me"}}).status_code == 200
    )
    return http


# ------------------------------------------------------------------ security
def test_security_settings_are_checked(backing: Catalog) -> None:
    with pytest.raises(ConfigError, match="authenticate"):
        RestServer(backing)
    with pytest.raises(ConfigError, match="loopback"):
        RestServer(backing, host="0.0.0.0", allow_anonymous=True)
    assert is_loopback("127.0.0.5") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.1.2.3")


def test_command_line_refuses_an_open_server(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wh = (tmp_path / "wh").as_uri()
    assert main(["--uri", "memory:", "--warehouse", wh, "--port", "0"]) == 2
    assert "needs a way to authenticate" in capsys.readouterr().err
    assert main(["--uri", "memory:", "--warehouse", wh, "--host", "0.0.0.0", "--allow-anonymous"]) == 2
    assert "loopback" in capsys.readouterr().err


def test_anonymous_only_when_asked(tmp_path: Path) -> None:
    with RestServer(InMemoryCatalog("m", warehouse=tmp_path.as_uri()), allow_anonymous=True) as srv:
        assert httpx.get(f"{srv.url}/v1/config").status_code == 200


def test_requests_need_a_valid_token(server: RestServer) -> None:
    r = httpx.get(f"{server.url}/v1/namespaces")
    error(r, 401, "NotAuthorizedException")
    assert r.headers["www-authenticate"] == "Bearer"
    error(
        httpx.get(f"{server.url}/v1/namespaces", headers={"Authorization": "Bearer nope"}),
        401,
        "NotAuthorizedException",
    )
    error(
        httpx.get(f"{server.url}/v1/namespaces", headers={"Authorization": "Basic eDp5"}),
        401,
        "NotAuthorizedException",
    )


def test_oauth2_client_credentials_and_exchange(server: RestServer) -> None:
    url = f"{server.url}/v1/oauth/tokens"
    bad = httpx.post(url, data={"grant_type": "client_credentials", "client_id": "app", "client_secret": "x"})
    assert bad.status_code == 401 and bad.json()["error"] == "invalid_client"
    assert httpx.post(url, data={"grant_type": "password"}).json()["error"] == "unsupported_grant_type"
    assert httpx.post(url, json={"grant_type": "client_credentials"}).status_code == 400
    ok = httpx.post(
        url, data={"grant_type": "client_credentials", "client_id": "app", "client_secret": "app-secret"}
    )
    body = ok.json()
    assert ok.status_code == 200 and body["token_type"] == "bearer" and body["expires_in"] == 600
    token = body["access_token"]
    assert (
        httpx.get(f"{server.url}/v1/config", headers={"Authorization": f"Bearer {token}"}).status_code == 200
    )
    # HTTP Basic client authentication works as well
    basic = httpx.post(url, data={"grant_type": "client_credentials"}, auth=("app", "app-secret"))
    assert basic.status_code == 200
    exchanged = httpx.post(
        url,
        data={
            "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
            "subject_token": token,
            "subject_token_type": "urn:ietf:params:oauth:token-type:access_token",
        },
    ).json()["access_token"]
    assert exchanged != token
    assert (
        httpx.get(f"{server.url}/v1/config", headers={"Authorization": f"Bearer {exchanged}"}).status_code
        == 200
    )


def test_issued_tokens_expire() -> None:
    from icefloe.rest._auth import Authenticator
    from icefloe.rest._errors import RestError

    now = [1000.0]
    auth = Authenticator(credentials={"app": "s"}, token_lifetime_s=60, clock=lambda: now[0])
    token = str(
        auth.token({"grant_type": "client_credentials", "client_id": "app", "client_secret": "s"}, None)[
            "access_token"
        ]
    )
    assert auth.check(f"Bearer {token}") == "app"
    now[0] += 61
    with pytest.raises(RestError) as e:
        auth.check(f"Bearer {token}")
    assert e.value.status == 401


# ------------------------------------------------------------------ validation and errors
def test_config(http: httpx.Client) -> None:
    body = http.get("/v1/config").json()
    assert body["defaults"] == {} and body["overrides"] == {}
    assert "POST /v1/{prefix}/transactions/commit" in body["endpoints"]
    assert http.get("/v1/config", params={"warehouse": "srv"}).status_code == 200
    error(http.get("/v1/config", params={"warehouse": "other"}), 404, "NoSuchWarehouseException")


def test_bad_requests_get_typed_answers(db: httpx.Client) -> None:
    error(
        db.post("/v1/namespaces", content=b"{not json", headers={"content-type": "application/json"}),
        400,
        "BadRequestException",
    )
    error(db.post("/v1/namespaces", json={"namespace": "db"}), 400, "BadRequestException")
    error(db.post("/v1/namespaces", json={"namespace": ["a.b"]}), 400, "BadRequestException")
    error(db.post("/v1/namespaces", json={"namespace": ["db"]}), 409, "AlreadyExistsException")
    error(db.get("/v1/namespaces/nope"), 404, "NoSuchNamespaceException")
    error(db.get("/v1/namespaces/db/tables/nope"), 404, "NoSuchTableException")
    error(db.get("/v1/no/such/route"), 404, "NoSuchRouteException")
    error(
        db.post("/v1/namespaces/db/tables", json={"name": "t", "schema": {"fields": "x"}}),
        400,
        "BadRequestException",
    )
    bad_spec = {"fields": [{"source-id": 9, "field-id": 1000, "transform": "day", "name": "x"}]}
    error(
        db.post("/v1/namespaces/db/tables", json={"name": "t", "schema": SCHEMA, "partition-spec": bad_spec}),
        400,
        "BadRequestException",
    )
    error(
        db.post("/v1/namespaces/db/properties", json={"removals": ["a"], "updates": {"a": "b"}}),
        422,
        "UnprocessableEntityException",
    )
    error(db.get("/v1/namespaces", params={"pageToken": "x"}), 400, "BadRequestException")
    big = b"{" + b" " * (33 * 1024 * 1024) + b"}"
    error(
        db.post("/v1/namespaces", content=big, headers={"content-type": "application/json"}),
        413,
        "BadRequestException",
    )
    error(db.delete("/v1/namespaces/db/tables/nope"), 404, "NoSuchTableException")


def test_unexpected_failures_are_500_without_a_trace(tmp_path: Path) -> None:
    class Broken(InMemoryCatalog):
        def list_namespaces(self, parent: Any = ()) -> Any:
            raise RuntimeError("secret internals")

        def commit_table(self, *args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("secret internals")

    with RestServer(Broken("b", warehouse=tmp_path.as_uri()), tokens=["t"]) as srv:
        headers = {"Authorization": "Bearer t"}
        r = httpx.get(f"{srv.url}/v1/namespaces", headers=headers)
        # a commit that failed in an unforeseen way may or may not have happened
        c = httpx.post(
            f"{srv.url}/v1/namespaces/db/tables/t", headers=headers, json={"requirements": [], "updates": []}
        )
        rename = {
            "source": {"namespace": ["a"], "name": "b"},
            "destination": {"namespace": ["a"], "name": "c"},
        }
        n = httpx.post(f"{srv.url}/v1/tables/rename", headers=headers, json=rename)
    message = error(r, 500, "InternalServerError")
    assert "secret internals" not in message
    assert "secret internals" not in error(c, 500, "CommitStateUnknownException")
    assert n.status_code == 404  # the in-memory catalog has no such table: an ordinary answer


# ------------------------------------------------------------------ namespaces and tables
def test_namespaces_and_pagination(db: httpx.Client) -> None:
    for name in ("a", "b", "c"):
        assert db.post("/v1/namespaces", json={"namespace": ["db", name]}).status_code == 200
    assert db.get("/v1/namespaces").json() == {"namespaces": [["db"]]}
    children = db.get("/v1/namespaces", params={"parent": "db"}).json()["namespaces"]
    assert children == [["db", "a"], ["db", "b"], ["db", "c"]]
    first = db.get("/v1/namespaces", params={"parent": "db", "pageToken": "", "pageSize": 2}).json()
    assert first["namespaces"] == [["db", "a"], ["db", "b"]] and first["next-page-token"]
    rest = db.get(
        "/v1/namespaces", params={"parent": "db", "pageToken": first["next-page-token"], "pageSize": 2}
    )
    assert rest.json() == {"namespaces": [["db", "c"]], "next-page-token": None}
    assert db.head("/v1/namespaces/db%1Fa").status_code == 204
    assert db.head("/v1/namespaces/db%1Fz").status_code == 404
    assert db.get("/v1/namespaces/db").json() == {"namespace": ["db"], "properties": {"o": "me"}}
    r = db.post("/v1/namespaces/db/properties", json={"removals": ["o", "gone"], "updates": {"n": "1"}})
    assert r.json() == {"updated": ["n"], "removed": ["o"], "missing": ["gone"]}
    error(db.delete("/v1/namespaces/db"), 409, "NamespaceNotEmptyException")
    assert db.delete("/v1/namespaces/db%1Fa").status_code == 204


def test_create_load_etag_and_refs(db: httpx.Client) -> None:
    created = create(db, properties={"owner": "x"})
    assert created["metadata-location"].endswith(".metadata.json")
    assert created["metadata"]["properties"]["owner"] == "x"
    error(
        db.post("/v1/namespaces/db/tables", json={"name": "t", "schema": SCHEMA}),
        409,
        "AlreadyExistsException",
    )
    first = db.get("/v1/namespaces/db/tables/t")
    etag = first.headers["etag"]
    assert db.get("/v1/namespaces/db/tables/t", headers={"If-None-Match": etag}).status_code == 304
    assert db.get("/v1/namespaces/db/tables/t", params={"snapshots": "refs"}).headers["etag"] != etag
    error(db.get("/v1/namespaces/db/tables/t", params={"snapshots": "some"}), 400, "BadRequestException")
    assert db.head("/v1/namespaces/db/tables/t").status_code == 204
    listing = db.get("/v1/namespaces/db/tables").json()
    assert listing == {"identifiers": [{"namespace": ["db"], "name": "t"}]}
    commit = {"requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "v"}}]}
    r = db.post("/v1/namespaces/db/tables/t", json=commit)
    assert r.status_code == 200 and r.json()["metadata"]["properties"]["k"] == "v"
    assert r.headers["etag"] != etag
    again = db.get("/v1/namespaces/db/tables/t", headers={"If-None-Match": etag})
    assert again.status_code == 200 and again.json()["metadata-location"] == r.json()["metadata-location"]


def test_commit_requirements_are_checked_on_the_server(db: httpx.Client) -> None:
    uuid = create(db)["metadata"]["table-uuid"]
    stale = {
        "requirements": [{"type": "assert-table-uuid", "uuid": "00000000-0000-0000-0000-000000000000"}],
        "updates": [{"action": "set-properties", "updates": {"a": "1"}}],
    }
    message = error(db.post("/v1/namespaces/db/tables/t", json=stale), 409, "CommitFailedException")
    assert "uuid" in message
    fine = {**stale, "requirements": [{"type": "assert-table-uuid", "uuid": uuid}]}
    assert db.post("/v1/namespaces/db/tables/t", json=fine).status_code == 200
    unknown = {"requirements": [], "updates": [{"action": "make-it-fast"}]}
    error(db.post("/v1/namespaces/db/tables/t", json=unknown), 400, "BadRequestException")
    unknown_req = {"requirements": [{"type": "assert-luck"}], "updates": []}
    error(db.post("/v1/namespaces/db/tables/t", json=unknown_req), 400, "BadRequestException")
    wrong_body = {"identifier": {"namespace": ["db"], "name": "other"}, "requirements": [], "updates": []}
    error(db.post("/v1/namespaces/db/tables/t", json=wrong_body), 400, "BadRequestException")
    error(
        db.post("/v1/namespaces/db/tables/nope", json={"requirements": [], "updates": []}),
        404,
        "NoSuchTableException",
    )
    # metadata the updates would break is refused, and nothing changes
    before = db.get("/v1/namespaces/db/tables/t").json()["metadata-location"]
    broken = {"requirements": [], "updates": [{"action": "set-current-schema", "schema-id": 42}]}
    error(db.post("/v1/namespaces/db/tables/t", json=broken), 400, "BadRequestException")
    assert db.get("/v1/namespaces/db/tables/t").json()["metadata-location"] == before


def test_stage_create_then_commit(db: httpx.Client) -> None:
    staged = create(db, name="s", **{"stage-create": True})
    assert staged["metadata-location"] is None
    assert db.head("/v1/namespaces/db/tables/s").status_code == 404
    md = staged["metadata"]
    updates = [
        {"action": "assign-uuid", "uuid": md["table-uuid"]},
        {"action": "upgrade-format-version", "format-version": 2},
        {"action": "add-schema", "schema": md["schemas"][0]},
        {"action": "set-current-schema", "schema-id": -1},
        {"action": "add-spec", "spec": md["partition-specs"][0]},
        {"action": "set-default-spec", "spec-id": -1},
        {"action": "add-sort-order", "sort-order": md["sort-orders"][0]},
        {"action": "set-default-sort-order", "sort-order-id": -1},
        {"action": "set-location", "location": md["location"]},
    ]
    commit = {"requirements": [{"type": "assert-create"}], "updates": updates}
    r = db.post("/v1/namespaces/db/tables/s", json=commit)
    assert r.status_code == 200 and r.json()["metadata"]["table-uuid"] == md["table-uuid"]
    error(db.post("/v1/namespaces/db/tables/s", json=commit), 409, "CommitFailedException")
    # DuckDB sends set-current-schema last, after the spec and sort order that refer to it
    duck_order = [u for u in updates if u["action"] != "set-current-schema"]
    duck_order[0] = {"action": "assign-uuid", "uuid": "9a4c6f43-8b3b-4d0c-9c3e-0d1f2a3b4c5d"}
    duck_order[-1] = {"action": "set-location", "location": md["location"] + "_duck"}
    duck_order.append({"action": "set-current-schema", "schema-id": 0})
    r = db.post(
        "/v1/namespaces/db/tables/duck",
        json={"requirements": [{"type": "assert-create"}], "updates": duck_order},
    )
    assert r.status_code == 200, r.text
    assert r.json()["metadata"]["current-schema-id"] == 0


def test_transactions_commit_all_or_nothing(db: httpx.Client) -> None:
    create(db, "a")
    create(db, "b")

    def change(name: str, value: str, requirements: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        return {
            "identifier": {"namespace": ["db"], "name": name},
            "requirements": requirements or [],
            "updates": [{"action": "set-properties", "updates": {"x": value}}],
        }

    ok = db.post("/v1/transactions/commit", json={"table-changes": [change("a", "1"), change("b", "1")]})
    assert ok.status_code == 204
    stale = [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 1}]
    body = {"table-changes": [change("a", "2"), change("b", "2", stale)]}
    error(db.post("/v1/transactions/commit", json=body), 409, "CommitFailedException")
    for name in ("a", "b"):
        assert db.get(f"/v1/namespaces/db/tables/{name}").json()["metadata"]["properties"]["x"] == "1"
    error(
        db.post("/v1/transactions/commit", json={"table-changes": [{"requirements": [], "updates": []}]}),
        400,
        "BadRequestException",
    )
    twice = {"table-changes": [change("a", "3"), change("a", "4")]}
    error(db.post("/v1/transactions/commit", json=twice), 400, "BadRequestException")


def test_register_rename_drop_and_metrics(db: httpx.Client, backing: Catalog) -> None:
    location = create(db)["metadata-location"]
    r = db.post("/v1/namespaces/db/register", json={"name": "r", "metadata-location": location})
    assert r.status_code == 200 and r.json()["metadata-location"] == location
    error(
        db.post("/v1/namespaces/db/register", json={"name": "r", "metadata-location": location}),
        409,
        "AlreadyExistsException",
    )
    newer = db.post(
        "/v1/namespaces/db/tables/t",
        json={"requirements": [], "updates": [{"action": "set-properties", "updates": {"v": "2"}}]},
    ).json()["metadata-location"]
    over = db.post(
        "/v1/namespaces/db/register", json={"name": "r", "metadata-location": newer, "overwrite": True}
    )
    assert over.status_code == 200 and backing.load_table("db.r").metadata_location == newer
    error(
        db.post("/v1/namespaces/db/register", json={"name": "m", "metadata-location": location + ".missing"}),
        404,
        "NotFoundException",
    )
    rename = {
        "source": {"namespace": ["db"], "name": "r"},
        "destination": {"namespace": ["db"], "name": "r2"},
    }
    assert db.post("/v1/tables/rename", json=rename).status_code == 204
    error(db.post("/v1/tables/rename", json=rename), 404, "NoSuchTableException")
    report = {"report-type": "commit-report", "table-name": "db.t", "snapshot-id": 1}
    assert db.post("/v1/namespaces/db/tables/t/metrics", json=report).status_code == 204
    error(
        db.post("/v1/namespaces/db/tables/t/metrics", json={"report-type": "x"}), 400, "BadRequestException"
    )
    error(db.post("/v1/namespaces/db/tables/zz/metrics", json=report), 404, "NoSuchTableException")
    table_dir = Path(backing.load_table("db.t").location.removeprefix("file://"))
    assert db.delete("/v1/namespaces/db/tables/r2").status_code == 204
    assert table_dir.exists()  # a plain drop keeps the files (they are shared with db.t here)
    assert db.delete("/v1/namespaces/db/tables/t", params={"purgeRequested": "true"}).status_code == 204
    assert not any(p.is_file() for p in table_dir.rglob("*"))


def test_vended_credentials(tmp_path: Path) -> None:
    props = {"s3.access-key-id": "AK", "s3.secret-access-key": "SK", "s3.endpoint": "http://127.0.0.1:1"}
    catalog = InMemoryCatalog("v", warehouse=tmp_path.as_uri(), **props)
    from icefloe.rest._app import _Server
    from icefloe.rest._auth import Authenticator

    vending = _Server(catalog, Authenticator(["t"]), vend_credentials=True)
    config, creds = vending.table_config("s3://bucket/wh/db/t", "vended-credentials")
    assert config == props and creds == [{"prefix": "s3://bucket/wh/db/t", "config": props}]
    assert vending.table_config("s3://bucket/wh/db/t", None) == ({}, [])
    assert vending.table_config(tmp_path.as_uri(), "vended-credentials") == ({}, [])
    silent = _Server(catalog, Authenticator(["t"]), vend_credentials=False)
    assert silent.table_config("s3://bucket/wh/db/t", "vended-credentials") == ({}, [])
