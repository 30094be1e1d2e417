"""scripts/seaweedfs.sh as a user runs it: ``start DIR`` leaves a detached SeaweedFS described by
DIR/server.json and prints its settings, ``env DIR`` prints them as a catalog's environment
variables (what ``./run demo --warehouse s3://...`` reads), ``stop DIR`` ends the server."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest

from icefloe.catalog._config import catalog_properties
from icefloe.testing._process import process_alive

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = str(ROOT / "scripts" / "seaweedfs.sh")


@pytest.mark.s3
def test_seaweedfs_script_start_env_and_stop(
    tmp_path: Path, seaweedfs_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pyarrow.fs as pafs

    root = tmp_path / "s3"
    try:
        out = subprocess.run([SCRIPT, "start", str(root)], capture_output=True, text=True, timeout=180)
        assert out.returncode == 0, out.stderr
        settings = dict(line.split("=", 1) for line in out.stdout.split())
        state = json.loads((root / "server.json").read_text())
        assert settings["ICEFLOE_S3_ENDPOINT"] == state["endpoint"]
        assert settings["ICEFLOE_S3_WAREHOUSE"] == "s3://warehouse"
        assert process_alive(state["pid"])

        env = subprocess.run([SCRIPT, "env", str(root)], capture_output=True, text=True, timeout=60)
        assert env.returncode == 0, env.stderr
        for line in env.stdout.splitlines():
            key, _, value = line.removeprefix("export ").partition("=")
            monkeypatch.setenv(key, shlex.split(value)[0])
        props = catalog_properties("demo")
        assert props == state["file_io_properties"]
        fs = pafs.S3FileSystem(
            access_key=props["s3.access-key-id"],
            secret_key=props["s3.secret-access-key"],
            endpoint_override=props["s3.endpoint"].removeprefix("http://"),
            scheme="http",
            region=props["s3.region"],
        )
        assert fs.get_file_info("warehouse").type == pafs.FileType.Directory

        stop = subprocess.run([SCRIPT, "stop", str(root)], capture_output=True, text=True, timeout=60)
        assert stop.returncode == 0, stop.stderr
        assert not process_alive(state["pid"]) and not (root / "server.json").exists()
        missing = subprocess.run([SCRIPT, "env", str(root)], capture_output=True, text=True, timeout=60)
        assert missing.returncode == 1 and "no server state" in missing.stderr
    finally:
        if (root / "server.json").exists():
            subprocess.run([SCRIPT, "stop", str(root)], capture_output=True, timeout=60)
