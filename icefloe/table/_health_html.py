"""The HTML page of a :class:`icefloe.table.health.TableHealth`: one self-contained file (inline
CSS and SVG plots, no script, nothing fetched), readable offline and attachable to a ticket."""

from __future__ import annotations

import datetime as dt
import html
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from icefloe.table._repr import format_bytes, format_millis

if TYPE_CHECKING:
    from icefloe.table.health import TableHealth

__all__ = ["render_html"]

_COLORS = {"critical": "#b3261e", "warning": "#c26a00", "info": "#2f6db5"}
_BAR = "#4a7fb5"
_ACCENT = "#d9822b"
_FONT = "font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif"

_CSS = "".join(
    [
        f"body{{{_FONT};margin:0;background:#f5f6f8;color:#1d232b}}",
        "main{max-width:1120px;margin:0 auto;padding:24px 32px 48px}",
        "h1{font-size:26px;margin:0 0 4px}h2{font-size:19px;margin:28px 0 10px}",
        ".muted{color:#5f6b7a}",
        ".badge{display:inline-block;padding:3px 10px;border-radius:12px;color:#fff;font-size:13px}",
        ".summary{display:grid;grid-template-columns:repeat(4,1fr);gap:12px;margin:16px 0}",
        ".card{background:#fff;border:1px solid #dde1e6;border-radius:8px;padding:12px 14px}",
        ".card b{display:block;font-size:22px}.card span{color:#5f6b7a;font-size:13px}",
        ".finding{background:#fff;border:1px solid #dde1e6;border-left:6px solid;border-radius:6px;",
        "padding:10px 14px;margin:8px 0}",
        ".finding h3{margin:0 0 4px;font-size:15px}.finding p{margin:4px 0;font-size:14px}",
        "code{background:#eef1f5;padding:1px 5px;border-radius:4px;font-size:13px}",
        ".plots{display:grid;grid-template-columns:1fr 1fr;gap:14px}",
        ".plot{background:#fff;border:1px solid #dde1e6;border-radius:8px;padding:8px}",
        ".plot.wide{grid-column:1 / span 2}.plot.wide svg{max-height:340px}",
        "table{border-collapse:collapse;background:#fff;font-size:13px;width:100%}",
        "th,td{border-bottom:1px solid #e4e7eb;padding:5px 8px;text-align:right}th{background:#eef1f5}",
        "td:first-child,th:first-child{text-align:left}",
    ]
)


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _svg(width: int, height: int, body: list[str], title: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="100%" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="{_e(title)}" style="{_FONT}">'
        f'<text x="{width / 2}" y="20" text-anchor="middle" font-size="15" font-weight="600">'
        f"{_e(title)}</text>"
        + "".join(body)
        + "</svg>"
    )


def _empty(title: str, message: str) -> str:
    return _svg(
        520,
        300,
        [f'<text x="260" y="160" text-anchor="middle" font-size="14" fill="#5f6b7a">{_e(message)}</text>'],
        title,
    )


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    magnitude = 10 ** (len(str(int(value))) - 1)
    for step in (1, 2, 2.5, 5, 10):
        if step * magnitude >= value:
            return float(step * magnitude)
    return float(10 * magnitude)


def _y_axis(x0: int, y0: int, height: int, top: float, fmt: Callable[[float], str], width: int) -> list[str]:
    # as many ticks as give round values: 0, 2, 4, 6, 8, 10 rather than 0, 2.5, 5, 7.5, 10
    ticks = next((n for n in (4, 5, 2) if float(top / n).is_integer()), 4)
    out = []
    for i in range(ticks + 1):
        value = top * i / ticks
        y = y0 - height * i / ticks
        out.append(f'<line x1="{x0}" x2="{x0 + width}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e4e7eb"/>')
        out.append(
            f'<text x="{x0 - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11" fill="#5f6b7a">'
            f"{_e(fmt(value))}</text>"
        )
    return out


