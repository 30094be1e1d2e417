"""One fresh-process planning run, for ``bench/scenarios/planning.py``'s fresh contenders.

``python -m bench.scenarios.planning_fresh_child icefloe|pyiceberg ROOT FILTER`` imports the
library, loads the table (icefloe: its SQL catalog under ROOT, as a CLI does; PyIceberg:
``StaticTable`` on the same metadata file), plans once with FILTER and prints one JSON line:
``{"import_s", "load_s", "plan_s", "plan_cpu_s", "files"}``. Nothing of the library is imported before the
clock starts (this module imports only the standard library).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def _icefloe(root: Path, row_filter: str) -> dict[str, float | int]:
    t0 = time.perf_counter()
    import icefloe

    t1 = time.perf_counter()
    cat = icefloe.load_catalog(
        "bench_plan",
        type="sql",
        uri=f"sqlite:///{(root / 'catalog.db').resolve()}",
        warehouse=(root / "warehouse").resolve().as_uri(),
    )
    table = cat.load_table("b.many_files")
    c2, t2 = time.process_time(), time.perf_counter()
    files = len(table.scan(row_filter=row_filter).plan_files())
    t3, c3 = time.perf_counter(), time.process_time()
    return {"import_s": t1 - t0, "load_s": t2 - t1, "plan_s": t3 - t2, "plan_cpu_s": c3 - c2, "files": files}


def _pyiceberg(root: Path, row_filter: str) -> dict[str, float | int]:
    t0 = time.perf_counter()
    from pyiceberg.table import StaticTable

    t1 = time.perf_counter()
    table = StaticTable.from_metadata((root / "METADATA_LOCATION").read_text().strip())
    c2, t2 = time.process_time(), time.perf_counter()
    files = sum(1 for _ in table.scan(row_filter=row_filter).plan_files())
    t3, c3 = time.perf_counter(), time.process_time()
    return {"import_s": t1 - t0, "load_s": t2 - t1, "plan_s": t3 - t2, "plan_cpu_s": c3 - c2, "files": files}


def main(argv: list[str]) -> int:
    side, root, row_filter = argv
    run = _icefloe if side == "icefloe" else _pyiceberg
    print(json.dumps(run(Path(root), row_filter)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
