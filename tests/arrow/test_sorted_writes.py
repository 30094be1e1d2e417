"""The Arrow writer on sorted tables: every file's rows in the table's order (read back with
pyarrow.parquet, nulls and NaN where the order puts them), ``sort_order_id`` recorded, tight and
non-overlapping bounds for the files of one write, sorted runs when the input exceeds the sort
buffer, and sorted input streamed without being reordered."""

from __future__ import annotations

import datetime as dt
import itertools
import math
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icefloe.arrow.sort import ArrowSortOrder
from icefloe.arrow.writer import write_data_files
from icefloe.catalog.memory import InMemoryCatalog
from icefloe.manifest import DataFile
from icefloe.spec.sort_order import NullOrder, SortDirection
from icefloe.table import Table

SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("v", pa.float64()),
        ("s", pa.string()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("st", pa.struct([("k", pa.int32())])),
    ]
)


def random_rows(n: int, seed: int, *, nulls: float = 0.05) -> pa.Table:
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, 1_000_000, n)
    v = rng.normal(size=n)
    v[rng.random(n) < 0.03] = np.nan
    return pa.table(
        {
            "id": pa.array(ids, mask=rng.random(n) < nulls),
            "v": pa.array(v, mask=rng.random(n) < nulls),
            "s": pa.array([f"s{x % 997:04d}" for x in ids]),
            "ts": pa.array(rng.integers(0, 30 * 86_400_000_000, n), pa.timestamp("us", tz="UTC")),
            "st": pa.array([{"k": int(x % 50)} for x in ids], pa.struct([("k", pa.int32())])),
        },
        schema=SCHEMA,
    )


@pytest.fixture
def catalog(tmp_path: Path) -> InMemoryCatalog:
    wh = tmp_path / "wh"
    wh.mkdir()
    cat = InMemoryCatalog("m", warehouse=wh.as_uri())
    cat.create_namespace("ns")
    return cat


def make_table(cat: InMemoryCatalog, name: str, *terms: str, target: int = 32_000, **kw: Any) -> Table:
    t = cat.create_table(
        f"ns.{name}", schema=SCHEMA, properties={"write.target-file-size-bytes": str(target)}, **kw
    )
    if terms:
        t.replace_sort_order(*terms)
    return t


def data_files(t: Table, **scan: Any) -> list[DataFile]:
    return [task.file for task in t.scan(**scan).plan_files()]


def read_file(f: DataFile) -> pa.Table:
    return pq.read_table(f.file_path.removeprefix("file://"))


def key_compare(directions: list[tuple[str, SortDirection, NullOrder]]) -> Any:
    """Iceberg/Spark order on plain values (NaN above every number)."""

    def one(a: Any, b: Any, direction: SortDirection, nulls: NullOrder) -> int:
        if a is None or b is None:
            if a is None and b is None:
                return 0
            first = nulls is NullOrder.NULLS_FIRST
            return (-1 if first else 1) if a is None else (1 if first else -1)
        ra = (1, 0.0) if isinstance(a, float) and math.isnan(a) else (0, a)
        rb = (1, 0.0) if isinstance(b, float) and math.isnan(b) else (0, b)
        c = (ra > rb) - (ra < rb)
        return -c if direction is SortDirection.DESC else c

    def cmp(x: dict[str, Any], y: dict[str, Any]) -> int:
        for name, direction, nulls in directions:
            c = one(x[name], y[name], direction, nulls)
            if c:
                return c
        return 0

    return cmp


def assert_sorted(rows: list[dict[str, Any]], cmp: Any) -> None:
    for i, (a, b) in enumerate(itertools.pairwise(rows)):
        assert cmp(a, b) <= 0, f"rows {i} and {i + 1} out of order: {a} then {b}"


def long_bound(b: bytes) -> int:
    return int(struct.unpack("<q", b)[0])


# ------------------------------------------------------------------ every file sorted