def _histogram(h: TableHealth) -> str:
    title = "Data file sizes"
    bins = h.file_size_histogram
    if not bins:
        return _empty(title, "no data files")
    w, ht, left, bottom, top_pad = 520, 300, 52, 250, 40
    plot_w, plot_h = w - left - 16, bottom - top_pad
    top = _nice_max(max(n for _, _, n in bins))
    body = _y_axis(left, bottom, plot_h, top, lambda v: f"{v:.0f}", plot_w)
    bw = plot_w / len(bins)
    for i, (lo, hi, n) in enumerate(bins):
        bar_h = plot_h * n / top
        x = left + i * bw
        color = _ACCENT if hi <= h.small_file_size else _BAR
        body.append(
            f'<rect x="{x + 2:.1f}" y="{bottom - bar_h:.1f}" width="{max(1.0, bw - 4):.1f}" '
            f'height="{bar_h:.1f}" fill="{color}"><title>{_e(format_bytes(lo))} to '
            f"{_e(format_bytes(hi))}: {n} files</title></rect>"
        )
        if n:
            body.append(
                f'<text x="{x + bw / 2:.1f}" y="{bottom - bar_h - 4:.1f}" text-anchor="middle" '
                f'font-size="11">{n}</text>'
            )
        label = f"{format_bytes(lo)} to {format_bytes(hi)}" if len(bins) <= 4 else format_bytes(lo)
        if len(bins) <= 8 or i % 2 == 0:
            body.append(
                f'<text x="{x + bw / 2:.1f}" y="{bottom + 15}" text-anchor="middle" font-size="10" '
                f'fill="#5f6b7a">{_e(label)}</text>'
            )
    body.append(
        f'<text x="{w / 2}" y="{ht - 12}" text-anchor="middle" font-size="11" fill="#5f6b7a">'
        f"file size (log scale); orange: under the small-file size {_e(format_bytes(h.small_file_size))}, "
        f"target {_e(format_bytes(h.target_file_size))}</text>"
    )
    return _svg(w, ht, body, title)


def _time_label(ms: float, span_ms: float) -> str:
    when = dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)
    if span_ms < 60_000:
        return when.strftime("%H:%M:%S.%f")[:-3]
    return when.strftime("%H:%M:%S" if span_ms < 2 * 86_400_000 else "%Y-%m-%d")


def _lines(title: str, series: Sequence[tuple[str, str, Sequence[tuple[int, float]]]], unit: str) -> str:
    points = [p for _, _, pts in series for p in pts]
    if not points:
        return _empty(title, "no snapshots")
    w, ht, left, bottom, top_pad = 520, 300, 60, 240, 40
    plot_w, plot_h = w - left - 20, bottom - top_pad
    t0 = min(t for t, _ in points)
    t1 = max(t for t, _ in points)
    span = max(1, t1 - t0)
    top = _nice_max(max(v for _, v in points))
    body = _y_axis(left, bottom, plot_h, top, lambda v: f"{v:,.0f}", plot_w)
    for i in range(3):
        t = t0 + span * i / 2
        x = left + plot_w * i / 2
        anchor = ("start", "middle", "end")[i]
        body.append(
            f'<text x="{x:.1f}" y="{bottom + 15}" text-anchor="{anchor}" font-size="10" '
            f'fill="#5f6b7a">{_e(_time_label(t, span))}</text>'
        )

    def xy(t: int, v: float) -> tuple[float, float]:
        return left + plot_w * (t - t0) / span, bottom - plot_h * v / top

    for k, (name, color, pts) in enumerate(series):
        coords = [xy(t, v) for t, v in pts]
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in coords)
        body.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"/>')
        for (x, y), (t, v) in zip(coords, pts, strict=True):
            body.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="{color}"><title>{_e(name)}: '
                f"{v:,.0f} at {_e(format_millis(t))}</title></circle>"
            )
        lx = left + 10 + k * 190
        body.append(f'<rect x="{lx}" y="{bottom + 30}" width="12" height="12" fill="{color}"/>')
        body.append(f'<text x="{lx + 18}" y="{bottom + 40}" font-size="12">{_e(name)}</text>')
    body.append(
        f'<text x="{w / 2}" y="{ht - 8}" text-anchor="middle" font-size="11" fill="#5f6b7a">{_e(unit)}</text>'
    )
    return _svg(w, ht, body, title)


