"""Shared helpers of the interoperability suite: locating the oracle harness, loading its
checksum definition, canonical row texts, and driving ``verify_table.py`` in batch mode.

The oracle (``../shared/oracle``) is the arbiter: Iceberg Java 1.10 through Spark, PyIceberg 0.12
and DuckDB 1.5 read the tables icefloe writes, in their own venv.  Everything here runs in the
dev venv; the oracle scripts run as subprocesses with the oracle's Python.
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pyarrow as pa
import pytest

REPO = Path(__file__).resolve().parents[2]
REQUIRE_ORACLE = os.environ.get("ICEFLOE_REQUIRE_ORACLE", "") == "1"
ENGINES = ("spark", "pyiceberg", "duckdb")


def oracle_dir() -> Path:
    """The oracle scripts: ``$ICEFLOE_ORACLE_DIR`` or ``<repo>/../shared/oracle``."""
    env = os.environ.get("ICEFLOE_ORACLE_DIR")
    return Path(env) if env else (REPO.parent / "shared" / "oracle").resolve()


def oracle_python() -> Path:
    venv = os.environ.get("ORACLE_VENV") or os.path.expanduser("~/.cache/icefloe-oracle/venv")
    return Path(venv) / "bin" / "python"


def missing_oracle_reason() -> str | None:
    """Why the oracle cannot run here, or None when it can."""
    d = oracle_dir()
    if not (d / "verify_table.py").exists():
        return f"oracle scripts not found at {d} (set ICEFLOE_ORACLE_DIR)"
    if not oracle_python().exists():
        return f"oracle venv missing at {oracle_python().parent.parent}; run {d / 'setup.sh'} first"
    return None


def require_oracle() -> None:
    """Skip (or fail under ``ICEFLOE_REQUIRE_ORACLE=1``, as in CI) when the oracle is absent."""
    reason = missing_oracle_reason()
    if reason is None:
        return
    if REQUIRE_ORACLE:
        pytest.fail(f"ICEFLOE_REQUIRE_ORACLE=1 but {reason}")
    pytest.skip(reason)


def oracle_hash() -> str:
    """Hash of the oracle scripts; reference tables made by other scripts are stale."""
    h = hashlib.sha256()
    d = oracle_dir()
    # same definition as scripts/oracle_ref_tables.sh: "<name>\n<content>" per file, C-sorted
    for name in sorted(p.name for p in [*d.glob("*.py"), *d.glob("*.sh")]):
        h.update(name.encode() + b"\n")
        h.update((d / name).read_bytes())
    return h.hexdigest()[:16]


_CANON: ModuleType | None = None


def canon() -> ModuleType:
    """The oracle's ``canon.py``, imported by path (it is plain standard-library Python)."""
    global _CANON
    if _CANON is None:
        path = oracle_dir() / "canon.py"
        if not path.exists():
            require_oracle()
        spec = importlib.util.spec_from_file_location("icefloe_oracle_canon", path)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        _CANON = mod
    return _CANON


# ------------------------------------------------------------------ canonical rows


def local_path(location: str) -> str:
    if location.startswith("file:"):
        p = location[len("file:") :]
        while p.startswith("//"):
            p = p[1:]
        return p
    return location


def load_metadata(location: str) -> dict[str, Any]:
    meta: dict[str, Any] = canon().load_metadata_json(local_path(location))
    return meta


def schema_json(location: str, snapshot_id: int | None = None) -> dict[str, Any]:
    """The Iceberg schema (JSON) a reader must use for ``snapshot_id``, straight from the file."""
    meta = load_metadata(location)
    sid = snapshot_id if snapshot_id is not None else meta.get("current-snapshot-id")
    s: dict[str, Any] = canon().schema_for(meta, sid)
    return s


def canon_texts(schema: Mapping[str, Any], rows: Iterable[Any]) -> collections.Counter[str]:
    c = canon()
    return collections.Counter(c.row_text(schema, r) for r in rows)


def checksum(schema: Mapping[str, Any], rows: Iterable[Any]) -> tuple[int, str]:
    n, ck = canon().checksum_rows(schema, rows)
    return int(n), str(ck)


def arrow_rows(table: pa.Table) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = table.to_pylist()
    return rows


def diff_rows(
    schema: Mapping[str, Any],
    got: Iterable[Any],
    want: Iterable[Any],
    got_label: str = "got",
    want_label: str = "want",
    limit: int = 4,
) -> str:
    """Empty string when the row multisets are equal, else a readable sample of the difference."""
    g, w = canon_texts(schema, got), canon_texts(schema, want)
    if g == w:
        return ""
    only_g = sorted((g - w).elements())
    only_w = sorted((w - g).elements())
    lines = [
        f"{sum(g.values())} rows {got_label} vs {sum(w.values())} rows {want_label}: "
        f"{len(only_g)} only in {got_label}, {len(only_w)} only in {want_label}"
    ]
    lines += [f"  only {got_label}: {x[:500]}" for x in only_g[:limit]]
    lines += [f"  only {want_label}: {x[:500]}" for x in only_w[:limit]]
    return "\n".join(lines)


