"""The memory bound of the icefloe data source's reads (``spark.read.format("icefloe")``).

Each Spark task of a read runs :meth:`icefloe.spark.source.IcefloeReader.read` in a Python
worker process: its scan tasks one after the other, each file opened alone and streamed by
``icefloe.arrow.reader.read_task`` in batches of ``batch_size`` rows (one row group's column
chunks at a time; no read-ahead), every batch converted to Spark's Arrow layout and written to
the JVM through the worker's socket, which blocks while Spark has not consumed the previous
one. So what a worker holds at once, beyond its fixed costs (interpreter, pyspark, pyarrow,
icefloe: measured after a warm-up read), is one row group's column chunks twice (compressed and
decompressed pages) and three batches (the one being decoded, its Spark-layout conversion, the
one being serialized)::

    2 * row_group_bytes + 3 * batch_bytes            per worker
    parallelism * (2 * row_group_bytes + 3 * batch_bytes)   for the read

with ``row_group_bytes`` the uncompressed size of the largest row group read and ``batch_bytes``
a decoded batch (``min(batch_size, rows of that row group) * bytes of a decoded row``);
``parallelism`` is the number of tasks Spark runs at once (``local[N]``: N; a cluster: the
executor cores), one worker each. It does not depend on the table's size. Measured by
``python -m bench spark-memory`` (bench/scenarios/spark_memory.py).
"""

from __future__ import annotations

__all__ = ["read_memory_bound", "worker_memory_bound"]


def worker_memory_bound(batch_bytes: int, row_group_bytes: int) -> int:
    """Bytes one Python worker holds at once beyond its fixed costs while it reads."""
    return 2 * row_group_bytes + 3 * batch_bytes


def read_memory_bound(batch_bytes: int, row_group_bytes: int, parallelism: int) -> int:
    """Bytes all the Python workers of one read hold at once beyond their fixed costs."""
    return parallelism * worker_memory_bound(batch_bytes, row_group_bytes)
