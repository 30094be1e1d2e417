"""Finding the rows of a batch that a row-level operation (delete, overwrite by filter, upsert)
touches: by a row filter, or by equality with a set of key rows. Positions come back as a numpy
mask over the batch; the callers in :mod:`icefloe.table._row_ops` turn them into files.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icefloe.arrow.expression import arrow_mask
from icefloe.expressions import (
    AlwaysTrue,
    And,
    BooleanExpression,
    GreaterThanOrEqual,
    LessThanOrEqual,
    bind,
)
from icefloe.expressions.visitors import referenced_field_ids
from icefloe.spec.types import IntegerType, LongType, StringType

if TYPE_CHECKING:
    from icefloe.spec.schema import Schema

__all__ = ["FilterMatcher", "KeyMatcher", "Matcher"]

_POS = "__icefloe_pos"


class FilterMatcher:
    """Rows matching a row filter (NULL results do not match)."""

    def __init__(self, schema: Schema, row_filter: BooleanExpression) -> None:
        bound = bind(schema, row_filter)
        self.field_ids = referenced_field_ids(bound)
        self.read_schema = schema.select_ids(self.field_ids)
        # The mask is built from the bound filter: binding may settle predicates by the schema
        # alone (``id is null`` on a required column, a literal beyond the column's range), and
        # the unbound filter would still name columns that the read schema no longer needs.
        self._mask = arrow_mask(bound, self.read_schema)

    def matches(self, batch: pa.RecordBatch) -> np.ndarray:
        mask: np.ndarray = self._mask(batch).to_numpy(zero_copy_only=False)
        return mask


class KeyMatcher:
    """Rows whose key columns equal those of one of a set of keys (NULL keys never match)."""

    def __init__(self, schema: Schema, key_columns: list[str], keys: pa.Table) -> None:
        self.key_columns = key_columns
        self.field_ids = {schema.find_field(c).field_id for c in key_columns}
        self.read_schema = schema.select_ids(self.field_ids)
        self._keys = keys.select(key_columns).group_by(key_columns).aggregate([])

    def matches(self, batch: pa.RecordBatch) -> np.ndarray:
        t = pa.Table.from_batches([batch]).select(self.key_columns)
        t = t.append_column(_POS, pa.array(np.arange(batch.num_rows)))
        hits: np.ndarray = (
            t.join(self._keys, keys=self.key_columns, join_type="inner").column(_POS).to_numpy()
        )
        mask: np.ndarray = np.zeros(batch.num_rows, dtype=bool)
        mask[hits] = True
        return mask

    def prefilter(self, schema: Schema) -> BooleanExpression:
        """A range filter on the key columns, for pruning files by metadata and for conflicts."""
        expr: BooleanExpression = AlwaysTrue()
        for c in self.key_columns:
            t = schema.find_field(c).field_type
            if not isinstance(t, IntegerType | LongType | StringType):
                continue
            mm = pc.min_max(self._keys.column(c))
            lo, hi = mm["min"].as_py(), mm["max"].as_py()
            if lo is None:
                continue
            rng = And(GreaterThanOrEqual(c, lo), LessThanOrEqual(c, hi))
            expr = rng if isinstance(expr, AlwaysTrue) else And(expr, rng)
        return expr


Matcher: TypeAlias = FilterMatcher | KeyMatcher
