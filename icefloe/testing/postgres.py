"""A throw-away PostgreSQL server on loopback, for tests and benchmarks of the SQL catalog.

It uses the Debian ``postgresql-NN`` packages (``/usr/lib/postgresql/<version>/bin``; ``$PG_BIN``
overrides), makes a fresh data directory with ``initdb``, and runs ``postgres`` listening on
127.0.0.1 only (no Unix socket), with password authentication for a generated password.
PostgreSQL refuses to run as root, so under root the server runs as the ``postgres`` user (or
``nobody``) and its directory is handed to that user.

From Python (tests use it as a session fixture)::

    with PostgresServer() as pg:              # a temporary directory and a free port
        uri = pg.create_database("t1")        # postgresql+psycopg://icefloe:...@127.0.0.1:N/t1
        catalog = icefloe.load_catalog("c", uri=uri, warehouse=...)

From the shell (``scripts/postgres.sh`` wraps this)::

    python -m icefloe.testing.postgres start DIR [--port N] [--durable]   # prints ICEFLOE_PG_* lines
    python -m icefloe.testing.postgres stop DIR

``start`` leaves the server running (detached) and writes ``DIR/server.json``; ``stop`` ends it
and leaves ``DIR`` for the caller to remove. By default the server trades durability for speed
(``fsync=off``): it is for tests; ``durable=True`` keeps PostgreSQL's defaults (benchmarks).
"""

from __future__ import annotations

import json
import os
import pwd
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from icefloe.errors import ConfigError
from icefloe.testing._process import (
    LOOPBACK,
    ServerStartError,
    free_ports,
    process_alive,
    start_server_process,
    stop_process_group,
    wait_until,
)

__all__ = ["PostgresServer", "find_postgres_bin"]

DEFAULT_VERSION = "15"
SUPERUSER = "icefloe"
DEFAULT_DATABASE = "icefloe"
STATE_FILE = "server.json"
PASSWORD_FILE = "superuser-password"
_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_INSTALL_HINT = (
    "install the Debian packages (apt-get install postgresql-15), or point PG_BIN at a directory "
    "holding initdb and postgres"
)


def find_postgres_bin(install: bool = False) -> Path:
    """The directory holding ``initdb`` and ``postgres``: ``$PG_BIN``, else the newest
    ``/usr/lib/postgresql/<version>/bin``. With ``install`` and root rights, missing packages are
    installed with apt-get first (``postgresql-15``)."""
    env = os.environ.get("PG_BIN")
    if env:
        path = Path(env)
        if (path / "initdb").is_file() and (path / "postgres").is_file():
            return path
        raise ConfigError(f"PG_BIN={env} holds no initdb and postgres", hint=_INSTALL_HINT)
    found = _debian_bin_dirs()
    if not found and install and os.geteuid() == 0 and shutil.which("apt-get"):
        _apt_install(f"postgresql-{DEFAULT_VERSION}")
        found = _debian_bin_dirs()
    if not found:
        raise ConfigError("no PostgreSQL server binaries found under /usr/lib/postgresql", hint=_INSTALL_HINT)
    return found[-1]


def _debian_bin_dirs() -> list[Path]:
    root = Path("/usr/lib/postgresql")
    if not root.is_dir():
        return []
    dirs = [d / "bin" for d in root.iterdir() if (d / "bin" / "initdb").is_file()]
    return sorted(dirs, key=lambda d: [int(x) if x.isdigit() else 0 for x in d.parent.name.split(".")])


def _apt_install(package: str) -> None:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for argv in (["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", package]):
        r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=900, check=False)
        if r.returncode != 0:
            raise ConfigError(
                f"{' '.join(argv)} failed:\n{r.stdout[-2000:]}{r.stderr[-2000:]}", hint=_INSTALL_HINT
            )


