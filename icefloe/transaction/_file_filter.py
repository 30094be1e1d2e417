"""Deciding from metadata alone whether a file's rows may, or must, match a row filter.

A file may match when its partition passes the filter's inclusive projection and its column
metrics do not rule the filter out; it must match (every row) when its partition passes the strict
projection or its metrics prove every row matches. Conflict checks use "may", overwrite-by-filter
uses "must" to drop whole files without reading them. Evaluators are built once per spec.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from icefloe.expressions import AlwaysFalse, AlwaysTrue, BooleanExpression, bind
from icefloe.expressions.visitors import (
    InclusiveMetricsEvaluator,
    ManifestEvaluator,
    StrictMetricsEvaluator,
    expression_evaluator,
    inclusive_projection,
    strict_projection,
)
from icefloe.manifest import DataFile, DataFileContent, ManifestFile
from icefloe.spec.schema import Schema

if TYPE_CHECKING:
    from icefloe.spec.table_metadata import TableMetadata

__all__ = ["FileFilter"]


class _PerSpec:
    def __init__(
        self, schema: Schema, metadata: TableMetadata, spec_id: int, expr: BooleanExpression
    ) -> None:
        spec = metadata.spec_by_id(spec_id)
        struct = spec.partition_type(schema)
        partition_schema = Schema(*struct.fields)
        self.manifest = ManifestEvaluator(spec, schema, expr, True)
        self.inclusive: Callable[[Any], bool] = expression_evaluator(
            struct, bind(partition_schema, inclusive_projection(schema, spec)(expr))
        )
        self.strict: Callable[[Any], bool] = expression_evaluator(
            struct, bind(partition_schema, strict_projection(schema, spec)(expr))
        )


class FileFilter:
    """``may_match`` / ``must_match`` of a row filter for files of any partition spec."""

    def __init__(
        self, metadata: TableMetadata, row_filter: BooleanExpression, schema: Schema | None = None
    ) -> None:
        self.metadata = metadata
        self.schema = schema if schema is not None else metadata.schema()
        self.row_filter = row_filter
        bind(self.schema, row_filter)  # fail early on a bad filter
        self.always_true = isinstance(row_filter, AlwaysTrue)
        self.always_false = isinstance(row_filter, AlwaysFalse)
        self._inclusive_metrics = InclusiveMetricsEvaluator(self.schema, row_filter)
        self._strict_metrics = StrictMetricsEvaluator(self.schema, row_filter)
        self._specs: dict[int, _PerSpec] = {}

    def _spec(self, spec_id: int) -> _PerSpec:
        ev = self._specs.get(spec_id)
        if ev is None:
            ev = _PerSpec(self.schema, self.metadata, spec_id, self.row_filter)
            self._specs[spec_id] = ev
        return ev

    def manifest_may_match(self, manifest: ManifestFile) -> bool:
        if self.always_true:
            return True
        if self.always_false:
            return False
        return self._spec(manifest.partition_spec_id).manifest.eval(manifest)

    def may_match(self, f: DataFile) -> bool:
        if self.always_true:
            return True
        if self.always_false:
            return False
        if not self._spec(f.spec_id).inclusive(f.partition):
            return False
        # Delete files carry metrics of their own columns (file_path/pos or the equality
        # columns), which cannot rule out the data columns of a filter on their own.
        if f.content == DataFileContent.POSITION_DELETES:
            return True
        return self._inclusive_metrics.eval(f)

    def must_match(self, f: DataFile) -> bool:
        if self.always_true:
            return True
        if self.always_false:
            return False
        if self._spec(f.spec_id).strict(f.partition):
            return True
        return f.content == DataFileContent.DATA and self._strict_metrics.eval(f)
