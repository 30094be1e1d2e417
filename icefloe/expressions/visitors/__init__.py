"""Visitors over bound expressions, one per module: NOT removal, referenced columns, row
evaluation, partition projections, manifest and file-metrics pruning, and residuals."""

from icefloe.expressions.visitors._visitor import BooleanExpressionVisitor, BoundExpressionVisitor, visit
from icefloe.expressions.visitors.evaluator import expression_evaluator
from icefloe.expressions.visitors.inclusive_metrics import InclusiveMetricsEvaluator
from icefloe.expressions.visitors.manifest_evaluator import ManifestEvaluator
from icefloe.expressions.visitors.projection import inclusive_projection, strict_projection
from icefloe.expressions.visitors.referenced_fields import referenced_field_ids
from icefloe.expressions.visitors.residual import ResidualEvaluator
from icefloe.expressions.visitors.rewrite_not import rewrite_not
from icefloe.expressions.visitors.strict_metrics import StrictMetricsEvaluator

__all__ = [
    "BooleanExpressionVisitor",
    "BoundExpressionVisitor",
    "InclusiveMetricsEvaluator",
    "ManifestEvaluator",
    "ResidualEvaluator",
    "StrictMetricsEvaluator",
    "expression_evaluator",
    "inclusive_projection",
    "referenced_field_ids",
    "rewrite_not",
    "strict_projection",
    "visit",
]
