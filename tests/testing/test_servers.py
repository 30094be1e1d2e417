"""The test servers (icefloe/testing/postgres.py, seaweedfs.py): they listen on loopback only, on
the ports chosen for them; the scripts' start/stop commands work; a server never outlives the
process that started it, even one killed with SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from icefloe.testing._process import process_alive


def listening(pid: int) -> set[tuple[str, int]]:
    """(address, port) of every TCP socket ``pid`` listens on (from /proc, IPv4 and IPv6)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    found = set()
    for table in ("tcp", "tcp6"):
        lines = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
        for line in lines:
            cols = line.split()
            local, state, inode = cols[1], cols[3], cols[9]
            if state != "0A" or inode not in inodes:  # 0A = LISTEN
                continue
            hex_ip, hex_port = local.split(":")
            if table == "tcp":
                ip = ".".join(str(int(hex_ip[i : i + 2], 16)) for i in (6, 4, 2, 0))
            else:
                ip = "::" if int(hex_ip, 16) == 0 else hex_ip
            found.add((ip, int(hex_port, 16)))
    return found


def test_seaweedfs_listens_on_loopback_only(seaweedfs_server: Any) -> None:
    sockets = listening(seaweedfs_server.pid)
    assert sockets, "the server listens on nothing?"
    assert {ip for ip, _ in sockets} == {"127.0.0.1"}, sockets
    assert {port for _, port in sockets} <= set(seaweedfs_server.ports.values())
    assert seaweedfs_server.ports["s3"] in {port for _, port in sockets}


def test_seaweedfs_refuses_requests_without_the_key(seaweedfs_server: Any) -> None:
    import pyarrow.fs as pafs

    anonymous = pafs.S3FileSystem(
        anonymous=True, endpoint_override=seaweedfs_server.endpoint.split("://")[1], scheme="http"
    )
    target = f"{seaweedfs_server.bucket}/anonymous.txt"
    with (
        pytest.raises(OSError, match=r"ACCESS_DENIED|Access Denied|403"),
        anonymous.open_output_stream(target) as f,
    ):
        f.write(b"x")


def test_postgres_listens_on_loopback_only_and_needs_the_password(postgres_server: Any) -> None:
    import psycopg

    assert listening(postgres_server.pid) == {("127.0.0.1", postgres_server.port)}
    wrong = postgres_server.conninfo().replace(postgres_server.password, "wrong")
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(wrong).close()


def test_postgres_script_start_and_stop(tmp_path: Path, postgres_server: Any) -> None:
    """``python -m icefloe.testing.postgres start DIR`` (behind scripts/postgres.sh) leaves a
    detached server described by DIR/server.json; ``stop DIR`` ends it."""
    import psycopg

    root = Path("/tmp") / f"icefloe-pg-script-{os.getpid()}"  # reachable by the postgres user
    module = [sys.executable, "-m", "icefloe.testing.postgres"]
    try:
        out = subprocess.run([*module, "start", str(root)], capture_output=True, text=True, timeout=180)
        assert out.returncode == 0, out.stderr
        settings = dict(line.split("=", 1) for line in out.stdout.split())
        state = json.loads((root / "server.json").read_text())
        assert settings["ICEFLOE_PG_URI"] == state["uri"]
        with psycopg.connect(state["uri"].replace("postgresql+psycopg", "postgresql")) as conn:
            assert conn.execute("select current_database()").fetchone() == ("icefloe",)
        again = subprocess.run([*module, "start", str(root)], capture_output=True, text=True, timeout=60)
        assert again.returncode == 1 and "already has a server" in again.stderr
        stop = subprocess.run([*module, "stop", str(root)], capture_output=True, text=True, timeout=60)
        assert stop.returncode == 0, stop.stderr
        assert not process_alive(state["pid"])
        assert not (root / "server.json").exists()
        # started again on the same directory: same data, same password
        out = subprocess.run([*module, "start", str(root)], capture_output=True, text=True, timeout=180)
        assert out.returncode == 0, out.stderr
        assert (
            dict(line.split("=", 1) for line in out.stdout.split())["ICEFLOE_PG_PASSWORD"]
            == state["password"]
        )
    finally:
        subprocess.run([*module, "stop", str(root)], capture_output=True, timeout=60)
        subprocess.run(["rm", "-rf", str(root)], check=False)


_CHILD = """
import sys, time
from icefloe.testing.seaweedfs import SeaweedFS
server = SeaweedFS(sys.argv[1], iceberg=False).start()
print(server.pid, flush=True)
time.sleep(600)
"""


def test_a_server_dies_with_the_process_that_started_it(seaweedfs_server: Any, tmp_path: Path) -> None:
    """The session fixture's server is tied to pytest; here a child process starts one and is
    killed with SIGKILL (no cleanup code runs): the kernel's parent-death signal stops the server."""
    root = tmp_path / "s3"  # the killed child cannot remove its server's directory; pytest does
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(root)], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        server_pid = int(child.stdout.readline())
        assert process_alive(server_pid)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        if child.stdout is not None:
            child.stdout.close()
    deadline = time.monotonic() + 30
    while process_alive(server_pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not process_alive(server_pid)
