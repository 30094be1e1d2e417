"""Table data as Apache Arrow: schema conversion, the Parquet writer with Iceberg column metrics,
and the Parquet reader for scan tasks.

This package is the only place that touches pyarrow's compute, dataset and Parquet APIs for table
rows. Modules: ``schema`` (Iceberg <-> Arrow schemas), ``conform`` (checking and converting user
data), ``partitioning`` (vectorized grouping by partition tuple), ``metrics`` (data-file metrics),
``writer`` (``write_data_files``), ``reader`` (``read_task``), ``transforms`` and ``expression``
(vectorized partition transforms and filter conversion).
"""

from icefloe.arrow.reader import read_task
from icefloe.arrow.schema import arrow_to_schema, project_to_arrow, schema_to_arrow
from icefloe.arrow.writer import write_data_files

__all__ = ["arrow_to_schema", "project_to_arrow", "read_task", "schema_to_arrow", "write_data_files"]
