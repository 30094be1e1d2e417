"""Rebuilding filters of any size: balanced chains, no recursion, one depth limit.

A filter of 100,000 terms is an ordinary thing for a generated ``id in``-style list written as
ORs, and ``functools.reduce(operator.or_, ...)`` makes it a tree 100,000 levels deep. Binding
(and every evaluator, through binding) therefore rebuilds the tree without recursing: each
and/or chain, however it is nested, becomes a balanced chain (17 levels for 100,000 operands)
and double negations cancel. What balancing cannot flatten is alternation, ``a and (b or (c and
...))``; compiled evaluators recurse once per level, so a tree still deeper than
:data:`MAX_DEPTH` after rebuilding is refused with an :class:`ExpressionError` naming the limit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from icefloe.errors import ExpressionError
from icefloe.expressions._base import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    Not,
    Or,
    Predicate,
    and_,
    make_binary,
    not_,
    or_,
    skip_double_not,
)

__all__ = [
    "MAX_DEPTH",
    "ChainRewrite",
    "check_depth",
    "distinct_operands",
    "keep",
    "map_predicates",
    "rebalance",
    "rebuild",
]

# Levels of and/or/not a rebuilt filter may have. A balanced chain of a million terms takes 20;
# compiled evaluators spend one Python frame per level, and the default recursion limit is 1000.
MAX_DEPTH = 400


def check_depth(expr: BooleanExpression) -> BooleanExpression:
    """``expr``, or :class:`ExpressionError` if it nests deeper than :data:`MAX_DEPTH`."""
    if expr._depth > MAX_DEPTH:
        raise ExpressionError(
            f"the filter nests and/or/not {expr._depth} levels deep even with its and/or chains "
            f"balanced; the limit is {MAX_DEPTH} levels (MAX_DEPTH)",
            hint="write long lists of alternatives as 'col in (...)', or as flat chains of one "
            "operator, rather than alternating and/or nesting",
            depth=expr._depth,
            limit=MAX_DEPTH,
        )
    return expr


# Rewrites the operands of one and/or chain (the class says which); returns the list it was given
# when it has nothing to change.
ChainRewrite = Callable[[type[And | Or], list[BooleanExpression]], list[BooleanExpression]]


# A marker on rebuild()'s stack: the subtree under a NOT is done, flip the parity back.
_FLIP = object()


def rebuild(
    expr: BooleanExpression,
    leaf: Callable[[Predicate], BooleanExpression],
    chain: ChainRewrite | None = None,
    negated_leaf: Callable[[Predicate], BooleanExpression] | None = None,
) -> BooleanExpression:
    """``expr`` with every predicate replaced by ``leaf(predicate)``, every and/or chain rebuilt
    balanced and simplified (:func:`and_`, :func:`or_`) after ``chain`` rewrote its operands,
    double negations cancelled and NOT of a constant folded. :class:`ExpressionError` if the
    result is deeper than :data:`MAX_DEPTH`.

    With ``negated_leaf``, a predicate under an odd number of NOTs is replaced by
    ``negated_leaf(predicate)`` instead (binding decides a predicate under NOT by its negation,
    see :mod:`icefloe.expressions._binding`)."""
    if isinstance(expr, Predicate):
        return leaf(expr)
    out: list[BooleanExpression] = []
    negated = False
    # Each entry is a node to expand, or (node, its operands, whether it can be kept) once its
    # operands are queued, or _FLIP once the subtree under a NOT is expanded.
    stack: list[Any] = [expr]
    while stack:
        item = stack.pop()
        if item is _FLIP:
            negated = not negated
            continue
        kind = type(item)
        if kind is tuple:
            node, originals, keepable = item
            count = len(originals)
            operands = out[len(out) - count :]
            del out[len(out) - count :]
            if chain is not None and type(node) is not Not:
                rewritten = chain(type(node), operands)
                keepable = keepable and rewritten is operands
                operands = rewritten
            if keepable and _unchanged(operands, originals):
                combined = node  # already balanced and simplified: binding a bound filter again
            elif type(node) is And:
                combined = and_(*operands)
            elif type(node) is Or:
                combined = or_(*operands)
            else:
                combined = not_(operands[0])
            if combined._depth > MAX_DEPTH:
                check_depth(combined)
            out.append(combined)
            continue
        if kind is Not:
            item = skip_double_not(item)
            kind = type(item)
        if kind is And or kind is Or:
            operands, direct = _chain(item)
            # Keep the node if no operand changes and the chain is as shallow as balancing makes it.
            shallow = item._depth <= (len(operands) - 1).bit_length() + max(o._depth for o in operands)
            stack.append((item, operands, direct and shallow))
            stack.extend(reversed(operands))
        elif kind is Not:
            stack.append((item, [item.child], True))
            if negated_leaf is not None:
                # The child's subtree is expanded (above the marker) with the parity flipped.
                stack.append(_FLIP)
                negated = not negated
            stack.append(item.child)
        elif kind is AlwaysTrue or kind is AlwaysFalse:
            out.append(item)
        elif isinstance(item, Predicate):
            out.append(negated_leaf(item) if negated and negated_leaf is not None else leaf(item))
        else:
            raise ExpressionError(f"{item!r} is not a boolean expression")
    return out[0]


def _chain(expr: And | Or) -> tuple[list[BooleanExpression], bool]:
    """:func:`chain_operands`, and whether no double negation had to be cancelled on the way."""
    cls = type(expr)
    operands: list[BooleanExpression] = []
    direct = True
    stack: list[Any] = [expr]
    while stack:
        e = stack.pop()
        if type(e) is Not and type(e.child) is Not:
            e = skip_double_not(e)
            direct = False
        if type(e) is cls:
            stack.append(e.right)
            stack.append(e.left)
        else:
            operands.append(e)
    return operands, direct


def _unchanged(operands: list[BooleanExpression], originals: list[BooleanExpression]) -> bool:
    for new, old in zip(operands, originals, strict=True):
        if new is not old or type(new) is AlwaysTrue or type(new) is AlwaysFalse:
            return False
    return True


def keep(predicate: Predicate) -> BooleanExpression:
    """The leaf function of a :func:`rebuild` that only rebuilds the and/or structure."""
    return predicate


def distinct_operands(cls: type[And | Or], operands: list[BooleanExpression]) -> list[BooleanExpression]:
    """A :data:`ChainRewrite` dropping repeated operands (``x or x`` is ``x``): projecting 100,000
    ids through ``bucket(16, id)`` gives 100,000 tests of 16 values."""
    distinct = list(dict.fromkeys(operands))
    return operands if len(distinct) == len(operands) else distinct


def rebalance(expr: BooleanExpression) -> BooleanExpression:
    """``expr`` with balanced chains (see :func:`rebuild`); an already shallow ``expr`` as is."""
    # A filter this shallow needs no rebuilding for any evaluator; skip the walk.
    if expr._depth <= 32:
        return expr
    return rebuild(expr, keep)


def map_predicates(
    expr: BooleanExpression, leaf: Callable[[Predicate], BooleanExpression]
) -> BooleanExpression:
    """``expr`` with every predicate replaced by ``leaf(predicate)`` and its shape kept as it is."""
    if isinstance(expr, Predicate):
        return leaf(expr)
    out: list[BooleanExpression] = []
    stack: list[Any] = [expr]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is tuple:
            node = item[0]
            if type(node) is Not:
                out[-1] = Not(out[-1])
            else:
                right = out.pop()
                out[-1] = make_binary(type(node), out[-1], right)
        elif kind is And or kind is Or:
            stack.append((item,))
            stack.append(item.right)
            stack.append(item.left)
        elif kind is Not:
            stack.append((item,))
            stack.append(item.child)
        elif isinstance(item, Predicate):
            out.append(leaf(item))
        else:
            out.append(item)
    return out[0]
