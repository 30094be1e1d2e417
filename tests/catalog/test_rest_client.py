"""icefloe's REST catalog client beyond the shared behaviour suite: authentication, signing,
ETags, server-declared endpoints, vended credentials, and commits whose outcome is unknown."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

import icefloe
from icefloe.catalog import TableCommit
from icefloe.catalog.rest import RestCatalog, _storage_config
from icefloe.catalog.sql import SqlCatalog
from icefloe.errors import CommitStateUnknownError, ConfigError, UnsupportedFeatureError
from icefloe.rest import RestServer, free_loopback_port
from icefloe.spec.updates import SetProperties
from icefloe.testing import CommitFault, FaultInjectingCatalog

SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string())])


@pytest.fixture
def backing(tmp_path: Path) -> Iterator[SqlCatalog]:
    (tmp_path / "wh").mkdir()
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=(tmp_path / "wh").as_uri())
    yield cat
    cat.close()


@pytest.fixture
def server(backing: SqlCatalog) -> Iterator[RestServer]:
    with RestServer(backing, tokens=["tok"], credentials={"app": "secret"}) as srv:
        yield srv


def data(*ids: int) -> pa.Table:
    return pa.table({"id": list(ids), "s": [str(i) for i in ids]}, schema=SCHEMA)


class FakeServer(RestServer):
    """Any FastAPI ``app`` on a background thread, on a free loopback port (`RestServer`'s
    thread handling without its catalog and security checks)."""

    def __init__(self, app: FastAPI) -> None:
        import socket

        import uvicorn

        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        self.host, self.port = "127.0.0.1", self._socket.getsockname()[1]
        self._server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
        self._thread = None


def test_load_catalog_picks_rest(server: RestServer) -> None:
    with icefloe.load_catalog("r", uri=server.url, token="tok") as cat:
        assert isinstance(cat, RestCatalog)
        assert "POST /v1/{prefix}/transactions/commit" in cat.endpoints  # type: ignore[attr-defined]


def test_bad_credentials_and_unreachable_server(server: RestServer) -> None:
    with pytest.raises(ConfigError, match="401"):
        RestCatalog("r", uri=server.url, token="wrong")
    with pytest.raises(ConfigError, match="token endpoint refused"):
        RestCatalog("r", uri=server.url, credential="app:wrong")
    with pytest.raises(ConfigError, match="no answer"):
        RestCatalog("r", uri=f"http://127.0.0.1:{free_loopback_port()}", token="tok")
    with pytest.raises(ConfigError, match="http"):
        RestCatalog("r", uri="127.0.0.1:8181")


def test_oauth_token_is_fetched_refreshed_and_renewed_after_401(server: RestServer) -> None:
    cat = RestCatalog("r", uri=server.url, credential="app:secret")
    first = cat._auth.bearer()
    assert first is not None
    cat._auth._expires_at = 0.0  # due: the next request refreshes it first
    cat.create_namespace("db")
    second = cat._auth.bearer()
    assert second not in (None, first)
    # the server forgets every token it issued (a restart): the client gets a new one on 401
    server.app.state.icefloe.auth._issued.clear()
    assert cat.list_namespaces() == [("db",)]
    assert cat._auth.bearer() not in (first, second)
    cat.close()


def test_etag_reuses_the_loaded_metadata(server: RestServer) -> None:
    cat = RestCatalog("r", uri=server.url, token="tok")
    cat.create_namespace("db")
    cat.create_table("db.t", SCHEMA)
    first = cat.load_table("db.t")
    assert cat.load_table("db.t").metadata is first.metadata  # 304 Not Modified
    first.append(data(1))
    assert cat.load_table("db.t").metadata is not first.metadata or first.current_snapshot() is not None
    other = RestCatalog("o", uri=server.url, token="tok")
    other.load_table("db.t").append(data(2))
    assert len(cat.load_table("db.t").snapshots()) == 2  # a changed table is sent again
    cat.close()
    other.close()


def test_undeclared_endpoints_are_not_called(server: RestServer) -> None:
    cat = RestCatalog("r", uri=server.url, token="tok")
    cat.create_namespace("db")
    cat.endpoints = frozenset(
        e for e in cat.endpoints if "transactions" not in e and not e.startswith("HEAD")
    )
    with pytest.raises(UnsupportedFeatureError, match="multi-table"):
        cat.commit_tables([TableCommit(("db", "a")), TableCommit(("db", "b"))])
    cat.create_table("db.t", SCHEMA)
    assert cat.table_exists("db.t") and not cat.table_exists("db.u")  # falls back to GET
    assert cat.namespace_exists("db") and not cat.namespace_exists("nope")
    cat.close()


def test_multi_table_commit(server: RestServer, backing: SqlCatalog) -> None:
    cat = RestCatalog("r", uri=server.url, token="tok")
    cat.create_namespace("db")
    a, b = cat.create_table("db.a", SCHEMA), cat.create_table("db.b", SCHEMA)
    results = cat.commit_tables(
        [
            TableCommit(a.identifier, (), (SetProperties({"x": "1"}),)),
            TableCommit(b.identifier, (), (SetProperties({"x": "1"}),)),
        ]
    )
    assert [m.properties["x"] for m, _ in results] == ["1", "1"]
    assert backing.load_table("db.b").properties["x"] == "1"
    cat.close()


def test_server_config_defaults_overrides_and_prefix() -> None:
    """/v1/config: defaults < the client's properties < overrides; the ``prefix`` goes into every
    route (but not the config route itself); ``endpoints`` limits what may be called."""
    seen: list[tuple[str, str]] = []
    app = FastAPI()

    @app.api_route("/{path:path}", methods=["GET", "POST", "HEAD"])
    async def anything(request: Request, path: str) -> JSONResponse:
        seen.append((request.method, "/" + path))
        if path == "v1/config":
            assert request.query_params.get("warehouse") == "wh1"
            return JSONResponse(
                {
                    "defaults": {"a": "server-default", "b": "server-default", "c": "server-default"},
                    "overrides": {"b": "server-override", "prefix": "cat/one"},
                    "endpoints": ["GET /v1/{prefix}/namespaces", "GET /v1/{prefix}/namespaces/{namespace}"],
                }
            )
        if path.endswith("/namespaces"):
            return JSONResponse({"namespaces": [["db"]]})
        return JSONResponse({"namespace": ["db"], "properties": {"k": "v"}})

    with FakeServer(app) as fake:
        cat = RestCatalog("c", uri=fake.url, token="t", warehouse="wh1", a="client", b="client")
        assert (cat.properties["a"], cat.properties["b"], cat.properties["c"]) == (
            "client",
            "server-override",
            "server-default",
        )
        assert cat.list_namespaces() == [("db",)]
        assert cat.namespace_exists("db")  # no HEAD declared: GET
        assert cat.load_namespace_properties("db") == {"k": "v"}
        with pytest.raises(UnsupportedFeatureError, match="creating namespaces"):
            cat.create_namespace("other")
        with pytest.raises(UnsupportedFeatureError, match="loading tables"):
            cat.load_table("db.t")
        cat.close()
    assert seen == [
        ("GET", "/v1/config"),
        ("GET", "/v1/cat/one/namespaces"),
        ("GET", "/v1/cat/one/namespaces/db"),
        ("GET", "/v1/cat/one/namespaces/db"),
    ]


def test_commit_state_unknown_is_resolved(tmp_path: Path, backing: SqlCatalog) -> None:
    faulty = FaultInjectingCatalog(backing, name="c")
    with RestServer(faulty, tokens=["tok"]) as srv:
        cat = RestCatalog("r", uri=srv.url, token="tok")
        cat.create_namespace("db")
        table = cat.create_table("db.t", SCHEMA)
        # the server times out after the swap: the client finds its snapshot and reports success
        faulty.inject(CommitFault.UNKNOWN_APPLIED)
        snapshot = table.append(data(1))
        assert snapshot is not None and [s.snapshot_id for s in cat.load_table("db.t").snapshots()] == [
            snapshot.snapshot_id
        ]
        # a lost swap is a 409: retried
        faulty.inject(CommitFault.LOST_SWAP)
        cat.load_table("db.t").append(data(2))
        # the outcome stays unknown when the snapshot is not there: the error surfaces and the
        # files the commit wrote are kept (they might be live)
        faulty.inject(CommitFault.UNKNOWN_NOT_APPLIED)
        before = {p for p in (tmp_path / "wh").rglob("*.parquet")}
        with pytest.raises(CommitStateUnknownError):
            cat.load_table("db.t").append(data(3))
        assert {p for p in (tmp_path / "wh").rglob("*.parquet")} > before
        assert sorted(r["id"] for r in cat.load_table("db.t").scan().to_arrow().to_pylist()) == [1, 2]
        cat.close()


def test_a_commit_that_times_out_is_resolved(tmp_path: Path, backing: SqlCatalog) -> None:
    """The server swaps the pointer, then answers too late: the client's read timeout makes the
    outcome unknown, and the retry loop finds the commit's snapshot in the refreshed table."""

    class SlowAfterSwap(FaultInjectingCatalog):
        delay_s = 0.0

        def _swap_pointer(self, identifier: tuple[str, ...], expected: str, new: str) -> None:
            super()._swap_pointer(identifier, expected, new)
            time.sleep(self.delay_s)

    slow = SlowAfterSwap(backing, name="c")
    with RestServer(slow, tokens=["tok"]) as srv:
        cat = RestCatalog("r", uri=srv.url, token="tok", **{"rest.client.socket-timeout-ms": "500"})
        cat.create_namespace("db")
        table = cat.create_table("db.t", SCHEMA)
        slow.delay_s = 1.5
        with pytest.raises(CommitStateUnknownError, match="no answer"):  # the raw commit: unknown
            cat.commit_table("db.t", [], [SetProperties({"slow": "yes"})])
        assert cat.load_table("db.t").properties["slow"] == "yes"  # it had landed
        swaps = len(slow.commits)
        snapshot = table.append(data(1))  # through the retry loop: found, so a success
        slow.delay_s = 0.0
        assert snapshot is not None
        assert [c.outcome for c in slow.commits[swaps:]] == ["ok"]  # one swap, answered too late
        assert [s.snapshot_id for s in cat.load_table("db.t").snapshots()] == [snapshot.snapshot_id]
        assert [r["id"] for r in cat.load_table("db.t").scan().to_arrow().to_pylist()] == [1]
        cat.close()


