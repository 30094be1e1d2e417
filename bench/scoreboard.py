"""The scoreboard: every target of every scenario in one table, measured side by side in one run.

Targets are declared by the scenario modules themselves (a module-level ``TARGETS`` list of
:class:`bench._core.Target`), so a new scenario's rows appear here and in bench/README.md's targets
table without touching this file. :data:`FALLBACK_TARGETS` holds the rows of scenarios whose
module does not declare them (yet); a module's own declaration of an id wins.

A row's verdict:

- ``MET`` / ``MISSED``: a ratio judged against the declared target, or a yes/no check;
- ``REPORTED``: a ratio or metric without a target;
- ``SKIPPED``: the scenario ran but this measure is missing, with the reason (a skipped case, a
  failed scenario, a peer that is not installed);
- ``not run``: the scenario was not chosen in this invocation.

Ratios and failed checks that a run produced but no declaration names are listed too (marked
undeclared), so nothing measured goes unseen.
"""

from __future__ import annotations

import importlib
import json
import math
from pathlib import Path
from typing import Any

from bench._core import Target, check_target, metric_target, ratio_target
from bench.scenarios import SCENARIOS

__all__ = [
    "FALLBACK_TARGETS",
    "NOT_RUN",
    "build_rows",
    "declared_targets",
    "load_results",
    "render_markdown",
    "render_text",
    "save",
    "targets_markdown",
]

NOT_RUN = "not run"
VERDICTS = ("MET", "MISSED", "REPORTED", "SKIPPED", NOT_RUN)

# Declared here while bench/scenarios/planning.py (another change in flight) does not export
# TARGETS itself; the fresh-process rows read what its ``planning-fresh`` measurement adds.
FALLBACK_TARGETS: dict[str, list[Target]] = {
    "planning": [
        *(
            ratio_target(
                f"planning.{case}.{key}",
                case,
                f"plan {case}{note}: time vs PyIceberg",
                f"plan_files, 10,000 files, {filt}{text}, vs PyIceberg 0.12",
                "<=",
                0.5,
                "time",
            )
            for case, filt in (("selective", "one partition"), ("full", "every file"))
            for key, note, text in (
                ("vs-pyiceberg", "", ", warm caches"),
                ("cold-vs-pyiceberg", ", caches cleared", ", caches cleared"),
                ("fresh-vs-pyiceberg", ", fresh process", ", each in a fresh process"),
            )
        ),
        *(
            metric_target(
                f"planning.{case}.fresh-load-plan-vs-pyiceberg",
                case,
                "fresh_load_plan_time_vs_pyiceberg",
                f"load + plan_files, {filt}, each in a fresh process, vs PyIceberg 0.12",
                "x",
            )
            for case, filt in (("selective", "one partition"), ("full", "every file"))
        ),
        *(
            check_target(
                f"planning.{case}.files-opened",
                case,
                "files opened = manifest list + matching manifests (each once)",
                f"{case} plan opens the manifest list + only matching manifests, once",
            )
            for case in ("selective", "full")
        ),
    ],
}


# --------------------------------------------------------------------------- declarations


def declared_targets(scenarios: list[str] | None = None) -> list[Target]:
    """Every declared target, in the order of the scenario registry, then of declaration."""
    names = list(SCENARIOS) if scenarios is None else scenarios
    by_module: dict[str, list[Target]] = {}
    out: list[Target] = []
    for name in names:
        module = SCENARIOS[name][0]
        if module not in by_module:
            by_module[module] = list(getattr(importlib.import_module(module), "TARGETS", []))
        own = [t for t in by_module[module] if t.scenario == name]
        ids = {t.id for t in own}
        out += own + [t for t in FALLBACK_TARGETS.get(name, []) if t.id not in ids]
    _validate(out)
    return out


def _validate(targets: list[Target]) -> None:
    seen: set[str] = set()
    for t in targets:
        if t.id in seen:
            raise ValueError(f"target id {t.id!r} declared twice")
        seen.add(t.id)
        if not t.id.startswith(t.scenario + "."):
            raise ValueError(f"target id {t.id!r} must start with its scenario {t.scenario!r}")
        if sum(x is not None for x in (t.ratio, t.check, t.metric)) != 1:
            raise ValueError(f"target {t.id!r} must name exactly one of ratio, check, metric")
        if (t.op is None) != (t.target is None):
            raise ValueError(f"target {t.id!r}: op and target go together")


def targets_markdown(targets: list[Target] | None = None) -> str:
    """bench/README.md's targets table (``python -m bench --targets``)."""
    rows = ["| id | scenario | what is compared | target |", "| --- | --- | --- | --- |"]
    for t in declared_targets() if targets is None else targets:
        rows.append(f"| `{t.id}` | `{t.scenario}` | {_md(t.what)} | {t.goal()} |")
    return "\n".join(rows)


# --------------------------------------------------------------------------- rows


def _fmt(v: Any) -> str:
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, (int, float)):
        return "inf" if math.isinf(v) else f"{v:.2f}x"
    return str(v)


