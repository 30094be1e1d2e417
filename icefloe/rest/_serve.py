"""Running the REST catalog server: checks of the security settings, the backing catalog, and
uvicorn in the foreground (`serve`) or on a background thread (`RestServer`, for tests and
benchmarks)."""

from __future__ import annotations

import ipaddress
import logging
import socket
import threading
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from icefloe.errors import ConfigError

if TYPE_CHECKING:
    from fastapi import FastAPI

    from icefloe.catalog import Catalog

__all__ = [
    "RestServer",
    "RestServerProcess",
    "free_loopback_port",
    "is_loopback",
    "open_backing_catalog",
    "serve",
]

_log = logging.getLogger("icefloe.rest")

DEFAULT_PORT = 8181
DEFAULT_CATALOG_NAME = "icefloe"


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (``127.0.0.0/8``, ``::1`` or ``localhost``)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_security(
    host: str, tokens: Sequence[str], credentials: Mapping[str, str] | None, allow_anonymous: bool
) -> None:
    """Refuse settings that would open the catalog to anyone."""
    if allow_anonymous and not is_loopback(host):
        raise ConfigError(
            f"anonymous access is allowed only on a loopback address, not on {host!r}",
            hint="bind to 127.0.0.1, or give --token / --credential instead of --allow-anonymous",
        )
    if not allow_anonymous and not any(tokens) and not credentials:
        raise ConfigError(
            "the REST catalog server needs a way to authenticate clients",
            hint="give --token T (or ICEFLOE_REST_TOKEN), or --credential CLIENT_ID:SECRET for the "
            "OAuth2 client-credentials flow; --allow-anonymous (loopback only) turns checks off",
        )


def parse_credentials(values: Sequence[str]) -> dict[str, str]:
    """``["id:secret", ...]`` -> ``{"id": "secret"}``."""
    out: dict[str, str] = {}
    for value in values:
        client_id, sep, secret = value.partition(":")
        if not sep or not client_id or not secret:
            raise ConfigError(
                f"invalid client credential {value.split(':', 1)[0]!r}:***",
                hint="write credentials as CLIENT_ID:SECRET",
            )
        out[client_id] = secret
    return out


def open_backing_catalog(
    uri: str, warehouse: str, name: str = DEFAULT_CATALOG_NAME, properties: Mapping[str, str] | None = None
) -> Catalog:
    """The icefloe catalog the server exposes: ``uri`` is a SQLAlchemy URL (SQLite, PostgreSQL)
    or ``memory:`` for an in-memory catalog."""
    props = {**dict(properties or {}), "warehouse": warehouse}
    if uri in ("memory", "memory:", "memory://"):
        from icefloe.catalog.memory import InMemoryCatalog

        return InMemoryCatalog(name, **props)
    from icefloe.catalog import load_catalog

    return load_catalog(name, type="sql", uri=uri, **props)


def build_app(
    catalog: Catalog,
    *,
    host: str,
    tokens: Sequence[str] = (),
    credentials: Mapping[str, str] | None = None,
    allow_anonymous: bool = False,
    token_lifetime_s: int = 3600,
    vend_credentials: bool = False,
    allowed_locations: Sequence[str] = (),
) -> FastAPI:
    check_security(host, tokens, credentials, allow_anonymous)
    if token_lifetime_s <= 0:
        raise ConfigError(f"token lifetime must be positive, got {token_lifetime_s}")
    from icefloe.rest._app import create_app

    return create_app(
        catalog,
        tokens=list(tokens),
        credentials=credentials,
        allow_anonymous=allow_anonymous,
        token_lifetime_s=token_lifetime_s,
        vend_credentials=vend_credentials,
        allowed_locations=allowed_locations,
    )


def serve(
    catalog: Catalog,
    *,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    tokens: Sequence[str] = (),
    credentials: Mapping[str, str] | None = None,
    allow_anonymous: bool = False,
    token_lifetime_s: int = 3600,
    vend_credentials: bool = False,
    log_level: str = "info",
    allowed_locations: Sequence[str] = (),
) -> None:
    """Serve ``catalog`` over the Iceberg REST protocol until interrupted (uvicorn, one
    process; requests run on its thread pool). Tables may lie inside the catalog's warehouse and
    the ``allowed_locations`` prefixes only."""
    import uvicorn

    app = build_app(
        catalog,
        host=host,
        tokens=tokens,
        credentials=credentials,
        allow_anonymous=allow_anonymous,
        token_lifetime_s=token_lifetime_s,
        vend_credentials=vend_credentials,
        allowed_locations=allowed_locations,
    )
    uvicorn.run(app, host=host, port=port, log_level=log_level, access_log=log_level == "debug")