@pytest.mark.s3
def test_vended_credentials_end_to_end(tmp_path: Path, seaweedfs_server: Any) -> None:
    """A server started with ``vend_credentials`` hands its S3 settings to clients that ask: a
    client that knows nothing of the store creates, writes and reads a table on it."""
    warehouse = seaweedfs_server.warehouse(f"vend-{uuid.uuid4().hex[:8]}")
    backing = SqlCatalog(
        "v",
        uri=f"sqlite:///{tmp_path / 'v.db'}",
        warehouse=warehouse,
        **seaweedfs_server.file_io_properties(),
    )
    with RestServer(backing, tokens=["tok"], vend_credentials=True) as srv:
        with RestCatalog("client", uri=srv.url, token="tok") as cat:
            assert not any(k.startswith("s3.") for k in cat.properties)
            cat.create_namespace("db")
            table = cat.create_table("db.t", SCHEMA)
            assert table.io.properties["s3.secret-access-key"] == seaweedfs_server.secret_access_key
            table.append(data(1, 2))
            cat.load_table("db.t").delete("id = 1")
            assert [r["id"] for r in cat.load_table("db.t").scan().to_arrow().to_pylist()] == [2]
        # a client that does not ask for vended credentials gets none
        opt_out = {"header.X-Iceberg-Access-Delegation": "remote-signing"}
        with RestCatalog("client", uri=srv.url, token="tok", **opt_out) as cat:
            assert "s3.secret-access-key" not in cat.load_table("db.t").io.properties
    backing.close()


