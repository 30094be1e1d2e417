"""Scans of a table of many small files, the shape streaming and frequent-batch pipelines leave
before compaction: 1,200 data files of 2,000 rows, made by 300 appends of 8,000 rows into four
identity partitions (``region``).

icefloe ``to_arrow`` vs a raw ``pyarrow.dataset`` read and ``pyarrow.parquet.read_table`` of the
same data files (given their paths up front), and vs PyIceberg 0.12's ``to_arrow`` of the same
table (``StaticTable`` on icefloe's metadata file). Full: every row and column. Filtered: three
columns, ``v < 0.1`` (about 10% of every file; no file or row group can be skipped), the filter
pushed down on every side. With position deletes: the same data files in a second table in
which a merge-on-read delete removed ``k < 10`` (1% of the rows, in every file); the raw readers
read the data files alone (they know nothing of deletes), so the ratio includes applying them.
icefloe's time includes planning (300 manifests), as a user pays it.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from bench._core import Case, CaseResult, Check, Contender, Context, Ratio, ratio_target, run_case

__all__ = ["run", "small_files_tables"]

SCENARIO = "small-files"
APPENDS = 300
ROWS_PER_FILE = 2_000
REGIONS = ("north", "south", "east", "west")
FILTER = "v < 0.1"
COLUMNS = ("id", "v", "s")
DELETE = "k < 10"


def _schema() -> Any:
    import pyarrow as pa

    return pa.schema(
        [
            ("id", pa.int64()),
            ("ts", pa.timestamp("us", tz="UTC")),
            ("region", pa.string()),
            ("k", pa.int32()),
            ("v", pa.float64()),
            ("s", pa.string()),
        ]
    )


def _append_data(i: int, rng: Any) -> Any:
    import numpy as np
    import pyarrow as pa

    n = ROWS_PER_FILE * len(REGIONS)
    base = i * n
    return pa.table(
        {
            "id": np.arange(base, base + n, dtype=np.int64),
            "ts": pa.array(
                1_704_067_200_000_000 + rng.integers(0, 86_400_000_000, n), pa.timestamp("us", tz="UTC")
            ),
            "region": np.repeat(np.array(REGIONS, dtype=object), ROWS_PER_FILE),
            "k": rng.integers(0, 1000, n).astype(np.int32),
            "v": rng.random(n),
            "s": [f"s-{x:07d}" for x in rng.integers(0, 10**7, n)],
        },
        schema=_schema(),
    )


def small_files_tables(data_dir: Path, appends: int = APPENDS) -> tuple[Any, Any]:
    """The cached tables ``s.events`` (``appends`` appends, four files each) and ``s.deleted``
    (the same data files, then a merge-on-read delete of ``k < 10``), built on first use."""
    import numpy as np

    import icefloe

    root = data_dir / f"small-files-v1-{appends}"
    props = {"type": "sql", "uri": f"sqlite:///{root / 'c.db'}", "warehouse": (root / "wh").as_uri()}
    if not (root / "READY").exists():
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        cat = icefloe.load_catalog("bench_small_files", **props)
        cat.create_namespace("s")
        t = cat.create_table("s.events", schema=_schema(), partition_by=["region"])
        rng = np.random.default_rng(17)
        for i in range(appends):
            t.append(_append_data(i, rng))
        files = [task.file for task in t.scan().plan_files()]
        d = cat.create_table(
            "s.deleted",
            schema=_schema(),
            partition_by=["region"],
            properties={"write.delete.mode": "merge-on-read"},
        )
        with d.transaction() as tx:
            tx.append_files(files, delete_on_failure=False)
        d.delete(DELETE)
        cat.close()
        (root / "READY").write_text("ok\n")
    cat = icefloe.load_catalog("bench_small_files", **props)
    return cat.load_table("s.events"), cat.load_table("s.deleted")


def _ratios(what: str, pyiceberg: bool) -> list[Ratio]:
    out = [
        Ratio(f"{what}: speed vs pyarrow.dataset", "icefloe", "pyarrow_dataset", "speed", ">=", 0.9),
        Ratio(f"{what}: speed vs pq.read_table", "icefloe", "pq_read_table", "speed"),
    ]
    if pyiceberg:
        out.append(Ratio(f"{what}: speed vs PyIceberg", "icefloe", "pyiceberg", "speed"))
    return out


def run(ctx: Context) -> list[CaseResult]:
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    ctx.say(f"    {APPENDS * len(REGIONS)} small files (cached under {ctx.data_dir}) ...")
    events, deleted = small_files_tables(ctx.data_dir)
    paths = [t.file.file_path.removeprefix("file://") for t in events.scan().plan_files()]
    try:
        from pyiceberg.table import StaticTable
    except ImportError:  # PyIceberg is a reference only
        StaticTable = None
    ds_filter = ds.field("v") < 0.1

    def rows(t: Any) -> dict[str, Any]:
        return {"rows": t.num_rows, "columns": t.num_columns}

    def same_rows(expected_equal: bool) -> Any:
        def evaluate(m: dict[str, dict[str, Any]]) -> tuple[list[Check], dict[str, Any]]:
            counts = {k: v.get("rows") for k, v in m.items()}
            if expected_equal:
                return [Check("same rows on every side", len(set(counts.values())) == 1, str(counts))], {}
            # With deletes, the raw readers see every row; icefloe and PyIceberg the live ones.
            live = {counts.get("icefloe"), counts.get("pyiceberg", counts.get("icefloe"))}
            raw = {counts.get("pyarrow_dataset"), counts.get("pq_read_table")}
            ok = len(live) == 1 and len(raw) == 1 and live != raw
            return [
                Check("deletes applied by icefloe (and PyIceberg), raw readers see all rows", ok, str(counts))
            ], {}

        return evaluate

    cases = []
    for label, table in (("", events), (" with position deletes", deleted)):
        py_table = None if StaticTable is None else StaticTable.from_metadata(table.metadata_location)
        for kind in ("full", "filtered"):
            if kind == "full":
                contenders = [
                    Contender("icefloe", lambda t=table: rows(t.scan().to_arrow())),
                    Contender(
                        "pyarrow_dataset", lambda: rows(ds.dataset(paths, format="parquet").to_table())
                    ),
                    Contender("pq_read_table", lambda: rows(pq.read_table(paths, partitioning=None))),
                ]
                if py_table is not None:
                    contenders.append(Contender("pyiceberg", lambda p=py_table: rows(p.scan().to_arrow())))
            else:
                contenders = [
                    Contender(
                        "icefloe",
                        lambda t=table: rows(t.scan(row_filter=FILTER, selected_fields=COLUMNS).to_arrow()),
                    ),
                    Contender(
                        "pyarrow_dataset",
                        lambda: rows(
                            ds.dataset(paths, format="parquet").to_table(
                                columns=list(COLUMNS), filter=ds_filter
                            )
                        ),
                    ),
                    Contender(
                        "pq_read_table",
                        lambda: rows(
                            pq.read_table(paths, columns=list(COLUMNS), filters=ds_filter, partitioning=None)
                        ),
                    ),
                ]
                if py_table is not None:
                    contenders.append(
                        Contender(
                            "pyiceberg",
                            lambda p=py_table: rows(
                                p.scan(row_filter=FILTER, selected_fields=COLUMNS).to_arrow()
                            ),
                        )
                    )
            name = kind + ("_deletes" if label else "")
            what = f"small files, {kind} scan{label}"
            desc = f"{kind} scan of {len(paths)} files x {ROWS_PER_FILE} rows{label}"
            cases.append(
                Case(
                    SCENARIO,
                    name,
                    desc,
                    contenders,
                    _ratios(what, py_table is not None),
                    evaluate=same_rows(not label),
                )
            )
    return [run_case(ctx, c) for c in cases]


# --------------------------------------------------------------------------- memory of to_batches

MEMORY_ROWS_PER_BATCH = 65_536


def _memory_batches(rows: int) -> Any:
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(5)
    schema = pa.schema([("id", pa.int64()), ("v", pa.float64()), ("s", pa.string())])
    for start in range(0, rows, MEMORY_ROWS_PER_BATCH):
        n = min(MEMORY_ROWS_PER_BATCH, rows - start)
        ids = np.arange(start, start + n, dtype=np.int64)
        # 16-character strings that compress poorly, so that files stay near their target size.
        s = pa.array(np.char.mod("%016x", rng.integers(0, 2**62, n)).astype(object))
        yield pa.record_batch([pa.array(ids), pa.array(rng.random(n)), s], schema=schema)


def memory_table(data_dir: Path, decoded_bytes: int) -> tuple[dict[str, str], str, int]:
    """A table of about ``decoded_bytes`` of Arrow data (int64, double, 16-char string: ~36 bytes
    a row) in files of ~3 MiB, built once; returns (catalog properties, table name, rows)."""
    import icefloe

    rows = decoded_bytes // 36
    root = data_dir / f"stream-memory-{decoded_bytes >> 20}mib"
    props = {"type": "sql", "uri": f"sqlite:///{root / 'c.db'}", "warehouse": (root / "wh").as_uri()}
    if not (root / "READY").exists():
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        cat = icefloe.load_catalog("bench_stream_memory", **props)
        cat.create_namespace("m")
        first = next(_memory_batches(1))
        t = cat.create_table(
            "m.big",
            schema=first.schema,
            properties={
                "write.target-file-size-bytes": str(3 * 1024 * 1024),
                "write.parquet.row-group-size-bytes": str(4 * 1024 * 1024),
            },
        )
        t.append(_memory_batches(rows))
        cat.close()
        (root / "READY").write_text(f"{rows}\n")
    return props, "m.big", rows


def run_memory(data_dir: Path, decoded_bytes: int, settings: list[dict[str, int]]) -> list[dict[str, Any]]:
    """Peak RSS of ``to_batches()`` over the memory table, one child process per setting."""
    from icefloe.arrow._scan_groups import memory_bound
    from icefloe.arrow._scan_memory import measure_stream

    props, name, _ = memory_table(data_dir, decoded_bytes)
    out = []
    for s in settings:
        options = {
            "read.batch-size": s["batch_size"],
            "read.fragment-readahead": s["fragment_readahead"],
            "read.batch-readahead": s["batch_readahead"],
        }
        r = measure_stream(
            "bench_stream_memory", props, name, options, grouped_max_bytes=s.get("grouped_max_bytes")
        )
        batch_bytes = s["batch_size"] * 36
        r["bound"] = memory_bound(batch_bytes, 4 * 1024 * 1024, s["fragment_readahead"], s["batch_readahead"])
        r.update(s)
        r["decoded_bytes"] = decoded_bytes
        out.append(r)
    return out


if __name__ == "__main__":
    import argparse
    import json
    import os

    p = argparse.ArgumentParser(description="peak RSS of DataScan.to_batches() on a large table")
    p.add_argument("--gib", type=float, default=2.0, help="decoded size of the table (default 2 GiB)")
    p.add_argument("--data-dir", type=Path, default=Path(__file__).resolve().parents[1] / ".data")
    a = p.parse_args()
    settings = [
        {"batch_size": 131_072, "fragment_readahead": 4, "batch_readahead": 4},  # the defaults
        {"batch_size": 65_536, "fragment_readahead": 2, "batch_readahead": 2},
        {"batch_size": 32_768, "fragment_readahead": 8, "batch_readahead": 4},
        # every file through the per-file path (one file at a time)
        {"batch_size": 131_072, "fragment_readahead": 4, "batch_readahead": 4, "grouped_max_bytes": 0},
    ]
    print("load average", os.getloadavg())
    for r in run_memory(a.data_dir.resolve(), int(a.gib * (1 << 30)), settings):
        r.pop("rss_samples", None)
        print(json.dumps(r))


# The scoreboard's rows (bench/scoreboard.py) and bench/README.md's targets table (the memory
# of to_batches is the stream-memory scenario's, bench/scenarios/stream_memory.py).
TARGETS = (
    [
        ratio_target(
            f"small-files.{kind}{suffix}.vs-pyarrow",
            f"{kind}{suffix}",
            f"small files, {kind} scan{label}: speed vs pyarrow.dataset",
            f"1,200 small files, {kind} scan{label}, vs pyarrow.dataset",
            ">=",
            0.9,
        )
        for suffix, label in (("", ""), ("_deletes", " with position deletes"))
        for kind in ("full", "filtered")
    ]
    + [
        ratio_target(
            f"small-files.{kind}{suffix}.vs-pq-read-table",
            f"{kind}{suffix}",
            f"small files, {kind} scan{label}: speed vs pq.read_table",
            f"1,200 small files, {kind} scan{label}, vs pq.read_table",
        )
        for suffix, label in (("", ""), ("_deletes", " with position deletes"))
        for kind in ("full", "filtered")
    ]
    + [
        ratio_target(
            f"small-files.{kind}{suffix}.vs-pyiceberg",
            f"{kind}{suffix}",
            f"small files, {kind} scan{label}: speed vs PyIceberg",
            f"1,200 small files, {kind} scan{label}, vs PyIceberg 0.12",
        )
        for suffix, label in (("", ""), ("_deletes", " with position deletes"))
        for kind in ("full", "filtered")
    ]
)
