"""A client of the Iceberg REST catalog protocol (``type: rest``).

Works with any server that implements ``open-api/rest-catalog-open-api.yaml`` of the Iceberg
project: icefloe's own (``python -m icefloe.rest``), Iceberg Java's, SeaweedFS's built-in one
(with ``rest.sigv4-enabled``), Polaris, Lakekeeper, ... The server owns the table pointers and
writes the table metadata files; the client writes data files, manifests and manifest lists and
sends each commit as requirements plus updates::

    load_table ──GET (If-None-Match: etag)──▶ metadata + table config (+ vended credentials)
    commit     ──POST requirements+updates──▶ 200 new metadata | 409 CommitFailedError (retry)
                                              | 5xx / timeout CommitStateUnknownError

Configuration: ``uri`` (required), ``warehouse`` (sent to ``/v1/config``), ``prefix`` (usually
from the server), authentication and signing properties (see `icefloe.catalog._rest_http`).
The server's ``/v1/config`` answer is merged as defaults < client properties < overrides; its
``endpoints`` list says which routes may be called.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from icefloe.catalog._base import (
    Catalog,
    Identifier,
    IdentifierLike,
    Namespace,
    NamespaceLike,
    PropertiesUpdateSummary,
    TableCommit,
    to_identifier,
    to_namespace,
)
from icefloe.catalog._purge import PurgeReport
from icefloe.errors import ConfigError, IcefloeError, UnsupportedFeatureError, ValidationError
from icefloe.io import FileIO, load_file_io
from icefloe.spec.schema import Schema

if TYPE_CHECKING:
    import httpx
    import pyarrow as pa

    from icefloe.spec.partition import PartitionSpec
    from icefloe.spec.sort_order import SortOrder
    from icefloe.spec.table_metadata import TableMetadata
    from icefloe.spec.updates import MetadataUpdate, TableRequirement
    from icefloe.table import Table

__all__ = ["RestCatalog"]

URI = "uri"
PREFIX = "prefix"
WAREHOUSE = "warehouse"
ACCESS_DELEGATION = "header.X-Iceberg-Access-Delegation"
SEPARATOR = "\x1f"

# what a server supports when its /v1/config names no endpoints (the spec's list)
DEFAULT_ENDPOINTS = frozenset(
    {
        "GET /v1/{prefix}/namespaces",
        "POST /v1/{prefix}/namespaces",
        "GET /v1/{prefix}/namespaces/{namespace}",
        "DELETE /v1/{prefix}/namespaces/{namespace}",
        "POST /v1/{prefix}/namespaces/{namespace}/properties",
        "GET /v1/{prefix}/namespaces/{namespace}/tables",
        "POST /v1/{prefix}/namespaces/{namespace}/tables",
        "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
        "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
        "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}",
        "POST /v1/{prefix}/namespaces/{namespace}/register",
        "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics",
        "POST /v1/{prefix}/tables/rename",
        "POST /v1/{prefix}/transactions/commit",
    }
)
NAMESPACES = "/v1/{prefix}/namespaces"
NAMESPACE = "/v1/{prefix}/namespaces/{namespace}"
NAMESPACE_PROPERTIES = "/v1/{prefix}/namespaces/{namespace}/properties"
TABLES = "/v1/{prefix}/namespaces/{namespace}/tables"
TABLE = "/v1/{prefix}/namespaces/{namespace}/tables/{table}"
REGISTER = "/v1/{prefix}/namespaces/{namespace}/register"
RENAME = "/v1/{prefix}/tables/rename"
TRANSACTION = "/v1/{prefix}/transactions/commit"


@dataclass(frozen=True)
class _Loaded:
    """A LoadTableResult, kept per table with its ETag."""

    metadata: TableMetadata
    metadata_location: str | None
    config: dict[str, str]
    etag: str | None


def _dotted(levels: Sequence[str]) -> str:
    return ".".join(levels)


def _storage_config(result: Mapping[str, Any], location: str) -> dict[str, str]:
    """Table config with vended credentials applied: the ``storage-credentials`` entry whose
    prefix is the longest one ``location`` starts with wins over ``config``."""
    config = {str(k): str(v) for k, v in (result.get("config") or {}).items()}
    best: tuple[int, dict[str, str]] | None = None
    for credential in result.get("storage-credentials") or []:
        prefix = str(credential.get("prefix", ""))
        if location.startswith(prefix) and (best is None or len(prefix) > best[0]):
            best = (len(prefix), {str(k): str(v) for k, v in (credential.get("config") or {}).items()})
    if best is not None:
        config.update(best[1])
    return config


class RestCatalog(Catalog):
    """An Iceberg REST catalog client. Properties: ``uri``, ``warehouse``, ``token`` or
    ``credential`` (+ ``oauth2-server-uri``, ``scope``), ``rest.sigv4-enabled`` (+
    ``rest.signing-name``, ``rest.signing-region``), ``header.<Name>``, FileIO properties."""

    def __init__(self, name: str, **properties: str) -> None:
        super().__init__(name, **properties)
        try:
            import httpx  # noqa: F401
        except ImportError as e:
            raise ConfigError("the REST catalog needs httpx", hint="pip install 'icefloe[rest]'") from e
        from icefloe.catalog._rest_http import CatalogAuth, make_client

        uri = self.properties.get(URI)
        if not uri or not uri.startswith(("http://", "https://")):
            raise ConfigError(
                f"REST catalog {name!r} needs an http(s) 'uri' property, got {uri!r}",
                hint="for example load_catalog('prod', type='rest', uri='http://127.0.0.1:8181', "
                "token='...')",
            )
        client_props = dict(self.properties)
        client_props.setdefault(ACCESS_DELEGATION, "vended-credentials")
        self._base = uri.rstrip("/")
        self._auth = CatalogAuth(self._base, client_props)
        self._client = make_client(client_props, self._auth)
        self._cache_lock = threading.Lock()
        self._loaded: dict[Identifier, _Loaded] = {}
        self._table_ios: dict[tuple[tuple[str, str], ...], FileIO] = {}
        try:
            config = self._configure(client_props)
        except BaseException:
            self.close()
            raise
        merged = {**config.get("defaults", {}), **client_props, **config.get("overrides", {})}
        self.properties = {str(k): str(v) for k, v in merged.items()}
        if self.properties.get(URI, uri).rstrip("/") != self._base:
            self._base = self.properties[URI].rstrip("/")
        self._prefix = self.properties.get(PREFIX, "").strip("/")
        endpoints = config.get("endpoints")
        self.endpoints: frozenset[str] = frozenset(endpoints) if endpoints else DEFAULT_ENDPOINTS

    def close(self) -> None:
        self._client.close()
        self._auth.close()

    # ------------------------------------------------------------------ HTTP
    def _configure(self, props: Mapping[str, str]) -> dict[str, Any]:
        from icefloe.catalog._rest_http import RestCall

        params = {WAREHOUSE: props[WAREHOUSE]} if props.get(WAREHOUSE) else None
        body = self._send(
            "GET", f"{self._base}/v1/config", RestCall("loading the catalog configuration"), params=params
        )
        if not isinstance(body, dict):
            raise ConfigError(f"the REST catalog at {self._base} sent an invalid configuration: {body!r}")
        return body

    def _send(
        self,
        method: str,
        url: str,
        call: Any,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
        ok: tuple[int, ...] = (200, 204),
        response_out: list[httpx.Response] | None = None,
    ) -> Any:
        import httpx

        from icefloe.catalog._rest_http import raise_for_response, raise_for_transport

        try:
            response = self._client.request(method, url, params=params, json=json, headers=headers)
        except IcefloeError:
            raise
        except httpx.HTTPError as e:
            raise_for_transport(e, url, call)
        if response_out is not None:
            response_out.append(response)
        if response.status_code not in ok:
            raise_for_response(response, call)
        if response.status_code in (204, 304) or not response.content:
            return None
        try:
            return response.json()
        except ValueError:
            raise IcefloeError(
                f"{call.what}: the REST catalog sent a response that is not JSON ({response.status_code})"
            ) from None

    def _route(self, template: str, *, namespace: Namespace | None = None, table: str | None = None) -> str:
        """The URL of an endpoint; `UnsupportedFeatureError` when the server does not declare it."""
        path = template
        if self._prefix:
            path = path.replace("{prefix}", quote(self._prefix, safe="/"))
        else:
            path = path.replace("/{prefix}", "")
        if namespace is not None:
            path = path.replace("{namespace}", quote(SEPARATOR.join(namespace), safe=""))
        if table is not None:
            path = path.replace("{table}", quote(table, safe=""))
        return self._base + path

    def _supports(self, method: str, template: str) -> bool:
        return f"{method} {template}" in self.endpoints

    def _require(self, method: str, template: str, what: str) -> None:
        if not self._supports(method, template):
            raise UnsupportedFeatureError(
                f"the REST catalog at {self._base} does not support {what} ({method} {template})",
                hint="the server did not list this endpoint in its /v1/config answer",
            )

    # ------------------------------------------------------------------ namespaces
    def create_namespace(self, namespace: NamespaceLike, properties: Mapping[str, str] | None = None) -> None:
        from icefloe.catalog._rest_http import RestCall

        ns = to_namespace(namespace)
        if not ns:
            raise ValidationError("cannot create the root namespace", hint="name the namespace, e.g. 'db'")
        self._require("POST", NAMESPACES, "creating namespaces")
        body = {"namespace": list(ns), "properties": {str(k): str(v) for k, v in (properties or {}).items()}}
        call = RestCall(f"creating namespace {_dotted(ns)!r}", namespace=ns)
        self._send("POST", self._route(NAMESPACES), call, json=body)

    def list_namespaces(self, parent: NamespaceLike = ()) -> list[Namespace]:
        from icefloe.catalog._rest_http import RestCall

        ns = to_namespace(parent)
        self._require("GET", NAMESPACES, "listing namespaces")
        params: dict[str, str] = {"parent": SEPARATOR.join(ns)} if ns else {}
        call = RestCall("listing namespaces", namespace=ns or None)
        out: list[Namespace] = []
        for page in self._pages(self._route(NAMESPACES), call, params):
            out += [tuple(str(level) for level in n) for n in page.get("namespaces") or []]
        return sorted(out)

    def _pages(self, url: str, call: Any, params: dict[str, str]) -> Iterable[dict[str, Any]]:
        token: str | None = None
        seen: set[str] = set()
        while True:
            query = dict(params)
            if token is not None:
                query["pageToken"] = token
            page = self._send("GET", url, call, params=query) or {}
            yield page
            token = page.get("next-page-token")
            if not token or token in seen:
                return
            seen.add(token)

    def drop_namespace(self, namespace: NamespaceLike) -> None:
        from icefloe.catalog._rest_http import RestCall

        ns = to_namespace(namespace)
        self._require("DELETE", NAMESPACE, "dropping namespaces")
        call = RestCall(f"dropping namespace {_dotted(ns)!r}", namespace=ns)
        self._send("DELETE", self._route(NAMESPACE, namespace=ns), call)

    def load_namespace_properties(self, namespace: NamespaceLike) -> dict[str, str]:
        from icefloe.catalog._rest_http import RestCall

        ns = to_namespace(namespace)
        if not ns:
            return {}
        self._require("GET", NAMESPACE, "loading namespaces")
        call = RestCall(f"loading namespace {_dotted(ns)!r}", namespace=ns)
        body = self._send("GET", self._route(NAMESPACE, namespace=ns), call) or {}
        return {str(k): str(v) for k, v in (body.get("properties") or {}).items()}

    def update_namespace_properties(
        self,
        namespace: NamespaceLike,
        removals: Iterable[str] = (),
        updates: Mapping[str, str] | None = None,
    ) -> PropertiesUpdateSummary:
        from icefloe.catalog._rest_http import RestCall

        ns = to_namespace(namespace)
        removals = list(removals)
        new = {str(k): str(v) for k, v in (updates or {}).items()}
        overlap = set(removals) & set(new)
        if overlap:
            raise ValidationError(
                f"properties both removed and updated: {sorted(overlap)}",
                hint="a key can be removed or set, not both",
            )
        self._require("POST", NAMESPACE_PROPERTIES, "updating namespace properties")
        call = RestCall(f"updating the properties of namespace {_dotted(ns)!r}", namespace=ns)
        body = (
            self._send(
                "POST",
                self._route(NAMESPACE_PROPERTIES, namespace=ns),
                call,
                json={"removals": removals, "updates": new},
            )
            or {}
        )
        return PropertiesUpdateSummary(
            removed=list(body.get("removed") or []),
            updated=list(body.get("updated") or []),
            missing=list(body.get("missing") or []),
        )

    def namespace_exists(self, namespace: NamespaceLike) -> bool:
        from icefloe.catalog._rest_http import RestCall

        ns = to_namespace(namespace)
        if not ns:
            return True
        call = RestCall(f"checking namespace {_dotted(ns)!r}", namespace=ns)
        url = self._route(NAMESPACE, namespace=ns)
        method = "HEAD" if self._supports("HEAD", NAMESPACE) else "GET"
        responses: list[httpx.Response] = []
        self._send(method, url, call, ok=(200, 204, 404), response_out=responses)
        return responses[-1].status_code != 404

    def list_tables(self, namespace: NamespaceLike) -> list[Identifier]:
        from icefloe.catalog._rest_http import RestCall

        ns = to_namespace(namespace)
        self._require("GET", TABLES, "listing tables")
        call = RestCall(f"listing the tables of {_dotted(ns)!r}", namespace=ns)
        out: list[Identifier] = []
        for page in self._pages(self._route(TABLES, namespace=ns), call, {}):
            for ident in page.get("identifiers") or []:
                out.append((*(str(level) for level in ident["namespace"]), str(ident["name"])))
        return sorted(out)

    # ------------------------------------------------------------------ pointers (server-side)
    def _load_pointer(self, identifier: Identifier) -> str | None:
        if not self.table_exists(identifier):
            return None
        return self._load(identifier).metadata_location

    def _no_pointers(self) -> UnsupportedFeatureError:
        return UnsupportedFeatureError(
            "a REST catalog keeps its table pointers on the server",
            hint="use create_table, commit_table, drop_table and rename_table",
        )

    def _insert_pointer(self, identifier: Identifier, metadata_location: str) -> None:
        raise self._no_pointers()

    def _swap_pointer(self, identifier: Identifier, expected: str, new: str) -> None:
        raise self._no_pointers()

    def _delete_pointer(self, identifier: Identifier) -> bool:
        raise self._no_pointers()

    def _rename_pointer(self, source: Identifier, target: Identifier) -> None:
        raise self._no_pointers()

    # ------------------------------------------------------------------ tables
    def _parse_result(self, body: Any, etag: str | None, what: str) -> _Loaded:
        from icefloe.spec._wire import metadata_from_json
        from icefloe.spec.table_metadata import TableMetadata

        if not isinstance(body, dict) or not isinstance(body.get("metadata"), dict):
            raise IcefloeError(f"{what}: the REST catalog sent no table metadata")
        metadata = TableMetadata(**metadata_from_json(body["metadata"]))
        location = body.get("metadata-location")
        return _Loaded(
            metadata, str(location) if location else None, _storage_config(body, metadata.location), etag
        )

    def _remember(self, ident: Identifier, loaded: _Loaded) -> None:
        with self._cache_lock:
            self._loaded[ident] = loaded

    def _forget(self, ident: Identifier) -> None:
        with self._cache_lock:
            self._loaded.pop(ident, None)

    def _load(self, ident: Identifier) -> _Loaded:
        from icefloe.catalog._rest_http import RestCall

        self._require("GET", TABLE, "loading tables")
        with self._cache_lock:
            cached = self._loaded.get(ident)
        headers = {"If-None-Match": cached.etag} if cached is not None and cached.etag else None
        call = RestCall(f"loading table {_dotted(ident)!r}", identifier=ident)
        responses: list[httpx.Response] = []
        url = self._route(TABLE, namespace=ident[:-1], table=ident[-1])
        body = self._send("GET", url, call, headers=headers, ok=(200, 304), response_out=responses)
        response = responses[-1]
        if response.status_code == 304 and cached is not None:
            return cached
        loaded = self._parse_result(body, response.headers.get("etag"), call.what)
        self._remember(ident, loaded)
        return loaded

    def _table_io(self, config: Mapping[str, str], location: str) -> FileIO:
        if not config:
            return self._io(location)
        props = {**self.properties, **config}
        scheme = location.split("://", 1)[0] if "://" in location else "file"
        key = (("", scheme), *sorted(props.items()))
        with self._cache_lock:
            io = self._table_ios.get(key)
            if io is None:
                io = load_file_io(props, location)
                self._table_ios[key] = io
            return io

    def _table_from(self, ident: Identifier, loaded: _Loaded) -> Table:
        from icefloe.table import Table

        if loaded.metadata_location is None:
            raise IcefloeError(f"table {_dotted(ident)!r} has no committed metadata on the server")
        io = self._table_io(loaded.config, loaded.metadata.location)
        return Table(ident, loaded.metadata, loaded.metadata_location, io, self)

    def table_exists(self, identifier: IdentifierLike) -> bool:
        from icefloe.catalog._rest_http import RestCall

        ident = to_identifier(identifier)
        if not self._supports("HEAD", TABLE):
            try:
                self._load(ident)
            except IcefloeError as e:
                if e.context.get("status") == 404:
                    return False
                raise
            return True
        call = RestCall(f"checking table {_dotted(ident)!r}", identifier=ident)
        responses: list[httpx.Response] = []
        url = self._route(TABLE, namespace=ident[:-1], table=ident[-1])
        self._send("HEAD", url, call, ok=(200, 204, 404), response_out=responses)
        return responses[-1].status_code != 404

    def load_table(self, identifier: IdentifierLike) -> Table:
        ident = to_identifier(identifier)
        return self._table_from(ident, self._load(ident))

    def _create_request(
        self,
        ident: Identifier,
        schema: Schema | pa.Schema,
        partition_by: Sequence[str] | PartitionSpec | None,
        sort_order: SortOrder | None,
        location: str | None,
        properties: Mapping[str, str] | None,
        stage: bool,
    ) -> dict[str, Any]:
        from icefloe.errors import PartitionSpecError
        from icefloe.spec.partition import UNPARTITIONED_SPEC, PartitionSpec, build_partition_spec

        if not isinstance(schema, Schema):
            from icefloe.arrow.schema import arrow_to_schema

            version = str((properties or {}).get("format-version", "2"))  # v3: timestamp_ns, unknown
            schema = arrow_to_schema(schema, format_version=int(version) if version.isdigit() else 2)
        if partition_by is None:
            spec = UNPARTITIONED_SPEC
        elif isinstance(partition_by, PartitionSpec):
            spec = partition_by
        elif isinstance(partition_by, str):
            raise PartitionSpecError(
                f"partition_by must be a list, got the string {partition_by!r}",
                hint=f"write partition_by=[{partition_by!r}]",
            )
        else:
            spec = build_partition_spec(schema, list(partition_by))
        body: dict[str, Any] = {
            "name": ident[-1],
            "schema": schema.to_json(),
            "partition-spec": spec.to_json(),
            "stage-create": stage,
            "properties": {str(k): str(v) for k, v in (properties or {}).items()},
        }
        if sort_order is not None:
            body["write-order"] = sort_order.to_json()
        if location:
            body["location"] = location.rstrip("/")
        return body

    def _post_create(self, ident: Identifier, body: dict[str, Any]) -> _Loaded:
        from icefloe.catalog._rest_http import RestCall

        self._require("POST", TABLES, "creating tables")
        call = RestCall(f"creating table {_dotted(ident)!r}", identifier=ident)
        responses: list[httpx.Response] = []
        result = self._send(
            "POST", self._route(TABLES, namespace=ident[:-1]), call, json=body, response_out=responses
        )
        return self._parse_result(result, responses[-1].headers.get("etag"), call.what)

    def create_table(
        self,
        identifier: IdentifierLike,
        schema: Schema | pa.Schema,
        partition_by: Sequence[str] | PartitionSpec | None = None,
        sort_order: SortOrder | None = None,
        location: str | None = None,
        properties: Mapping[str, str] | None = None,
    ) -> Table:
        ident = to_identifier(identifier)
        body = self._create_request(ident, schema, partition_by, sort_order, location, properties, False)
        loaded = self._post_create(ident, body)
        self._remember(ident, loaded)
        return self._table_from(ident, loaded)

    def stage_create_table(
        self,
        identifier: IdentifierLike,
        schema: Schema | pa.Schema,
        partition_by: Sequence[str] | PartitionSpec | None = None,
        sort_order: SortOrder | None = None,
        location: str | None = None,
        properties: Mapping[str, str] | None = None,
    ) -> TableMetadata:
        ident = to_identifier(identifier)
        body = self._create_request(ident, schema, partition_by, sort_order, location, properties, True)
        return self._post_create(ident, body).metadata

    def _register(
        self,
        ident: Identifier,
        metadata_location: str,
        overwrite: bool,
        metadata: TableMetadata | None = None,
    ) -> Table:
        # register_table (the base class's) comes here; the remote catalog reads the file itself,
        # so ``metadata`` (what a server in front of this catalog already read) is not sent.
        from icefloe.catalog._rest_http import RestCall

        self._require("POST", REGISTER, "registering tables")
        call = RestCall(f"registering table {_dotted(ident)!r}", identifier=ident)
        body = {"name": ident[-1], "metadata-location": metadata_location}
        if overwrite:
            body["overwrite"] = True  # type: ignore[assignment]
        responses: list[httpx.Response] = []
        result = self._send(
            "POST", self._route(REGISTER, namespace=ident[:-1]), call, json=body, response_out=responses
        )
        loaded = self._parse_result(result, responses[-1].headers.get("etag"), call.what)
        self._remember(ident, loaded)
        return self._table_from(ident, loaded)

    def drop_table(self, identifier: IdentifierLike, purge: bool = False) -> PurgeReport | None:
        """Remove the table; with ``purge`` the server also deletes its files. The REST protocol
        answers a drop with no body, so the report of a purge only says that the server ran it
        (``by_server``); the server logs the files it could not read or delete."""
        from icefloe.catalog._rest_http import RestCall

        ident = to_identifier(identifier)
        self._require("DELETE", TABLE, "dropping tables")
        call = RestCall(f"dropping table {_dotted(ident)!r}", identifier=ident)
        params = {"purgeRequested": "true"} if purge else None
        self._send("DELETE", self._route(TABLE, namespace=ident[:-1], table=ident[-1]), call, params=params)
        self._forget(ident)
        return PurgeReport(by_server=True) if purge else None

    def rename_table(self, from_identifier: IdentifierLike, to_identifier_: IdentifierLike) -> Table:
        from icefloe.catalog._rest_http import RestCall

        source, target = to_identifier(from_identifier), to_identifier(to_identifier_)
        if source == target:
            return self.load_table(source)
        self._require("POST", RENAME, "renaming tables")
        call = RestCall(f"renaming table {_dotted(source)!r} to {_dotted(target)!r}", identifier=target)
        body = {
            "source": {"namespace": list(source[:-1]), "name": source[-1]},
            "destination": {"namespace": list(target[:-1]), "name": target[-1]},
        }
        try:
            self._send("POST", self._route(RENAME), call, json=body)
        except IcefloeError as e:
            if e.context.get("status") == 404 and e.context.get("error_type") != "NoSuchNamespaceException":
                raise self._rename_missing(source, e) from None
            raise
        self._forget(source)
        return self.load_table(target)

    def _rename_missing(self, source: Identifier, e: IcefloeError) -> IcefloeError:
        from icefloe.errors import NoSuchTableError

        return NoSuchTableError(
            e.message, identifier=source, **{k: v for k, v in e.context.items() if k != "identifier"}
        )

    # ------------------------------------------------------------------ commits
    def commit_table(
        self,
        identifier: IdentifierLike,
        requirements: Iterable[TableRequirement],
        updates: Iterable[MetadataUpdate],
    ) -> tuple[TableMetadata, str]:
        """Send a commit; the server checks ``requirements`` and applies ``updates`` atomically.
        409 -> `CommitFailedError` (retryable); 5xx or no answer -> `CommitStateUnknownError`."""
        from icefloe.catalog._rest_http import RestCall

        ident = to_identifier(identifier)
        self._require("POST", TABLE, "committing to tables")
        body = {
            "identifier": {"namespace": list(ident[:-1]), "name": ident[-1]},
            "requirements": [r.to_json() for r in requirements],
            "updates": [u.to_json() for u in updates],
        }
        call = RestCall(f"committing to table {_dotted(ident)!r}", identifier=ident, commit=True)
        responses: list[httpx.Response] = []
        url = self._route(TABLE, namespace=ident[:-1], table=ident[-1])
        try:
            result = self._send("POST", url, call, json=body, response_out=responses)
        except IcefloeError:
            self._forget(ident)
            raise
        loaded = self._parse_result(result, responses[-1].headers.get("etag"), call.what)
        location = loaded.metadata_location
        if location is None:
            raise IcefloeError(f"{call.what}: the server sent no metadata location")
        previous = self._loaded.get(ident)
        if previous is not None and not loaded.config:
            loaded = _Loaded(loaded.metadata, loaded.metadata_location, previous.config, loaded.etag)
        self._remember(ident, loaded)
        return loaded.metadata, location

    def commit_tables(self, commits: Sequence[TableCommit]) -> list[tuple[TableMetadata, str]]:
        """Commit to several tables atomically with ``POST /v1/transactions/commit``."""
        from icefloe.catalog._rest_http import RestCall

        commits = list(commits)
        if not commits:
            return []
        idents = [to_identifier(c.identifier) for c in commits]
        if len(set(idents)) != len(idents):
            raise ValidationError(
                "a multi-table commit names the same table twice",
                hint="merge the changes of one table into a single TableCommit",
            )
        self._require("POST", TRANSACTION, "multi-table transactions")
        body = {
            "table-changes": [
                {
                    "identifier": {"namespace": list(ident[:-1]), "name": ident[-1]},
                    "requirements": [r.to_json() for r in c.requirements],
                    "updates": [u.to_json() for u in c.updates],
                }
                for ident, c in zip(idents, commits, strict=True)
            ]
        }
        names = ", ".join(repr(_dotted(i)) for i in idents)
        call = RestCall(f"committing to tables {names}", commit=True)
        try:
            self._send("POST", self._route(TRANSACTION), call, json=body)
        finally:
            for ident in idents:
                self._forget(ident)
        out: list[tuple[TableMetadata, str]] = []
        for ident in idents:
            table = self.load_table(ident)
            out.append((table.metadata, table.metadata_location))
        return out
