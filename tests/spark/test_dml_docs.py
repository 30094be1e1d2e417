"""The row-level example of docs/spark.md (the python block starting with ``# (Spark DML)``) runs
as written on the suite's session and catalog, and its own asserts hold."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
MARK = "# (Spark DML)"


def _dml_blocks() -> list[str]:
    text = (ROOT / "docs" / "spark.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    return [b for b in blocks if b.lstrip().startswith(MARK)]


def test_docs_dml_example_runs(spark: Any, spark_catalog: Any) -> None:
    blocks = _dml_blocks()
    assert len(blocks) == 1
    spark_catalog.create_namespace_if_not_exists("shop")
    if spark_catalog.table_exists("shop.orders"):
        spark_catalog.drop_table("shop.orders")
    namespace: dict[str, Any] = {"spark": spark}
    try:
        exec(compile(blocks[0], "docs/spark.md[Spark DML block]", "exec"), namespace)
        rows = spark_catalog.load_table("shop.orders").scan().to_arrow().sort_by("id").to_pylist()
        assert rows == [
            {"id": 1, "status": "open", "amount": 25.0},
            {"id": 4, "status": "shipped", "amount": 41.0},
        ]
    finally:
        spark.catalog.dropTempView("changes")
        spark_catalog.drop_table("shop.orders")