def _hbars(
    title: str,
    rows: Sequence[tuple[str, float]],
    fmt: Callable[[float], str],
    marker: tuple[float, str] | None,
) -> str:
    if not rows:
        return _empty(title, "nothing to show")
    rows = list(rows)[:20]
    row_h = 20
    w, left, top_pad = 520, 170, 36
    ht = top_pad + row_h * len(rows) + 44
    plot_w = w - left - 60
    top = max([v for _, v in rows] + ([marker[0]] if marker else []) + [1e-12])
    body = []
    for i, (label, v) in enumerate(rows):
        y = top_pad + i * row_h
        bar_w = plot_w * v / top
        short = label if len(label) <= 26 else label[:25] + "…"
        body.append(
            f'<text x="{left - 6}" y="{y + 14}" text-anchor="end" font-size="11"><title>{_e(label)}</title>'
            f"{_e(short or '(unpartitioned)')}</text>"
        )
        body.append(
            f'<rect x="{left}" y="{y + 3}" width="{max(0.5, bar_w):.1f}" height="{row_h - 6}" fill="{_BAR}"/>'
        )
        body.append(f'<text x="{left + bar_w + 4:.1f}" y="{y + 14}" font-size="11">{_e(fmt(v))}</text>')
    if marker is not None:
        x = left + plot_w * marker[0] / top
        y_end = top_pad + row_h * len(rows)
        body.append(
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top_pad}" y2="{y_end}" stroke="{_COLORS["critical"]}" '
            'stroke-dasharray="4 3"/>'
        )
        body.append(
            f'<text x="{x:.1f}" y="{y_end + 16}" text-anchor="middle" font-size="11" '
            f'fill="{_COLORS["critical"]}">{_e(marker[1])}</text>'
        )
    return _svg(w, ht, body, title)


