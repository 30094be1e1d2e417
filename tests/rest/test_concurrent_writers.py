"""Eight processes append to one table through the REST server at once; every append lands.

The writers are separate interpreters (this file run as a script) that share nothing but the
server (``python -m icefloe.rest``): each commit is a POST of requirements and updates, the
server's compare-and-swap on its catalog database (SQLite, or PostgreSQL as deployed) decides who
wins, and a loser gets a 409, refreshes and retries. Afterwards the table holds every row exactly
once, one snapshot per append, and every snapshot a writer reported is in the table.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

PROCESSES = 8
APPENDS_PER_PROCESS = 3
TOKEN = "writers-token"


def worker_main(args: dict[str, Any]) -> None:
    import pyarrow as pa

    import icefloe

    catalog = icefloe.load_catalog("rest", type="rest", uri=args["url"], token=TOKEN)
    log = []
    for i in range(args["appends"]):
        table = catalog.load_table("db.t")
        rows = pa.table(
            {"writer": [args["worker"]], "n": [i]},
            schema=pa.schema([("writer", pa.int64()), ("n", pa.int64())]),
        )
        tx = table.transaction()
        tx.append(rows)
        snapshots = tx.commit()
        log.append({"n": i, "snapshot_id": snapshots[-1].snapshot_id, "retries": tx.stats.retries})
    catalog.close()
    Path(args["log"]).write_text(json.dumps(log))


@pytest.mark.slow
@pytest.mark.parametrize("backing", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_eight_writers_through_rest(tmp_path: Path, backing: str, request: pytest.FixtureRequest) -> None:
    import pyarrow as pa

    import icefloe
    from icefloe.rest import RestServerProcess

    warehouse = tmp_path / "wh"
    warehouse.mkdir()
    if backing == "postgres":
        pg = request.getfixturevalue("postgres_server")
        uri = pg.create_schema(f"rest_writers_{os.getpid()}")
        # the token from the environment, as a deployment would pass it (no --token)
        options: dict[str, Any] = {"env": {"ICEFLOE_REST_TOKEN": TOKEN}}
    else:
        uri = f"sqlite:///{tmp_path / 'catalog.db'}"
        options = {"token": TOKEN}
    with RestServerProcess(
        uri, warehouse.as_uri(), log_path=str(tmp_path / "server.log"), **options
    ) as server:
        catalog = icefloe.load_catalog("rest", type="rest", uri=server.url, token=TOKEN)
        catalog.create_namespace("db")
        schema = pa.schema([("writer", pa.int64()), ("n", pa.int64())])
        catalog.create_table(
            "db.t",
            schema,
            properties={
                "commit.retry.num-retries": "60",
                "commit.retry.min-wait-ms": "5",
                "commit.retry.max-wait-ms": "300",
            },
        )
        procs = []
        for w in range(PROCESSES):
            args = {
                "url": server.url,
                "worker": w,
                "appends": APPENDS_PER_PROCESS,
                "log": str(tmp_path / f"w{w}.json"),
            }
            procs.append(
                subprocess.Popen(
                    [sys.executable, os.path.abspath(__file__), json.dumps(args)],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                )
            )
        started = time.monotonic()
        for p in procs:
            out, _ = p.communicate(timeout=900)
            assert p.returncode == 0, out.decode(errors="replace")[-3000:]
        elapsed = time.monotonic() - started

        logs = [json.loads((tmp_path / f"w{w}.json").read_text()) for w in range(PROCESSES)]
        table = catalog.load_table("db.t")
        catalog.close()
        got = sorted((r["writer"], r["n"]) for r in table.scan().to_arrow().to_pylist())
        assert got == sorted((w, i) for w in range(PROCESSES) for i in range(APPENDS_PER_PROCESS))
        snapshot_ids = {s.snapshot_id for s in table.snapshots()}
        reported = [e["snapshot_id"] for log in logs for e in log]
        assert len(snapshot_ids) == PROCESSES * APPENDS_PER_PROCESS
        assert set(reported) == snapshot_ids
        retries = sum(e["retries"] for log in logs for e in log)
        print(
            f"\n{PROCESSES * APPENDS_PER_PROCESS} appends by {PROCESSES} processes "
            f"in {elapsed:.1f} s, {retries} retries"
        )


if __name__ == "__main__":
    worker_main(json.loads(sys.argv[1]))
