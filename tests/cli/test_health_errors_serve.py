"""``icefloe health``, how errors reach the user, ``serve`` and ``demo``."""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import icefloe
from icefloe.cli._app import cli
from icefloe.cli._serve import server_parser
from tests.cli.conftest import Invoke, as_json


def test_health(icefloe_cli: Invoke, orders: icefloe.Table, tmp_path: Path) -> None:
    healthy = icefloe_cli("health", "sales.orders")
    assert healthy.stdout.startswith("sales.orders: healthy")
    report = tmp_path / "report.html"
    r = icefloe_cli(
        "health", "sales.orders", "-t", "min_input_files=2", "-t", "max_manifests=3", "--html", str(report)
    )
    assert "needs maintenance" in r.stdout
    assert "icefloe compact sales.orders" in r.stdout and "icefloe rewrite-manifests sales.orders" in r.stdout
    page = report.read_text()
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page and "icefloe compact sales.orders" in page
    d = as_json(icefloe_cli("health", "sales.orders", "-t", "min_input_files=2", "--json"))
    assert d["healthy"] is False and d["table"] == "sales.orders"
    assert [f["code"] for f in d["findings"]] == ["small_files"]
    assert d["findings"][0]["command"] == "icefloe compact sales.orders"
    assert d["data_files"] == 5 and d["delete_files"] == 1
    # for schedulers: exit 3 when a finding is that severe
    icefloe_cli("health", "sales.orders", "-t", "min_input_files=2", "--fail-on", "warning", code=3)
    icefloe_cli("health", "sales.orders", "--fail-on", "warning")
    r = icefloe_cli("health", "sales.orders", "-t", "nope=1", code=1)
    assert r.stderr.startswith("error: unknown threshold 'nope'")


@pytest.mark.parametrize(
    ("args", "code", "first_line", "hint"),
    [
        (["describe", "sales.nope"], 1, "error: table 'sales.nope' does not exist in catalog 'default'",
         "hint: tables in 'sales': orders"),
        (["describe", "nope"], 1, "error: invalid table identifier 'nope'",
         "hint: name tables with their namespace"),
        (["files", "sales.orders", "--snapshot", "42"], 1, "error: ", None),
        (["nope"], 2, "error: No such command 'nope'.", "hint: see 'icefloe --help'"),
        (["describe"], 2, "error: Missing argument 'TABLE'.", "hint: see 'icefloe describe --help'"),
        (["--property", "novalue", "tables"], 1, "error: invalid --property 'novalue'",
         "hint: write --property KEY=VALUE"),
    ],
)  # fmt: skip
def test_errors_are_one_line_and_a_hint(
    icefloe_cli: Invoke, orders: icefloe.Table, args: list[str], code: int, first_line: str, hint: str | None
) -> None:
    r = icefloe_cli(*args, code=code)
    lines = r.stderr.splitlines()
    assert lines[0].startswith(first_line), r.stderr
    if hint is not None:
        assert lines[1].startswith(hint), r.stderr
    assert "Traceback" not in r.stderr and "Traceback" not in r.stdout
    assert r.stdout == ""


def test_no_catalog_configured(icefloe_cli: Invoke) -> None:
    r = icefloe_cli("tables", global_args=[], code=1)
    assert r.stderr.startswith("error: catalog 'default' is not configured")
    assert "hint: configure it in ~/.icefloe.yaml" in r.stderr
    assert "icefloe --uri sqlite:///catalog.db --warehouse" in r.stderr


def test_catalog_from_config_file_and_environment(
    tmp_path: Path, orders: icefloe.Table, monkeypatch: pytest.MonkeyPatch, icefloe_cli: Invoke
) -> None:
    (tmp_path / ".icefloe.yaml").write_text(
        f"catalog:\n  prod:\n    uri: sqlite:///{tmp_path / 'cat.db'}\n"
        f"    warehouse: {(tmp_path / 'wh').as_uri()}\n"
    )
    # the tables live under catalog name 'default' in the database: --catalog picks the config
    # section, the catalog's name in the database follows it
    assert as_json(icefloe_cli("--catalog", "prod", "tables", "--json", global_args=[])) == []
    monkeypatch.setenv("ICEFLOE_CATALOG__DEFAULT__URI", f"sqlite:///{tmp_path / 'cat.db'}")
    assert as_json(icefloe_cli("tables", "--json", global_args=[])) == ["sales.orders"]
    monkeypatch.setenv("ICEFLOE_CATALOG", "prod")
    assert as_json(icefloe_cli("tables", "--json", global_args=[])) == []


def test_debug_shows_the_traceback(catalog_args: list[str], orders: icefloe.Table) -> None:
    r = CliRunner().invoke(cli, ["--debug", *catalog_args, "describe", "sales.nope"])
    assert r.exit_code == 1 and isinstance(r.exception, icefloe.NoSuchTableError)


