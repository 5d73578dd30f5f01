"""A second process opening the DuckDB warehouse waits for the file lock instead of failing."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from finops.warehouse.base import WarehouseError
from finops.warehouse.duckdb_wh import DuckDBWarehouse

HOLDER = textwrap.dedent(
    """
    import sys, time
    from finops.warehouse.duckdb_wh import DuckDBWarehouse
    wh = DuckDBWarehouse(sys.argv[1])
    wh.migrate()
    wh.execute("INSERT INTO load_log (load_id, source, provider, billing_period, status, started_at) "
               "VALUES ('from-holder', 's', 'aws', '2024-01', 'loaded', now())")
    print("locked", flush=True)
    sys.stdin.readline()  # hold the lock until the test says so
    wh.close()
    print("released", flush=True)
    """
)


@pytest.fixture
def holder(tmp_path):
    path = tmp_path / "wh.duckdb"
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    yield path, proc
    if proc.poll() is None:
        proc.kill()
    proc.wait(10)


@pytest.mark.slow
def test_second_process_waits_for_the_lock(holder):
    path, proc = holder
    waiter = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                """
            import sys
            from finops.warehouse.duckdb_wh import DuckDBWarehouse
            print("opening", flush=True)
            wh = DuckDBWarehouse(sys.argv[1], lock_timeout_s=60)
            print(wh.query("SELECT load_id FROM load_log")[0][0], flush=True)
            wh.close()
            """
            ),
            str(path),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert waiter.stdout is not None
    assert waiter.stdout.readline().strip() == "opening"
    # The waiter is now retrying on the lock; it must still be alive (not failed).
    assert waiter.poll() is None
    proc.stdin.write("go\n")
    proc.stdin.flush()
    out, err = waiter.communicate(timeout=60)
    assert waiter.returncode == 0, err
    assert out.strip() == "from-holder"


@pytest.mark.slow
def test_lock_timeout_gives_a_clear_error(holder):
    path, _proc = holder
    with pytest.raises(WarehouseError, match="cannot open DuckDB warehouse.*lock"):
        DuckDBWarehouse(path, lock_timeout_s=0.3)
