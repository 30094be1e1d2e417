"""Scan planning: from table metadata and a filter to picklable file scan tasks."""

from icefloe.scan.planner import PlanningStats, plan_files, plan_tasks
from icefloe.scan.task import FileScanTask

__all__ = ["FileScanTask", "PlanningStats", "plan_files", "plan_tasks"]
