"""A writer for the kill -9 test: commits appends, copy-on-write and merge-on-read deletes,
overwrites and expiries to one table until it is killed. ``killed_writer.py DB WAREHOUSE SEED``."""

from __future__ import annotations

import random
import sys
import time

import pyarrow as pa

import icefloe

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("cat", pa.string())])


def main() -> None:
    db, warehouse, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
    rnd = random.Random(seed)
    cat = icefloe.load_catalog("t", type="sql", uri=f"sqlite:///{db}", warehouse=warehouse)
    t = cat.load_table("ns.t")
    print("ready", flush=True)
    n = seed * 1_000_000
    while True:
        n += 1
        op = rnd.randrange(6)
        if op <= 1:
            ids = list(range(n, n + rnd.randrange(1, 50)))
            t.append(pa.table({"id": ids, "cat": [f"c{i % 4}" for i in ids]}, schema=SCHEMA))
        elif op == 2:
            mode = rnd.choice(["copy-on-write", "merge-on-read"])
            with t.transaction() as tx:
                tx.set_properties(**{"write.delete.mode": mode})
            low = rnd.randrange(seed * 1_000_000, n + 1)
            t.delete(f"id >= {low} and id < {low + rnd.randrange(1, 30)}")
        elif op == 3:
            c = f"c{rnd.randrange(4)}"
            t.overwrite(pa.table({"id": [n], "cat": [c]}, schema=SCHEMA), f"cat = '{c}'")
        elif op == 4:
            t.maintenance.expire_snapshots(older_than=time.time_ns() // 1_000_000, retain_last=3)
        else:
            t.upsert(pa.table({"id": [n, n - 1], "cat": ["c1", "c2"]}, schema=SCHEMA), ["id"])


if __name__ == "__main__":
    main()
