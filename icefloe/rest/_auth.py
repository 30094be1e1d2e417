"""Who may call the server: static bearer tokens and the OAuth2 client-credentials flow.

The server is secure by default: without a token or a client credential it refuses to start,
unless it is told to accept anonymous requests, which it allows on a loopback address only.

Tokens issued by ``POST /v1/oauth/tokens`` are random, live for ``token_lifetime_s`` seconds and
are kept in memory (they do not survive a restart; clients fetch a new one on 401). A token
exchange with a valid token as subject refreshes it. Secrets are compared in constant time.
"""

from __future__ import annotations

import base64
import hmac
import secrets
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import unquote

from icefloe.rest._errors import RestError

__all__ = ["Authenticator", "OAuthError"]

CLIENT_CREDENTIALS = "client_credentials"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
_MAX_ISSUED = 100_000


@dataclass
class OAuthError(Exception):
    """An answer of the token endpoint in the OAuth2 error format (RFC 6749 section 5.2)."""

    status: int
    error: str
    description: str


def _unauthorized(message: str) -> RestError:
    return RestError(401, "NotAuthorizedException", message, (("WWW-Authenticate", "Bearer"),))


class Authenticator:
    def __init__(
        self,
        tokens: Sequence[str] = (),
        credentials: Mapping[str, str] | None = None,
        *,
        allow_anonymous: bool = False,
        token_lifetime_s: int = 3600,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._tokens = tuple(t for t in tokens if t)
        self._credentials = dict(credentials or {})
        self.allow_anonymous = allow_anonymous
        self.token_lifetime_s = token_lifetime_s
        self._clock = clock
        self._lock = threading.Lock()
        self._issued: dict[str, tuple[str, float]] = {}

    @property
    def oauth_enabled(self) -> bool:
        return bool(self._credentials)

    # ------------------------------------------------------------------ requests
    def principal(self, token: str) -> str | None:
        """Who holds ``token``, or None when it is unknown or expired."""
        for static in self._tokens:
            if hmac.compare_digest(static.encode(), token.encode()):
                return "token"
        with self._lock:
            issued = self._issued.get(token)
            if issued is None:
                return None
            if issued[1] < self._clock():
                del self._issued[token]
                return None
            return issued[0]

    def check(self, authorization: str | None) -> str:
        """The principal of a request with this ``Authorization`` header; `RestError` 401 if
        the request may not proceed."""
        if not authorization:
            if self.allow_anonymous:
                return "anonymous"
            raise _unauthorized("this catalog requires a bearer token (Authorization: Bearer <token>)")
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise _unauthorized("only bearer tokens are accepted (Authorization: Bearer <token>)")
        principal = self.principal(token.strip())
        if principal is None:
            raise _unauthorized("the bearer token is unknown or has expired; fetch a new one")
        return principal

    # ------------------------------------------------------------------ token endpoint
    def _issue(self, principal: str) -> dict[str, object]:
        token = secrets.token_urlsafe(32)
        now = self._clock()
        with self._lock:
            if len(self._issued) >= _MAX_ISSUED:
                self._issued = {k: v for k, v in self._issued.items() if v[1] >= now}
                if len(self._issued) >= _MAX_ISSUED:
                    raise OAuthError(503, "temporarily_unavailable", "too many live tokens")
            self._issued[token] = (principal, now + self.token_lifetime_s)
        return {
            "access_token": token,
            "token_type": "bearer",
            "expires_in": self.token_lifetime_s,
            "issued_token_type": ACCESS_TOKEN_TYPE,
        }

    def token(self, form: Mapping[str, str], authorization: str | None) -> dict[str, object]:
        """Answer a token request (client credentials, or a token exchange that refreshes a
        valid token)."""
        grant = form.get("grant_type")
        if grant == CLIENT_CREDENTIALS:
            client_id, secret = form.get("client_id"), form.get("client_secret")
            if (client_id is None or secret is None) and authorization:
                client_id, secret = _basic(authorization)
            if not client_id or secret is None:
                raise OAuthError(400, "invalid_request", "client_id and client_secret are required")
            expected = self._credentials.get(client_id)
            if expected is None or not hmac.compare_digest(expected.encode(), secret.encode()):
                raise OAuthError(401, "invalid_client", "unknown client or wrong secret")
            return self._issue(client_id)
        if grant == TOKEN_EXCHANGE:
            subject = form.get("subject_token")
            if not subject:
                raise OAuthError(400, "invalid_request", "subject_token is required")
            principal = self.principal(subject)
            if principal is None:
                raise OAuthError(401, "invalid_grant", "the subject token is unknown or has expired")
            return self._issue(principal)
        raise OAuthError(
            400,
            "unsupported_grant_type",
            f"grant_type must be {CLIENT_CREDENTIALS!r} or {TOKEN_EXCHANGE!r}, not {grant!r}",
        )


def _basic(authorization: str) -> tuple[str | None, str | None]:
    scheme, _, value = authorization.partition(" ")
    if scheme.lower() != "basic":
        return None, None
    try:
        decoded = base64.b64decode(value.strip(), validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return None, None
    client_id, sep, secret = decoded.partition(":")
    if not sep:
        return None, None
    return unquote(client_id), unquote(secret)
