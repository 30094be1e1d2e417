"""Arrow scans of TPC-H ``lineitem``: icefloe ``to_arrow`` vs a raw ``pyarrow.dataset`` read of the
same data files, and vs PyIceberg 0.12's ``to_arrow`` of the same table (``StaticTable`` on
icefloe's metadata file).

Full: every row and column. Filtered: one month of ``l_shipdate`` and three columns, the filter
pushed down on every side. icefloe's time includes planning, as a user pays it; ``icefloe-cold``
clears icefloe's caches of decoded manifest lists and manifests before every round (the first
scan of a snapshot in a process). PyIceberg decodes its manifests on every scan.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from bench._core import Case, CaseResult, Check, Contender, Context, Ratio, Target, ratio_target, run_case
from bench.data import clear_icefloe_caches, lineitem_table

__all__ = ["run"]

SCENARIO = "scan"
FILTER = "l_shipdate >= '1995-01-01' and l_shipdate < '1995-02-01'"
COLUMNS = ("l_orderkey", "l_extendedprice", "l_discount")
LO, HI = dt.date(1995, 1, 1), dt.date(1995, 2, 1)


def _ratios(what: str) -> list[Ratio]:
    """The targets, for icefloe warm and with its caches cleared."""
    out = []
    for subject, note in (("icefloe", ""), ("icefloe-cold", ", caches cleared")):
        out.append(
            Ratio(f"{what}{note}: speed vs pyarrow.dataset", subject, "pyarrow_dataset", "speed", ">=", 0.9)
        )
        out.append(Ratio(f"{what}{note}: speed vs PyIceberg", subject, "pyiceberg", "speed", ">=", 1.5))
    return out


def run(ctx: Context) -> list[CaseResult]:
    import pyarrow.dataset as ds
    from pyiceberg.table import StaticTable

    table = lineitem_table(ctx.data_dir, ctx.scale)
    paths = [t.file.file_path.removeprefix("file://") for t in table.scan().plan_files()]
    py_table = StaticTable.from_metadata(table.metadata_location)
    ds_filter = (ds.field("l_shipdate") >= LO) & (ds.field("l_shipdate") < HI)

    def rows(t: Any) -> dict[str, Any]:
        return {"rows": t.num_rows, "columns": t.num_columns}

    def same_rows(m: dict[str, dict[str, Any]]) -> tuple[list[Check], dict[str, Any]]:
        counts = {k: v.get("rows") for k, v in m.items()}
        return [Check("same rows on every side", len(set(counts.values())) == 1, str(counts))], {}

    full = Case(
        SCENARIO,
        "full",
        f"full scan to Arrow, {len(paths)} data files",
        [
            Contender("icefloe", lambda: rows(table.scan().to_arrow())),
            Contender("icefloe-cold", lambda: rows(table.scan().to_arrow()), setup=clear_icefloe_caches),
            Contender("pyarrow_dataset", lambda: rows(ds.dataset(paths, format="parquet").to_table())),
            Contender("pyiceberg", lambda: rows(py_table.scan().to_arrow())),
        ],
        _ratios("full scan"),
        evaluate=same_rows,
    )
    filtered = Case(
        SCENARIO,
        "filtered",
        f"one month of l_shipdate, {len(COLUMNS)} columns",
        [
            Contender(
                "icefloe",
                lambda: rows(table.scan(row_filter=FILTER, selected_fields=COLUMNS).to_arrow()),
            ),
            Contender(
                "icefloe-cold",
                lambda: rows(table.scan(row_filter=FILTER, selected_fields=COLUMNS).to_arrow()),
                setup=clear_icefloe_caches,
            ),
            Contender(
                "pyarrow_dataset",
                lambda: rows(
                    ds.dataset(paths, format="parquet").to_table(columns=list(COLUMNS), filter=ds_filter)
                ),
            ),
            Contender(
                "pyiceberg",
                lambda: rows(py_table.scan(row_filter=FILTER, selected_fields=COLUMNS).to_arrow()),
            ),
        ],
        _ratios("filtered scan"),
        evaluate=same_rows,
    )
    return [run_case(ctx, full), run_case(ctx, filtered)]


# The scoreboard's rows (bench/scoreboard.py) and bench/README.md's targets table.
def _targets() -> list[Target]:
    out = []
    for case, what in (("full", "full scan"), ("filtered", "filtered scan")):
        for peer, key, text, goal in (
            ("pyarrow.dataset", "pyarrow", "raw pyarrow.dataset", 0.9),
            ("PyIceberg", "pyiceberg", "PyIceberg 0.12", 1.5),
        ):
            for prefix, note in (("", ""), ("cold-", ", caches cleared")):
                out.append(
                    ratio_target(
                        f"scan.{case}.{prefix}vs-{key}",
                        case,
                        f"{what}{note}: speed vs {peer}",
                        f"{what} of lineitem, to_arrow{note}, vs {text}",
                        ">=",
                        goal,
                    )
                )
    return out


TARGETS = _targets()
