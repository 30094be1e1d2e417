"""The measuring core shared by every scenario: contenders run alternately, medians, ratios
against targets, and a met/missed verdict.

A *case* is one comparison (e.g. "filtered Arrow scan"): a few contenders doing the same work,
each run ``repeat`` times after ``warmup`` untimed runs. Round ``r`` runs the contenders in list
order when ``r`` is even and in reverse when odd, so page-cache warmth, GC pressure and the other
tenants of a shared machine drift over both sides alike. Only the timed call is measured: a
contender's ``setup``/``teardown`` (a fresh table, a dropped one) run outside the clock.

Ratios are phrased the way the targets are:
- ``speed``: how many times as fast the subject is, ``median(baseline) / median(subject)``
  (">= 0.9x a raw pyarrow read");
- ``time``: the subject's time as a multiple of the baseline's, ``median(subject) /
  median(baseline)`` ("<= 0.5x PyIceberg's plan_files time").
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "Case",
    "CaseResult",
    "Check",
    "Context",
    "Contender",
    "Ratio",
    "Target",
    "check_target",
    "metric_target",
    "ratio_target",
    "run_case",
    "skipped",
]

Metrics = dict[str, Any]


@dataclass
class Context:
    """What every scenario gets: the scale, the repetition counts and where data lives."""

    scale: float
    repeat: int
    warmup: int
    data_dir: Path  # cached inputs (bench/.data), kept between runs
    work_dir: Path  # this run's scratch space, removed at the end
    options: dict[str, Any] = field(default_factory=dict)

    def say(self, msg: str) -> None:
        print(msg, flush=True)


@dataclass
class Contender:
    """One side of a comparison. ``run`` is timed; it may return metrics (rows read, files
    opened) that are kept from its last timed run."""

    name: str
    run: Callable[[], Metrics | None]
    setup: Callable[[], None] | None = None
    teardown: Callable[[], None] | None = None


@dataclass(frozen=True)
class Ratio:
    label: str
    subject: str
    baseline: str
    kind: Literal["speed", "time"]
    op: Literal[">=", "<="] | None = None  # None: reported, no target
    target: float | None = None

    def value(self, medians: dict[str, float]) -> float:
        s, b = medians[self.subject], medians[self.baseline]
        if self.kind == "speed":
            return b / s if s > 0 else float("inf")
        return s / b if b > 0 else float("inf")

    def met(self, value: float) -> bool | None:
        if self.op is None or self.target is None:
            return None
        return value >= self.target if self.op == ">=" else value <= self.target

    def target_text(self) -> str:
        return "no target" if self.op is None else f"{self.op} {self.target:g}x"


@dataclass(frozen=True)
class Check:
    """A yes/no target that is not a ratio (files opened, every commit landed)."""

    label: str
    met: bool
    detail: str = ""


@dataclass(frozen=True)
class Target:
    """One row of the scoreboard and of bench/README.md's targets table, declared by the scenario
    that measures it (its module's ``TARGETS``): where the measure is found in a run's results
    (``case`` and one of ``ratio``, ``check`` or ``metric``) and what it must reach.

    ``id`` is ``<scenario>.<case>.<what>``, stable across runs. A ratio with ``op`` and
    ``target`` is judged MET / MISSED against them (these declarations are the source of truth;
    the scoreboard flags a scenario whose own ``Ratio`` says otherwise); without them it is
    REPORTED. A check is MET / MISSED by its yes/no; a metric is REPORTED.
    """

    id: str
    scenario: str
    case: str
    what: str  # what is compared, one line
    ratio: str | None = None  # the label of a ratio in the case's results
    check: str | None = None  # the label of a check
    metric: str | None = None  # a key of the case's metrics
    op: Literal[">=", "<="] | None = None
    target: float | None = None
    measure: str = "speed"  # how the goal reads: speed, time, latency, memory
    unit: str = ""  # a metric's unit

    def goal(self) -> str:
        if self.check is not None:
            return "yes/no"
        if self.op is None or self.target is None:
            return "reported"
        return f"{self.measure} {self.op} {self.target:g}x"


def ratio_target(
    id: str,
    case: str,
    label: str,
    what: str,
    op: Literal[">=", "<="] | None = None,
    target: float | None = None,
    measure: str = "speed",
) -> Target:
    """A ratio target; the scenario is the id's first part."""
    return Target(id, id.split(".", 1)[0], case, what, ratio=label, op=op, target=target, measure=measure)


def check_target(id: str, case: str, label: str, what: str) -> Target:
    return Target(id, id.split(".", 1)[0], case, what, check=label)


def metric_target(id: str, case: str, key: str, what: str, unit: str = "") -> Target:
    return Target(id, id.split(".", 1)[0], case, what, metric=key, unit=unit)


@dataclass
class Case:
    scenario: str
    name: str
    description: str
    contenders: list[Contender]
    ratios: list[Ratio]
    # Derives checks and extra metrics from the contenders' metrics after the timed runs.
    evaluate: Callable[[dict[str, Metrics]], tuple[list[Check], Metrics]] | None = None
    unit_divisor: float = 1.0  # a contender's run does this many operations (per-op medians)


@dataclass
class CaseResult:
    scenario: str
    name: str
    description: str
    times_s: dict[str, list[float]] = field(default_factory=dict)
    median_s: dict[str, float] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    ratios: list[dict[str, Any]] = field(default_factory=list)
    checks: list[dict[str, Any]] = field(default_factory=list)
    skipped: str | None = None
    cpu_s: dict[str, list[float]] = field(default_factory=dict)
    median_cpu_s: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "case": self.name,
            "description": self.description,
            "times_s": self.times_s,
            "median_s": self.median_s,
            "cpu_s": self.cpu_s,
            "median_cpu_s": self.median_cpu_s,
            "metrics": self.metrics,
            "ratios": self.ratios,
            "checks": self.checks,
            "skipped": self.skipped,
        }


