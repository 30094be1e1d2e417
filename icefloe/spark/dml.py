"""Row-level changes on Spark with a builder API (delta-spark's conventions, in snake_case)::

    t = icefloe.spark.table(spark, "ns.t")
    t.delete("day < '2024-01-01'")
    t.update("id = 3", set={"status": "'done'", "n": "n + 1"})
    (t.alias("t").merge(updates.alias("s"), "t.id = s.id")
        .when_matched_delete(condition="s.op = 'D'")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .when_not_matched_by_source_delete(condition="t.day < '2020-01-01'")
        .execute())                                  # -> DmlResult (rows, files, snapshot id)

Conditions and values are Spark SQL text or Columns, evaluated by Spark with Spark's semantics
(NULL is not TRUE). ``write.delete.mode``, ``write.update.mode`` and ``write.merge.mode``
choose copy-on-write or merge-on-read, ``write.<command>.isolation-level`` the conflict checks
of the one commit each change makes. How a change runs: :mod:`icefloe.spark._dml_exec`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from pyspark.sql import Column, DataFrame, SparkSession

from icefloe.errors import ValidationError
from icefloe.spark._dml_exec import (
    DeleteChange,
    DmlResult,
    MergeCardinalityError,
    RowLevelChange,
    UpdateChange,
)
from icefloe.spark._dml_merge import MATCHED_KIND, NOT_MATCHED, NOT_MATCHED_BY_SOURCE, Clause, MergeChange

if TYPE_CHECKING:
    from icefloe.table import Table

__all__ = ["DmlResult", "MergeBuilder", "MergeCardinalityError", "SparkTable", "table"]

Condition = str | Column
Assignments = Mapping[str, str | Column]


def table(
    spark: SparkSession,
    name: str,
    *,
    catalog: str | None = None,
    catalog_properties: Mapping[str, str] | None = None,
) -> SparkTable:
    """A handle on icefloe table ``name`` (``"ns.t"``) for row-level changes from Spark, in the
    catalog the data source uses (``catalog`` / ``catalog_properties`` as in
    :func:`icefloe.spark.read`)."""
    return SparkTable(spark, name, catalog=catalog, catalog_properties=catalog_properties)


class SparkTable:
    """``delete``, ``update`` and ``merge`` of an icefloe table, run on Spark."""

    def __init__(
        self,
        spark: SparkSession,
        name: str,
        *,
        catalog: str | None = None,
        catalog_properties: Mapping[str, str] | None = None,
        alias: str | None = None,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise ValidationError("name the table as 'namespace.table'")
        self.spark = spark
        self.name = name
        self._catalog = catalog
        self._catalog_properties = dict(catalog_properties or {})
        self._alias = alias

    def _options(self) -> dict[str, str]:
        options = {f"catalog.{k}": str(v) for k, v in self._catalog_properties.items()}
        if self._catalog:
            options["catalog"] = self._catalog
        return options

    def load(self) -> Table:
        """The table, as its catalog has it now."""
        from icefloe.spark._config import catalog_from_options, spark_catalog_conf

        return catalog_from_options(self._options(), spark_catalog_conf(self.spark)).load_table(self.name)

    def alias(self, name: str) -> SparkTable:
        """The same table under ``name``, for conditions such as ``"t.id = s.id"`` (default: the
        table's own name, ``t`` for ``ns.t``)."""
        return SparkTable(
            self.spark,
            self.name,
            catalog=self._catalog,
            catalog_properties=self._catalog_properties,
            alias=name,
        )

    def to_df(self) -> DataFrame:
        """The table's current rows (:func:`icefloe.spark.read`)."""
        from icefloe.spark import read

        df = read(
            self.spark, self.name, catalog=self._catalog, catalog_properties=self._catalog_properties or None
        )
        return df.alias(self._alias) if self._alias else df

    def _run(self, change: RowLevelChange) -> DmlResult:
        from icefloe.spark.setup import icefloe_errors, use_this_python

        use_this_python(self.spark)
        with icefloe_errors():
            return change.run()

    def delete(self, condition: Condition | None = None) -> DmlResult:
        """Delete the rows for which ``condition`` is TRUE (every row when None)."""
        return self._run(DeleteChange(self.spark, self.load, self._alias, condition))

    def update(self, condition: Condition | None = None, set: Assignments | None = None) -> DmlResult:
        """Set the columns of ``set`` (column -> SQL text or Column over the row's current
        values) in the rows for which ``condition`` is TRUE (every row when None)."""
        if not set:
            raise ValidationError(
                "update needs set={column: value}", hint='e.g. t.update("id = 3", set={"n": "n + 1"})'
            )
        return self._run(UpdateChange(self.spark, self.load, self._alias, condition, set))

    def merge(
        self, source: DataFrame, on: Condition | None = None, *, condition: Condition | None = None
    ) -> MergeBuilder:
        """Start a MERGE of ``source`` into this table ``ON`` the condition ``on`` (delta-spark's
        keyword ``condition=`` works too); add WHEN clauses and call :meth:`MergeBuilder.execute`."""
        if not isinstance(source, DataFrame):
            raise ValidationError(f"the merge source must be a Spark DataFrame, got {type(source).__name__}")
        if on is not None and condition is not None:
            raise ValidationError(
                "give the merge condition once, as on= or as condition=",
                hint='e.g. t.alias("t").merge(src.alias("s"), "t.id = s.id")',
            )
        on = on if on is not None else condition
        if on is None:
            raise ValidationError("a merge needs an ON condition", hint='e.g. "t.id = s.id"')
        return MergeBuilder(self, source, on)


class MergeBuilder:
    """The WHEN clauses of a MERGE, applied in the order given (the first whose condition is
    TRUE for a row wins), then :meth:`execute`."""

    def __init__(self, target: SparkTable, source: DataFrame, condition: Condition) -> None:
        self._target = target
        self._source = source
        self._condition = condition
        self._clauses: list[Clause] = []
        self._schema_evolution = False

    def _add(self, clause: Clause) -> MergeBuilder:
        self._clauses.append(clause)
        return self

    def when_matched_update(self, set: Assignments, condition: Condition | None = None) -> MergeBuilder:
        """Matched target rows get ``set`` (target column -> expression over target and source)."""
        return self._add(Clause(MATCHED_KIND, "update", condition, _assignments(set, "set")))

    def when_matched_update_all(self, condition: Condition | None = None) -> MergeBuilder:
        """Matched target rows take every column from the source column of the same name."""
        return self._add(Clause(MATCHED_KIND, "update", condition, None, all_columns=True))

    def when_matched_delete(self, condition: Condition | None = None) -> MergeBuilder:
        return self._add(Clause(MATCHED_KIND, "delete", condition))

    def when_not_matched_insert(
        self, values: Assignments, condition: Condition | None = None
    ) -> MergeBuilder:
        """Source rows without a target row are inserted with ``values`` (target column ->
        expression over the source; other columns null)."""
        return self._add(Clause(NOT_MATCHED, "insert", condition, _assignments(values, "values")))

    def when_not_matched_insert_all(self, condition: Condition | None = None) -> MergeBuilder:
        return self._add(Clause(NOT_MATCHED, "insert", condition, None, all_columns=True))

    def when_not_matched_by_source_update(
        self, set: Assignments, condition: Condition | None = None
    ) -> MergeBuilder:
        """Target rows no source row matches get ``set`` (expressions over the target)."""
        return self._add(Clause(NOT_MATCHED_BY_SOURCE, "update", condition, _assignments(set, "set")))

    def when_not_matched_by_source_delete(self, condition: Condition | None = None) -> MergeBuilder:
        return self._add(Clause(NOT_MATCHED_BY_SOURCE, "delete", condition))

    def with_schema_evolution(self) -> MergeBuilder:
        """``*`` clauses add the source's new columns to the table (and widen types), in the
        same commit; target columns the source lacks are kept (update) or null (insert)."""
        self._schema_evolution = True
        return self

    def execute(self) -> DmlResult:
        target = self._target
        change = MergeChange(
            target.spark,
            target.load,
            target._alias,
            self._source,
            self._condition,
            self._clauses,
            self._schema_evolution,
        )
        return target._run(change)


def _assignments(value: Assignments, what: str) -> dict[str, str | Column]:
    if not isinstance(value, Mapping) or not value:
        raise ValidationError(
            f"{what} must be a non-empty mapping of target column to expression",
            hint=f'e.g. {what}={{"v": "s.v", "n": "t.n + 1"}}',
        )
    return dict(value)