def test_files_are_sorted_nulls_and_nan_where_the_order_puts_them(catalog: InMemoryCatalog) -> None:
    t = make_table(catalog, "t", "v desc nulls first", "id")
    t.append(random_rows(20_000, seed=1))
    files = data_files(t)
    assert len(files) > 3
    cmp = key_compare(
        [("v", SortDirection.DESC, NullOrder.NULLS_FIRST), ("id", SortDirection.ASC, NullOrder.NULLS_FIRST)]
    )
    seen_nan = seen_null = False
    for f in files:
        assert f.sort_order_id == 1
        rows = read_file(f).to_pylist()
        assert_sorted(rows, cmp)
        vs = [r["v"] for r in rows]
        seen_null |= None in vs
        seen_nan |= any(isinstance(x, float) and math.isnan(x) for x in vs)
    assert seen_nan and seen_null
    # the first file starts with the nulls, then NaN (the greatest value, descending), then +inf..
    first = read_file(min(files, key=lambda f: f.file_path)).column("v").to_pylist()
    assert first[0] is None


@pytest.mark.parametrize(
    ("terms", "spec"),
    [
        (("day(ts) desc", "id asc nulls last"), [("day", SortDirection.DESC), ("id", SortDirection.ASC)]),
        (("st.k", "s desc"), [("st.k", SortDirection.ASC), ("s", SortDirection.DESC)]),
        (("bucket(8, id)", "truncate(3, s) desc"), None),
    ],
)
def test_transforms_and_nested_columns_as_keys(
    catalog: InMemoryCatalog, terms: tuple[str, ...], spec: list[tuple[str, SortDirection]] | None
) -> None:
    t = make_table(catalog, "t", *terms)
    t.append(random_rows(5_000, seed=2))
    order = ArrowSortOrder(t.sort_order(), t.schema())
    for f in data_files(t):
        assert f.sort_order_id == t.sort_order().order_id
        table = read_file(f)
        assert order.is_sorted(table)
        if spec is None:
            continue
        rows = table.to_pylist()
        for r in rows:
            r["day"] = None if r["ts"] is None else r["ts"].date()
            r["st.k"] = None if r["st"] is None else r["st"]["k"]
        nulls = {"id": NullOrder.NULLS_LAST}
        assert_sorted(
            rows,
            key_compare(
                [
                    (
                        n,
                        d,
                        nulls.get(
                            n, NullOrder.NULLS_FIRST if d is SortDirection.ASC else NullOrder.NULLS_LAST
                        ),
                    )
                    for n, d in spec
                ]
            ),
        )


def test_unsorted_tables_record_order_zero(catalog: InMemoryCatalog) -> None:
    t = make_table(catalog, "t")
    t.append(random_rows(100, seed=3))
    assert [f.sort_order_id for f in data_files(t)] == [0]
    t.replace_sort_order("id")
    t.append(random_rows(100, seed=4))
    assert sorted(f.sort_order_id for f in data_files(t)) == [0, 1]
    t.replace_sort_order().commit()
    t.append(random_rows(100, seed=5))
    assert sorted(f.sort_order_id for f in data_files(t)) == [0, 0, 1]


def test_partitioned_sorted_table(catalog: InMemoryCatalog) -> None:
    t = make_table(catalog, "t", "ts desc", partition_by=["bucket(4, id)"])
    t.append(random_rows(8_000, seed=6))
    files = data_files(t)
    assert len({f.partition for f in files}) == 5  # four buckets and null ids
    cmp = key_compare([("ts", SortDirection.DESC, NullOrder.NULLS_LAST)])
    for f in files:
        assert f.sort_order_id == 1
        assert_sorted(read_file(f).to_pylist(), cmp)


# ------------------------------------------------------------------ bounds


