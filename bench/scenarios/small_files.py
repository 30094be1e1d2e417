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

"Same work" is ``pyarrow.dataset`` doing what icefloe does beyond a raw read, with the positions
and paths given up front: page CRCs verified (icefloe verifies them, the raw readers do not) and,
with position deletes, the same deleted positions dropped by one ``Table.filter`` (with the
residual, for the filtered scan). Its ratio is icefloe's own overhead; the gap between it and the
raw ratio is the cost of that work. Its rows are compared with icefloe's once, before timing.
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


def keep_mask(table: Any, paths: list[str]) -> Any:
    """One boolean mask over the rows of ``paths`` read in that order: False at every position
    that ``table``'s position delete files delete (read here with pyarrow, not icefloe)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    rows: dict[str, int] = {}
    delete_paths: set[str] = set()
    for task in table.scan().plan_files():
        rows[task.file.file_path.removeprefix("file://")] = task.file.record_count
        delete_paths.update(d.file_path.removeprefix("file://") for d in task.delete_files)
    deleted: dict[str, list[Any]] = {}
    for path in sorted(delete_paths):
        t = pq.read_table(path, columns=["file_path", "pos"])
        for target in pc.unique(t.column("file_path")).to_pylist():
            positions = t.filter(pc.equal(t.column("file_path"), target)).column("pos").to_numpy()
            deleted.setdefault(target.removeprefix("file://"), []).append(positions)
    parts = []
    for path in paths:
        keep: np.ndarray[Any, Any] = np.ones(rows[path], dtype=np.bool_)
        for positions in deleted.get(path, ()):
            keep[positions] = False
        parts.append(keep)
    return pa.array(np.concatenate(parts) if parts else np.zeros(0, dtype=np.bool_))


def _crc_format() -> Any:
    """Arrow's Parquet format verifying page CRCs, as icefloe reads (icefloe.io._decode.PARQUET_READ)."""
    import pyarrow.dataset as ds

    options = ds.ParquetFragmentScanOptions(page_checksum_verification=True)
    return ds.ParquetFileFormat(default_fragment_scan_options=options)


def _ratios(what: str, pyiceberg: bool) -> list[Ratio]:
    out = [
        Ratio(f"{what}: speed vs pyarrow.dataset", "icefloe", "pyarrow_dataset", "speed", ">=", 0.9),
        Ratio(f"{what}: speed vs pq.read_table", "icefloe", "pq_read_table", "speed"),
        Ratio(f"{what}: speed vs pyarrow doing the same work", "icefloe", "pyarrow_same_work", "speed"),
    ]
    if pyiceberg:
        out.append(Ratio(f"{what}: speed vs PyIceberg", "icefloe", "pyiceberg", "speed"))
    return out


def run(ctx: Context) -> list[CaseResult]:
    import pyarrow.compute as pc
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    appends = int(ctx.options.get("small_files_appends", APPENDS))
    ctx.say(f"    {appends * len(REGIONS)} small files (cached under {ctx.data_dir}) ...")
    events, deleted = small_files_tables(ctx.data_dir, appends)
    paths = [t.file.file_path.removeprefix("file://") for t in events.scan().plan_files()]
    try:
        from pyiceberg.table import StaticTable
    except ImportError:  # PyIceberg is a reference only
        StaticTable = None
    ds_filter = ds.field("v") < 0.1
    crc = _crc_format()

    def rows(t: Any) -> dict[str, Any]:
        return {"rows": t.num_rows, "columns": t.num_columns}

    def evaluation(expected_equal: bool, same_work: Check) -> Any:
        def evaluate(m: dict[str, dict[str, Any]]) -> tuple[list[Check], dict[str, Any]]:
            counts = {k: v.get("rows") for k, v in m.items()}
            if expected_equal:
                return [
                    Check("same rows on every side", len(set(counts.values())) == 1, str(counts)),
                    same_work,
                ], {}
            # With deletes, the raw readers see every row; icefloe, PyIceberg and the same-work
            # side the live ones.
            live = {counts.get(k) for k in ("icefloe", "pyiceberg", "pyarrow_same_work") if k in counts}
            raw = {counts.get("pyarrow_dataset"), counts.get("pq_read_table")}
            ok = len(live) == 1 and len(raw) == 1 and live != raw
            return [
                Check(
                    "deletes applied by icefloe (and PyIceberg), raw readers see all rows", ok, str(counts)
                ),
                same_work,
            ], {}

        return evaluate

    cases = []
    for label, table in (("", events), (" with position deletes", deleted)):
        keep = keep_mask(table, paths) if label else None
        py_table = None if StaticTable is None else StaticTable.from_metadata(table.metadata_location)
        for kind in ("full", "filtered"):
            if kind == "full":

                def icefloe_read(t: Any = table) -> Any:
                    return t.scan().to_arrow()

                def same_work(keep: Any = keep) -> Any:
                    t = ds.dataset(paths, format=crc).to_table()
                    return t if keep is None else t.filter(keep)

                contenders = [
                    Contender("icefloe", lambda f=icefloe_read: rows(f())),
                    Contender(
                        "pyarrow_dataset", lambda: rows(ds.dataset(paths, format="parquet").to_table())
                    ),
                    Contender("pq_read_table", lambda: rows(pq.read_table(paths, partitioning=None))),
                    Contender("pyarrow_same_work", lambda f=same_work: rows(f())),
                ]
                if py_table is not None:
                    contenders.append(Contender("pyiceberg", lambda p=py_table: rows(p.scan().to_arrow())))
            else:

                def icefloe_read(t: Any = table) -> Any:
                    return t.scan(row_filter=FILTER, selected_fields=COLUMNS).to_arrow()

                def same_work(keep: Any = keep) -> Any:
                    dataset = ds.dataset(paths, format=crc)
                    if keep is None:
                        return dataset.to_table(columns=list(COLUMNS), filter=ds_filter)
                    # Positions are rows of whole files: read every row, then one filter.
                    t = dataset.to_table(columns=list(COLUMNS))
                    return t.filter(pc.and_(keep, pc.less(t.column("v"), 0.1)))

                contenders = [
                    Contender("icefloe", lambda f=icefloe_read: rows(f())),
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
                    Contender("pyarrow_same_work", lambda f=same_work: rows(f())),
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
                    evaluate=evaluation(not label, _same_rows(icefloe_read(), same_work())),
                )
            )
    return [run_case(ctx, c) for c in cases]


def _same_rows(icefloe: Any, same_work: Any) -> Check:
    """icefloe's rows against the same-work side's, compared once before timing (plan order and
    path order may differ: both sorted by id)."""
    a, b = icefloe.sort_by("id"), same_work.sort_by("id")
    equal = a.schema.names == b.schema.names and all(
        a.column(i).equals(b.column(i).cast(a.schema.field(i).type)) for i in range(a.num_columns)
    )
    return Check(
        "icefloe's rows are pyarrow's doing the same work (sorted by id)",
        a.num_rows == b.num_rows and equal,
        f"{a.num_rows} vs {b.num_rows} rows",
    )


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
            f"small-files.{kind}{suffix}.vs-same-work",
            f"{kind}{suffix}",
            f"small files, {kind} scan{label}: speed vs pyarrow doing the same work",
            f"1,200 small files, {kind} scan{label}, vs pyarrow.dataset doing the same work (page CRCs"
            + (", the same deletes)" if suffix else ")"),
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
