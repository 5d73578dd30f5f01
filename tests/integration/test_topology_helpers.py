"""The helpers the distributed test relies on, checked fast and alone: a killed service leaves no
process behind (not even a child that started its own session), and a missing PostgreSQL or
Redis is reported precisely instead of hanging or skipping."""

from __future__ import annotations

import signal
import sys
import time

import pytest

from tests.integration import procs
from tests.integration.airflow_topology import (
    TopologyError,
    admin_dsn_from,
    check_postgres,
    check_redis,
    free_port,
    sqlalchemy_url,
)

# A service whose child escapes the process group (setsid) and ignores SIGTERM.
_TREE = """
import os, signal, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c",
    "import os, signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); os.setsid(); print('child', flush=True); time.sleep(600)"])
print("leader", child.pid, flush=True)
time.sleep(600)
"""


def test_kill_takes_the_whole_tree_even_escaped_children(tmp_path):
    svc = procs.start(
        "tree", [sys.executable, "-c", _TREE], env={"PATH": "/usr/bin:/bin"}, cwd=tmp_path, log_dir=tmp_path
    )
    procs.wait_until("both processes to start", lambda: "child" in svc.log_tail(), 30, interval=0.1)
    assert len(svc.tree()) == 2  # leader + the escaped child, found through the process tree
    svc.kill(signal.SIGKILL)
    assert svc.survivors() == []
    assert not svc.alive()


def test_stop_escalates_when_sigterm_is_ignored(tmp_path):
    code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); time.sleep(600)"
    svc = procs.start(
        "stubborn",
        [sys.executable, "-c", code],
        env={"PATH": "/usr/bin:/bin"},
        cwd=tmp_path,
        log_dir=tmp_path,
    )
    procs.wait_until("start", lambda: "up" in svc.log_tail(), 30, interval=0.1)
    t = time.monotonic()
    svc.stop(timeout=1.0)
    assert svc.survivors() == [] and time.monotonic() - t < 15


def test_wait_until_says_what_it_waited_for():
    with pytest.raises(TimeoutError, match="waiting for the moon.*last error: ValueError"):
        procs.wait_until("the moon", lambda: (_ for _ in ()).throw(ValueError("no")), 0.3, interval=0.1)


def test_unreachable_redis_is_a_precise_error():
    port = free_port()  # nothing listens there
    with pytest.raises(TopologyError, match=rf"Redis is required .* 127\.0\.0\.1:{port} is not reachable"):
        check_redis("127.0.0.1", port)


def test_unreachable_postgres_is_a_precise_error():
    dsn = f"host=127.0.0.1 port={free_port()} user=postgres dbname=postgres connect_timeout=2"
    with pytest.raises(TopologyError, match="PostgreSQL is required .* not reachable"):
        check_postgres(dsn)


def test_dsn_helpers_keep_server_and_credentials():
    admin = admin_dsn_from("host=db.internal port=6543 user=finops password=s3cr%t dbname=test")
    assert "dbname=postgres" in admin and "port=6543" in admin
    url = sqlalchemy_url(admin, "ct_af_1")
    assert url == "postgresql+psycopg2://finops:s3cr%25t@db.internal:6543/ct_af_1"
