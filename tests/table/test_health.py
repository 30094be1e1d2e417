"""``table.health()``: the findings match the table's layout, each names the maintenance that
fixes it, and running that maintenance clears it. The HTML report is self-contained, and a real
headless browser renders it (skipped when Chromium is not installed)."""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
import struct
import subprocess
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import icefloe
from icefloe.table.health import TableHealth, _histogram

SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string()), ("ts", pa.timestamp("us", tz="UTC"))])


def _rows(start: int, n: int, day: int) -> pa.Table:
    return pa.table(
        {
            "id": list(range(start, start + n)),
            "s": [f"row {i} " * 4 for i in range(start, start + n)],
            "ts": [dt.datetime(2024, 3, day, tzinfo=dt.UTC)] * n,
        },
        schema=SCHEMA,
    )


def make_unhealthy(catalog: Any) -> icefloe.Table:
    """Day-partitioned, many small appends (one day ten times the others), half of day 1
    deleted with position deletes, every snapshot past a 1 ms retention."""
    catalog.create_namespace_if_not_exists("ops")
    t = catalog.create_table(
        "ops.events",
        schema=SCHEMA,
        partition_by=["day(ts)"],
        properties={"write.delete.mode": "merge-on-read", "history.expire.max-snapshot-age-ms": "1"},
    )
    next_id = 0
    for day in range(1, 6):
        for _ in range(3 if day != 5 else 30):
            t.append(_rows(next_id, 40, day))
            next_id += 40
    t.delete(f"id in ({', '.join(str(i) for i in range(0, 120, 2))})")  # every other row of day 1
    return t  # type: ignore[no-any-return]


@pytest.fixture
def unhealthy(any_catalog: Any) -> icefloe.Table:
    return make_unhealthy(any_catalog)


def test_findings_and_fixes(unhealthy: icefloe.Table) -> None:
    h = unhealthy.health(max_manifests=5)
    codes = {f.code: f for f in h.findings}
    assert set(codes) == {"small_files", "delete_ratio", "manifests", "expirable_snapshots", "partition_skew"}
    assert codes["small_files"].command == "icefloe compact ops.events"
    assert codes["small_files"].python == "table.maintenance.rewrite_data_files()"
    assert codes["delete_ratio"].partitions == ("ts_day=2024-03-01",)
    assert codes["partition_skew"].partitions == ("ts_day=2024-03-05",)
    assert codes["manifests"].command == "icefloe rewrite-manifests ops.events"
    assert codes["expirable_snapshots"].command == "icefloe expire ops.events"
    assert not h.healthy and h.data_files == 42 and h.small_files == 42 and h.delete_files == 3
    day1 = next(p for p in h.partitions if p.partition == "ts_day=2024-03-01")
    assert (day1.data_files, day1.records, day1.position_deletes) == (3, 120, 60)
    assert day1.delete_ratio == 0.5
    assert h.expirable_snapshots == len(h.snapshots) - 1
    assert sum(n for _, _, n in h.file_size_histogram) == 42
    # warnings first
    severities = [f.severity for f in h.findings]
    assert severities == sorted(severities, key=["critical", "warning", "info"].index)

    # the maintenance each finding names clears it
    assert codes["delete_ratio"].command == (
        "icefloe compact ops.events -o delete-file-threshold=1 -o remove-dangling-deletes=true"
    )
    unhealthy.maintenance.rewrite_data_files(
        options={"delete-file-threshold": 1, "remove-dangling-deletes": True}
    )
    after = unhealthy.health(max_manifests=5)
    assert after.finding("small_files") is None and after.finding("delete_ratio") is None
    # days 2 to 4 keep their three small files: too few for compaction (min-input-files 5)
    assert after.data_files == 11 and after.delete_files == 0 and after.records == 1620
    assert after.dangling_delete_files == 0
    unhealthy.maintenance.rewrite_manifests()
    unhealthy.maintenance.expire_snapshots(retain_last=1)
    final = unhealthy.health(max_manifests=5)
    assert final.finding("expirable_snapshots") is None and final.finding("manifests") is None
    assert final.healthy and {f.code for f in final.findings} <= {"partition_skew"}


def test_deletes_of_rewritten_files_leave_with_them(unhealthy: icefloe.Table) -> None:
    """Compaction removes the file-scoped deletes that only its rewritten files needed in the same
    commit, so nothing is left for the dangling-deletes finding (and the partition is clean)."""
    before = unhealthy.health()
    assert before.delete_files == 3 and before.dangling_delete_files == 0
    result = unhealthy.maintenance.rewrite_data_files(options={"delete-file-threshold": 1})
    assert result.removed_delete_files_count == 3
    h = unhealthy.health()
    assert h.delete_files == 0 and h.dangling_delete_files == 0
    assert h.finding("dangling_deletes") is None and h.finding("delete_ratio") is None
    day1 = next(p for p in h.partitions if p.partition == "ts_day=2024-03-01")
    assert (day1.records, day1.delete_ratio) == (60, 0.0)