def column_names(schema: Mapping[str, Any]) -> list[str]:
    return [str(f["name"]) for f in schema["fields"]]


# ------------------------------------------------------------------ verify_table batch mode


@dataclasses.dataclass
class VerifyJob:
    """One table for ``verify_table.py --index``: its expectations per snapshot and, per engine,
    an alternative accepted result for a documented engine bug (never for icefloe)."""

    name: str  # unique key, also the "table" label in the index
    metadata_location: str
    current_snapshot_id: int | None
    snapshots: dict[int, tuple[int, str]]  # snapshot id -> (rows, checksum)
    # engine -> snapshot id -> (rows, checksum) accepted instead (known reader bug)
    known_engine_bugs: dict[str, dict[int, tuple[int, str]]] = dataclasses.field(default_factory=dict)
    # engine -> message fragment of a documented engine limitation accepted as a read error
    known_engine_errors: dict[str, str] = dataclasses.field(default_factory=dict)
    catalog_db: str | None = None  # read through the JdbcCatalog / SqlCatalog instead of the path
    catalog_name: str | None = None
    table: str | None = None  # ns.tbl inside the catalog


@dataclasses.dataclass
class VerifyOutcome:
    job: VerifyJob
    report: dict[str, Any]
    output: str  # verify_table's printed section for this table
    problems: list[str]


def _expected_doc(job: VerifyJob) -> dict[str, Any]:
    cur = job.current_snapshot_id
    doc: dict[str, Any] = {
        "table": job.name,
        "current_snapshot_id": cur,
        "snapshots": {str(k): {"row_count": v[0], "checksum": v[1]} for k, v in job.snapshots.items()},
    }
    if cur is not None:
        doc["row_count"], doc["checksum"] = job.snapshots[cur]
    else:
        doc["row_count"], doc["checksum"] = 0, "0" * 16
    if job.catalog_db:
        doc["catalog_db"] = job.catalog_db
    return doc


def run_verify_batch(
    jobs: Sequence[VerifyJob],
    workdir: Path,
    engines: Sequence[str] = ENGINES,
    consistency: bool = True,
    timeout_s: float = 900,
) -> dict[str, VerifyOutcome]:
    """Verify many tables with ONE JVM (``verify_table.py --index``) and judge each engine on each
    snapshot against the expectation (or the documented alternative for a known engine bug)."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "expected").mkdir(exist_ok=True)
    entries = []
    for job in jobs:
        fn = f"expected/{job.name}.json"
        (workdir / fn).write_text(json.dumps(_expected_doc(job), indent=1))
        e: dict[str, Any] = {
            "catalog": job.catalog_name or "icefloe",
            "table": job.table or job.name,
            "catalog_kind": "jdbc-sqlite" if job.catalog_db else "path",
            "metadata_location": local_path(job.metadata_location),
            "expected": fn,
        }
        entries.append(e)
    index = workdir / "index.json"
    index.write_text(json.dumps({"tables": entries}, indent=1))
    out_json = workdir / "report.json"
    cmd = [
        str(oracle_python()),
        str(oracle_dir() / "verify_table.py"),
        "--index",
        str(index),
        "--all-snapshots",
        "--engines",
        ",".join(engines),
        "--json-out",
        str(out_json),
        "--diff",
        "4",
    ]
    if not consistency:
        cmd.append("--no-consistency")
    t0 = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=_oracle_env())
    (workdir / "verify.log").write_text(proc.stdout + "\n--- stderr ---\n" + proc.stderr)
    if not out_json.exists():
        raise AssertionError(
            f"verify_table.py produced no report (exit {proc.returncode}, {time.time() - t0:.0f}s)\n"
            f"{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
        )
    reports = json.loads(out_json.read_text())["reports"]
    sections = _split_sections(proc.stdout)
    outcomes: dict[str, VerifyOutcome] = {}
    for job, rep in zip(jobs, reports, strict=True):
        text = sections.get(_section_title(job), "")
        outcomes[job.name] = VerifyOutcome(job, rep, text, _judge(job, rep, engines))
    return outcomes


def _split_sections(stdout: str) -> dict[str, str]:
    """verify_table prints '== <title>  (format ...)' per table; map each title to its section."""
    out: dict[str, str] = {}
    title: str | None = None
    for line in stdout.splitlines():
        if line.startswith("== "):
            title = line[3:].split("  (")[0]
            out[title] = line
        elif title is not None:
            out[title] += "\n" + line
    return out


def _section_title(job: VerifyJob) -> str:
    if job.catalog_db:
        return f"{job.catalog_name}.{job.table}"
    return local_path(job.metadata_location)


def _judge(job: VerifyJob, rep: dict[str, Any], engines: Sequence[str]) -> list[str]:
    problems: list[str] = []
    if rep.get("verdict") == "NO-TABLE":
        return [f"oracle could not read the metadata: {rep.get('error')}"]
    seen: set[int] = set()
    for check in rep.get("checks", []):
        sid = check["snapshot_id"] if check["snapshot_id"] is not None else job.current_snapshot_id
        if sid is None:
            continue
        seen.add(sid)
        want = job.snapshots.get(sid)
        for e in engines:
            r = check["engines"].get(e)
            if r is None:
                problems.append(f"{e}@{sid}: not run")
            elif not r["ok"] and job.known_engine_errors.get(e, "\0") in r["error"]:
                continue
            elif not r["ok"]:
                problems.append(f"{e}@{sid}: read error: {r['error'][:600]}")
            elif want is not None:
                got = (r["rows"], r["checksum"])
                alt = job.known_engine_bugs.get(e, {}).get(sid)
                if got != want and got != alt:
                    problems.append(
                        f"{e}@{sid}: rows/checksum {got[0]}/{got[1]} != expected {want[0]}/{want[1]}"
                        + (f" (known-bug alternative {alt[0]}/{alt[1]})" if alt else "")
                    )
    missing = set(job.snapshots) - seen
    if missing:
        problems.append(f"snapshots not checked by the oracle: {sorted(missing)}")
    accepted = job.known_engine_errors.get("spark", "\0")
    problems += [f"consistency: {p}" for p in rep.get("consistency", []) if accepted not in p]
    return problems


def _oracle_env() -> dict[str, str]:
    env = dict(os.environ)
    env["TZ"] = "UTC"
    # the oracle scripts re-exec into their venv; keep our venv's variables out of their way
    env.pop("VIRTUAL_ENV", None)
    env.pop("PYTHONPATH", None)
    return env


def run_oracle_script(args: Sequence[str], timeout_s: float = 900) -> subprocess.CompletedProcess[str]:
    """Run a Python script with the oracle's interpreter (the oracle dir is on its sys.path)."""
    env = _oracle_env()
    env["PYTHONPATH"] = str(oracle_dir())
    return subprocess.run(
        [str(oracle_python()), *args], capture_output=True, text=True, timeout=timeout_s, env=env
    )


