"""``table.replace_sort_order(...)``: every form (terms, SortFields, the builder in a ``with``
block, chained, in a transaction), the commit's updates and requirements, refusals that leave
the table unchanged, order ids (reused for the same order, never reused for a new one), and
scenario tests of a sort order change racing a data append, another sort order change and a
schema change."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import icefloe
from icefloe.catalog.memory import InMemoryCatalog
from icefloe.errors import ConflictError, SortOrderError, ValidationError
from icefloe.spec.sort_order import UNSORTED_SORT_ORDER, NullOrder, SortDirection, SortField, SortOrder
from icefloe.spec.updates import AddSortOrder, AssertDefaultSortOrderId, SetDefaultSortOrder
from icefloe.table import ReplaceSortOrder, Table
from icefloe.testing import FaultInjectingCatalog
from icefloe.transforms import BucketTransform, DayTransform, IdentityTransform

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("name", pa.string()),
        ("price", pa.float64()),
        ("address", pa.struct([("city", pa.string())])),
        ("tags", pa.list_(pa.string())),
        ("attrs", pa.map_(pa.string(), pa.string())),
    ]
)
ASC, DESC = SortDirection.ASC, SortDirection.DESC
FIRST, LAST = NullOrder.NULLS_FIRST, NullOrder.NULLS_LAST


def rows(ids: list[int]) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "ts": pa.array([i * 3_600_000_000 for i in ids], pa.timestamp("us", tz="UTC")),
            "name": [f"n{i % 7}" for i in ids],
        }
    )


def order_json(t: Table) -> dict[str, object]:
    return t.sort_order().to_json()


@pytest.fixture
def catalog(tmp_path: Path) -> InMemoryCatalog:
    wh = tmp_path / "wh"
    wh.mkdir()
    cat = InMemoryCatalog("m", warehouse=wh.as_uri())
    cat.create_namespace("ns")
    return cat


@pytest.fixture
def table(catalog: InMemoryCatalog) -> Table:
    t = catalog.create_table("ns.t", schema=SCHEMA)
    t.append(rows([3, 1, 2]))
    return t


@pytest.fixture
def faulty(tmp_path: Path) -> FaultInjectingCatalog:
    wh = tmp_path / "fwh"
    wh.mkdir()
    cat = FaultInjectingCatalog(InMemoryCatalog("m", warehouse=wh.as_uri()))
    cat.create_namespace("ns")
    return cat


# ------------------------------------------------------------------ forms


def test_terms_commit_at_once(table: Table, catalog: InMemoryCatalog) -> None:
    order = table.replace_sort_order("id", "day(ts) desc nulls last", "bucket(16, name)")
    assert order == SortOrder(
        1,
        [
            SortField(1, IdentityTransform(), ASC, FIRST),
            SortField(2, DayTransform(), DESC, LAST),
            SortField(3, BucketTransform(16), ASC, FIRST),
        ],
    )
    assert table.sort_order() == order
    assert catalog.load_table("ns.t").sort_order() == order  # committed
    assert order_json(table) == {
        "order-id": 1,
        "fields": [
            {"transform": "identity", "source-id": 1, "direction": "asc", "null-order": "nulls-first"},
            {"transform": "day", "source-id": 2, "direction": "desc", "null-order": "nulls-last"},
            {"transform": "bucket[16]", "source-id": 3, "direction": "asc", "null-order": "nulls-first"},
        ],
    }


def test_builder_in_a_with_block(table: Table) -> None:
    before = table.metadata_location
    with table.replace_sort_order() as so:
        assert isinstance(so, ReplaceSortOrder)
        so.asc("id").desc("day(ts)", nulls_first=True).asc("name", nulls_first=False)
        assert table.metadata_location == before  # nothing until the block ends
        assert so.apply().order_id == 1
    assert [(f.source_id, f.direction, f.null_order) for f in table.sort_order().fields] == [
        (1, ASC, FIRST),
        (2, DESC, FIRST),
        (3, ASC, LAST),
    ]


def test_builder_takes_whole_terms_and_sort_fields(table: Table) -> None:
    with table.replace_sort_order() as so:
        so.add("day(ts) desc", SortField(1, BucketTransform(4), DESC, FIRST))
    assert table.sort_order().fields == (
        SortField(2, DayTransform(), DESC, LAST),
        SortField(1, BucketTransform(4), DESC, FIRST),
    )
    assert table.replace_sort_order(SortField(1, IdentityTransform())).fields == (
        SortField(1, IdentityTransform()),
    )


def test_no_terms_is_unsorted(table: Table) -> None:
    table.replace_sort_order("id")
    with table.replace_sort_order():
        pass
    assert table.sort_order() == UNSORTED_SORT_ORDER
    assert table.metadata.default_sort_order_id == 0
    table.replace_sort_order("id")
    assert table.replace_sort_order().commit() == UNSORTED_SORT_ORDER
    assert table.refresh().sort_order().is_unsorted


def test_the_commit_is_add_and_set_default_with_a_requirement(
    table: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[list[object], list[object]]] = []
    original = table.catalog.commit_table

    def spy(identifier: object, requirements: list[object], updates: list[object]) -> object:
        seen.append((requirements, updates))
        return original(identifier, requirements, updates)  # type: ignore[arg-type]

    monkeypatch.setattr(table.catalog, "commit_table", spy)
    table.replace_sort_order("id desc")
    ((requirements, updates),) = seen
    assert AssertDefaultSortOrderId(0) in requirements
    assert [type(u) for u in updates] == [AddSortOrder, SetDefaultSortOrder]
    assert updates[1] == SetDefaultSortOrder(-1)


def test_case_insensitive(table: Table) -> None:
    with pytest.raises(SortOrderError):
        table.replace_sort_order("ID")
    assert table.replace_sort_order("ID desc", "Address.City", case_sensitive=False).fields == (
        SortField(1, IdentityTransform(), DESC, LAST),
        SortField(table.schema().find_field("address.city").field_id, IdentityTransform(), ASC, FIRST),
    )


def test_nested_struct_field(table: Table) -> None:
    order = table.replace_sort_order("address.city desc nulls first")
    assert table.schema().column_name(order.fields[0].source_id) == "address.city"


def test_same_order_commits_nothing(table: Table) -> None:
    table.replace_sort_order("id", "day(ts)")
    location = table.metadata_location
    assert table.replace_sort_order("id asc nulls first", "days(ts)").order_id == 1
    assert table.metadata_location == location


def test_a_finished_builder_refuses_more(table: Table) -> None:
    so = table.replace_sort_order()
    so.asc("id").commit()
    with pytest.raises(ValidationError, match="already committed"):
        so.asc("name")
    with pytest.raises(ValidationError, match="already committed"):
        so.commit()


# ------------------------------------------------------------------ refusals


@pytest.mark.parametrize(
    ("terms", "term", "match"),
    [
        (("id", "nope desc"), "nope desc", "no column named 'nope'"),
        (("attrs",), "attrs", "map<string, string>, which cannot be sorted"),
        (("tags",), "tags", "list<string>, which cannot be sorted"),
        (("address",), "address", "which cannot be sorted"),
        (("bucket(8, price)",), "bucket(8, price)", "does not apply to double"),
        (("hour(name)",), "hour(name)", "does not apply to string"),
        (("tags.element",), "tags.element", "inside a list or map"),
        (("id sideways",), "id sideways", "no column named 'id sideways'"),
    ],
)
def test_refusals_leave_the_table_unchanged(
    table: Table, catalog: InMemoryCatalog, terms: tuple[str, ...], term: str, match: str
) -> None:
    table.replace_sort_order("name")
    location, metadata = table.metadata_location, table.metadata
    with pytest.raises(SortOrderError, match=match) as ei:
        table.replace_sort_order(*terms)
    assert ei.value.context["term"] == term
    with pytest.raises(SortOrderError, match=match), table.replace_sort_order() as so:
        so.add(*terms)
    assert table.metadata_location == location and table.metadata is metadata
    assert catalog.load_table("ns.t").metadata_location == location


def test_an_error_inside_the_block_commits_nothing(table: Table) -> None:
    location = table.metadata_location
    with pytest.raises(RuntimeError), table.replace_sort_order() as so:
        so.asc("id")
        raise RuntimeError("boom")
    assert table.refresh().metadata_location == location


def test_refusals_are_public_errors(table: Table) -> None:
    with pytest.raises(icefloe.SortOrderError):
        table.replace_sort_order("bucket(4, price)")
    assert issubclass(icefloe.SortOrderError, icefloe.ValidationError)


# ------------------------------------------------------------------ order ids


def test_ids_are_reused_for_the_same_order_and_never_for_a_new_one(table: Table) -> None:
    a = table.replace_sort_order("id")
    b = table.replace_sort_order("name desc")
    assert (a.order_id, b.order_id) == (1, 2)
    assert table.replace_sort_order("id asc nulls first").order_id == 1  # same fields: id 1 again
    table.replace_sort_order().commit()
    assert table.sort_order().order_id == 0
    c = table.replace_sort_order("day(ts)")
    assert c.order_id == 3
    assert sorted(o.order_id for o in table.metadata.sort_orders) == [0, 1, 2, 3]
    # a different null order is a different order
    assert table.replace_sort_order("id asc nulls last").order_id == 4


def test_table_created_sorted_starts_at_one(catalog: InMemoryCatalog) -> None:
    t = catalog.create_table(
        "ns.sorted", schema=SCHEMA, sort_order=SortOrder(1, [SortField(2, IdentityTransform(), DESC)])
    )
    assert t.sort_order().order_id == 1
    assert t.replace_sort_order("id").order_id == 2
    assert t.replace_sort_order("ts desc").order_id == 1


# ------------------------------------------------------------------ transactions


def test_in_a_transaction_writes_after_it_are_sorted(table: Table) -> None:
    with table.transaction() as tx:
        order = tx.replace_sort_order("id desc")
        assert order.order_id == 1
        tx.append(rows([5, 9, 7]))
    assert table.sort_order().order_id == 1
    files = [f for f in table.inspect.files().to_pylist() if f["sort_order_id"] == 1]
    assert len(files) == 1
    ids = pq.read_table(files[0]["file_path"].removeprefix("file://")).column("id").to_pylist()
    assert ids == [9, 7, 5]


def test_builder_in_a_transaction(table: Table) -> None:
    location = table.metadata_location
    with table.transaction() as tx:
        with tx.replace_sort_order() as so:
            so.desc("name")
        assert table.metadata_location == location  # queued only
        tx.append(rows([1, 2]))
    assert table.sort_order().fields == (SortField(3, IdentityTransform(), DESC, LAST),)


def test_an_abandoned_transaction_keeps_the_order(table: Table) -> None:
    with pytest.raises(RuntimeError), table.transaction() as tx:
        tx.replace_sort_order("id")
        raise RuntimeError("boom")
    assert table.refresh().sort_order().is_unsorted


# ------------------------------------------------------------------ concurrency scenarios


def test_racing_a_data_append_both_land(faulty: FaultInjectingCatalog) -> None:
    """Setup: a table. We replace its sort order; another writer appends first (between our
    validation and our swap). The append changed no sort order: our change is re-applied on the
    new metadata and both land."""
    t = faulty.create_table("ns.t", schema=SCHEMA)
    t.append(rows([1]))
    other = faulty.load_table("ns.t")
    faulty.before_next_swap(lambda: other.append(rows([2])))
    order = t.replace_sort_order("id desc")
    assert order.order_id == 1
    t.refresh()
    assert sorted(t.scan().to_arrow().column("id").to_pylist()) == [1, 2]
    assert t.sort_order() == order
    # a stale handle that never saw the append
    stale = faulty.load_table("ns.t")
    t.append(rows([3]))
    assert stale.replace_sort_order("name").order_id == 2
    assert sorted(stale.refresh().scan().to_arrow().column("id").to_pylist()) == [1, 2, 3]


def test_racing_another_sort_order_change_the_last_one_wins(faulty: FaultInjectingCatalog) -> None:
    """Two writers replace the sort order from the same base. As in Java's
    BaseReplaceSortOrder (refresh, re-apply), the one that commits last wins; both orders stay
    in sort-orders with their own ids."""
    t = faulty.create_table("ns.t", schema=SCHEMA)
    mine = faulty.load_table("ns.t")
    theirs = faulty.load_table("ns.t")
    faulty.before_next_swap(lambda: theirs.replace_sort_order("name desc"))
    order = mine.replace_sort_order("id")
    t.refresh()
    assert order.order_id == 2 and t.sort_order() == order
    assert {o.order_id: [f.source_id for f in o.fields] for o in t.metadata.sort_orders} == {
        0: [],
        1: [3],
        2: [1],
    }
    # the racing change adds the very order we are about to add: its id is reused
    faulty.before_next_swap(lambda: theirs.refresh().replace_sort_order("day(ts)"))
    assert mine.refresh().replace_sort_order("day(ts)").order_id == 3
    assert len(t.refresh().metadata.sort_orders) == 4


def test_racing_a_schema_change_that_drops_the_column(faulty: FaultInjectingCatalog) -> None:
    """We sort by a column that a concurrent schema change deletes: the re-applied change is
    refused (typed, naming the term) and nothing of it lands."""
    t = faulty.create_table("ns.t", schema=SCHEMA)
    other = faulty.load_table("ns.t")
    faulty.before_next_swap(lambda: other.update_schema().delete_column("name").commit())
    with pytest.raises(SortOrderError, match="name desc") as ei:
        t.replace_sort_order("name desc")
    assert ei.value.context["term"] == "name desc"
    t.refresh()
    assert t.sort_order().is_unsorted and t.schema().find_field("id")


def test_transaction_whose_order_id_was_taken_concurrently_fails(faulty: FaultInjectingCatalog) -> None:
    """A transaction replaces the order (id 1) and writes files that record id 1; a concurrent
    change takes id 1 for another order. Retrying would give ours id 2 while the files say 1: the
    transaction fails with ConflictError and nothing of it lands."""
    t = faulty.create_table("ns.t", schema=SCHEMA)
    theirs = faulty.load_table("ns.t")
    faulty.before_next_swap(lambda: theirs.replace_sort_order("name"))
    with pytest.raises(ConflictError, match="sort orders changed concurrently"), t.transaction() as tx:
        tx.replace_sort_order("id desc")
        tx.append(rows([1, 2]))
    t.refresh()
    assert [f.source_id for f in t.sort_order().fields] == [3]
    assert t.current_snapshot() is None


def test_transaction_racing_a_data_append_lands(faulty: FaultInjectingCatalog) -> None:
    t = faulty.create_table("ns.t", schema=SCHEMA)
    other = faulty.load_table("ns.t")
    faulty.before_next_swap(lambda: other.append(rows([1])))
    with t.transaction() as tx:
        tx.replace_sort_order("id desc")
        tx.append(rows([2, 3]))
    t.refresh()
    assert t.sort_order().order_id == 1
    assert sorted(t.scan().to_arrow().column("id").to_pylist()) == [1, 2, 3]
    assert {f["sort_order_id"] for f in t.inspect.files().to_pylist()} == {0, 1}