def test_unexpected_errors_say_how_to_see_more(
    icefloe_cli: Invoke, orders: icefloe.Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_: Any, **__: Any) -> Any:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr("icefloe.cli._catalog_cmds.describe_table", broken)
    r = icefloe_cli("describe", "sales.orders", code=1)
    assert r.stderr.splitlines() == [
        "error: unexpected RuntimeError: disk on fire",
        "hint: run with --debug for the traceback",
    ]


def test_console_script_and_module_entry_points(tmp_path: Path) -> None:
    exe = Path(sys.executable).parent / "icefloe"
    if not exe.exists():
        pytest.skip("the console script is not installed (pip install -e .)")
    r = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and icefloe.__version__ in r.stdout
    home = {"HOME": str(tmp_path), "ICEFLOE_HOME": str(tmp_path)}
    r = subprocess.run(
        [sys.executable, "-m", "icefloe.cli", "describe", "x"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={**os.environ, **home},
    )
    assert r.returncode == 1 and r.stderr.startswith("error: ") and "Traceback" not in r.stderr


# --------------------------------------------------------------------------- serve


def test_serve_takes_exactly_the_servers_options() -> None:
    parser = server_parser()
    command = cli.commands["serve"]
    click_flags = {opt for p in command.params for opt in p.opts}
    argparse_flags = {opt for a in parser._actions for opt in a.option_strings}
    assert click_flags == argparse_flags
    assert {"--uri", "--warehouse", "--host", "--port", "--token", "--allow-location"} <= click_flags


def test_serve_passes_the_options_to_the_server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    seen: list[argparse.Namespace] = []
    monkeypatch.setattr("icefloe.rest._main.run", seen.append)
    argv = [
        "--uri", "sqlite:///x.db", "--warehouse", "file:///wh", "--host", "127.0.0.1", "--port", "9001",
        "--token", "t1", "--token", "t2", "--allow-location", "s3://b/", "--property", "s3.endpoint=http://h",
        "--allow-anonymous", "--log-level", "warning",
    ]  # fmt: skip
    r = CliRunner().invoke(cli, ["serve", *argv])
    assert r.exit_code == 0, r.output
    expected = server_parser().parse_args(argv)
    assert vars(seen[0]) == vars(expected)
    # the global options fill in what serve is not given
    r = CliRunner().invoke(
        cli, ["--uri", "sqlite:///g.db", "--warehouse", "file:///g", "serve", "--port", "9002"]
    )
    assert r.exit_code == 0, r.output
    assert (seen[1].uri, seen[1].warehouse, seen[1].port) == ("sqlite:///g.db", "file:///g", 9002)
    r = CliRunner().invoke(cli, ["serve"])
    assert r.exit_code == 2 and "missing option --warehouse" in r.stderr


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_serve_runs_the_rest_server(tmp_path: Path) -> None:
    httpx = pytest.importorskip("httpx")
    pytest.importorskip("fastapi")
    exe = Path(sys.executable).parent / "icefloe"
    if not exe.exists():
        pytest.skip("the console script is not installed")
    port = _free_port()
    env = {**os.environ, "ICEFLOE_REST_TOKEN": "secret", "HOME": str(tmp_path), "ICEFLOE_HOME": str(tmp_path)}
    proc = subprocess.Popen(
        [str(exe), "--uri", f"sqlite:///{tmp_path / 'c.db'}", "--warehouse", (tmp_path / "wh").as_uri(),
         "serve", "--port", str(port), "--log-level", "warning"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with httpx.Client() as client:
                    r = client.get(
                        f"http://127.0.0.1:{port}/v1/config", headers={"Authorization": "Bearer secret"}
                    )
                break
            except httpx.TransportError:
                assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
                assert time.monotonic() < deadline
                time.sleep(0.2)
        assert r.status_code == 200, r.text
        with httpx.Client() as client:
            assert client.get(f"http://127.0.0.1:{port}/v1/config").status_code == 401
        with icefloe.load_catalog("r", uri=f"http://127.0.0.1:{port}", token="secret") as rest:
            rest.create_namespace("n")
            assert rest.list_namespaces() == [("n",)]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        if proc.stderr is not None:
            proc.stderr.close()


# --------------------------------------------------------------------------- demo


def test_demo_names_the_missing_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("shutil.which", lambda _name: None)
    monkeypatch.setattr(sys, "executable", "/nonexistent/bin/python")
    r = CliRunner().invoke(cli, ["demo", "--engine", "arrow"])
    assert r.exit_code == 1
    assert r.stderr.splitlines() == [
        "error: the demo generates its TPC-H data with tpchgen-cli, which is not installed",
        "hint: pip install 'icefloe[demo]'",
    ]


def test_demo_help_is_the_demos(monkeypatch: pytest.MonkeyPatch) -> None:
    r = CliRunner().invoke(cli, ["demo", "--help"])
    assert r.exit_code == 0 and "--engine" in r.stdout and "--scale" in r.stdout


def test_json_output_is_plain_json(icefloe_cli: Invoke, orders: icefloe.Table) -> None:
    for args in (["describe", "sales.orders"], ["snapshots", "sales.orders"], ["files", "sales.orders"]):
        json.loads(icefloe_cli(*args, "--json").stdout)