class RestServer:
    """A REST catalog server on a background thread: ``with RestServer(catalog, token="t") as s:``
    then point clients at ``s.url``. Binds to loopback; port 0 picks a free port. Tables may lie
    inside the catalog's warehouse and the ``allowed_locations`` prefixes only."""

    def __init__(
        self,
        catalog: Catalog,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        tokens: Sequence[str] = (),
        credentials: Mapping[str, str] | None = None,
        allow_anonymous: bool = False,
        token_lifetime_s: int = 3600,
        vend_credentials: bool = False,
        allowed_locations: Sequence[str] = (),
    ) -> None:
        import uvicorn

        self.catalog = catalog
        self.app = build_app(
            catalog,
            host=host,
            tokens=tokens,
            credentials=credentials,
            allow_anonymous=allow_anonymous,
            token_lifetime_s=token_lifetime_s,
            vend_credentials=vend_credentials,
            allowed_locations=allowed_locations,
        )
        self._socket = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind((host, port))
        self.host = host
        self.port: int = self._socket.getsockname()[1]
        config = uvicorn.Config(self.app, log_level="warning", access_log=False, lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def start(self) -> RestServer:
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, name="icefloe-rest", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the REST catalog server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None
        self._socket.close()

    def __enter__(self) -> RestServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def free_loopback_port(host: str = "127.0.0.1") -> int:
    """A port the OS reports free on ``host`` right now."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class RestServerProcess:
    """``python -m icefloe.rest`` in a child process, for tests, benchmarks and scripts::

        with RestServerProcess("sqlite:///cat.db", "file:///wh", token="t") as server:
            load_catalog("x", uri=server.url, token="t")

    ``allowed_locations`` become ``--allow-location`` flags; ``extra_args`` go to the command
    line as they are (``--credential``, ``--property``, ...); ``env`` adds to the child's
    environment (``ICEFLOE_REST_TOKEN``, ...).
    """

    def __init__(
        self,
        uri: str,
        warehouse: str,
        *,
        token: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        extra_args: Sequence[str] = (),
        log_path: str | None = None,
        startup_timeout_s: float = 60.0,
        env: Mapping[str, str] | None = None,
        allowed_locations: Sequence[str] = (),
    ) -> None:
        self.host = host
        self._env = dict(env) if env else None
        self.port = port or free_loopback_port(host)
        self._args = [
            "--uri",
            uri,
            "--warehouse",
            warehouse,
            "--host",
            host,
            "--port",
            str(self.port),
            "--log-level",
            "warning",
            *(arg for prefix in allowed_locations for arg in ("--allow-location", prefix)),
            *extra_args,
        ]
        if token:
            self._args += ["--token", token]
        self._log_path = log_path
        self._timeout = startup_timeout_s
        self._proc: Any = None
        self._log: Any = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def start(self) -> RestServerProcess:
        import os
        import subprocess
        import sys

        self._log = open(self._log_path, "ab") if self._log_path else subprocess.DEVNULL  # noqa: SIM115
        env = {**os.environ, **self._env} if self._env else None
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "icefloe.rest", *self._args], stdout=self._log, stderr=self._log, env=env
        )
        deadline = time.monotonic() + self._timeout
        while True:
            if self._proc.poll() is not None:
                self._close_log()
                raise RuntimeError(
                    f"the REST catalog server exited with status {self._proc.returncode}"
                    + (f"; see {self._log_path}" if self._log_path else "")
                )
            if self._answers():
                return self
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the REST catalog server did not start within {self._timeout} s")
            time.sleep(0.1)

    def _answers(self) -> bool:
        """Whether the server answers HTTP yet (any status: 401 without a token is fine)."""
        import http.client

        conn = http.client.HTTPConnection(self.host.strip("[]"), self.port, timeout=5)
        try:
            conn.request("GET", "/v1/config")
            conn.getresponse().read()
            return True
        except (OSError, http.client.HTTPException):
            return False
        finally:
            conn.close()

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=20)
            except Exception:
                self._proc.kill()
                self._proc.wait(timeout=20)
        self._proc = None
        self._close_log()

    def _close_log(self) -> None:
        if self._log is not None and hasattr(self._log, "close"):
            self._log.close()
        self._log = None

    def __enter__(self) -> RestServerProcess:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