def _metric_text(v: Any, unit: str) -> str:
    if isinstance(v, float):
        return f"{v:.2f}x" if unit == "x" else f"{v:.3g} {unit}".strip()
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v} {unit}".strip()
    if isinstance(v, dict):
        return ", ".join(f"{k} {_metric_text(x, '')}" for k, x in v.items())
    return str(v)


def _skip_reason(cases: list[dict[str, Any]]) -> str | None:
    for r in cases:
        if r.get("skipped"):
            return str(r["skipped"])
    return None


def _missing_reason(case: dict[str, Any] | None, scenario_cases: list[dict[str, Any]]) -> str:
    """Why a measure is absent from a scenario that ran."""
    if case is not None and case.get("skipped"):
        return str(case["skipped"])
    if case is not None:
        # Scenarios record why a peer did not run as a text metric (e.g. "iceberg_java").
        for k, v in case.get("metrics", {}).items():
            if isinstance(v, str):
                return f"{k}: {v}"
    return _skip_reason(scenario_cases) or "not measured in this run"


def _row(t: Target | None, scenario: str, what: str, goal: str) -> dict[str, Any]:
    return {
        "id": t.id if t else None,
        "scenario": scenario,
        "case": t.case if t else None,
        "what": what,
        "target": goal,
        "wall": None,
        "cpu": None,
        "measured": "",
        "verdict": NOT_RUN,
        "note": "",
        "declared": t is not None,
    }


def _judge(t: Target, value: float) -> str:
    if t.op is None or t.target is None:
        return "REPORTED"
    ok = value >= t.target if t.op == ">=" else value <= t.target
    return "MET" if ok else "MISSED"


def build_rows(
    run_info: dict[str, Any], results: list[dict[str, Any]], targets: list[Target]
) -> list[dict[str, Any]]:
    """One row per declared target (in order), then the undeclared ratios and failed checks."""
    ran = set(run_info.get("scenarios", []))
    by_scenario: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        by_scenario.setdefault(r["scenario"], []).append(r)
    used: set[tuple[str, str, str, str]] = set()  # (scenario, case, kind, label) matched by a target
    rows = []
    for t in targets:
        row = _row(t, t.scenario, t.what, t.goal())
        rows.append(row)
        if t.scenario not in ran:
            continue
        cases = by_scenario.get(t.scenario, [])
        exact = [r for r in cases if r["case"] == t.case]
        case = exact[0] if exact else None
        if t.ratio is not None:
            found = _find(exact, "ratios", t.ratio) or _find(cases, "ratios", t.ratio)
        elif t.check is not None:
            found = _find(exact, "checks", t.check) or _find(cases, "checks", t.check)
        else:
            found = None
            if case is not None and t.metric in case.get("metrics", {}):
                found = (case, {"value": case["metrics"][t.metric]})
        if found is None:
            row["verdict"] = "SKIPPED"
            row["note"] = _missing_reason(case, cases)
            continue
        where, entry = found
        row["case"] = where["case"]
        if t.ratio is not None:
            used.add((t.scenario, where["case"], "ratios", t.ratio))
            value = float(entry["value"])
            row["wall"] = value
            row["cpu"] = entry.get("cpu_value")
            row["measured"] = _fmt(value)
            row["verdict"] = _judge(t, value)
            row["note"] = entry.get("note", "")
            if (entry.get("op"), entry.get("target")) != (t.op, t.target) and entry.get("op") is not None:
                row["note"] = (row["note"] + "; " if row["note"] else "") + (
                    f"the scenario's own target differs: {entry['op']} {entry['target']:g}x"
                )
        elif t.check is not None:
            used.add((t.scenario, where["case"], "checks", t.check))
            row["verdict"] = "MET" if entry["met"] else "MISSED"
            row["measured"] = "yes" if entry["met"] else "no"
            row["note"] = entry.get("detail", "")
        else:
            row["measured"] = _metric_text(entry["value"], t.unit)
            row["verdict"] = "REPORTED"
    for r in results:
        if r.get("skipped"):
            continue
        for q in r.get("ratios", []):
            if (r["scenario"], r["case"], "ratios", q["label"]) in used:
                continue
            goal = "reported" if q.get("op") is None else f"{q['op']} {q['target']:g}x"
            row = _row(None, r["scenario"], f"[undeclared] {r['case']}: {q['label']}", goal)
            row["case"] = r["case"]
            row["wall"], row["cpu"] = float(q["value"]), q.get("cpu_value")
            row["measured"] = _fmt(float(q["value"]))
            row["verdict"] = "REPORTED" if q.get("met") is None else "MET" if q["met"] else "MISSED"
            rows.append(row)
        for c in r.get("checks", []):
            if c["met"] or (r["scenario"], r["case"], "checks", c["label"]) in used:
                continue
            row = _row(None, r["scenario"], f"[check] {r['case']}: {c['label']}", "yes/no")
            row["case"], row["measured"], row["verdict"], row["note"] = r["case"], "no", "MISSED", c["detail"]
            rows.append(row)
    # Undeclared rows right after their scenario's declared ones (sorted() is stable).
    order = {name: i for i, name in enumerate(dict.fromkeys([t.scenario for t in targets] + list(SCENARIOS)))}
    return sorted(rows, key=lambda row: (order.get(row["scenario"], len(order)), not row["declared"]))


