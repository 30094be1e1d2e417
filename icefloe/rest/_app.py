"""The Iceberg REST catalog API over any icefloe `Catalog`, as a FastAPI application.

Routes follow ``open-api/rest-catalog-open-api.yaml`` of the Iceberg project (no prefix; the
namespace separator is the unit separator ``%1F``)::

    GET  /v1/config                                    POST /v1/oauth/tokens
    GET|POST /v1/namespaces                            GET|HEAD|DELETE /v1/namespaces/{ns}
    POST /v1/namespaces/{ns}/properties                GET|POST /v1/namespaces/{ns}/tables
    POST /v1/namespaces/{ns}/register                  POST /v1/tables/rename
    GET|POST|DELETE|HEAD /v1/namespaces/{ns}/tables/{t}
    GET  /v1/namespaces/{ns}/tables/{t}/credentials    POST /v1/namespaces/{ns}/tables/{t}/metrics
    POST /v1/transactions/commit

A commit is checked on the server: the catalog validates the requirements against the current
metadata, applies the updates and swaps the pointer (`Catalog.commit_table`); the client never
writes table metadata files itself. Request bodies are validated by their models and by the
same parsers that read metadata files; anything invalid is a 400 ``BadRequestException``. Every
location a request names must lie inside the warehouse or an ``--allow-location`` prefix
(`icefloe.rest._locations`), or the request is refused with a 403 before any file is touched.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any
from urllib.parse import parse_qsl

from fastapi import APIRouter, Depends, FastAPI, Header, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from icefloe.catalog import Catalog, Identifier, Namespace, TableCommit, to_identifier, to_namespace
from icefloe.catalog._files import read_metadata_file
from icefloe.errors import CorruptFileError, IcefloeError, NoSuchTableError, ValidationError
from icefloe.io import load_file_io
from icefloe.rest._auth import Authenticator, OAuthError
from icefloe.rest._errors import RestError, bad_request, error_body, to_rest_error
from icefloe.rest._locations import NAMESPACE_LOCATION, PATH_PROPERTIES, LocationPolicy
from icefloe.spec.partition import UNPARTITIONED_SPEC, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.sort_order import SortOrder
from icefloe.spec.updates import requirement_from_json, update_from_json

__all__ = ["ENDPOINTS", "create_app"]

_log = logging.getLogger("icefloe.rest")

SEPARATOR = "\x1f"
# the routes whose failure may leave a commit's outcome unknown
_COMMIT_PATH = re.compile(r"^/v1/(namespaces/[^/]+/tables/[^/]+|transactions/commit)$")
MAX_BODY_BYTES = 32 * 1024 * 1024
VENDED_CREDENTIALS = "vended-credentials"
# what the server answers for; clients read this list from /v1/config
ENDPOINTS = (
    "GET /v1/{prefix}/namespaces",
    "POST /v1/{prefix}/namespaces",
    "GET /v1/{prefix}/namespaces/{namespace}",
    "HEAD /v1/{prefix}/namespaces/{namespace}",
    "DELETE /v1/{prefix}/namespaces/{namespace}",
    "POST /v1/{prefix}/namespaces/{namespace}/properties",
    "GET /v1/{prefix}/namespaces/{namespace}/tables",
    "POST /v1/{prefix}/namespaces/{namespace}/tables",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials",
    "POST /v1/{prefix}/namespaces/{namespace}/register",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics",
    "POST /v1/{prefix}/tables/rename",
    "POST /v1/{prefix}/transactions/commit",
)
# catalog properties a server may hand to clients that ask for vended credentials
_VENDABLE_PREFIXES = ("s3.", "client.", "gcs.", "adls.")
_SECRET_SUFFIXES = ("secret-access-key", "session-token", "token", "key", "password", "secret")


# --------------------------------------------------------------------------------- request models
class _Model(BaseModel):
    # unknown fields are ignored (newer clients may send more); known ones must have their types
    model_config = ConfigDict(populate_by_name=True, extra="ignore")


class TableIdentifierModel(_Model):
    namespace: list[str]
    name: str


class CreateNamespaceRequest(_Model):
    namespace: list[str]
    properties: dict[str, str] = Field(default_factory=dict)


class UpdateNamespacePropertiesRequest(_Model):
    removals: list[str] = Field(default_factory=list)
    updates: dict[str, str] = Field(default_factory=dict)


class CreateTableRequest(_Model):
    name: str
    location: str | None = None
    table_schema: dict[str, Any] = Field(alias="schema")
    partition_spec: dict[str, Any] | None = Field(default=None, alias="partition-spec")
    write_order: dict[str, Any] | None = Field(default=None, alias="write-order")
    stage_create: bool = Field(default=False, alias="stage-create")
    properties: dict[str, str] = Field(default_factory=dict)


class RegisterTableRequest(_Model):
    name: str
    metadata_location: str = Field(alias="metadata-location")
    overwrite: bool = False


class CommitTableRequest(_Model):
    identifier: TableIdentifierModel | None = None
    requirements: list[dict[str, Any]]
    updates: list[dict[str, Any]]


class CommitTransactionRequest(_Model):
    table_changes: list[CommitTableRequest] = Field(alias="table-changes")


class RenameTableRequest(_Model):
    source: TableIdentifierModel
    destination: TableIdentifierModel


class ReportMetricsRequest(_Model):
    report_type: str = Field(alias="report-type")
    table_name: str | None = Field(default=None, alias="table-name")
    snapshot_id: int | None = Field(default=None, alias="snapshot-id")


# --------------------------------------------------------------------------------- helpers
def _namespace(text: str) -> Namespace:
    if not text:
        raise ValidationError("empty namespace in the request path")
    return to_namespace(tuple(text.split(SEPARATOR)))


def _ident(namespace: str, table: str) -> Identifier:
    return to_identifier((*_namespace(namespace), table))


def _model_ident(model: TableIdentifierModel) -> Identifier:
    return to_identifier((*model.namespace, model.name))


def _etag(metadata_location: str | None, mode: str) -> str:
    digest = hashlib.sha256(f"{metadata_location}\0{mode}".encode()).hexdigest()[:32]
    return f'"{digest}"'


def _etag_matches(header: str | None, etag: str) -> bool:
    if not header:
        return False
    for candidate in header.split(","):
        value = candidate.strip()
        if value.startswith("W/"):
            value = value[2:]
        if value == etag or value == "*":
            return True
    return False


def _paginate(
    items: list[Any], page_token: str | None, page_size: int | None
) -> tuple[list[Any], str | None]:
    """Offset pagination, only when the client sends ``pageToken`` (possibly empty)."""
    if page_token is None:
        return items, None
    try:
        start = int(page_token) if page_token else 0
    except ValueError:
        raise ValidationError(f"invalid pageToken {page_token!r}") from None
    if start < 0:
        raise ValidationError(f"invalid pageToken {page_token!r}")
    if page_size is None:
        return items[start:], None
    end = start + page_size
    return items[start:end], (str(end) if end < len(items) else None)


class _Server:
    """The state routes share: the catalog, who may call, where tables may go, and what is
    vended."""

    def __init__(
        self,
        catalog: Catalog,
        auth: Authenticator,
        vend_credentials: bool,
        allowed_locations: Sequence[str] = (),
    ) -> None:
        self.catalog = catalog
        self.auth = auth
        self.vend_credentials = vend_credentials
        warehouse = catalog.properties.get("warehouse")
        self.locations = LocationPolicy([*([warehouse] if warehouse else []), *allowed_locations])
        # a purge deletes what the table's metadata references: only inside the allowed locations
        catalog.purge_filter = self.locations.allows

    def table_config(
        self, location: str, delegation: str | None
    ) -> tuple[dict[str, str], list[dict[str, Any]]]:
        """The ``config`` and ``storage-credentials`` of a LoadTableResult: the server's object
        store settings, when it vends them and the client asked for them."""
        asked = delegation is not None and VENDED_CREDENTIALS in [d.strip() for d in delegation.split(",")]
        if not (self.vend_credentials and asked) or "://" not in location:
            return {}, []
        if location.split("://", 1)[0].lower() in ("file", ""):
            return {}, []
        config = {k: v for k, v in self.catalog.properties.items() if k.startswith(_VENDABLE_PREFIXES)}
        if not config:
            return {}, []
        return config, [{"prefix": location, "config": config}]

    def load_result(
        self,
        metadata_json: dict[str, Any],
        metadata_location: str | None,
        delegation: str | None = None,
    ) -> dict[str, Any]:
        config, credentials = self.table_config(str(metadata_json.get("location", "")), delegation)
        out: dict[str, Any] = {"metadata-location": metadata_location, "metadata": metadata_json}
        if config:
            out["config"] = config
        if credentials:
            out["storage-credentials"] = credentials
        return out


def _refs_only(metadata_json: dict[str, Any]) -> dict[str, Any]:
    """The metadata with only the snapshots that a branch or tag points at (snapshots=refs)."""
    referenced = {ref.get("snapshot-id") for ref in (metadata_json.get("refs") or {}).values()}
    out = dict(metadata_json)
    out["snapshots"] = [s for s in metadata_json.get("snapshots", []) if s.get("snapshot-id") in referenced]
    return out


# --------------------------------------------------------------------------------- the app
def create_app(
    catalog: Catalog,
    *,
    tokens: tuple[str, ...] | list[str] = (),
    credentials: Mapping[str, str] | None = None,
    allow_anonymous: bool = False,
    token_lifetime_s: int = 3600,
    vend_credentials: bool = False,
    allowed_locations: Sequence[str] = (),
) -> FastAPI:
    """A FastAPI application serving ``catalog`` over the Iceberg REST protocol.

    ``tokens`` are accepted bearer tokens; ``credentials`` maps OAuth2 client ids to secrets for
    the client-credentials flow at ``/v1/oauth/tokens``; ``allow_anonymous`` accepts requests
    without a token (the caller is responsible for binding to loopback only: see
    `icefloe.rest.serve`). ``vend_credentials`` hands the catalog's object-store properties
    (``s3.*``) to clients that send ``X-Iceberg-Access-Delegation: vended-credentials``.
    Tables may lie inside the catalog's ``warehouse`` and the ``allowed_locations`` prefixes only
    (`ConfigError` for a prefix that is not a location).
    """
    auth = Authenticator(
        tuple(tokens), credentials, allow_anonymous=allow_anonymous, token_lifetime_s=token_lifetime_s
    )
    server = _Server(catalog, auth, vend_credentials, allowed_locations)
    app = FastAPI(
        title="icefloe Iceberg REST catalog",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    app.state.icefloe = server
    _install_error_handlers(app)

    @app.middleware("http")
    async def limit_body(request: Request, call_next: Callable[[Request], Any]) -> Response:
        length = request.headers.get("content-length")
        if length is not None:
            try:
                too_big = int(length) > MAX_BODY_BYTES
            except ValueError:
                return _error_response(RestError(400, "BadRequestException", "invalid Content-Length"))
            if too_big:
                return _error_response(
                    RestError(413, "BadRequestException", f"request body over {MAX_BODY_BYTES} bytes")
                )
        response: Response = await call_next(request)
        return response

    @app.middleware("http")
    async def refuse_encoded_slash(request: Request, call_next: Callable[[Request], Any]) -> Response:
        # The router matches the decoded path, so a name holding an encoded '/' would otherwise be
        # answered "no such route"; such a name is invalid (to_identifier), say so like for others.
        raw_path = request.scope.get("raw_path") or b""
        if b"%2f" in raw_path.lower():
            return _error_response(
                RestError(
                    400,
                    "BadRequestException",
                    "invalid name in the request path: it contains the path separator '/' (%2F); "
                    "namespace and table names cannot contain '/' or '\\'",
                )
            )
        response: Response = await call_next(request)
        return response

    @app.post("/v1/oauth/tokens")
    async def oauth_tokens(request: Request) -> Response:
        try:
            content_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
            if content_type != "application/x-www-form-urlencoded":
                raise ValueError(content_type)
            raw = (await request.body()).decode("utf-8")
            fields = dict(parse_qsl(raw, keep_blank_values=True, strict_parsing=bool(raw)))
            body = auth.token(fields, request.headers.get("authorization"))
        except OAuthError as e:
            return JSONResponse({"error": e.error, "error_description": e.description}, status_code=e.status)
        except (ValueError, UnicodeDecodeError):
            return JSONResponse(
                {
                    "error": "invalid_request",
                    "error_description": "the body must be application/x-www-form-urlencoded",
                },
                status_code=400,
            )
        return JSONResponse(body, headers={"Cache-Control": "no-store"})

    def authenticate(authorization: Annotated[str | None, Header()] = None) -> str:
        return auth.check(authorization)

    router = APIRouter(prefix="/v1", dependencies=[Depends(authenticate)])
    _add_routes(router, server)
    app.include_router(router)
    return app


def _error_response(e: RestError) -> JSONResponse:
    return JSONResponse(
        error_body(e.status, e.type, e.message), status_code=e.status, headers=dict(e.headers)
    )


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RestError)
    async def rest_error(_request: Request, e: RestError) -> JSONResponse:
        return _error_response(e)

    @app.exception_handler(IcefloeError)
    async def icefloe_error(request: Request, e: IcefloeError) -> JSONResponse:
        err = to_rest_error(e)
        if err.status >= 500:
            _log.warning("%s %s failed: %s", request.method, request.url.path, e)
        return _error_response(err)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_request: Request, e: RequestValidationError) -> JSONResponse:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err.get('loc', ()))}: {err.get('msg')}" for err in e.errors()[:5]
        )
        return _error_response(RestError(400, "BadRequestException", f"malformed request: {problems}"))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_request: Request, e: StarletteHTTPException) -> JSONResponse:
        kind = {404: "NoSuchRouteException", 405: "UnsupportedOperationException"}.get(
            e.status_code, "BadRequestException" if e.status_code < 500 else "InternalServerError"
        )
        message = "no such route" if e.status_code == 404 else str(e.detail)
        return _error_response(RestError(e.status_code, kind, message))

    @app.exception_handler(Exception)
    async def unexpected(request: Request, e: Exception) -> JSONResponse:
        _log.error("%s %s failed unexpectedly", request.method, request.url.path, exc_info=e)
        status, kind = 500, "InternalServerError"
        if request.method == "POST" and _COMMIT_PATH.match(request.url.path):
            # a commit whose outcome the server cannot vouch for
            kind = "CommitStateUnknownException"
        return _error_response(RestError(status, kind, "internal server error; see the server log"))


def _add_routes(router: APIRouter, server: _Server) -> None:
    catalog = server.catalog
    locations = server.locations

    # ------------------------------------------------------------------ config
    @router.get("/config")
    def get_config(warehouse: str | None = None) -> dict[str, Any]:
        if warehouse and warehouse not in (catalog.name, catalog.properties.get("warehouse")):
            raise RestError(
                404,
                "NoSuchWarehouseException",
                f"this server serves catalog {catalog.name!r}; warehouse {warehouse!r} is unknown",
            )
        return {"defaults": {}, "overrides": {}, "endpoints": list(ENDPOINTS)}

    # ------------------------------------------------------------------ namespaces
    @router.get("/namespaces")
    def list_namespaces(
        parent: str | None = None,
        page_token: Annotated[str | None, Query(alias="pageToken")] = None,
        page_size: Annotated[int | None, Query(alias="pageSize", ge=1)] = None,
    ) -> dict[str, Any]:
        ns = _namespace(parent) if parent else ()
        items = [list(n) for n in catalog.list_namespaces(ns)]
        page, next_token = _paginate(items, page_token, page_size)
        out: dict[str, Any] = {"namespaces": page}
        if page_token is not None:
            out["next-page-token"] = next_token
        return out

    @router.post("/namespaces")
    def create_namespace(body: CreateNamespaceRequest) -> dict[str, Any]:
        ns = to_namespace(tuple(body.namespace))
        if not ns:
            raise ValidationError("cannot create the root namespace")
        locations.check_properties(body.properties, (NAMESPACE_LOCATION,), "the namespace")
        catalog.create_namespace(ns, body.properties)
        return {"namespace": list(ns), "properties": catalog.load_namespace_properties(ns)}

    @router.get("/namespaces/{namespace}")
    def load_namespace(namespace: str) -> dict[str, Any]:
        ns = _namespace(namespace)
        return {"namespace": list(ns), "properties": catalog.load_namespace_properties(ns)}

    @router.head("/namespaces/{namespace}")
    def namespace_exists(namespace: str) -> Response:
        return Response(status_code=204 if catalog.namespace_exists(_namespace(namespace)) else 404)

    @router.delete("/namespaces/{namespace}")
    def drop_namespace(namespace: str) -> Response:
        catalog.drop_namespace(_namespace(namespace))
        return Response(status_code=204)

    @router.post("/namespaces/{namespace}/properties")
    def update_properties(namespace: str, body: UpdateNamespacePropertiesRequest) -> Any:
        ns = _namespace(namespace)
        overlap = sorted(set(body.removals) & set(body.updates))
        if overlap:
            raise RestError(422, "UnprocessableEntityException", f"keys both removed and updated: {overlap}")
        locations.check_properties(body.updates, (NAMESPACE_LOCATION,), "the namespace")
        summary = catalog.update_namespace_properties(ns, body.removals, body.updates)
        return {"updated": summary.updated, "removed": summary.removed, "missing": summary.missing}

    # ------------------------------------------------------------------ tables
    @router.get("/namespaces/{namespace}/tables")
    def list_tables(
        namespace: str,
        page_token: Annotated[str | None, Query(alias="pageToken")] = None,
        page_size: Annotated[int | None, Query(alias="pageSize", ge=1)] = None,
    ) -> dict[str, Any]:
        items = [
            {"namespace": list(ident[:-1]), "name": ident[-1]}
            for ident in catalog.list_tables(_namespace(namespace))
        ]
        page, next_token = _paginate(items, page_token, page_size)
        out: dict[str, Any] = {"identifiers": page}
        if page_token is not None:
            out["next-page-token"] = next_token
        return out

    @router.post("/namespaces/{namespace}/tables")
    def create_table(
        namespace: str,
        body: CreateTableRequest,
        delegation: Annotated[str | None, Header(alias="X-Iceberg-Access-Delegation")] = None,
    ) -> Response:
        ident = to_identifier((*_namespace(namespace), body.name))
        if body.location:
            locations.check(body.location, "the table location")
        locations.check_properties(body.properties, PATH_PROPERTIES, "the table")
        schema = _parse(Schema.from_json, body.table_schema, "schema")
        spec = (
            _parse(PartitionSpec.from_json, body.partition_spec, "partition-spec")
            if body.partition_spec
            else UNPARTITIONED_SPEC
        )
        order = _parse(SortOrder.from_json, body.write_order, "write-order") if body.write_order else None
        if body.stage_create or not body.location:
            # the metadata create_table would write, without writing it: where it would go
            metadata = catalog.stage_create_table(ident, schema, spec, order, body.location, body.properties)
            locations.check(metadata.location, "the table's default location")
            if body.stage_create:
                return _json(server.load_result(metadata.to_json(), None, delegation))
        table = catalog.create_table(ident, schema, spec, order, body.location, body.properties)
        result = server.load_result(table.metadata.to_json(), table.metadata_location, delegation)
        return _json(result, etag=_etag(table.metadata_location, "all"))

    @router.post("/namespaces/{namespace}/register")
    def register_table(
        namespace: str,
        body: RegisterTableRequest,
        delegation: Annotated[str | None, Header(alias="X-Iceberg-Access-Delegation")] = None,
    ) -> Response:
        ident = to_identifier((*_namespace(namespace), body.name))
        # before anything reads the file: the client could name any file the server may read
        locations.check(body.metadata_location, "the metadata file to register")
        try:
            # a metadata file inside the allowed locations can still send the table elsewhere;
            # the catalog registers the metadata read (once) for this check
            metadata = read_metadata_file(
                load_file_io(catalog.properties, body.metadata_location), body.metadata_location
            )
            locations.check_metadata(metadata, "the registered table's")
            table = catalog._register(ident, body.metadata_location, body.overwrite, metadata)
        except CorruptFileError as e:
            raise bad_request(e) from None  # the client named the file: its problem, not ours
        result = server.load_result(table.metadata.to_json(), table.metadata_location, delegation)
        return _json(result, etag=_etag(table.metadata_location, "all"))

    @router.get("/namespaces/{namespace}/tables/{table}")
    def load_table(
        namespace: str,
        table: str,
        snapshots: str | None = None,
        if_none_match: Annotated[str | None, Header(alias="If-None-Match")] = None,
        delegation: Annotated[str | None, Header(alias="X-Iceberg-Access-Delegation")] = None,
    ) -> Response:
        mode = snapshots or "all"
        if mode not in ("all", "refs"):
            raise ValidationError(f"snapshots must be 'all' or 'refs', not {snapshots!r}")
        loaded = catalog.load_table(_ident(namespace, table))
        etag = _etag(loaded.metadata_location, mode)
        if _etag_matches(if_none_match, etag):
            return Response(status_code=304, headers={"ETag": etag})
        metadata_json = loaded.metadata.to_json()
        if mode == "refs":
            metadata_json = _refs_only(metadata_json)
        return _json(server.load_result(metadata_json, loaded.metadata_location, delegation), etag=etag)

    @router.head("/namespaces/{namespace}/tables/{table}")
    def table_exists(namespace: str, table: str) -> Response:
        return Response(status_code=204 if catalog.table_exists(_ident(namespace, table)) else 404)

    @router.post("/namespaces/{namespace}/tables/{table}")
    def commit_table(namespace: str, table: str, body: CommitTableRequest) -> Response:
        ident = _ident(namespace, table)
        if body.identifier is not None and _model_ident(body.identifier) != ident:
            raise ValidationError(
                f"the body names table {'.'.join(_model_ident(body.identifier))!r}, "
                f"the path {'.'.join(ident)!r}"
            )
        _log.debug("commit to %s: requirements %s updates %s", ident, body.requirements, body.updates)
        requirements = [requirement_from_json(r) for r in body.requirements]
        updates = [update_from_json(u) for u in body.updates]
        locations.check_updates(updates, "the commit")
        metadata, location = catalog.commit_table(ident, requirements, updates)
        return _json(
            {"metadata-location": location, "metadata": metadata.to_json()}, etag=_etag(location, "all")
        )

    @router.delete("/namespaces/{namespace}/tables/{table}")
    def drop_table(
        namespace: str,
        table: str,
        purge: Annotated[bool, Query(alias="purgeRequested")] = False,
    ) -> Response:
        catalog.drop_table(_ident(namespace, table), purge=purge)
        return Response(status_code=204)

    @router.get("/namespaces/{namespace}/tables/{table}/credentials")
    def load_credentials(namespace: str, table: str) -> dict[str, Any]:
        loaded = catalog.load_table(_ident(namespace, table))
        _, credentials = server.table_config(loaded.location, VENDED_CREDENTIALS)
        return {"storage-credentials": credentials}

    @router.post("/namespaces/{namespace}/tables/{table}/metrics")
    def report_metrics(namespace: str, table: str, body: ReportMetricsRequest) -> Response:
        ident = _ident(namespace, table)
        if body.report_type not in ("scan-report", "commit-report"):
            raise ValidationError(f"unknown report-type {body.report_type!r}")
        if not catalog.table_exists(ident):
            raise NoSuchTableError(f"table {'.'.join(ident)!r} does not exist", identifier=ident)
        _log.debug("metrics report %s for %s (snapshot %s)", body.report_type, ident, body.snapshot_id)
        return Response(status_code=204)

    @router.post("/tables/rename")
    def rename_table(body: RenameTableRequest) -> Response:
        catalog.rename_table(_model_ident(body.source), _model_ident(body.destination))
        return Response(status_code=204)

    @router.post("/transactions/commit")
    def commit_transaction(body: CommitTransactionRequest) -> Response:
        commits: list[TableCommit] = []
        for change in body.table_changes:
            if change.identifier is None:
                raise ValidationError("every table change of a transaction needs an 'identifier'")
            ident = _model_ident(change.identifier)
            updates = [update_from_json(u) for u in change.updates]
            locations.check_updates(updates, f"the change to {'.'.join(ident)!r}")
            commits.append(
                TableCommit(ident, [requirement_from_json(r) for r in change.requirements], updates)
            )
        catalog.commit_tables(commits)
        return Response(status_code=204)


def _parse(parse: Callable[[Any], Any], obj: Any, what: str) -> Any:
    try:
        return parse(obj)
    except IcefloeError as e:
        raise ValidationError(f"invalid {what}: {e.message}") from None
    except (TypeError, ValueError, KeyError, AttributeError) as e:
        raise ValidationError(f"invalid {what}: {e}") from None


def _json(body: Any, *, etag: str | None = None) -> Response:
    headers = {"ETag": etag} if etag else None
    return Response(
        json.dumps(body, separators=(",", ":"), ensure_ascii=False),
        media_type="application/json",
        headers=headers,
    )