def format_outcome(o: VerifyOutcome) -> str:
    return f"{o.job.name}: " + "; ".join(o.problems) + "\n--- verify_table output ---\n" + o.output


# ------------------------------------------------------------------ reference tables


def reference_dir() -> Path:
    # tests/conftest.py always sets it (default: the shared cache directory).
    return Path(os.environ["ICEFLOE_ORACLE_REF"])


def ensure_reference_tables() -> Path:
    """The Java reference tables, generated by ``scripts/oracle_ref_tables.sh`` when missing."""
    d = reference_dir()
    if (d / "index.json").exists() and _stamp_ok(d):
        return d
    require_oracle()
    script = REPO / "scripts" / "oracle_ref_tables.sh"
    proc = subprocess.run(
        ["bash", str(script), str(d)],
        capture_output=True,
        text=True,
        timeout=900,
        env={**_oracle_env(), "ICEFLOE_ORACLE_DIR": str(oracle_dir())},
    )
    if proc.returncode != 0 or not (d / "index.json").exists():
        pytest.fail(
            f"generating the reference tables into {d} failed (exit {proc.returncode}):\n"
            f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        )
    return d


def _stamp_ok(d: Path) -> bool:
    stamp = d / ".oracle-hash"
    # a directory made without the helper (no stamp) is trusted as is
    return not stamp.exists() or stamp.read_text().strip() == oracle_hash()


def python_executable() -> str:
    return sys.executable


# ------------------------------------------------------------------ icefloe entry point


def icefloe_catalog(name: str, db: Path, warehouse: Path) -> Any:
    """icefloe's SQLite catalog, isolated from the user's ``~/.icefloe.yaml``.

    ``ICEFLOE_INTEROP_STANDIN=<module>`` swaps in another module with the same ``load_catalog``
    (only to dry-run this harness before icefloe's public API exists)."""
    mod = importlib.import_module(os.environ.get("ICEFLOE_INTEROP_STANDIN", "icefloe"))
    saved = {k: os.environ.get(k) for k in ("ICEFLOE_HOME",)}
    os.environ["ICEFLOE_HOME"] = str(db.parent)
    try:
        return mod.load_catalog(name, uri=f"sqlite:///{db}", warehouse=warehouse.as_uri())
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def unsupported_error() -> type[BaseException]:
    from icefloe.errors import UnsupportedFeatureError

    return UnsupportedFeatureError


def require_oracle_piece(what: str) -> None:
    """Skip (or fail under ``ICEFLOE_REQUIRE_ORACLE=1``) when a piece an interop test needs
    beside the oracle venv is missing."""
    if REQUIRE_ORACLE:
        pytest.fail(f"ICEFLOE_REQUIRE_ORACLE=1 but {what} is missing")
    pytest.skip(f"{what} is missing")