def _find(cases: list[dict[str, Any]], kind: str, label: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
    for r in cases:
        if r.get("skipped"):
            continue
        for entry in r.get(kind, []):
            if entry["label"] == label:
                return r, entry
    return None


# --------------------------------------------------------------------------- output


def _counts(rows: list[dict[str, Any]]) -> str:
    declared = [r for r in rows if r["declared"]]
    parts = [f"{sum(r['verdict'] == v for r in declared)} {v}" for v in VERDICTS]
    extra = len(rows) - len(declared)
    return f"{len(declared)} targets: " + ", ".join(parts) + (f"; {extra} undeclared rows" if extra else "")


def _header(run_info: dict[str, Any]) -> str:
    load = run_info.get("load_average")
    end = run_info.get("load_average_end")
    bits = [
        f"started {run_info.get('started', '?')}",
        f"TPC-H SF {run_info.get('scale', '?')}",
        f"median of {run_info.get('repeat', '?')} after {run_info.get('warmup', '?')} warm-up",
    ]
    if load:
        bits.append(f"load average {load[0]:.1f} at start" + (f", {end[0]:.1f} at end" if end else ""))
    if run_info.get("per_scenario"):
        bits.append(
            "except "
            + ", ".join(
                f"{name}: " + ", ".join(f"{k} {v}" for k, v in over.items())
                for name, over in run_info["per_scenario"].items()
            )
        )
    if run_info.get("elapsed_s") is not None:
        bits.append(f"{run_info['elapsed_s'] / 60:.1f} min")
    return "; ".join(bits)


def _verdict_text(row: dict[str, Any], limit: int | None) -> str:
    v = row["verdict"]
    note = row["note"] if v in ("SKIPPED", "MISSED") or row.get("wall") is not None else ""
    if not note:
        return v
    if limit is not None and len(note) > limit:
        note = note[: limit - 3] + "..."
    return f"{v} ({note})"


def render_text(rows: list[dict[str, Any]], run_info: dict[str, Any]) -> str:
    """The scoreboard as aligned plain text (what the command line prints)."""
    head = ("scenario", "target id", "what is compared", "wall", "by CPU", "target", "verdict")
    table = []
    last = None
    for r in rows:
        cpu = r.get("cpu")
        table.append(
            (
                r["scenario"] if r["scenario"] != last else "",
                r["id"] or "-",
                r["what"] if len(r["what"]) <= 80 else r["what"][:77] + "...",
                r["measured"],
                _fmt(cpu) if isinstance(cpu, (int, float)) else "",
                r["target"],
                _verdict_text(r, 90),
            )
        )
        last = r["scenario"]
    widths = [max(len(h), *(len(x[i]) for x in table)) if table else len(h) for i, h in enumerate(head)]
    widths[-1] = len(head[-1])  # the last column is not padded

    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    out = [f"SCOREBOARD ({_header(run_info)})", line(head), line(tuple("-" * w for w in widths))]
    out += [line(t) for t in table]
    out.append(_counts(rows))
    return "\n".join(out)


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def render_markdown(rows: list[dict[str, Any]], run_info: dict[str, Any]) -> str:
    out = [
        f"Scoreboard: {_header(run_info)}.",
        "",
        "| scenario | target id | what is compared | wall | by CPU | target | verdict |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        cpu = r.get("cpu")
        ident = f"`{r['id']}`" if r["id"] else "-"
        cells = (
            f"`{r['scenario']}`",
            ident,
            _md(r["what"]),
            r["measured"],
            _fmt(cpu) if isinstance(cpu, (int, float)) else "",
            r["target"],
            _md(_verdict_text(r, 140)),
        )
        out.append("| " + " | ".join(cells) + " |")
    out += ["", _counts(rows) + "."]
    return "\n".join(out)


def save(
    out_dir: Path,
    stamp: str,
    run_info: dict[str, Any],
    results: list[dict[str, Any]],
    rows: list[dict[str, Any]],
) -> tuple[Path, Path]:
    """``scoreboard-<stamp>.json`` (rows, run info and the raw results, so ``--from`` can rebuild
    it with newer declarations) and ``scoreboard-<stamp>.md``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    js, md = out_dir / f"scoreboard-{stamp}.json", out_dir / f"scoreboard-{stamp}.md"
    js.write_text(json.dumps({"run": run_info, "rows": rows, "results": results}, indent=1, default=str))
    md.write_text(render_markdown(rows, run_info) + "\n")
    return js, md


def load_results(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The run info and results of a saved ``<stamp>.json`` or ``scoreboard-<stamp>.json``."""
    doc = json.loads(path.read_text())
    if not isinstance(doc, dict) or "results" not in doc or "run" not in doc:
        raise ValueError(f"{path} is not a results file of python -m bench (no 'run' and 'results')")
    run_info: dict[str, Any] = doc["run"]
    if "scenarios" not in run_info:  # older files: the scenarios that left results
        run_info["scenarios"] = sorted({r["scenario"] for r in doc["results"]})
    return run_info, list(doc["results"])
