"""The documentation stays true: every Python block of README.md and docs/index.md runs as
written (twice: examples must survive a second run), ``mkdocs build --strict`` succeeds, and
docs/cli.md documents every command. Blocks starting with ``# (Spark)`` run in
tests/spark/test_readme_spark.py."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# the examples' absolute paths (Spark's workers do not share the driver's working directory)
README_PREFIX = "/tmp/icefloe-readme"
QUICKSTART_WAREHOUSE = "/tmp/quickstart-wh"


def python_blocks(path: Path, *, spark: bool = False) -> list[str]:
    blocks = re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)
    return [b for b in blocks if b.lstrip().startswith("# (Spark)") == spark]


def run_blocks(path: Path, blocks: list[str], tmp_path: Path, namespace: dict[str, object]) -> None:
    for i, block in enumerate(blocks):
        # the examples' files go to absolute paths: keep the test's inside tmp_path
        code = block.replace(README_PREFIX, str(tmp_path / "icefloe-readme")).replace(
            QUICKSTART_WAREHOUSE, str(tmp_path / "quickstart-wh")
        )
        try:
            exec(compile(code, f"{path.name}[python block {i}]", "exec"), namespace)
        except Exception as e:
            raise AssertionError(f"python block {i} of {path.name} failed:\n{block}") from e


@pytest.fixture
def docs_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("ICEFLOE_HOME", str(tmp_path))  # no ~/.icefloe.yaml
    return tmp_path


@pytest.mark.parametrize("doc", ["README.md", "docs/index.md"])
def test_python_blocks_run_twice(doc: str, docs_cwd: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = ROOT / doc
    blocks = python_blocks(path)
    assert blocks, f"{doc} has no python block"
    for _ in range(2):
        namespace: dict[str, object] = {}
        run_blocks(path, blocks, docs_cwd, namespace)
    capsys.readouterr()


def test_readme_shows_install_and_extras() -> None:
    text = (ROOT / "README.md").read_text()
    assert "pip install icefloe" in text
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for extra in extras:
        if extra not in ("dev", "test-servers", "s3"):
            assert f"`{extra}`" in text, f"README does not list the extra {extra!r}"


def test_readme_spark_writes_name_a_mode() -> None:
    """Spark's default save mode (ErrorIfExists) is refused by the data source."""
    text = (ROOT / "README.md").read_text() + (ROOT / "docs" / "spark.md").read_text()
    for call in re.findall(r"\.write\.format\(\"icefloe\"\)[^\n`]*\.save\(", text):
        assert ".mode(" in call, call


def test_cli_reference_covers_every_command() -> None:
    from icefloe.cli._app import cli

    text = (ROOT / "docs" / "cli.md").read_text()
    for name in cli.commands:
        assert f"`{name}" in text or f"`icefloe {name}" in text, (
            f"docs/cli.md does not document `icefloe {name}`"
        )


def test_mkdocs_build_strict(tmp_path: Path) -> None:
    mkdocs = Path(sys.executable).parent / "mkdocs"
    if not mkdocs.exists():
        pytest.skip("mkdocs is not installed (pip install 'icefloe[docs]')")
    r = subprocess.run(
        [str(mkdocs), "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    site = tmp_path / "site"
    for page in ("index.html", "concepts/index.html", "cli/index.html", "spark/index.html",
                 "maintenance-guide/index.html", "api/table/index.html"):  # fmt: skip
        assert (site / page).is_file(), page
    api = (site / "api" / "table" / "index.html").read_text()
    assert "to_polars" in api and "count" in api  # the reference is generated from the docstrings
