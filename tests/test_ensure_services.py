"""scripts/ensure_services.sh (the `make test` preflight): a PostgreSQL the tests cannot log
into is reported, with the fix, instead of passing as "up" and failing later in every
PostgreSQL test. A freshly apt-installed Debian cluster is one: scram-sha-256 on TCP and a
postgres role without a password."""

from __future__ import annotations

import os
import socket
import subprocess
import threading

from finops.paths import REPO_ROOT


def _run(**env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(REPO_ROOT / "scripts" / "ensure_services.sh")],
        cwd=REPO_ROOT,
        env={**{k: v for k, v in os.environ.items() if not k.startswith("FINOPS_TEST_")}, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_server_that_refuses_the_login_fails_the_preflight():
    """Something listens on the port (so the old TCP probe said "up") but no login succeeds."""
    srv = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def refuse() -> None:
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            conn.close()

    t = threading.Thread(target=refuse, daemon=True)
    t.start()
    try:
        out = _run(FINOPS_TEST_PG_PORT=str(srv.getsockname()[1]))
    finally:
        stop.set()
        t.join(timeout=5)
        srv.close()
    assert out.returncode == 1, out.stdout
    assert "is up but refuses the tests' login" in out.stdout and "are up" not in out.stdout


def test_the_test_server_passes():
    out = _run()
    assert out.returncode == 0, out.stdout
    assert "services: PostgreSQL 127.0.0.1:5432 and Redis 127.0.0.1:6379 are up" in out.stdout
