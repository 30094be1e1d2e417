"""Pruning against metadata written by Iceberg Java 1.10 (the reference tables at $ICEFLOE_ORACLE_REF).

For filters built from values that really occur in each table, and for every live data file:
a file or manifest that holds a matching row is never pruned (inclusive metrics, manifest
summaries), a file that strict metrics say fully matches does, and the residual for the file's
partition selects exactly the rows the filter selects. This exercises Java's truncated string
bounds, pre-1970 temporal partitions and every partition transform. Skipped when the reference
tables have not been generated.
"""

from __future__ import annotations

import math
import os
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from icefloe.arrow.expression import to_arrow_expression
from icefloe.expressions import (
    BooleanExpression,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNull,
    LessThan,
    LessThanOrEqual,
    NotEqualTo,
    NotIn,
    NotNull,
    NotStartsWith,
    StartsWith,
)
from icefloe.expressions.visitors import (
    InclusiveMetricsEvaluator,
    ManifestEvaluator,
    ResidualEvaluator,
    StrictMetricsEvaluator,
)
from icefloe.io.local import LocalFileIO
from icefloe.manifest import ManifestContent, read_manifest, read_manifest_list
from icefloe.spec.schema import Schema
from icefloe.spec.table_metadata import read_metadata_json
from icefloe.spec.types import PrimitiveType, StringType

REF = Path(os.environ["ICEFLOE_ORACLE_REF"])
TABLES = [
    "part_bucket",
    "part_days",
    "part_hours",
    "part_identity",
    "part_months",
    "part_truncate",
    "part_years",
    "partition_evolution",
    "types_v2",
    "cow_v2",
]


def _metadata_path(table: str) -> Path:
    metadata_dir = REF / "hadoop" / "ref" / table / "metadata"
    if not metadata_dir.is_dir():
        pytest.skip(f"Iceberg Java reference tables not generated at {REF} (run the oracle generator)")
    return sorted(metadata_dir.glob("v*.metadata.json"), key=lambda p: int(p.name[1:].split(".")[0]))[-1]


def _literal(value: Any) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def _filters(schema: Schema, table: pa.Table, rng: random.Random) -> list[BooleanExpression]:
    out: list[BooleanExpression] = []
    for field in schema.fields:
        if not isinstance(field.field_type, PrimitiveType) or field.name not in table.column_names:
            continue
        values = [v for v in table.column(field.name).to_pylist() if _literal(v)]
        if not values:
            continue
        picks = rng.sample(values, min(3, len(values)))
        out += [IsNull(field.name), NotNull(field.name)]
        for v in picks:
            out += [
                op(field.name, v)
                for op in (EqualTo, NotEqualTo, LessThan, LessThanOrEqual, GreaterThan, GreaterThanOrEqual)
            ]
            out += [In(field.name, picks), NotIn(field.name, picks[:2])]
            if isinstance(field.field_type, StringType):
                for n in (1, 3, 17):
                    out += [StartsWith(field.name, v[:n]), NotStartsWith(field.name, v[:n])]
    return out


@pytest.mark.parametrize("table_name", TABLES)
def test_pruning_is_sound_on_java_metadata(table_name: str) -> None:
    metadata = read_metadata_json(_metadata_path(table_name).read_text())
    snapshot = metadata.current_snapshot()
    assert snapshot is not None and snapshot.manifest_list is not None
    schema = metadata.schema()
    io = LocalFileIO()
    files = []
    for manifest in read_manifest_list(io, snapshot.manifest_list):
        if manifest.content != ManifestContent.DATA:
            continue
        for entry in read_manifest(io, manifest, discard_deleted=True):
            path = entry.data_file.file_path.removeprefix("file:")
            files.append((manifest, entry.data_file, pq.read_table(path)))
    assert files
    complete = [
        i for i, (_, _, t) in enumerate(files) if all(f.name in t.column_names for f in schema.fields)
    ]
    files = [files[i] for i in complete]  # files written before a column was added need projection
    assert files
    everything = pa.concat_tables(
        [
            t.append_column("__file", pa.array([i] * t.num_rows, pa.int32()))
            for i, (_, _, t) in enumerate(files)
        ],
        promote_options="permissive",
    )
    rng = random.Random(table_name)
    filters = _filters(schema, everything, rng)
    assert filters
    filters = rng.sample(filters, min(60, len(filters)))  # keeps the test within a few seconds

    def counts(arrow_filter: Any) -> dict[int, int]:
        # Matching rows per file, from one vectorized filter over all files.
        kept = everything.filter(arrow_filter).column("__file")
        return {int(v["values"]): int(v["counts"]) for v in pc.value_counts(kept).to_pylist()}

    evaluators = {}
    for spec_id in {m.partition_spec_id for m, _, _ in files}:
        evaluators[spec_id] = metadata.spec_by_id(spec_id)
    for expr in filters:
        matching = counts(to_arrow_expression(expr, schema))
        inclusive = InclusiveMetricsEvaluator(schema, expr)
        strict = StrictMetricsEvaluator(schema, expr)
        manifest_evals = {i: ManifestEvaluator(spec, schema, expr) for i, spec in evaluators.items()}
        residual_evals = {i: ResidualEvaluator(spec, schema, expr) for i, spec in evaluators.items()}
        by_residual: dict[BooleanExpression, list[int]] = {}
        for i, (manifest, data_file, data) in enumerate(files):
            where = f"{expr} on {data_file.file_path}"
            if matching.get(i, 0):
                assert inclusive.eval(data_file), f"metrics pruned a matching file: {where}"
                assert manifest_evals[manifest.partition_spec_id].eval(manifest), (
                    f"manifest pruned a matching file: {where}"
                )
            if strict.eval(data_file):
                assert matching.get(i, 0) == data.num_rows, f"strict metrics wrong: {where}"
            residual = residual_evals[manifest.partition_spec_id].residual_for(data_file.partition)
            by_residual.setdefault(residual, []).append(i)
        for residual, indices in by_residual.items():
            kept = counts(to_arrow_expression(residual, schema))
            for i in indices:
                assert kept.get(i, 0) == matching.get(i, 0), (
                    f"residual {residual} differs from {expr} on {files[i][1].file_path}"
                )
