"""Starting and stopping the real servers that tests and benchmarks run against (PostgreSQL,
SeaweedFS): free loopback ports, a child process tied to its parent, readiness polling, and a
shutdown that always ends the whole process group within a bounded time.

A server started for a test run is tied to the Python process that started it: it runs in its own
process group (so stopping it ends every helper process it forked) and, on Linux, gets a signal
when its parent dies (``PR_SET_PDEATHSIG``), so a test run killed with SIGKILL does not leave
servers behind. A server started by a script (``detach=True``) outlives the script and is stopped
by the script's ``stop`` command, which checks that the process it signals is the one it started.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from icefloe.errors import IcefloeError

__all__ = [
    "LOOPBACK",
    "ServerStartError",
    "free_ports",
    "port_open",
    "process_alive",
    "start_server_process",
    "stop_process_group",
    "wait_until",
]

LOOPBACK = "127.0.0.1"
_PR_SET_PDEATHSIG = 1


class ServerStartError(IcefloeError):
    """A test server did not start (or stop) in time; the hint names its log file."""


def free_ports(count: int, host: str = LOOPBACK) -> list[int]:
    """``count`` distinct ports that are free on ``host`` right now (held open together while
    choosing, so they differ; another process may still take one before the server binds it)."""
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((host, 0))
            sockets.append(s)
        return [int(s.getsockname()[1]) for s in sockets]
    finally:
        for s in sockets:
            s.close()


def port_open(port: int, host: str = LOOPBACK, timeout: float = 0.5) -> bool:
    """Whether something accepts TCP connections on ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie (exited, not yet reaped) counts as gone
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state != "Z"


def _pdeathsig_preexec(sig: int, parent: int, uid: int | None, gid: int | None) -> Callable[[], None]:
    """A ``preexec_fn``: drop to ``uid``/``gid`` when given, then ask the kernel to send ``sig``
    when the parent dies. The order matters: changing credentials clears the death signal."""

    def preexec() -> None:
        if gid is not None:
            os.setgroups([])
            os.setresgid(gid, gid, gid)
        if uid is not None:
            os.setresuid(uid, uid, uid)
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the signal was armed
            os._exit(1)

    return preexec


def start_server_process(
    argv: Sequence[str],
    log_path: Path,
    *,
    parent_death_signal: int = signal.SIGTERM,
    detach: bool = False,
    uid: int | None = None,
    gid: int | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``argv`` in a new session (its own process group) with stdout and stderr appended to
    ``log_path``. Unless ``detach``, the server gets ``parent_death_signal`` when this process
    dies. ``uid``/``gid`` run it as another user (PostgreSQL refuses to run as root)."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        preexec = (
            None
            if detach and uid is None
            else _pdeathsig_preexec(0 if detach else int(parent_death_signal), os.getpid(), uid, gid)
        )
        return subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=preexec,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            close_fds=True,
        )


def stop_process_group(
    pid: int,
    *,
    signal_first: int = signal.SIGTERM,
    timeout_s: float = 20.0,
    popen: subprocess.Popen[bytes] | None = None,
) -> bool:
    """Stop the server ``pid`` and its process group: ``signal_first``, then SIGKILL to the whole
    group after ``timeout_s``. Returns True when it had to kill. Never waits longer than
    ``timeout_s`` plus a few seconds."""
    try:
        pgid = os.getpgid(pid)
    except ProcessLookupError:
        pgid = pid
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal_first)
    killed = False
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if popen is not None:
            if popen.poll() is not None:
                break
        elif not process_alive(pid):
            break
        time.sleep(0.05)
    else:
        killed = True
    # whatever is left of the group (helpers the server forked) goes too
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    if popen is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            popen.wait(timeout=5)
    return killed


def wait_until(
    ready: Callable[[], bool],
    *,
    timeout_s: float,
    what: str,
    log_path: Path,
    popen: subprocess.Popen[bytes] | None = None,
    interval_s: float = 0.1,
) -> None:
    """Poll ``ready()`` until it is true; `ServerStartError` with the log's tail when the process
    exits first or ``timeout_s`` passes."""
    deadline = time.monotonic() + timeout_s
    while True:
        if popen is not None and popen.poll() is not None:
            raise ServerStartError(
                f"{what} exited with status {popen.returncode} while starting:\n{log_tail(log_path)}",
                hint=f"see {log_path}",
                log=str(log_path),
            )
        if ready():
            return
        if time.monotonic() > deadline:
            raise ServerStartError(
                f"{what} was not ready after {timeout_s:.0f}s:\n{log_tail(log_path)}",
                hint=f"see {log_path}; the machine may be overloaded",
                log=str(log_path),
            )
        time.sleep(interval_s)


def log_tail(path: Path, lines: int = 30) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])