def test_healthy_table_and_thresholds(any_catalog: Any) -> None:
    any_catalog.create_namespace("ops")
    t = any_catalog.create_table("ops.empty", schema=SCHEMA)
    h = t.health()
    assert h.healthy and h.findings == () and h.data_files == 0 and h.file_size_histogram == ()
    assert "healthy, no findings" in repr(h)
    with pytest.raises(icefloe.ValidationError, match="unknown health threshold"):
        t.health(nope=1)
    with pytest.raises(icefloe.ValidationError, match="small_file_ratio"):
        t.health(small_file_ratio=2)


def test_to_dict_is_json(unhealthy: icefloe.Table) -> None:
    h = unhealthy.health()
    d = json.loads(json.dumps(h.to_dict()))
    assert d["table"] == "ops.events" and d["healthy"] is False
    assert {f["code"] for f in d["findings"]} == {f.code for f in h.findings}
    assert d["manifests"]["count"] == h.manifests.count
    assert d["partitions"][0]["delete_ratio"] == 0.5
    assert sum(b["files"] for b in d["file_size_histogram"]) == 42


def test_histogram_bins() -> None:
    assert _histogram([]) == ()
    assert _histogram([1000, 1000]) == ((861, 1024, 2),)
    bins = _histogram([100, 10**6, 10**9])
    assert len(bins) <= 16 and sum(n for *_, n in bins) == 3
    assert all(lo < hi for lo, hi, _ in bins) and bins[0][0] <= 100 and bins[-1][1] >= 10**9


def test_html_is_self_contained(unhealthy: icefloe.Table) -> None:
    page = unhealthy.health().to_html()
    assert page.startswith("<!DOCTYPE html>") and page.endswith("</html>")
    assert page.count("<svg") == 5
    for title in (
        "Data file sizes",
        "Snapshots and metadata versions over time",
        "Delete ratio by partition",
    ):
        assert title in page
    # nothing is fetched: the only URL is the SVG namespace
    assert set(re.findall(r"https?://[^\"' ]+", page)) == {"http://www.w3.org/2000/svg"}
    assert "<script" not in page and "<link" not in page and "<img" not in page
    assert "icefloe compact ops.events" in page


def _png_size(path: Path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", header[16:24])
    return width, height


def test_report_renders_in_a_headless_browser(unhealthy: icefloe.Table, tmp_path: Path) -> None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    page = tmp_path / "report.html"
    page.write_text(unhealthy.health().to_html(), encoding="utf-8")
    shot = tmp_path / "report.png"
    subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}", "--window-size=1200,1600",
         page.as_uri()],
        capture_output=True, timeout=180, check=True,
    )  # fmt: skip
    assert _png_size(shot) == (1200, 1600)
    image = pytest.importorskip("PIL.Image")
    with image.open(shot) as img:
        rgb = img.convert("RGB")
        colors = rgb.getcolors(maxcolors=1_000_000) or []
        # a rendered report, not a blank or error page: many colours, the bars' blue among them
        assert len(colors) > 200
        assert any(
            abs(r - 0x4A) < 12 and abs(g - 0x7F) < 12 and abs(b - 0xB5) < 12 for _, (r, g, b) in colors
        )


def test_health_type() -> None:
    assert TableHealth.__doc__ and "to_html" in TableHealth.__doc__


def test_dangling_deletes_found_and_cleared(
    unhealthy: icefloe.Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rewrite that replaces data files but keeps their file-scoped position deletes (what
    Iceberg Java's rewrite_data_files commits without remove-dangling-deletes; icefloe's own
    producers drop them, so this test makes one behave like that) leaves deletes pointing at
    files that are gone: health counts them as dangling, names the compaction that drops them,
    and after it they are gone."""
    from icefloe.arrow.writer import write_data_files
    from icefloe.transaction._merging import MergingProducer

    day1 = "ts < '2024-03-02T00:00:00+00:00'"
    old = [t.file for t in unhealthy.scan(day1).plan_files()]
    live = unhealthy.scan(day1).to_arrow()
    assert len(old) == 3 and live.num_rows == 60
    new = write_data_files(unhealthy.io, unhealthy.metadata, live.to_batches())
    with monkeypatch.context() as m:
        m.setattr(MergingProducer, "_should_remove_delete", lambda self, e: False)
        with unhealthy.transaction() as tx:
            tx.rewrite_files(remove=old, add=new, delete_on_failure=True)
    h = unhealthy.health()
    assert h.delete_files == 0 and h.dangling_delete_files == 3  # counted apart from live deletes
    finding = h.finding("dangling_deletes")
    assert finding is not None and "3 delete file(s) refer to data files that are gone" in finding.title
    assert finding.command == "icefloe compact ops.events --option remove-dangling-deletes=true"
    day1_health = next(p for p in h.partitions if p.partition == "ts_day=2024-03-01")
    assert (day1_health.records, day1_health.position_deletes) == (60, 0)  # they delete nothing
    assert unhealthy.scan(day1).to_arrow().sort_by("id").equals(live.sort_by("id"))
    unhealthy.maintenance.rewrite_data_files(options={"remove-dangling-deletes": True})
    after = unhealthy.health()
    assert after.delete_files == 0 and after.dangling_delete_files == 0
    assert after.finding("dangling_deletes") is None
    assert unhealthy.scan().to_arrow().num_rows == 1620
