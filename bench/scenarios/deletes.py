"""Deleting 1% of TPC-H ``lineitem``: merge-on-read (position delete files) vs copy-on-write
(rewriting the data files holding the rows), then reading with those deletes vs without; and on
format v3, the same 1% deleted by deletion vectors, read beside the position deletes and no deletes.

The 1% is ``l_partkey < partkeys / 100``: scattered over every data file, as a real delete by a
business key is. Each timed delete runs on a fresh table (created outside the clock) that lists the
cached ``b.lineitem`` data files, so both modes start from the same files every time.
"""

from __future__ import annotations

import itertools
from typing import Any

from bench._core import Case, CaseResult, Check, Contender, Context, Ratio, ratio_target, run_case, skipped
from bench.data import lineitem_table

__all__ = ["run"]

SCENARIO = "deletes"


def run(ctx: Context) -> list[CaseResult]:
    from icefloe.table.transaction import Transaction

    if not hasattr(Transaction, "delete"):
        return [skipped(SCENARIO, "mor_vs_cow", "MOR vs COW delete", "not available yet: Transaction.delete")]
    base = lineitem_table(ctx.data_dir, ctx.scale)
    files = [t.file for t in base.scan().plan_files()]
    import icefloe
    from bench.data import catalog_properties

    root = ctx.work_dir / "deletes"
    root.mkdir(parents=True)
    # Scratch tables in their own catalog: COW rewrites and delete files never land in the cache.
    cat = icefloe.load_catalog("bench_deletes", **catalog_properties(root))
    cat.create_namespace("b")
    partkeys = max(1, int(200_000 * ctx.scale))
    where = f"l_partkey < {max(2, partkeys // 100 + 1)}"
    counter = itertools.count()
    state: dict[str, Any] = {}

    def fresh(mode: str) -> None:
        name = f"b.del_{mode.replace('-', '_')}_{next(counter)}"
        t = cat.create_table(name, schema=base.schema(), properties={"write.delete.mode": mode})
        tx = t.transaction()
        tx.append_files(files, delete_on_failure=False)
        tx.commit()
        state[mode] = t

    def delete(mode: str) -> dict[str, Any]:
        t = state[mode]
        t.delete(where)
        snap = t.current_snapshot()
        props = dict(snap.summary.props) if snap else {}
        return {
            k: props[k]
            for k in (
                "deleted-records",
                "added-delete-files",
                "added-data-files",
                "removed-data-files",
                "added-position-deletes",
            )
            if k in props
        }

    commit = Case(
        SCENARIO,
        "commit",
        f"delete {where!r} (~1%) from {len(files)} data files",
        [
            Contender("merge_on_read", lambda: delete("merge-on-read"), setup=lambda: fresh("merge-on-read")),
            Contender("copy_on_write", lambda: delete("copy-on-write"), setup=lambda: fresh("copy-on-write")),
        ],
        [Ratio("MOR delete commit: speed vs COW", "merge_on_read", "copy_on_write", "speed", ">=", 10.0)],
    )
    results = [run_case(ctx, commit)]
    mor = state["merge-on-read"]
    expected = base.scan().count() - base.scan(row_filter=where).count()

    def rows(t: Any) -> dict[str, Any]:
        return {"rows": t.num_rows}

    def evaluate(m: dict[str, dict[str, Any]]) -> tuple[list[Check], dict[str, Any]]:
        got = m["with_deletes"].get("rows")
        return [
            Check(
                "reading with deletes drops exactly the deleted rows",
                got == expected,
                f"{got} rows read, {expected} expected",
            )
        ], {}

    read = Case(
        SCENARIO,
        "read",
        "full Arrow scan with the merge-on-read deletes vs the same files without them",
        [
            Contender("with_deletes", lambda: rows(mor.scan().to_arrow())),
            Contender("without_deletes", lambda: rows(base.scan().to_arrow())),
        ],
        [
            Ratio(
                "read with MOR deletes: time vs without", "with_deletes", "without_deletes", "time", "<=", 1.3
            )
        ],
        evaluate=evaluate,
    )
    results.append(run_case(ctx, read))

    # Format v3: the same delete writes deletion vectors (one Puffin file, one DV per data file).
    dv = cat.create_table(
        "b.del_v3_dv",
        schema=base.schema(),
        properties={"write.delete.mode": "merge-on-read", "format-version": "3"},
    )
    tx = dv.transaction()
    tx.append_files(files, delete_on_failure=False)
    tx.commit()
    dv.delete(where)
    dv_files = {d.file_format.value for t in dv.scan().plan_files() for d in t.delete_files}

    def evaluate_v3(m: dict[str, dict[str, Any]]) -> tuple[list[Check], dict[str, Any]]:
        got = {k: m[k].get("rows") for k in ("deletion_vectors", "position_deletes")}
        return [
            Check(
                "deletion vectors and position deletes drop exactly the deleted rows",
                all(v == expected for v in got.values()),
                f"{got} rows read, {expected} expected",
            ),
            Check(
                "the v3 table's deletes are deletion vectors", dv_files == {"PUFFIN"}, f"formats {dv_files}"
            ),
        ], {}

    read_v3 = Case(
        SCENARIO,
        "read-v3",
        "full Arrow scan: 1% deleted by deletion vectors (v3) vs by position delete files (v2) vs no deletes",
        [
            Contender("deletion_vectors", lambda: rows(dv.scan().to_arrow())),
            Contender("position_deletes", lambda: rows(mor.scan().to_arrow())),
            Contender("without_deletes", lambda: rows(base.scan().to_arrow())),
        ],
        [
            Ratio(
                "read with deletion vectors: time vs without", "deletion_vectors", "without_deletes", "time"
            ),
            Ratio(
                "read with deletion vectors: time vs position deletes",
                "deletion_vectors",
                "position_deletes",
                "time",
            ),
        ],
        evaluate=evaluate_v3,
    )
    results.append(run_case(ctx, read_v3))
    cat.close()  # the scratch directory goes with the run; the shared data files stay
    return results


# The scoreboard's rows (bench/scoreboard.py) and bench/README.md's targets table.
TARGETS = [
    ratio_target(
        "deletes.commit.mor-vs-cow",
        "commit",
        "MOR delete commit: speed vs COW",
        "delete 1% of lineitem (every file): merge-on-read vs copy-on-write",
        ">=",
        10.0,
    ),
    ratio_target(
        "deletes.read.with-vs-without",
        "read",
        "read with MOR deletes: time vs without",
        "full scan with those position deletes vs the same files without",
        "<=",
        1.3,
        "time",
    ),
    ratio_target(
        "deletes.read-v3.dv-vs-without",
        "read-v3",
        "read with deletion vectors: time vs without",
        "full scan with that 1% deleted by deletion vectors (v3) vs the same files without",
        measure="time",
    ),
    ratio_target(
        "deletes.read-v3.dv-vs-position",
        "read-v3",
        "read with deletion vectors: time vs position deletes",
        "the same scan: deletion vectors vs position delete files",
        measure="time",
    ),
]