def skipped(scenario: str, name: str, description: str, reason: str) -> CaseResult:
    return CaseResult(scenario, name, description, skipped=reason)


def ratio_entry(r: Ratio, medians: dict[str, float]) -> dict[str, Any]:
    v = r.value(medians)
    return {
        "label": r.label,
        "subject": r.subject,
        "baseline": r.baseline,
        "kind": r.kind,
        "op": r.op,
        "target": r.target,
        "value": v,
        "met": r.met(v),
    }


def _timed(c: Contender) -> tuple[float, float, Metrics | None]:
    """Wall time (what the targets are about) and this process's CPU time over all its threads
    (steadier on a shared machine; it misses work done in child processes or a JVM)."""
    if c.setup is not None:
        c.setup()
    gc.collect()
    try:
        c0, t0 = time.process_time(), time.perf_counter()
        out = c.run()
        elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    finally:
        if c.teardown is not None:
            c.teardown()
    return elapsed, cpu, out


def alternate(
    contenders: Sequence[Contender], repeat: int, warmup: int, say: Callable[[str], None]
) -> tuple[dict[str, list[float]], dict[str, list[float]], dict[str, Metrics]]:
    """Run every contender ``warmup`` untimed then ``repeat`` timed rounds, flipping the order
    each round. Returns the times and each contender's metrics from its last timed run."""
    times: dict[str, list[float]] = {c.name: [] for c in contenders}
    cpu_times: dict[str, list[float]] = {c.name: [] for c in contenders}
    metrics: dict[str, Metrics] = {c.name: {} for c in contenders}
    for r in range(warmup + repeat):
        order = list(contenders) if r % 2 == 0 else list(reversed(contenders))
        line = []
        for c in order:
            elapsed, cpu, out = _timed(c)
            line.append(f"{c.name}={elapsed * 1000:.1f}ms")
            if r >= warmup:
                times[c.name].append(elapsed)
                cpu_times[c.name].append(cpu)
                if out:
                    metrics[c.name] = dict(out)
        status = "warm-up" if r < warmup else f"round {r - warmup + 1}/{repeat}"
        say(f"    {status}: " + ", ".join(line))
    return times, cpu_times, metrics


def run_case(ctx: Context, case: Case) -> CaseResult:
    ctx.say(f"  {case.scenario}/{case.name}: {case.description}")
    times, cpu_times, metrics = alternate(case.contenders, ctx.repeat, ctx.warmup, ctx.say)
    if case.unit_divisor != 1.0:
        times = {k: [t / case.unit_divisor for t in v] for k, v in times.items()}
        cpu_times = {k: [t / case.unit_divisor for t in v] for k, v in cpu_times.items()}
    medians = {k: statistics.median(v) for k, v in times.items()}
    res = CaseResult(case.scenario, case.name, case.description, times, medians)
    res.cpu_s = cpu_times
    res.median_cpu_s = {k: statistics.median(v) for k, v in cpu_times.items()}
    res.metrics = {k: v for k, v in metrics.items() if v}
    if case.evaluate is not None:
        checks, extra = case.evaluate(metrics)
        res.checks = [{"label": c.label, "met": c.met, "detail": c.detail} for c in checks]
        res.metrics.update(extra)
    res.ratios = [ratio_entry(r, medians) for r in case.ratios]
    for entry, r in zip(res.ratios, case.ratios, strict=True):
        entry["cpu_value"] = r.value(res.median_cpu_s)
    return res
