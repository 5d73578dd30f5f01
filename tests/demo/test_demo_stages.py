"""`make demo` end to end at a reduced size (AWS billing only: the other clouds' loads have
their own DAG tests; the CUR months at the demo's size, which the anomaly spike needs),
in its own process as `make demo` runs it, then `make ui` on the warehouse it left: every
stage's output is checked here from what it wrote, not from what it printed about itself."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from email import message_from_bytes
from email.policy import default
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]  # a whole demo: 10 min on a busy 2-core VM

RUN = "import sys; from finops.demo.run import run_demo; sys.exit(run_demo(months=3, rows_per_month=20000, providers=('aws',)))"


def _demo_env(home: Path) -> dict[str, str]:
    """The demo's own Airflow home inside FINOPS_HOME, as `make demo` has it (the test
    session's metadata DB and log folder settings stay out)."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW__DATABASE__", "AIRFLOW__LOGGING__"))
    }
    env.pop("AIRFLOW_HOME", None)
    env.update({"FINOPS_HOME": str(home), "FINOPS_CONFIG": str(Path("include/config/finops.yaml").resolve())})
    return env


def _run(args: list[str], env: dict[str, str], timeout: int) -> str:
    """Run `python args...`; its output, after asserting it exited 0 (the output's tail if not)."""
    proc = subprocess.run(
        [sys.executable, *args], env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    return out


@pytest.fixture(scope="module")
def demo(tmp_path_factory, airflow_db) -> tuple[Path, str]:
    """(FINOPS_HOME, printed output) of one demo run; the metadata DB is the session's migrated
    copy (the demo would migrate its own the first time: 15 s)."""
    home = tmp_path_factory.mktemp("demo_home")
    (home / "airflow").mkdir()
    shutil.copy(airflow_db, home / "airflow" / "airflow.db")
    (home / "airflow" / ".migrated").write_text("ok")
    return home, _run(["-c", RUN], _demo_env(home), timeout=1200)


def test_every_stage_does_its_job(demo):
    home, out = demo
    for n in range(1, 9):
        assert f"== {n}. " in out
    assert "FAILED" not in out and out.count("-> ok (") == 8
    assert "make ui" in out and "demo / finops-demo" in out

    # 1-2: billing totals to the cent, then every cent allocated to a team
    assert " ok" in out.split("== 2.")[0] and "MISMATCH" not in out
    assert "every cent allocated, USD" in out.split("== 3.")[0]

    # 3: the spike alerted through the real Slack webhook client and SMTP, as written to files
    alerts = home / "demo" / "alerts"
    posts = [json.loads(line) for line in (alerts / "slack.jsonl").read_text().splitlines()]
    assert posts and all(p["text"].startswith("[") and p["blocks"] for p in posts)
    assert any("team ml-prod" in json.dumps(p) for p in posts)  # the team monitor: ml-prod's p5 spike
    assert any("Cost anomaly: provider aws" in p["text"] for p in posts)
    mails = [message_from_bytes(p.read_bytes(), policy=default) for p in sorted(alerts.glob("mail-*.eml"))]
    assert len(mails) == len(posts)
    assert {m["To"] for m in mails} == {"finops-team@example.com"}
    assert all(m["Subject"].startswith("[finops ") for m in mails)

    # 4: the dry-run report names the non-compliant and idle instances; nothing changed (checked
    # by the stage against moto's own state before and after)
    report = next((home / "reports").glob("violations-*.txt")).read_text()
    assert "Non-compliant resources" in report and "(no team)" in report and "ml-research" in report
    assert "idle-gpu-8h: idle" in report and "idle-gpu-8h: busy" in report
    stage4 = out.split("== 4.")[1].split("== 5.")[0]
    assert "the dry run changed" not in stage4

    import duckdb

    bench = json.loads((home / "demo" / "bench-cpu.json").read_text())
    assert bench["device"]["type"] == "cpu" and bench["profile"] == "cpu"

    con = duckdb.connect(str(home / "warehouse.duckdb"), read_only=True)
    try:
        acted = con.execute("SELECT DISTINCT dry_run FROM policy_actions WHERE action <> 'none'").fetchall()
        assert acted in ([], [(True,)])  # a planned mark is a dry-run row, never a live one
        # 5: price rows from the AWS, Azure, GCP and Lambda fakes, the commitment rates and
        # Capacity Blocks they publish; 6: advice priced at those rates
        prices = dict(con.execute("SELECT provider, count(*) FROM ondemand_prices GROUP BY 1").fetchall())
        assert set(prices) == {"aws", "azure", "gcp", "lambda"} and min(prices.values()) > 0
        assert con.execute("SELECT count(*) FROM spot_prices").fetchone()[0] > 0
        rates = {r[0] for r in con.execute("SELECT DISTINCT provider FROM commitment_rates").fetchall()}
        assert rates == {"aws", "azure", "gcp"}
        assert con.execute("SELECT count(*) FROM capacity_block_offerings").fetchone()[0] == 2
        sources = {r[0] for r in con.execute("SELECT DISTINCT rate_source FROM commitment_advice").fetchall()}
        assert any(s.startswith("price_data:") for s in sources), sources
        # 6: the training job: a preempted spot attempt, then on-demand from its checkpoint
        attempts = con.execute(
            "SELECT a.pricing_model, a.outcome, a.steps_at_start FROM training_job_attempts a "
            "JOIN training_jobs j USING (job_id) WHERE j.name LIKE 'demo-train-%' AND j.name NOT LIKE '%-od' "
            "ORDER BY a.attempt"
        ).fetchall()
        assert attempts == [("spot", "preempted", 0), ("ondemand", "finished", 160)]
        # 7: the CPU benchmark stored and priced
        runs = con.execute(
            "SELECT status, profile, gpu_model FROM gpu_benchmark_runs WHERE bench_run_id = 'demo-cpu'"
        ).fetchall()
        assert (
            len(runs) == 1
            and runs[0][0] == "ok"
            and runs[0][1] == "cpu"
            and runs[0][2] == bench["device"]["name"]
        )
        steps = con.execute(
            "SELECT value FROM gpu_benchmarks WHERE bench_run_id = 'demo-cpu' "
            "AND metric = 'train_step_time' AND dtype = 'fp32'"
        ).fetchone()
        assert steps and steps[0] > 0
    finally:
        con.close()
    commitments = out.split("== 6.")[1].split("== 7.")[0]
    assert "expiry alerts sent to the local Slack: " in commitments and "advice only" in commitments
    assert "spot + fallback: $" in out.split("== 7.")[1].split("== 8.")[0]
    assert "spot saves" in out.split("== 8.")[1]


def test_make_ui_serves_the_view_on_the_demo_warehouse(demo):
    """`make ui --check` on a free port: the api-server starts on the demo's FINOPS_HOME, refuses
    without a login, and with the demo login every FinOps page answers with data."""
    from finops.demo.emulators import free_port

    home, _ = demo
    env = _demo_env(home)
    env.pop("FINOPS_CONFIG")  # `make ui` finds the demo's own config in FINOPS_HOME
    out = _run(["-m", "finops.demo.ui", "--check", "--port", str(free_port())], env, timeout=300)
    assert "login:        demo / finops-demo" in out
    assert "GET /finops/ -> 200" in out and "GET /finops/api/showback -> 200" in out
    assert "GET /finops/api/anomalies -> 200" in out and "FAILED" not in out
