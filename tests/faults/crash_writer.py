"""The writer of the kill -9 test (test_crash.py): commits a random mix of operations to one
table until it is killed, announcing each one. ``crash_writer.py DB WAREHOUSE SEED``.

Before each operation it prints ``begin <digest>`` (the rows the table will hold if the
operation lands), after it ``done <digest>``; it is the only writer, so it keeps the expected
rows itself (dict id -> row)."""

from __future__ import annotations

import random
import sys
import time
from typing import Any

from fault_harness import SCHEMA, digest

import icefloe


def main() -> None:
    db, warehouse, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
    rnd = random.Random(seed)
    cat = icefloe.load_catalog("t", type="sql", uri=f"sqlite:///{db}", warehouse=warehouse)
    t = cat.load_table("ns.t")
    model: dict[int, dict[str, Any]] = {r["id"]: r for r in t.scan().to_arrow().to_pylist()}
    print("ready", flush=True)
    n = seed * 1_000_000

    def table_of(new: list[dict[str, Any]]) -> Any:
        import pyarrow as pa

        return pa.Table.from_pylist(new, schema=SCHEMA)

    def begin(expected: dict[int, dict[str, Any]]) -> None:
        print(f"begin {digest(expected.values())}", flush=True)

    def done(expected: dict[int, dict[str, Any]]) -> None:
        model.clear()
        model.update(expected)
        print(f"done {digest(model.values())}", flush=True)

    while True:
        n += 10
        op = rnd.randrange(9)
        c = f"c{rnd.randrange(3)}"
        e = dict(model)
        if op == 0:
            new = [{"id": i, "cat": f"c{i % 3}", "v": "a"} for i in range(n, n + rnd.randrange(1, 6))]
            e.update({r["id"]: r for r in new})
            begin(e)
            t.append(table_of(new))
        elif op == 1:
            mode = rnd.choice(["copy-on-write", "merge-on-read"])
            begin(e)
            with t.transaction() as tx:
                tx.set_properties(**{"write.delete.mode": mode, "write.update.mode": mode})
            done(e)
            if not model:
                continue
            low = rnd.choice(sorted(model))
            e = {i: r for i, r in model.items() if not low <= i < low + 3}
            begin(e)
            t.delete(f"id >= {low} and id < {low + 3}")
        elif op == 2:
            e = {i: r for i, r in model.items() if r["cat"] != c}
            e[n] = {"id": n, "cat": c, "v": "o"}
            begin(e)
            t.overwrite(table_of([e[n]]), f"cat = '{c}'")
        elif op == 3:
            new = [{"id": n, "cat": c, "v": "u"}] + [
                {**model[i], "v": "u"} for i in rnd.sample(sorted(model), min(2, len(model)))
            ]
            e.update({r["id"]: r for r in new})
            begin(e)
            t.upsert(table_of(new), ["id"])
        elif op == 4 and model:
            low = rnd.choice(sorted(model))
            e.update({i: {**r, "v": f"x{n}"} for i, r in model.items() if low <= i < low + 4})
            begin(e)
            t.update(f"id >= {low} and id < {low + 4}", {"v": f"x{n}"})
        elif op == 5:
            begin(e)
            t.maintenance.rewrite_data_files(options={"min-input-files": "2"})
        elif op == 6:
            begin(e)
            t.maintenance.rewrite_manifests()
        elif op == 7:
            begin(e)
            t.maintenance.expire_snapshots(older_than=time.time_ns() // 1_000_000, retain_last=3)
        else:
            e = {i: r for i, r in model.items() if r["cat"] != c}
            e[n + 1] = {"id": n + 1, "cat": c, "v": "r"}
            begin(e)
            t.replace_partitions(table_of([e[n + 1]]))
        done(e)


if __name__ == "__main__":
    main()