def test_bounds_are_tight_after_several_random_appends(catalog: InMemoryCatalog) -> None:
    """Several appends of random ids. Every file's bounds on the sort key are the smallest and
    largest id it holds, the files of one append cover disjoint id ranges, and a selective filter
    plans far fewer files than on an unsorted copy of the same appends."""
    t = make_table(catalog, "t", "id")
    unsorted = make_table(catalog, "u")
    id_field = t.schema().find_field("id").field_id
    by_append: list[list[tuple[int, int]]] = []
    for seed in range(4):
        batch = random_rows(20_000, seed=10 + seed, nulls=0.0)
        before = {f.file_path for f in data_files(t)}
        t.append(batch)
        unsorted.append(batch)
        ranges = []
        for f in data_files(t):
            if f.file_path in before:
                continue
            ids = read_file(f).column("id").to_pylist()
            lower, upper = long_bound(f.lower_bounds[id_field]), long_bound(f.upper_bounds[id_field])
            assert (lower, upper) == (min(ids), max(ids))
            assert ids == sorted(ids)
            ranges.append((lower, upper))
        by_append.append(ranges)
    for ranges in by_append:
        assert len(ranges) > 3
        ranges.sort()
        assert all(a[1] < b[0] for a, b in itertools.pairwise(ranges)), ranges
    where = "id >= 500000 and id < 510000"
    sorted_planned, unsorted_planned = (
        len(data_files(t, row_filter=where)),
        len(data_files(unsorted, row_filter=where)),
    )
    assert sorted_planned <= 8 < unsorted_planned
    assert sorted(t.scan(row_filter=where).to_arrow().column("id").to_pylist()) == sorted(
        unsorted.scan(row_filter=where).to_arrow().column("id").to_pylist()
    )


# ------------------------------------------------------------------ runs and streaming


def test_input_larger_than_the_sort_buffer_is_sorted_in_runs(catalog: InMemoryCatalog) -> None:
    t = make_table(catalog, "t", "id desc")
    data = random_rows(30_000, seed=7)
    files = write_data_files(
        t.io, t.metadata, iter(data.to_batches(max_chunksize=1_000)), sort_buffer_bytes=200_000
    )
    assert len(files) > 5
    id_field = t.schema().find_field("id").field_id
    ranges = []
    for f in files:
        ids = read_file(f).column("id").to_pylist()
        nonnull = [x for x in ids if x is not None]
        assert nonnull == sorted(nonnull, reverse=True)
        assert ids[len(nonnull) :] == [None] * (len(ids) - len(nonnull))  # desc: nulls last
        if nonnull:
            ranges.append((long_bound(f.lower_bounds[id_field]), long_bound(f.upper_bounds[id_field])))
    # several runs: files of different runs overlap (each run spans the id range)
    ranges.sort()
    assert any(a[1] >= b[0] for a, b in itertools.pairwise(ranges))
    assert sum(f.record_count for f in files) == 30_000


def test_sorted_input_is_streamed_without_sorting(
    catalog: InMemoryCatalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Input already in the order (in many batches) is never sorted, and rolls into as many files
    as on an unsorted table; the files' ranges are disjoint."""
    t = make_table(catalog, "t", "id", "s desc")
    u = make_table(catalog, "u")
    data = random_rows(40_000, seed=8)
    data = data.sort_by([("id", "ascending", "at_start"), ("s", "descending", "at_end")])
    batches = data.to_batches(max_chunksize=1_000)

    def no_sorting(self: ArrowSortOrder, data: Any) -> pa.Array:
        raise AssertionError("sorted input must not be sorted again")

    monkeypatch.setattr(ArrowSortOrder, "sort_indices", no_sorting)
    files = write_data_files(t.io, t.metadata, iter(batches), sort_buffer_bytes=100_000)
    plain = write_data_files(u.io, u.metadata, iter(batches))
    assert len(files) == len(plain) > 3
    id_field = t.schema().find_field("id").field_id
    ranges = sorted(
        (long_bound(f.lower_bounds[id_field]), long_bound(f.upper_bounds[id_field]))
        for f in files
        if id_field in f.lower_bounds  # not the file of null ids
    )
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(ranges))
    written = pa.concat_tables([read_file(f) for f in sorted(files, key=lambda f: f.file_path)])
    columns = ["id", "s", "ts"]  # the input order exactly (v holds NaN, which equals nothing)
    assert written.select(columns).to_pylist() == data.select(columns).to_pylist()


