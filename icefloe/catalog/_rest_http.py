"""The HTTP side of the REST catalog client: authentication, request signing and errors.

Authentication, per the catalog properties (the names Iceberg Java and PyIceberg use):

- ``token``: a bearer token sent as is;
- ``credential`` (``client_id:client_secret`` or a bare secret): the OAuth2 client-credentials
  flow against ``oauth2-server-uri`` (default ``<uri>/v1/oauth/tokens``) with ``scope``
  (default ``catalog``), ``audience`` and ``resource`` when set. The token is refreshed before
  it expires (a token exchange when ``token-refresh-enabled`` and no credential is at hand, a new
  client-credentials request otherwise), and once more when the server answers 401;
- ``rest.sigv4-enabled``: every request is signed with AWS Signature V4 (botocore) for service
  ``rest.signing-name`` (default ``execute-api``) in ``rest.signing-region``, with
  ``rest.access-key-id`` / ``rest.secret-access-key`` / ``rest.session-token`` (falling back to
  ``client.*`` and ``s3.*``, then to botocore's credential chain). A bearer token then travels
  as ``Original-Authorization``, as Java and PyIceberg send it;
- ``header.<Name>``: extra headers on every request.

Server answers become icefloe errors (`raise_for_response`): the spec's error types and status
codes map to the error tree; on commit routes a 5xx, a timeout or a broken connection is a
`CommitStateUnknownError`, never a failure, because the commit may have landed.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Generator, Mapping
from typing import Any, NoReturn

import httpx

from icefloe.errors import (
    CommitFailedError,
    CommitStateUnknownError,
    ConfigError,
    FileIOError,
    IcefloeError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchTableError,
    NotFoundError,
    TableAlreadyExistsError,
    UnsupportedFeatureError,
    ValidationError,
)

__all__ = ["CatalogAuth", "RestCall", "make_client", "raise_for_response", "raise_for_transport"]

TOKEN = "token"
CREDENTIAL = "credential"
OAUTH2_SERVER_URI = "oauth2-server-uri"
SCOPE = "scope"
TOKEN_REFRESH_ENABLED = "token-refresh-enabled"
SIGV4_ENABLED = "rest.sigv4-enabled"
SIGNING_NAME = "rest.signing-name"
SIGNING_REGION = "rest.signing-region"
HEADER_PREFIX = "header."
CONNECT_TIMEOUT_MS = "rest.client.connection-timeout-ms"
SOCKET_TIMEOUT_MS = "rest.client.socket-timeout-ms"
SSL_CA_BUNDLE = "ssl.cabundle"

CLIENT_CREDENTIALS = "client_credentials"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
_EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
_TRUE = ("true", "1", "yes", "on")


def _flag(props: Mapping[str, str], key: str, default: bool) -> bool:
    value = props.get(key)
    if value is None:
        return default
    if value.lower() in _TRUE:
        return True
    if value.lower() in ("false", "0", "no", "off"):
        return False
    raise ConfigError(f"invalid {key} value {value!r}", hint="use true or false", property=key)


def _millis(props: Mapping[str, str], key: str, default: int) -> float:
    value = props.get(key)
    if value is None:
        return default / 1000
    try:
        ms = int(value)
    except ValueError:
        ms = -1
    if ms <= 0:
        raise ConfigError(f"invalid {key} value {value!r}", hint="give a positive number of milliseconds")
    return ms / 1000


def make_client(props: Mapping[str, str], auth: CatalogAuth) -> httpx.Client:
    headers = {k[len(HEADER_PREFIX) :]: v for k, v in props.items() if k.startswith(HEADER_PREFIX)}
    headers.setdefault("User-Agent", "icefloe")
    headers.setdefault("X-Client-Version", "icefloe")
    timeout = httpx.Timeout(
        _millis(props, SOCKET_TIMEOUT_MS, 60_000), connect=_millis(props, CONNECT_TIMEOUT_MS, 10_000)
    )
    verify: Any = props.get(SSL_CA_BUNDLE) or True
    return httpx.Client(headers=headers, timeout=timeout, auth=auth, verify=verify)


class CatalogAuth(httpx.Auth):
    """Bearer token (static or OAuth2, refreshed) and optional SigV4 signing for every request."""

    requires_request_body = True

    def __init__(self, base_url: str, props: Mapping[str, str]) -> None:
        self._props = dict(props)
        self._lock = threading.Lock()
        self._token: str | None = props.get(TOKEN) or None
        self._expires_at: float | None = None
        self._lifetime: float | None = None
        credential = props.get(CREDENTIAL)
        self._credential: tuple[str | None, str] | None = None
        if credential:
            client_id, sep, secret = credential.partition(":")
            self._credential = (client_id, secret) if sep else (None, credential)
        self._token_url = props.get(OAUTH2_SERVER_URI) or f"{base_url}/v1/oauth/tokens"
        self._refresh_enabled = _flag(props, TOKEN_REFRESH_ENABLED, True)
        self._sigv4 = _SigV4(props) if _flag(props, SIGV4_ENABLED, False) else None
        self._token_client: httpx.Client | None = None

    # ------------------------------------------------------------------ tokens
    def _oauth_client(self) -> httpx.Client:
        if self._token_client is None:
            verify: Any = self._props.get(SSL_CA_BUNDLE) or True
            self._token_client = httpx.Client(timeout=httpx.Timeout(30.0), verify=verify)
        return self._token_client

    def close(self) -> None:
        if self._token_client is not None:
            self._token_client.close()

    def _request_token(self, form: dict[str, str], bearer: str | None = None) -> None:
        headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
        try:
            response = self._oauth_client().post(self._token_url, data=form, headers=headers)
        except httpx.HTTPError as e:
            raise ConfigError(
                f"cannot reach the OAuth2 token endpoint {self._token_url}: {e}",
                hint="check the catalog's uri / oauth2-server-uri and that the server is running",
            ) from e
        if response.status_code != 200:
            try:
                body = response.json()
                detail = f"{body.get('error')}: {body.get('error_description', '')}"
            except ValueError:
                detail = response.text[:200]
            raise ConfigError(
                f"the OAuth2 token endpoint refused the request ({response.status_code} {detail})",
                hint="check the catalog's credential (client_id:client_secret) and scope",
            )
        try:
            body = response.json()
            token = str(body["access_token"])
        except (ValueError, KeyError, TypeError):
            raise ConfigError(f"the OAuth2 token endpoint {self._token_url} sent no access_token") from None
        self._token = token
        expires_in = body.get("expires_in")
        if isinstance(expires_in, int | float) and expires_in > 0:
            self._lifetime = float(expires_in)
            self._expires_at = time.monotonic() + float(expires_in)
        else:
            self._lifetime = self._expires_at = None

    def _fetch(self) -> None:
        assert self._credential is not None
        client_id, secret = self._credential
        form = {
            "grant_type": CLIENT_CREDENTIALS,
            "client_secret": secret,
            SCOPE: self._props.get(SCOPE, "catalog"),
        }
        if client_id:
            form["client_id"] = client_id
        for extra in ("audience", "resource"):
            if self._props.get(extra):
                form[extra] = self._props[extra]
        self._request_token(form)

    def _refresh(self) -> None:
        """A fresh token: client credentials when we have them, else a token exchange."""
        if self._credential is not None:
            self._fetch()
        elif self._token is not None and self._refresh_enabled:
            current = self._token
            form = {
                "grant_type": TOKEN_EXCHANGE,
                "subject_token": current,
                "subject_token_type": ACCESS_TOKEN_TYPE,
                SCOPE: self._props.get(SCOPE, "catalog"),
            }
            self._request_token(form, bearer=current)

    def bearer(self) -> str | None:
        """The token to send now, fetched or refreshed when needed."""
        with self._lock:
            if self._token is None and self._credential is not None:
                self._fetch()
            elif (
                self._expires_at is not None
                and self._lifetime is not None
                and time.monotonic() > self._expires_at - min(60.0, self._lifetime / 10)
            ):
                self._refresh()
            return self._token

    def _after_unauthorized(self, sent: str | None) -> bool:
        """After a 401: get another token if that can help; True if the request may be retried."""
        with self._lock:
            if self._credential is None:
                return False
            if self._token == sent:
                self._fetch()
            return True

    # ------------------------------------------------------------------ httpx hook
    def _prepare(self, request: httpx.Request) -> str | None:
        token = self.bearer()
        if token:
            request.headers["Authorization"] = f"Bearer {token}"
        if self._sigv4 is not None:
            self._sigv4.sign(request)
        return token

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        sent = self._prepare(request)
        response = yield request
        if response.status_code == 401 and self._after_unauthorized(sent):
            request.headers.pop("Authorization", None)
            request.headers.pop("Original-Authorization", None)
            self._prepare(request)
            yield request


class _SigV4:
    """AWS Signature V4 over each request (botocore does the signing)."""

    def __init__(self, props: Mapping[str, str]) -> None:
        try:
            import botocore.auth
            import botocore.awsrequest
            import botocore.credentials
            import botocore.session
        except ImportError as e:
            raise ConfigError(
                "rest.sigv4-enabled needs botocore",
                hint="pip install 'icefloe[sigv4]'",
            ) from e

        def first(*keys: str) -> str | None:
            for key in keys:
                if props.get(key):
                    return props[key]
            return None

        access_key = first("rest.access-key-id", "client.access-key-id", "s3.access-key-id")
        secret_key = first("rest.secret-access-key", "client.secret-access-key", "s3.secret-access-key")
        session_token = first("rest.session-token", "client.session-token", "s3.session-token")
        region = first(SIGNING_REGION, "client.region", "s3.region")
        if access_key and secret_key:
            self._credentials: Any = botocore.credentials.Credentials(access_key, secret_key, session_token)
        else:
            session = botocore.session.get_session()
            self._credentials = session.get_credentials()
            region = region or session.get_config_variable("region")
        if self._credentials is None:
            raise ConfigError(
                "rest.sigv4-enabled is set but there are no AWS credentials to sign with",
                hint="set rest.access-key-id and rest.secret-access-key (or AWS_ACCESS_KEY_ID / "
                "AWS_SECRET_ACCESS_KEY)",
            )
        if not region:
            raise ConfigError(
                "rest.sigv4-enabled needs a region to sign for",
                hint="set rest.signing-region (e.g. us-east-1)",
                property=SIGNING_REGION,
            )
        self._region = region
        self._service = props.get(SIGNING_NAME) or "execute-api"
        self._auth_cls = botocore.auth.SigV4Auth
        self._request_cls = botocore.awsrequest.AWSRequest

    def sign(self, request: httpx.Request) -> None:
        body = request.content
        bearer = request.headers.pop("Authorization", None)
        if bearer is not None:
            request.headers["Original-Authorization"] = bearer
        request.headers["x-amz-content-sha256"] = hashlib.sha256(body).hexdigest() if body else _EMPTY_SHA256
        signed_names = (
            "host",
            "content-type",
            "content-length",
            "x-amz-content-sha256",
            "original-authorization",
        )
        headers = {k: v for k, v in request.headers.items() if k.lower() in signed_names}
        aws = self._request_cls(method=request.method, url=str(request.url), data=body, headers=headers)
        credentials = self._credentials.get_frozen_credentials()
        self._auth_cls(credentials, self._service, self._region).add_auth(aws)
        for key, value in aws.headers.items():
            request.headers[key] = value


# --------------------------------------------------------------------------------- errors
class RestCall:
    """What a request was about, so that a 404 or 409 becomes the right error."""

    def __init__(
        self,
        what: str,
        *,
        namespace: tuple[str, ...] | None = None,
        identifier: tuple[str, ...] | None = None,
        commit: bool = False,
    ) -> None:
        self.what = what
        self.namespace = namespace
        self.identifier = identifier
        self.commit = commit


def _error_fields(response: httpx.Response) -> tuple[str, str]:
    try:
        body = response.json()
        error = body.get("error") if isinstance(body, dict) else None
        if isinstance(error, dict):
            return str(error.get("type") or ""), str(error.get("message") or "")
        if isinstance(body, dict) and "error" in body:  # OAuth2 shape
            return str(body.get("error")), str(body.get("error_description") or "")
    except ValueError:
        pass
    return "", response.text[:500]


_HINT_MARK = " (hint: "


def raise_for_response(response: httpx.Response, call: RestCall) -> NoReturn:
    """Turn an error answer into the icefloe error it means."""
    status = response.status_code
    kind, message = _error_fields(response)
    server_hint: str | None = None
    if message.endswith(")") and _HINT_MARK in message:
        # icefloe's server appends the hint to the message (the error model has no hint field)
        message, _, server_hint = message[:-1].partition(_HINT_MARK)
    text = f"{call.what} failed: {message or response.reason_phrase} ({status}{' ' + kind if kind else ''})"
    ctx: dict[str, Any] = {"status": status, "error_type": kind}
    try:
        _raise_mapped(status, kind, text, call, ctx)
    except IcefloeError as e:
        if server_hint:
            e.hint = server_hint
        raise


def _raise_mapped(status: int, kind: str, text: str, call: RestCall, ctx: dict[str, Any]) -> NoReturn:
    if call.identifier is not None:
        ctx["identifier"] = call.identifier
    if call.namespace is not None:
        ctx["namespace"] = call.namespace
    if call.commit and status >= 500:
        raise CommitStateUnknownError(
            text, hint="load the table to see whether the commit landed before retrying", **ctx
        )
    if status == 404:
        if kind == "NotFoundException":
            raise FileIOError(text, not_found=True, **ctx)
        if kind == "NoSuchNamespaceException" or (call.identifier is None and call.namespace is not None):
            raise NoSuchNamespaceError(text, **ctx)
        if kind == "NoSuchTableException" or call.identifier is not None:
            raise NoSuchTableError(text, **ctx)
        if kind == "NoSuchWarehouseException":
            raise ConfigError(text, hint="check the catalog's 'warehouse' property", **ctx)
        raise NotFoundError(text, **ctx)
    if status == 409:
        if kind == "NamespaceNotEmptyException":
            raise NamespaceNotEmptyError(text, **ctx)
        if call.commit or kind == "CommitFailedException":
            raise CommitFailedError(text, hint="refresh the table and retry", **ctx)
        if call.identifier is not None:
            raise TableAlreadyExistsError(text, **ctx)
        if call.namespace is not None:
            raise NamespaceAlreadyExistsError(text, **ctx)
        raise CommitFailedError(text, **ctx)
    if status in (401, 403, 419):
        raise ConfigError(
            text, hint="check the catalog's token or credential (and that it may do this)", **ctx
        )
    if status in (405, 406, 501):
        raise UnsupportedFeatureError(text, hint="the REST catalog server does not support this", **ctx)
    if 400 <= status < 500:
        raise ValidationError(text, **ctx)
    raise IcefloeError(text, hint="the REST catalog server failed; see its log", **ctx)


def raise_for_transport(error: httpx.HTTPError, url: str, call: RestCall) -> NoReturn:
    """A request that got no answer."""
    not_sent = isinstance(error, httpx.ConnectError | httpx.ConnectTimeout)
    text = f"{call.what} failed: no answer from the REST catalog at {url}: {error!r}"
    if call.commit and not not_sent:
        raise CommitStateUnknownError(
            text, hint="load the table to see whether the commit landed before retrying"
        ) from error
    if call.commit:
        raise CommitFailedError(text, hint="the request never reached the server; retry") from error
    raise ConfigError(text, hint="check the catalog's uri and that the server is running") from error