def _plots(h: TableHealth) -> list[str]:
    snaps = h.snapshots
    counts = [(p.timestamp_ms, float(i + 1)) for i, p in enumerate(snaps)]
    versions = [(t, float(i + 1)) for i, t in enumerate(sorted(h.metadata.versions_ms))]
    growth = _lines(
        "Snapshots and metadata versions over time",
        [("snapshots", _BAR, counts), ("metadata versions", _ACCENT, versions)],
        "cumulative count",
    )
    rows = [(p.timestamp_ms, float(p.total_records)) for p in snaps if p.total_records is not None]
    records = _lines(
        "Rows in the table over time", [("total rows", _BAR, rows)], "total-records of each snapshot"
    )
    with_deletes = sorted(
        ((p.partition, p.delete_ratio) for p in h.partitions if p.delete_files), key=lambda r: -r[1]
    )
    deletes = _hbars(
        "Delete ratio by partition",
        with_deletes,
        lambda v: f"{v:.0%}",
        (h.thresholds.delete_ratio, f"threshold {h.thresholds.delete_ratio:.0%}"),
    )
    if not with_deletes:
        deletes = _empty("Delete ratio by partition", "no delete files")
    by_size = sorted(((p.partition, float(p.data_bytes)) for p in h.partitions), key=lambda r: -r[1])
    median = sorted(v for _, v in by_size)[len(by_size) // 2] if by_size else 0.0
    sizes = _hbars(
        "Largest partitions (data bytes)",
        by_size,
        format_bytes,
        (median, f"median {format_bytes(median)}") if len(by_size) > 1 else None,
    )
    return [_histogram(h), growth, deletes, sizes, records]


def _plot_divs(svgs: list[str]) -> list[str]:
    """Two plots a row; an odd last one takes the whole row."""
    wide = len(svgs) % 2 == 1
    return [
        f'<div class="plot{" wide" if wide and i == len(svgs) - 1 else ""}">{svg}</div>'
        for i, svg in enumerate(svgs)
    ]


def _finding_html(f: object) -> str:
    from icefloe.table.health import Finding

    assert isinstance(f, Finding)
    color = _COLORS.get(f.severity, "#5f6b7a")
    fix = []
    if f.command:
        fix.append(f"<p>Fix: <code>{_e(f.command)}</code></p>")
    if f.python:
        fix.append(f"<p>Python: <code>{_e(f.python)}</code></p>")
    return (
        f'<div class="finding" style="border-left-color:{color}"><h3>'
        f'<span class="badge" style="background:{color}">{_e(f.severity)}</span> {_e(f.title)}</h3>'
        f"<p>{_e(f.detail)}</p>{''.join(fix)}</div>"
    )


def _partition_table(h: TableHealth) -> str:
    head = "".join(
        f"<th>{c}</th>"
        for c in (
            "partition",
            "data files",
            "small",
            "rows",
            "size",
            "delete files",
            "deleted rows",
            "delete ratio",
        )
    )
    rows = []
    for p in sorted(h.partitions, key=lambda p: (-p.delete_ratio, -p.small_files, p.partition))[:200]:
        rows.append(
            f"<tr><td>{_e(p.partition or '(unpartitioned)')}</td>"
            f"<td>{p.data_files}</td><td>{p.small_files}</td>"
            f"<td>{p.records:,}</td><td>{_e(format_bytes(p.data_bytes))}</td><td>{p.delete_files}</td>"
            f"<td>{p.position_deletes + p.equality_deletes:,}</td><td>{p.delete_ratio:.1%}</td></tr>"
        )
    more = (
        f'<p class="muted">{len(h.partitions) - 200} more partitions not shown</p>'
        if len(h.partitions) > 200
        else ""
    )
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>{more}"


def render_html(h: TableHealth) -> str:
    from icefloe.table.health import describe

    color = _COLORS["info"] if h.healthy else _COLORS["warning"]
    verdict = "healthy" if h.healthy else "needs maintenance"
    cards = [
        (f"{h.data_files:,}", f"data files, {format_bytes(h.data_bytes)}"),
        (f"{h.small_files:,}", f"small files (< {format_bytes(h.small_file_size)})"),
        (f"{h.delete_files:,}", "delete files"),
        (f"{len(h.snapshots):,}", f"snapshots, {h.manifests.count} manifests"),
    ]
    findings = "".join(_finding_html(f) for f in h.findings) or '<p class="muted">No findings.</p>'
    m = h.metadata
    metadata_rows = [
        ("current metadata file", format_bytes(m.current_file_bytes)),
        ("metadata log entries", m.log_entries),
        ("metadata files on storage", "-" if m.files_on_storage is None else m.files_on_storage),
        ("write.metadata.previous-versions-max", m.previous_versions_max),
        ("write.metadata.delete-after-commit.enabled", str(m.delete_after_commit).lower()),
        ("manifests (data / delete)", f"{h.manifests.data_manifests} / {h.manifests.delete_manifests}"),
        (
            "manifest sizes (smallest / largest)",
            f"{format_bytes(h.manifests.smallest_bytes)} / {format_bytes(h.manifests.largest_bytes)}",
        ),
        ("manifests after a rewrite", h.manifests.after_rewrite),
    ]
    meta = "".join(f"<tr><td>{_e(k)}</td><td>{_e(v)}</td></tr>" for k, v in metadata_rows)
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>Health of {_e(h.table)}</title><style>{_CSS}</style></head><body><main>"
        f'<h1>Health of {_e(h.table)} <span class="badge" style="background:{color}">{verdict}</span></h1>'
        f'<p class="muted">snapshot {_e(h.snapshot_id)}, checked {_e(format_millis(h.checked_at_ms))} '
        "by icefloe from table metadata</p>"
        '<div class="summary">'
        + "".join(f'<div class="card"><b>{_e(v)}</b><span>{_e(k)}</span></div>' for v, k in cards)
        + "</div>"
        + "".join(f'<p class="muted" style="margin:2px 0">{_e(line)}</p>' for line in describe(h))
        + f"<h2>Findings</h2>{findings}"
        + '<h2>Plots</h2><div class="plots">'
        + "".join(_plot_divs(_plots(h)))
        + "</div>"
        + f"<h2>Partitions</h2>{_partition_table(h)}"
        + f"<h2>Manifests and metadata</h2><table>{meta}</table>"
        + "</main></body></html>"
    )
