"""Filters of 100,000 terms on every path that handles expressions (issue 9, defect 5).

Each shape is built once per module (as text, or as objects the way users build them) and goes
through parsing, binding, str() and pickle round trips, equality and the Arrow mask. Shapes that
bind to the same filter as another (an OR chain parsed, reduced or built with ``Or(*terms)``) are
checked to bind equal; each distinct bound filter then goes through the row evaluator, the
metrics and manifest evaluators, projection and residuals, and table scans (negation runs on the
mixed shape). Results are compared with a plain Python computation over a handful of rows.
Nothing raises the recursion limit: the default one must do."""

from __future__ import annotations

import functools
import gc
import math
import operator
import pickle
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import icefloe
from icefloe.arrow.expression import arrow_mask, to_arrow_expression
from icefloe.errors import ExpressionError
from icefloe.expressions import (
    AlwaysTrue,
    And,
    BooleanExpression,
    EqualTo,
    IsNull,
    Not,
    NotEqualTo,
    Or,
    and_,
    bind,
    col,
    or_,
    parse,
    unbind,
)
from icefloe.expressions._tree import MAX_DEPTH
from icefloe.expressions.visitors import (
    BooleanExpressionVisitor,
    InclusiveMetricsEvaluator,
    ManifestEvaluator,
    ResidualEvaluator,
    StrictMetricsEvaluator,
    expression_evaluator,
    inclusive_projection,
    rewrite_not,
    visit,
)
from icefloe.expressions.visitors._visitor import evaluate
from icefloe.manifest import DataFile, FileFormat, ManifestFile, PartitionFieldSummary
from icefloe.scan.planner import PlanningStats
from icefloe.scan.task import FileScanTask
from icefloe.spec.partition import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField, StringType
from icefloe.spec.values import to_bytes
from icefloe.table import Table
from icefloe.transforms import parse_transform

N = 100_000

SCHEMA = Schema(NestedField(1, "id", LongType()), NestedField(2, "s", StringType()))
STRUCT = SCHEMA.as_struct()
# Rows around the edges of every shape below, and a null.
IDS: list[int | None] = [None, -1, 0, 1, 2, 3, 5, 7, 99_998, 99_999, 100_000, 199_996, 199_997, 250_000]
TABLE = pa.table({"id": pa.array(IDS, pa.int64()), "s": [f"s{i}" for i in range(len(IDS))]})

# Partition fields for the projection, residual and manifest tests, and the scanned table.
TRUNCATE = "truncate[100000]"
SPEC = PartitionSpec(PartitionField(1, 1000, parse_transform(TRUNCATE), "id_trunc"))


def _truncated(v: int | None) -> int | None:
    return None if v is None else v - v % 100_000


# ------------------------------------------------------------------------------------- shapes


@dataclass(frozen=True)
class Shape:
    """A way to write a 100,000-term filter, and which ``id`` values it keeps. ``binds_like``
    names the shape whose bound filter this one's equals (``test_equality_and_unbinding`` checks
    it): the slower paths run once per distinct bound filter."""

    name: str
    build: Callable[[], BooleanExpression]
    keeps: Callable[[int | None], bool]
    binds_like: str | None = None


def _in_range(v: int | None) -> bool:
    return v is not None and 0 <= v < N


def _out_of_range(v: int | None) -> bool:
    # `!=` holds for null (Iceberg's row semantics), so a chain of them keeps null rows.
    return v is None or not 0 <= v < N