def _server_user() -> pwd.struct_passwd | None:
    """Who runs the server: None (ourselves) unless we are root."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    raise ConfigError("running as root and no 'postgres' or 'nobody' user exists", hint="run as another user")


class PostgresServer:
    """One PostgreSQL server in ``root`` (a new temporary directory when None) on ``port`` (a free
    one when None). Superuser ``icefloe`` with a random password; database ``icefloe``."""

    def __init__(
        self,
        root: Path | str | None = None,
        port: int | None = None,
        *,
        durable: bool = False,
        bin_dir: Path | None = None,
        install: bool = False,
        start_timeout_s: float = 90.0,
    ) -> None:
        self._own_root = root is None
        self.root = Path(root) if root is not None else Path(tempfile.mkdtemp(prefix="icefloe-pg-"))
        self.port = port if port is not None else free_ports(1)[0]
        self.host = LOOPBACK
        self.durable = durable
        self.user = SUPERUSER
        self.password = secrets.token_hex(16)
        self.bin_dir = bin_dir or find_postgres_bin(install=install)
        self.start_timeout_s = start_timeout_s
        self._popen: subprocess.Popen[bytes] | None = None
        self.pid: int | None = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ addresses
    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def log_path(self) -> Path:
        return self.root / "postgres.log"

    def uri(
        self, database: str = DEFAULT_DATABASE, schema: str | None = None, driver: str = "postgresql+psycopg"
    ) -> str:
        """SQLAlchemy URL of ``database`` (what icefloe's and PyIceberg's SQL catalogs take);
        with ``schema``, connections use that schema (``search_path``)."""
        url = f"{driver}://{self.user}:{self.password}@{self.host}:{self.port}/{database}"
        return f"{url}?options=-csearch_path%3D{schema}" if schema else url

    def jdbc_url(self, database: str = DEFAULT_DATABASE, schema: str | None = None) -> str:
        """JDBC URL for Iceberg Java's JdbcCatalog (user and password go in ``jdbc.user`` /
        ``jdbc.password``)."""
        url = f"jdbc:postgresql://{self.host}:{self.port}/{database}"
        return f"{url}?currentSchema={schema}" if schema else url

    def conninfo(self, database: str = DEFAULT_DATABASE) -> str:
        """libpq connection string (psycopg, psql)."""
        return (
            f"host={self.host} port={self.port} dbname={database} user={self.user} "
            f"password={self.password} connect_timeout=5"
        )

    # ------------------------------------------------------------------ lifecycle
    def start(self, detach: bool = False) -> PostgresServer:
        """initdb (when the data directory is new) and start the server; returns when it
        accepts connections. ``detach`` lets it outlive this process (the script's ``start``)."""
        run_as = _server_user()
        self.root.mkdir(parents=True, exist_ok=True)
        uid = gid = None
        if run_as is not None:
            uid, gid = run_as.pw_uid, run_as.pw_gid
            os.chown(self.root, uid, gid)
            self._check_reachable(run_as)
        password_file = self.root / PASSWORD_FILE
        if not (self.data_dir / "PG_VERSION").is_file():
            self._initdb(uid, gid)
            password_file.write_text(self.password)
            password_file.chmod(0o600)
        elif password_file.is_file():  # a data directory started before: its password stays
            self.password = password_file.read_text().strip()
        argv = [
            str(self.bin_dir / "postgres"),
            "-D",
            str(self.data_dir),
            "-p",
            str(self.port),
            "-c",
            f"listen_addresses={self.host}",
            "-c",
            "unix_socket_directories=",
            "-c",
            "max_connections=200",
        ]
        if not self.durable:
            for setting in ("fsync=off", "synchronous_commit=off", "full_page_writes=off"):
                argv += ["-c", setting]
        self._popen = start_server_process(
            argv,
            self.log_path,
            parent_death_signal=signal.SIGINT,  # "fast" shutdown
            detach=detach,
            uid=uid,
            gid=gid,
        )
        self.pid = self._popen.pid
        try:
            wait_until(
                self._accepts_connections,
                timeout_s=self.start_timeout_s,
                what=f"PostgreSQL on port {self.port}",
                log_path=self.log_path,
                popen=self._popen,
                interval_s=0.2,
            )
            self.execute(f"CREATE DATABASE {DEFAULT_DATABASE}", database="postgres", ignore_exists=True)
        except BaseException:
            self.stop()
            raise
        self._write_state()
        return self

    def _check_reachable(self, run_as: pwd.struct_passwd) -> None:
        # the server user must be able to traverse every parent of the data directory
        for parent in self.root.resolve().parents:
            mode = parent.stat().st_mode
            if parent.stat().st_uid != run_as.pw_uid and not mode & 0o001:
                raise ConfigError(
                    f"PostgreSQL runs as {run_as.pw_name!r}, which cannot enter {parent}",
                    hint="put the server directory somewhere every user can reach, e.g. under /tmp",
                )

    def _initdb(self, uid: int | None, gid: int | None) -> None:
        pwfile = self.root / "pwfile"
        pwfile.write_text(self.password + "\n")
        try:
            if uid is not None and gid is not None:
                os.chown(pwfile, uid, gid)
            argv = [
                str(self.bin_dir / "initdb"),
                "-D",
                str(self.data_dir),
                "-U",
                self.user,
                f"--pwfile={pwfile}",
                "--auth=scram-sha-256",
                "-E",
                "UTF8",
                "--locale=C.UTF-8",
                "--no-sync",
            ]
            proc = start_server_process(argv, self.root / "initdb.log", uid=uid, gid=gid)
            try:
                code = proc.wait(timeout=self.start_timeout_s)
            except subprocess.TimeoutExpired:
                stop_process_group(proc.pid, popen=proc, timeout_s=1)
                code = -1
            if code != 0:
                raise ServerStartError(
                    f"initdb failed with status {code}",
                    hint=f"see {self.root / 'initdb.log'}",
                    log=str(self.root / "initdb.log"),
                )
        finally:
            pwfile.unlink(missing_ok=True)

    def _accepts_connections(self) -> bool:
        import psycopg

        try:
            with psycopg.connect(self.conninfo("postgres"), connect_timeout=2):
                return True
        except psycopg.OperationalError:
            return False

    def _write_state(self) -> None:
        state = {
            "pid": self.pid,
            "host": self.host,
            "port": self.port,
            "user": self.user,
            "password": self.password,
            "database": DEFAULT_DATABASE,
            "uri": self.uri(),
            "jdbc_url": self.jdbc_url(),
            "data_dir": str(self.data_dir),
        }
        path = self.root / STATE_FILE
        path.write_text(json.dumps(state, indent=2) + "\n")
        path.chmod(0o600)

    def stop(self, timeout_s: float = 20.0) -> None:
        """Fast shutdown (SIGINT), SIGKILL to the process group after ``timeout_s``; the
        temporary directory goes too when this object made it."""
        with self._lock:
            if self.pid is not None:
                stop_process_group(
                    self.pid, signal_first=signal.SIGINT, timeout_s=timeout_s, popen=self._popen
                )
                self.pid = None
                self._popen = None
            if self._own_root:
                shutil.rmtree(self.root, ignore_errors=True)

    @property
    def running(self) -> bool:
        return self.pid is not None and process_alive(self.pid)

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"PostgresServer({self.host}:{self.port}, root={str(self.root)!r})"

    # ------------------------------------------------------------------ databases
    def execute(self, sql: str, database: str = DEFAULT_DATABASE, ignore_exists: bool = False) -> None:
        """Run one statement in autocommit mode (CREATE/DROP DATABASE need it)."""
        import psycopg
        from psycopg import errors

        with psycopg.connect(self.conninfo(database), autocommit=True) as conn:
            try:
                conn.execute(sql.encode())
            except errors.DuplicateDatabase:
                if not ignore_exists:
                    raise

    def create_database(self, name: str) -> str:
        """A new empty database; returns its SQLAlchemy URL."""
        if not _NAME.match(name):
            raise ConfigError(f"invalid database name {name!r}", hint="use lower-case letters, digits and _")
        self.execute(f"CREATE DATABASE {name}", database="postgres")
        return self.uri(name)

    def create_schema(self, name: str, database: str = DEFAULT_DATABASE) -> str:
        """A new empty schema in ``database`` (much cheaper than a database: tests get one
        each); returns the SQLAlchemy URL whose connections use it."""
        if not _NAME.match(name):
            raise ConfigError(f"invalid schema name {name!r}", hint="use lower-case letters, digits and _")
        self.execute(f"CREATE SCHEMA {name}", database=database)
        return self.uri(database, schema=name)

    def drop_database(self, name: str) -> None:
        if not _NAME.match(name):
            raise ConfigError(f"invalid database name {name!r}", hint="use lower-case letters, digits and _")
        self.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)", database="postgres")


