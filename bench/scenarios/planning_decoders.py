"""Which Avro decoder to plan with: the timings behind icefloe/manifest/_avro_decoder.py.

    python -m bench.scenarios.planning_decoders [--manifests 1000] [--rounds 15]

On ``planning``'s table (``bench/.data/planning-m<N>``, built by ``python -m bench planning`` if
missing: one manifest list of N entries, N manifests of 10 entries), decodes the manifest list
once and all N manifests, with:

* ``fastavro block_reader``: fastavro's own container reader (it parses the writer schema again
  for every file), records as dicts;
* ``fastavro Block, schema parsed once``: icefloe's container parser handing fastavro's compiled
  block decoder a writer schema parsed once per schema text (``AvroFile.__iter__``);
* ``icefloe compiled decoder``: the schema-compiled decoder (``AvroFile.tuples``), records as
  tuples;
* ``icefloe selector``: the manifest list's selection pass alone (spec id, content, counts and
  raw partition summaries per manifest; what a selective plan pays before decoding the few
  manifests it keeps);
* ``icefloe objects``: the compiled decoder plus building ``ManifestFile``/``ManifestEntry``
  objects (what a full plan pays);
* ``PyIceberg 0.12 (Cython decoder_fast)``: ``pyiceberg.manifest`` reading into its objects;
* ``pyiceberg-core 0.10.1 (Rust)``: ``pyiceberg_core.manifest.read_manifest_list`` /
  ``read_manifest_entries`` on the bytes, run in the oracle venv (it is not one of our
  dependencies); for the list also with every field read back into Python.

Prints the minimum CPU time over the rounds (the machine is shared: the minimum is the least
disturbed run) as a Markdown table.
"""

from __future__ import annotations

import argparse
import glob
import io
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ORACLE_PYTHON = (
    Path(os.environ.get("ORACLE_VENV", os.path.expanduser("~/.cache/icefloe-oracle/venv"))) / "bin" / "python"
)

_RUST = r"""
import glob, json, sys, time
import pyiceberg_core.manifest as m
base, rounds = sys.argv[1], int(sys.argv[2])
lst = open(glob.glob(base + "/snap-*.avro")[0], "rb").read()
mans = [open(p, "rb").read() for p in sorted(glob.glob(base + "/bench-m*.avro"))]
def best(fn):
    out = []
    for _ in range(rounds):
        c = time.process_time(); fn(); out.append(time.process_time() - c)
    return min(out)
def touch():
    return [(e.manifest_path, e.manifest_length, e.partition_spec_id, e.added_snapshot_id,
             [(p.contains_null, p.lower_bound, p.upper_bound) for p in e.partitions])
            for e in m.read_manifest_list(lst).entries()]
print(json.dumps({
    "list": best(lambda: m.read_manifest_list(lst)),
    "list_fields": best(touch),
    "manifests": best(lambda: [m.read_manifest_entries(x) for x in mans]),
}))
"""


def _best(fn: Callable[[], Any], rounds: int) -> float:
    out = []
    for _ in range(rounds):
        c = time.process_time()
        fn()
        out.append(time.process_time() - c)
    return min(out)


def measure(base: str, rounds: int) -> dict[str, tuple[float | None, float | None]]:
    import fastavro

    from icefloe.manifest._avro import AvroFile
    from icefloe.manifest.manifest_list import _read
    from icefloe.manifest.reader import _decode

    list_path = glob.glob(base + "/snap-*.avro")[0]
    manifest_paths = sorted(glob.glob(base + "/bench-m*.avro"))
    lst = Path(list_path).read_bytes()
    mans = [Path(p).read_bytes() for p in manifest_paths]
    manifest_files = _read(io.BytesIO(lst), list_path).manifests()
    by_path = {m.manifest_path.removeprefix("file://"): m for m in manifest_files}
    files = [by_path[str(Path(p).resolve())] for p in manifest_paths]

    def fastavro_reader(data: bytes) -> list[Any]:
        return [r for b in fastavro.block_reader(io.BytesIO(data)) for r in b]

    rows: dict[str, tuple[float | None, float | None]] = {
        "fastavro block_reader (dicts)": (
            _best(lambda: fastavro_reader(lst), rounds),
            _best(lambda: [fastavro_reader(x) for x in mans], rounds),
        ),
        "fastavro Block, schema parsed once (dicts)": (
            _best(lambda: list(AvroFile(io.BytesIO(lst), "l")), rounds),
            _best(lambda: [list(AvroFile(io.BytesIO(x), "m")) for x in mans], rounds),
        ),
        "icefloe compiled decoder (tuples)": (
            _best(lambda: list(AvroFile(io.BytesIO(lst), "l").tuples()), rounds),
            _best(lambda: [list(AvroFile(io.BytesIO(x), "m").tuples()) for x in mans], rounds),
        ),
        "icefloe selector (the fields partition pruning reads, tuples; list only)": (
            _best(lambda: _read(io.BytesIO(lst), list_path).rows, rounds),
            None,
        ),
        "icefloe objects (compiled decoder + ManifestFile/ManifestEntry)": (
            _best(lambda: _read(io.BytesIO(lst), list_path).manifests(), rounds),
            _best(
                lambda: [
                    list(_decode(AvroFile(io.BytesIO(x), "m"), mf, None, False))
                    for x, mf in zip(mans, files, strict=True)
                ],
                rounds,
            ),
        ),
    }
    try:
        from pyiceberg.io.pyarrow import PyArrowFileIO
        from pyiceberg.manifest import _manifests

        pio = PyArrowFileIO()
        reader = getattr(_manifests, "__wrapped__", _manifests)
        py_list = list(reader(pio, list_path))
        rows["PyIceberg 0.12 (Cython decoder_fast, its objects)"] = (
            _best(lambda: list(reader(pio, list_path)), rounds),
            _best(
                lambda: [m.fetch_manifest_entry(pio, discard_deleted=True) for m in py_list],
                max(1, rounds // 3),
            ),
        )
    except ImportError:
        pass
    if ORACLE_PYTHON.exists():
        proc = subprocess.run(
            [str(ORACLE_PYTHON), "-c", _RUST, base, str(rounds)], capture_output=True, text=True, check=False
        )
        if proc.returncode == 0:
            rust = json.loads(proc.stdout.strip().splitlines()[-1])
            rows["pyiceberg-core 0.10.1 (Rust, its objects)"] = (rust["list"], rust["manifests"])
            rows["pyiceberg-core 0.10.1 (Rust, every list field read)"] = (rust["list_fields"], None)
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.scenarios.planning_decoders")
    p.add_argument("--manifests", type=int, default=1000)
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--data-dir", default=str(Path(__file__).resolve().parent.parent / ".data"))
    args = p.parse_args(argv)
    base = Path(args.data_dir) / f"planning-m{args.manifests}" / "warehouse" / "b" / "many_files" / "metadata"
    if not base.exists():
        print(f"{base} not found: run `python -m bench planning --planning-manifests {args.manifests}` first")
        return 1
    rows = measure(str(base), args.rounds)
    print(
        f"| decoder | manifest list ({args.manifests:,} entries), ms CPU | {args.manifests:,} manifests "
        f"({args.manifests * 10:,} entries), ms CPU |"
    )
    print("| --- | ---: | ---: |")
    for name, (lst, mans) in rows.items():
        cells = [f"{v * 1e3:,.2f}" if v is not None else "-" for v in (lst, mans)]
        print(f"| {name} | {cells[0]} | {cells[1]} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