def test_batches_sorted_each_but_not_together(catalog: InMemoryCatalog) -> None:
    """Each batch is sorted, but a later batch starts below the earlier one's end: the writer
    notices across batches and sorts them together."""
    t = make_table(catalog, "t", "id", target=10_000_000)
    first = pa.table({"id": pa.array([1, 5, 9], pa.int64())})
    second = pa.table({"id": pa.array([2, 3, 10], pa.int64())})
    t.append(pa.concat_tables([first, second]).to_batches()[0:1] + second.to_batches())
    (f,) = data_files(t)
    assert read_file(f).column("id").to_pylist() == [1, 2, 3, 5, 9, 10]


def test_copy_on_write_rewrites_stay_sorted(catalog: InMemoryCatalog) -> None:
    t = make_table(catalog, "t", "s", target=10_000_000)
    t.append(random_rows(2_000, seed=9))
    t.delete("id < 100000")
    cmp = key_compare([("s", SortDirection.ASC, NullOrder.NULLS_FIRST)])
    for f in data_files(t):
        assert f.sort_order_id == 1
        assert_sorted(read_file(f).to_pylist(), cmp)


def test_sort_buffer_must_be_positive(catalog: InMemoryCatalog) -> None:
    from icefloe.errors import ValidationError

    t = make_table(catalog, "t", "id")
    with pytest.raises(ValidationError, match="sort_buffer_bytes"):
        write_data_files(t.io, t.metadata, random_rows(10, seed=1), sort_buffer_bytes=0)


def test_timestamps_with_dates_compare(catalog: InMemoryCatalog) -> None:
    """day(ts) desc ties keep the input order within a day (a stable sort)."""
    t = make_table(catalog, "t", "day(ts) desc", target=10_000_000)
    day = 86_400_000_000
    ts = [day + 5, 3 * day + 1, day + 1, 3 * day]
    t.append(pa.table({"id": [0, 1, 2, 3], "ts": pa.array(ts, pa.timestamp("us", tz="UTC"))}))
    (f,) = data_files(t)
    assert read_file(f).column("id").to_pylist() == [1, 3, 0, 2]
    assert read_file(f).column("ts").to_pylist()[0].date() == dt.date(1970, 1, 4)


# ------------------------------------------------------------------ the run logic, at random


@pytest.fixture(scope="module")
def random_tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Table]:
    wh = tmp_path_factory.mktemp("random_runs")
    cat = InMemoryCatalog("r", warehouse=wh.as_uri())
    cat.create_namespace("ns")
    tables = {}
    for key, terms, partition_by in [
        ("asc", ("id",), None),
        ("desc_first", ("id desc nulls first",), None),
        ("two_keys", ("v desc", "id asc nulls last"), ["bucket(2, s)"]),
    ]:
        t = cat.create_table(
            f"ns.{key}",
            schema=SCHEMA,
            partition_by=partition_by,
            properties={"write.target-file-size-bytes": "3000", "write.parquet.row-group-size-bytes": "1500"},
        )
        t.replace_sort_order(*terms)
        tables[key] = t
    return tables


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    key=st.sampled_from(["asc", "desc_first", "two_keys"]),
    sizes=st.lists(st.integers(0, 400), min_size=1, max_size=8),
    presorted=st.booleans(),
    sort_buffer=st.integers(500, 40_000),
    seed=st.integers(0, 1000),
)
def test_random_batches_always_give_sorted_files(
    random_tables: dict[str, Table], key: str, sizes: list[int], presorted: bool, sort_buffer: int, seed: int
) -> None:
    t = random_tables[key]
    order = ArrowSortOrder(t.sort_order(), t.schema())
    data = random_rows(sum(sizes), seed=seed)
    if presorted:
        data = order.sort(data)
    batches, offset = [], 0
    for n in sizes:
        batches.extend(data.slice(offset, n).to_batches())
        offset += n
    files = write_data_files(t.io, t.metadata, iter(batches), sort_buffer_bytes=sort_buffer)
    assert sum(f.record_count for f in files) == data.num_rows
    written = []
    for f in files:
        assert f.sort_order_id == 1
        table = read_file(f)
        assert order.is_sorted(table), f.file_path
        written += table.select(["id", "s"]).to_pylist()
    key_of = lambda r: (r["id"] is None, r["id"] or 0, r["s"])  # noqa: E731
    assert sorted(written, key=key_of) == sorted(data.select(["id", "s"]).to_pylist(), key=key_of)