# ---------------------------------------------------------------------- the script's commands
def _stop_from_state(root: Path) -> bool:
    path = root / STATE_FILE
    if not path.is_file():
        return False
    state: dict[str, Any] = json.loads(path.read_text())
    pid = int(state["pid"])
    # signal only the server this directory started: its command line names the data directory
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        cmdline = []
    if str(state["data_dir"]).encode() in cmdline and process_alive(pid):
        stop_process_group(pid, signal_first=signal.SIGINT)
    path.unlink()
    return True


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(
        prog="python -m icefloe.testing.postgres", description=__doc__.splitlines()[0]
    )
    sub = p.add_subparsers(dest="command", required=True)
    start = sub.add_parser("start", help="start a server in DIR (created if missing); prints its settings")
    start.add_argument("dir", type=Path)
    start.add_argument("--port", type=int, default=None, help="loopback port (default: a free one)")
    start.add_argument("--durable", action="store_true", help="keep fsync on (for benchmarks)")
    stop = sub.add_parser("stop", help="stop the server started in DIR")
    stop.add_argument("dir", type=Path)
    args = p.parse_args(argv)
    root = args.dir.resolve()
    if args.command == "stop":
        if not _stop_from_state(root):
            sys.stderr.write(f"no server state in {root}\n")
            return 1
        return 0
    if (root / STATE_FILE).is_file():
        sys.stderr.write(f"{root} already has a server; stop it first\n")
        return 1
    server = PostgresServer(root, args.port, durable=args.durable, install=True).start(detach=True)
    sys.stdout.write(
        f"ICEFLOE_PG_URI={server.uri()}\n"
        f"ICEFLOE_PG_JDBC_URL={server.jdbc_url()}\n"
        f"ICEFLOE_PG_USER={server.user}\n"
        f"ICEFLOE_PG_PASSWORD={server.password}\n"
        f"ICEFLOE_PG_PORT={server.port}\n"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
