"""Input data for the scenarios, generated once and cached under ``bench/.data`` (gitignored).

- TPC-H ``lineitem`` at a scale factor, from ``tpchgen-cli`` (``tpch/sf<scale>/lineitem.parquet``),
  cast to plain Arrow types (tpchgen writes ``string_view`` and its own field ids);
- a catalog (SQLite) holding ``b.lineitem``: that data appended by icefloe, in several files, which
  the scan and delete scenarios read; built once per scale factor.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

__all__ = [
    "DATA_DIR",
    "catalog_properties",
    "clear_icefloe_caches",
    "lineitem",
    "lineitem_path",
    "lineitem_table",
    "plain",
]

DATA_DIR = Path(__file__).resolve().parent / ".data"
# Small files so that a small scale factor still gives a multi-file table (parallel reads, COW
# rewrites several files): the writer rolls to a new file at this size, checked when a row group
# is flushed, so row groups are made small too.
TABLE_PROPERTIES = {
    "write.target-file-size-bytes": str(8 * 1024 * 1024),
    "write.parquet.row-group-size-bytes": str(16 * 1024 * 1024),
}


def _scale_text(scale: float) -> str:
    return f"{scale:g}"


def lineitem_path(data_dir: Path, scale: float) -> Path:
    out = data_dir / "tpch" / f"sf{_scale_text(scale)}"
    path = out / "lineitem.parquet"
    if path.exists():
        return path
    exe = shutil.which("tpchgen-cli") or str(Path(sys.executable).parent / "tpchgen-cli")
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    subprocess.run(
        [exe, "parquet", "-s", _scale_text(scale), "--tables=lineitem", f"--output-dir={tmp}"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return path


def plain(t: pa.Table) -> pa.Table:
    """Plain Arrow types and no field-id metadata: what a user's data usually looks like."""
    fields = [
        pa.field(f.name, pa.string() if pa.types.is_string_view(f.type) else f.type, nullable=f.nullable)
        for f in t.schema
    ]
    return t.cast(pa.schema(fields))


def lineitem(data_dir: Path, scale: float) -> pa.Table:
    return plain(pq.read_table(lineitem_path(data_dir, scale)))


def catalog_properties(root: Path) -> dict[str, str]:
    return {
        "type": "sql",
        "uri": f"sqlite:///{(root / 'catalog.db').resolve()}",
        "warehouse": (root / "warehouse").resolve().as_uri(),
    }


def lineitem_table(data_dir: Path, scale: float) -> Any:
    """The cached icefloe table ``b.lineitem`` (unpartitioned, sorted by ``l_shipdate`` so that a
    date filter can skip files and row groups), built on first use."""
    import icefloe

    root = data_dir / f"lineitem-v4-sf{_scale_text(scale)}"
    done = root / "READY"
    if not done.exists():
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        data = lineitem(data_dir, scale).sort_by("l_shipdate")
        cat = icefloe.load_catalog("bench_data", **catalog_properties(root))
        cat.create_namespace("b")
        t = cat.create_table(
            "b.lineitem",
            schema=data.schema,
            properties=TABLE_PROPERTIES,
        )
        # In 64k-row batches: icefloe's writer rolls files and row groups only between the
        # batches it is given (one 600k-row chunk would become one file of one row group).
        t.append(data.to_batches(max_chunksize=65_536))
        cat.close()
        done.write_text("ok\n")
    cat = icefloe.load_catalog("bench_data", **catalog_properties(root))
    return cat.load_table("b.lineitem")


def clear_icefloe_caches() -> None:
    """Empty icefloe's process-wide caches of decoded manifest lists and manifests: the next plan
    or scan is the first of its snapshot in this process (the "cold" contenders)."""
    from icefloe.manifest.manifest_list import clear_manifest_list_cache
    from icefloe.manifest.reader import clear_manifest_cache

    clear_manifest_list_cache()
    clear_manifest_cache()