def _mixed_text() -> str:
    # 50,000 parenthesised AND groups under one OR, written the way str() prints it, so that the
    # text is its own round trip.
    return "(" + " or ".join(f"(id >= {4 * k} and id < {4 * k + 2})" for k in range(N // 2)) + ")"


def _mixed_keeps(v: int | None) -> bool:
    return v is not None and 0 <= v < 4 * (N // 2) and v % 4 in (0, 1)


# Filter texts as str() prints them: parsing one and printing it gives the same text back.
OR_TEXT = "(" + " or ".join(f"id = {i}" for i in range(N)) + ")"
AND_TEXT = "(" + " and ".join(f"id != {i}" for i in range(N)) + ")"
IN_TEXT = "id in (" + ", ".join(map(str, range(N))) + ")"
MIXED_TEXT = _mixed_text()


# The shapes of one chain print as the same text and equal the same chain, so the last of each
# is kept (one at a time: the shapes run in order, and large live trees slow the collector).
@functools.lru_cache(maxsize=1)
def _reparsed(text: str) -> BooleanExpression:
    return parse(text)


@functools.lru_cache(maxsize=1)
def _chain(op: str) -> BooleanExpression:
    """The OR of ``id = i`` (or the AND of ``id != i``) built balanced by ``or_`` (``and_``)."""
    if op == "or":
        return or_(*[EqualTo("id", i) for i in range(N)])
    return and_(*[NotEqualTo("id", i) for i in range(N)])


def _nots(count: int) -> BooleanExpression:
    e: BooleanExpression = EqualTo("id", 1)
    for _ in range(count):
        e = Not(e)
    return e


SHAPES = [
    Shape("or-text", lambda: parse(OR_TEXT), _in_range, "or-reduce"),
    Shape(
        "left-nested-text",
        lambda: parse("(" * (N - 1) + "id = 0" + "".join(f" or id = {i})" for i in range(1, N))),
        _in_range,
        "or-reduce",
    ),
    # What users build in Python: left-deep trees 100,000 levels deep.
    Shape("or-reduce", lambda: functools.reduce(operator.or_, [col("id") == i for i in range(N)]), _in_range),
    Shape("or-constructor", lambda: Or(*[EqualTo("id", i) for i in range(N)]), _in_range, "or-reduce"),
    Shape("and-text", lambda: parse(AND_TEXT), _out_of_range),
    Shape(
        "and-reduce",
        lambda: functools.reduce(operator.and_, [col("id") != i for i in range(N)]),
        _out_of_range,
        "and-text",
    ),
    Shape("mixed-text", lambda: parse(MIXED_TEXT), _mixed_keeps),
    Shape("in-text", lambda: parse(IN_TEXT), _in_range),
    # An even number of NOTs is the predicate itself.
    Shape("not-text", lambda: parse("not " * N + "id = 1"), lambda v: v == 1),
    # An odd number of NOTs: `not (id = 1)` means `id != 1`, which keeps nulls.
    Shape("not-objects", lambda: _nots(N + 1), lambda v: v != 1),
    Shape("parentheses-text", lambda: parse("(" * N + "id = 7" + ")" * N), lambda v: v == 7),
]
OR_CHAIN = ("or-text", "or-reduce", "or-constructor", "left-nested-text")
AND_CHAIN = ("and-text", "and-reduce")


@pytest.fixture(scope="module", autouse=True)
def _collect_less_often() -> Iterator[None]:
    """These tests build trees of 100,000 nodes again and again. The cyclic collector, which
    they do not need (expressions hold no reference cycles, so reference counting frees them),
    would run every 700 allocations and rescan every large tree still alive, doubling the run
    time; it runs less often while this module does, and as before afterwards."""
    before = gc.get_threshold()
    gc.set_threshold(100_000, 10, 10)
    yield
    gc.set_threshold(*before)


@pytest.fixture(scope="module", params=SHAPES, ids=[s.name for s in SHAPES])
def shape(request: pytest.FixtureRequest) -> Shape:
    s: Shape = request.param
    return s


@pytest.fixture(scope="module")
def expr(shape: Shape) -> BooleanExpression:
    return shape.build()


@pytest.fixture(scope="module")
def bound(expr: BooleanExpression) -> BooleanExpression:
    return bind(SCHEMA, expr)


@pytest.fixture
def distinct(shape: Shape) -> None:
    """Runs the test once per distinct bound filter."""
    if shape.binds_like is not None:
        pytest.skip(f"binds to the same filter as {shape.binds_like}, which runs this test")


def _expected(shape: Shape, ids: list[int | None] = IDS) -> list[bool]:
    return [shape.keeps(v) for v in ids]


# ------------------------------------------------------------------ every shape: structure


def test_binding_balances_the_tree(expr: BooleanExpression, bound: BooleanExpression) -> None:
    # A balanced chain of 100,000 terms is 17 levels deep; the mixed shape nests a few of them.
    assert bound._depth <= 40
    assert bind(SCHEMA, bound) is bound  # binding a bound filter again changes nothing
    if isinstance(expr, And | Or):
        assert bind(SCHEMA, expr) is bound  # a large filter remembers its last binding


def test_str_round_trip(shape: Shape, expr: BooleanExpression, bound: BooleanExpression) -> None:
    text = str(expr)
    if shape.name != "not-objects":  # binding cancels its double negations
        assert str(unbind(bound)) == text
    # However a chain was built and nested, it prints flat; the texts below are written that way,
    # so for the shapes parsed from them, parsing the printed text is parsing the source again.
    if shape.name in OR_CHAIN or shape.name in AND_CHAIN:
        assert text == (OR_TEXT if shape.name in OR_CHAIN else AND_TEXT)
    if shape.name in ("mixed-text", "in-text"):
        assert text == (MIXED_TEXT if shape.name == "mixed-text" else IN_TEXT)
    if shape.name not in ("mixed-text", "in-text", "or-text", "and-text"):
        again = _reparsed(text)
        assert again == expr
        assert hash(again) == hash(expr)


def test_pickle_round_trip(shape: Shape, expr: BooleanExpression, bound: BooleanExpression) -> None:
    for e in (expr,) if shape.binds_like else (expr, bound):
        again = pickle.loads(pickle.dumps(e))
        assert again == e
        assert hash(again) == hash(e)


def test_equality_and_unbinding(shape: Shape, expr: BooleanExpression, bound: BooleanExpression) -> None:
    assert unbind(bound) == expr
    assert expr != AlwaysTrue()
    # Left-deep, balanced and parsed forms of one chain are equal, hash alike, and bind alike.
    if shape.name in OR_CHAIN or shape.name in AND_CHAIN:
        chain = _chain("or" if shape.name in OR_CHAIN else "and")
        assert expr == chain and hash(expr) == hash(chain)
        assert bound == bind(SCHEMA, chain)
    if shape.name == "or-reduce":  # 100,000 levels deep
        assert repr(expr).count("Reference(name='id')") == N
        assert expr != or_(*[EqualTo("id", i) for i in range(1, N)], EqualTo("id", 0))  # order counts
        assert str(expr.negate()) == AND_TEXT  # De Morgan, without recursion
    if shape.name == "not-objects":  # 100,001 levels deep
        assert repr(expr).startswith("Not(child=Not(child=")
        assert expr.negate() == ~expr == EqualTo("id", 1)


def test_arrow_mask(shape: Shape, expr: BooleanExpression) -> None:
    assert arrow_mask(expr, SCHEMA)(TABLE).to_pylist() == _expected(shape)


# ------------------------------------------------------- each distinct bound filter: evaluation


@pytest.mark.usefixtures("distinct")
def test_row_evaluator(shape: Shape, bound: BooleanExpression) -> None:
    matches = expression_evaluator(STRUCT, bound)
    assert [matches((v, "x")) for v in IDS] == _expected(shape)


@pytest.mark.usefixtures("distinct")
def test_arrow_expression(shape: Shape, bound: BooleanExpression) -> None:
    if shape.name == "mixed-text":
        pytest.skip("Acero plans a 100,000-node expression slowly; the mask covers this shape")
    kept = TABLE.filter(to_arrow_expression(bound, SCHEMA)).column("id").to_pylist()
    assert kept == [v for v in IDS if shape.keeps(v)]


@pytest.mark.usefixtures("distinct")
def test_negation(shape: Shape, expr: BooleanExpression) -> None:
    if shape.name in ("and-text", "or-reduce"):
        pytest.skip("De Morgan over chains of one operator is covered by the mixed shape")
    negated = rewrite_not(bind(SCHEMA, Not(expr)))
    assert bind(SCHEMA, expr.negate()) == negated
    assert ~expr == Not(expr)
    # NOT is pushed into the predicates, so null rows follow each predicate's own rule;
    # non-null rows are simply flipped.
    matches = expression_evaluator(STRUCT, negated)
    values = [v for v in IDS if v is not None]
    assert [matches((v, "x")) for v in values] == [not shape.keeps(v) for v in values]


class _Pseudo(BooleanExpressionVisitor[bool]):
    """An arbitrary but fixed truth value per predicate; counts the predicates it sees."""

    def __init__(self) -> None:
        self.seen = 0

    def visit_true(self) -> bool:
        return True

    def visit_false(self) -> bool:
        return False

    def visit_not(self, child_result: bool) -> bool:
        return not child_result

    def visit_and(self, left_result: bool, right_result: bool) -> bool:
        return left_result and right_result

    def visit_or(self, left_result: bool, right_result: bool) -> bool:
        return left_result or right_result

    def visit_predicate(self, predicate: Any) -> bool:
        self.seen += 1
        value = getattr(predicate, "literal", 0)
        return isinstance(value, int) and value % 7 == 3


@pytest.mark.usefixtures("distinct")
def test_visit_and_evaluate(expr: BooleanExpression, bound: BooleanExpression) -> None:
    # visit() walks the unbound, possibly 100,000-level tree too; evaluate() agrees with visit()
    # on the bound one while skipping what cannot change the result.
    walked, short = _Pseudo(), _Pseudo()
    assert evaluate(bound, short) == visit(bound, walked)
    assert short.seen <= walked.seen
    assert visit(expr, _Pseudo()) == visit(bound, _Pseudo())


def _data_file(ids: list[int | None]) -> DataFile:
    present = [v for v in ids if v is not None]
    return DataFile(
        file_path="f.parquet",
        file_format=FileFormat.PARQUET,
        partition=(),
        record_count=len(ids),
        file_size_in_bytes=100,
        value_counts={1: len(ids)},
        null_value_counts={1: len(ids) - len(present)},
        lower_bounds={1: to_bytes(LongType(), min(present))} if present else {},
        upper_bounds={1: to_bytes(LongType(), max(present))} if present else {},
    )


FILES: list[list[int | None]] = [
    [0, 1, 2, 3, 5, 7],
    [199_996, 250_000],
    [None, None],
    [None, -1, 99_999],
    [100_000, 199_997],
]


@pytest.mark.usefixtures("distinct")
def test_metrics_evaluators(shape: Shape, bound: BooleanExpression) -> None:
    inclusive = InclusiveMetricsEvaluator(SCHEMA, bound)
    strict = StrictMetricsEvaluator(SCHEMA, bound)
    verdicts = []
    for ids in FILES:
        data_file = _data_file(ids)
        may, must = inclusive.eval(data_file), strict.eval(data_file)
        kept = [shape.keeps(v) for v in ids]
        assert may or not any(kept), ids  # inclusive False: no row matches
        assert not must or all(kept), ids  # strict True: every row matches
        verdicts.append((may, must))
    if shape.name == "or-reduce":
        assert verdicts[1] == (False, False)  # the file of ids above 100,000 is skipped
    if shape.name == "and-text":
        assert verdicts[1] == (True, True)  # ... and every one of its rows matches


def _manifest(partitions: list[int | None]) -> ManifestFile:
    present = [p for p in partitions if p is not None]
    summary = PartitionFieldSummary(
        contains_null=len(present) < len(partitions),
        contains_nan=False,
        lower_bound=to_bytes(LongType(), min(present)) if present else None,
        upper_bound=to_bytes(LongType(), max(present)) if present else None,
    )
    return ManifestFile(
        manifest_path="m.avro",
        manifest_length=1,
        partition_spec_id=0,
        added_snapshot_id=1,
        partitions=(summary,),
    )


@pytest.mark.usefixtures("distinct")
def test_manifest_evaluator(shape: Shape, bound: BooleanExpression) -> None:
    manifests = ManifestEvaluator(SPEC, SCHEMA, bound)
    for ids in FILES:
        kept = [shape.keeps(v) for v in ids]
        assert manifests.eval(_manifest([_truncated(v) for v in ids])) or not any(kept), ids
    if shape.name in ("or-reduce", "in-text"):
        assert not manifests.eval(_manifest([_truncated(v) for v in FILES[1]]))


@pytest.mark.usefixtures("distinct")
def test_projection_and_residuals(shape: Shape, bound: BooleanExpression) -> None:
    if shape.name == "and-text":
        pytest.skip("like the OR chain (or-reduce), with != projecting strictly")
    partition_type = SPEC.partition_type(SCHEMA)
    projected = inclusive_projection(SCHEMA, SPEC)(bound)
    partition_matches = expression_evaluator(partition_type, bind(Schema(*partition_type.fields), projected))
    residuals = ResidualEvaluator(SPEC, SCHEMA, bound)
    # The null partition, the partition of the ids below 100,000, and the next one.
    for p in (None, 0, 100_000) if shape.name != "mixed-text" else (None, 100_000):
        rows = [v for v in IDS if _truncated(v) == p]
        assert partition_matches((p,)) or not any(shape.keeps(v) for v in rows), p
        residual = expression_evaluator(STRUCT, residuals.bound_residual_for((p,)))
        assert [residual((v, "x")) for v in rows] == [shape.keeps(v) for v in rows], p


# ------------------------------------------------------------------------------ a table scan


def _table(warehouse: Path, partition_by: list[str]) -> Table:
    catalog = icefloe.load_catalog("deep", type="memory", warehouse=warehouse.as_uri())
    catalog.create_namespace("ns")
    t = catalog.create_table("ns.t", schema=TABLE.schema, partition_by=partition_by)
    # Two appends, so two manifests: the second holds only ids of 100,000 and above.
    low = [i for i, v in enumerate(IDS) if v is None or v < 100_000]
    t.append(TABLE.take(low))
    t.append(TABLE.take([i for i in range(len(IDS)) if i not in low]))
    return t.refresh()


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Table:
    return _table(tmp_path_factory.mktemp("unpartitioned"), [])


@pytest.fixture(scope="module")
def partitioned_table(tmp_path_factory: pytest.TempPathFactory) -> Table:
    return _table(tmp_path_factory.mktemp("partitioned"), ["truncate(100000, id)"])


def _nulls_first(v: int | None) -> float:
    return -math.inf if v is None else v


def _scan(table: Table, shape: Shape, expr: BooleanExpression) -> PlanningStats:
    scan = table.scan(row_filter=expr)
    tasks = scan.plan_files()
    stats = scan.planning_stats
    assert len({task.file.file_path for task in tasks}) == len(tasks)
    # Residuals travel in pickled tasks to executors.
    for task in tasks:
        again = pickle.loads(pickle.dumps(task))
        assert isinstance(again, FileScanTask) and again.residual == task.residual
    got = scan.to_arrow().column("id").to_pylist()
    assert sorted(got, key=_nulls_first) == sorted((v for v in IDS if shape.keeps(v)), key=_nulls_first)
    return stats


@pytest.mark.usefixtures("distinct")
def test_table_scan(shape: Shape, expr: BooleanExpression, table: Table) -> None:
    if shape.name in ("mixed-text", "and-text"):
        # Each file's residual is the whole filter, which the reader binds, prunes row groups
        # with and masks batches with: slow at this size, and the OR chain goes the same way.
        # test_arrow_mask, the evaluator tests and test_projection_and_residuals cover these.
        pytest.skip("read like the OR chain; covered piecewise")
    stats = _scan(table, shape, expr)
    if shape.name == "or-reduce":
        assert stats.files_skipped_by_metrics == 1  # the file of ids of 100,000 and above


@pytest.mark.usefixtures("distinct")
def test_partitioned_table_scan(shape: Shape, expr: BooleanExpression, partitioned_table: Table) -> None:
    # Projection through truncate and a residual per partition, in the planner.
    if shape.name != "or-reduce":
        pytest.skip("the projections and residuals of each shape are checked above")
    stats = _scan(partitioned_table, shape, expr)
    assert stats.manifests_skipped == 1  # the manifest of ids of 100,000 and above


# ------------------------------------------------------------------------- building and limits


def test_chains_are_built_balanced() -> None:
    leaves = [EqualTo("id", i) for i in range(N)]
    for e in (and_(*leaves), or_(*leaves), And(*leaves), Or(*leaves)):
        assert e._depth == math.ceil(math.log2(N))
    assert and_(leaves[0], leaves[1], leaves[2]) == And(And(leaves[0], leaves[1]), leaves[2])
    assert And(leaves[0], leaves[1], leaves[2]) == and_(leaves[0], leaves[1], leaves[2])
    # Equality is up to associativity and double negation, and hashing agrees.
    a, b, c = leaves[:3]
    assert And(And(a, b), c) == And(a, And(b, c))
    assert hash(And(And(a, b), c)) == hash(And(a, And(b, c)))
    assert Not(Not(a)) == a and hash(Not(Not(a))) == hash(a)
    assert And(a, b) != Or(a, b) and And(a, b) != And(b, a)
    assert ~~a == a and ~~~a == Not(a)
    assert and_(AlwaysTrue(), a) == a


def test_alternating_nesting_beyond_the_limit_is_a_typed_error() -> None:
    # `a or (b and (c or (d and ...)))` cannot be balanced: beyond MAX_DEPTH levels it is refused
    # with an error that names the limit, not a RecursionError.
    depth = 20_000
    e: BooleanExpression = EqualTo("id", depth)
    for i in range(depth):
        e = Or(EqualTo("id", i), e) if i % 2 else And(NotEqualTo("id", i), e)
    assert parse(str(e)) == e  # text and equality still work at any depth
    with pytest.raises(ExpressionError, match=f"limit is {MAX_DEPTH} levels") as info:
        bind(SCHEMA, e)
    assert info.value.context["limit"] == MAX_DEPTH
    # Up to the limit, everything evaluates.
    shallow: BooleanExpression = IsNull("id")
    for i in range(MAX_DEPTH):
        shallow = Or(EqualTo("id", i), shallow) if i % 2 else And(NotEqualTo("id", i), shallow)
    b = bind(SCHEMA, shallow)
    assert b._depth == MAX_DEPTH
    row_result = [expression_evaluator(STRUCT, b)((v, "x")) for v in IDS]
    assert arrow_mask(b, SCHEMA)(TABLE).to_pylist() == row_result


def test_hand_built_deep_bound_trees_are_balanced_before_compiling() -> None:
    n = 20_000
    first = bind(SCHEMA, EqualTo("id", 0))
    assert isinstance(first, EqualTo)
    leaves: list[BooleanExpression] = [EqualTo(first.ref, i) for i in range(n)]
    deep = functools.reduce(Or, leaves)
    assert deep._depth == n - 1
    matches = expression_evaluator(STRUCT, deep)
    assert [matches((v, "x")) for v in IDS] == [v is not None and 0 <= v < n for v in IDS]