def test_vended_credentials_reach_the_file_io() -> None:
    result: dict[str, Any] = {
        "config": {"s3.endpoint": "http://127.0.0.1:1", "s3.access-key-id": "config"},
        "storage-credentials": [
            {"prefix": "s3://bucket/", "config": {"s3.access-key-id": "bucket"}},
            {"prefix": "s3://bucket/wh/db/t", "config": {"s3.access-key-id": "table"}},
            {"prefix": "s3://other/", "config": {"s3.access-key-id": "other"}},
        ],
    }
    config = _storage_config(result, "s3://bucket/wh/db/t")
    assert config == {"s3.endpoint": "http://127.0.0.1:1", "s3.access-key-id": "table"}
    assert _storage_config(result, "s3://bucket/x")["s3.access-key-id"] == "bucket"
    assert _storage_config({"config": {"a": "b"}}, "s3://z/t") == {"a": "b"}


def test_sigv4_signs_every_request(tmp_path: Path) -> None:
    """Against a fake server that records what it got and checks the signature with botocore."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    seen: list[dict[str, Any]] = []
    app = FastAPI()

    @app.api_route("/{path:path}", methods=["GET", "POST"])
    async def anything(request: Request, path: str) -> JSONResponse:
        body = await request.body()
        headers = dict(request.headers)
        signed = [
            h.strip() for h in headers["authorization"].split("SignedHeaders=")[1].split(",")[0].split(";")
        ]
        check = AWSRequest(
            method=request.method,
            url=str(request.url),
            data=body,
            headers={h: headers[h] for h in signed if h != "x-amz-date"},
        )
        check.context["timestamp"] = headers["x-amz-date"]
        signer = SigV4Auth(Credentials("AKID", "SECRET"), "s3tables", "eu-west-1")
        check.headers["X-Amz-Date"] = headers["x-amz-date"]
        expected = signer.signature(signer.string_to_sign(check, signer.canonical_request(check)), check)
        seen.append({"path": path, "headers": headers, "valid": headers["authorization"].endswith(expected)})
        if path == "v1/config":
            return JSONResponse({"defaults": {}, "overrides": {}})
        return JSONResponse({"namespace": ["db"], "properties": {}})

    with FakeServer(app) as fake:
        cat = RestCatalog(
            "s",
            uri=fake.url,
            token="bearer-too",
            **{
                "rest.sigv4-enabled": "true",
                "rest.signing-name": "s3tables",
                "rest.signing-region": "eu-west-1",
                "rest.access-key-id": "AKID",
                "rest.secret-access-key": "SECRET",
            },
        )
        cat.create_namespace("db", {"k": "v"})
        cat.close()
    assert [s["path"] for s in seen] == ["v1/config", "v1/namespaces"]
    for s in seen:
        auth = s["headers"]["authorization"]
        assert (
            auth.startswith("AWS4-HMAC-SHA256 Credential=AKID/")
            and "/eu-west-1/s3tables/aws4_request" in auth
        )
        assert s["headers"]["original-authorization"] == "Bearer bearer-too"
        assert s["valid"], s
