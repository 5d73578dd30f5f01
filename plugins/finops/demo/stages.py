"""The demo's stages after billing: each runs the product's own DAG (or module) on the data
the billing stage loaded, prints a short section and names what it wrote, and reports every
way it fell short as a problem, which fails `make demo`.

  showback      finops_showback -> the team table, checked to the cent against focus_costs
  anomalies     finops_anomalies + finops_anomalies_teams -> alerts caught by the local Slack
                endpoint and SMTP server (finops.demo.alert_sinks), written to files
  policies      finops_audit, dry run, on the moto fleet (finops.demo.fleet) -> its report;
                the fleet's states and tags must be unchanged
  prices        finops_prices against the local price API fakes (finops.demo.price_apis)
  commitments   finops_commitments on the loaded bills -> coverage, utilisation, the expiry
                calendar (the demo RI ends within 30 days: its alert reaches the local Slack)
                and purchase advice (advice only)
  benchmark     `python -m finops.gpubench` on this machine's CPU, stored and priced against the
                loaded prices (finops.gpubench.report)
  training_job  finops_training_job, live on the local provider: a spot preemption, a fallback to
                on-demand, the cost against all on-demand
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from finops.demo.alert_sinks import SlackCatcher, SmtpInbox, write_captured

CENT = Decimal("0.01")
RunDag = Callable[[str, dict[str, Any]], str]


@dataclass
class StageResult:
    """What a stage printed, the files it names, and what went wrong (empty: it did its job)."""

    title: str
    lines: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    seconds: float = 0.0

    def need(self, ok: bool, problem: str) -> bool:
        if not ok:
            self.problems.append(problem)
        return ok


def timed(title: str, body: Callable[[StageResult], None]) -> StageResult:
    """Run one stage; an exception is a problem of that stage, and the demo goes on to the next."""
    res = StageResult(title)
    t0 = time.perf_counter()
    try:
        body(res)
    except Exception as e:  # noqa: BLE001 - reported as the stage's failure, loudly, at the end
        res.problems.append(f"{type(e).__name__}: {e}")
    res.seconds = time.perf_counter() - t0
    return res


def _wh() -> Any:
    from finops.warehouse import connect

    return connect()


def _dag_ok(res: StageResult, dag_id: str, state: str) -> bool:
    res.lines.append(f"  {dag_id}: {state}")
    return res.need(state == "success", f"{dag_id} ended {state}")


# ------------------------------------------------------------------ 2. showback / chargeback
def showback(periods: list[str], run_dag: RunDag) -> StageResult:
    def body(res: StageResult) -> None:
        if not _dag_ok(
            res, "finops_showback", run_dag("finops_showback", {"billing_period": ",".join(periods)})
        ):
            return
        last = periods[-1]
        wh = _wh()
        try:
            rows = wh.query(
                "SELECT team, coalesce(cost_centre, '-'), currency, sum(direct_cost), sum(shared_cost), "
                "sum(unallocated_cost), sum(gpu_cost), sum(total_cost) FROM chargeback_monthly "
                "WHERE billing_period = ? AND cost_view = 'amortised' GROUP BY 1, 2, 3 ORDER BY 8 DESC",
                [last],
            )
            allocated = dict(
                wh.query(
                    "SELECT currency, sum(total_cost) FROM chargeback_monthly WHERE billing_period = ? "
                    "AND cost_view = 'amortised' GROUP BY 1",
                    [last],
                )
            )
            billed = dict(
                wh.query(
                    "SELECT billing_currency, sum(effective_cost) FROM focus_costs WHERE x_billing_period = ? "
                    "GROUP BY 1",
                    [last],
                )
            )
            periods_done = {
                p
                for (p,) in wh.query(
                    "SELECT DISTINCT billing_period FROM chargeback_monthly WHERE cost_view = 'amortised'"
                )
            }
        finally:
            wh.close()
        res.lines.append(
            f"  Chargeback {last} (amortised EffectiveCost; shared costs spread by the allocation rules):"
        )
        res.lines.append(
            f"    {'team':<16} {'cost centre':<12} {'cur':4} {'direct':>12} {'shared':>11} "
            f"{'unalloc.':>10} {'of it GPU':>12} {'total':>12}"
        )
        for team, cc, cur, d, s, u, g, t in rows:
            res.lines.append(
                f"    {str(team)[:16]:<16} {str(cc)[:12]:<12} {cur:4} {d:>12,.2f} {s:>11,.2f} "
                f"{u:>10,.2f} {g:>12,.2f} {t:>12,.2f}"
            )
        res.need(bool(rows), f"chargeback_monthly has no team rows for {last}")
        res.need(set(periods) <= periods_done, f"showback missing for {sorted(set(periods) - periods_done)}")
        for cur, total in sorted(billed.items()):
            got = Decimal(allocated.get(cur) or 0)
            ok = got.quantize(CENT) == Decimal(total).quantize(CENT)
            res.lines.append(
                f"    every cent allocated, {cur}: {got:,.2f} of {Decimal(total):,.2f} "
                f"{'ok' if ok else 'MISMATCH'}"
            )
            res.need(ok, f"showback {last} {cur}: allocated {got} != focus_costs {total}")

    return timed("Showback / chargeback", body)


# ------------------------------------------------------------------ 3. anomalies and alerts
def reset_anomaly_state() -> bool:
    """Forget stored anomalies and sent-alert records, so a re-run alerts again (the embedded
    DuckDB warehouse in FINOPS_HOME only: never another deployment's alert history)."""
    wh = _wh()
    try:
        if wh.dialect != "duckdb":
            return False
        for table in ("anomalies", "alert_state"):
            if wh.table_exists(table):
                wh.execute(f"DELETE FROM {table}")
        return True
    finally:
        wh.close()


def anomalies(run_dag: RunDag, slack: SlackCatcher, inbox: SmtpInbox, out: Path) -> StageResult:
    def body(res: StageResult) -> None:
        fresh = reset_anomaly_state()
        before_slack, before_mail = len(slack.posts), len(inbox.messages)
        for dag_id in ("finops_anomalies", "finops_anomalies_teams"):
            _dag_ok(res, dag_id, run_dag(dag_id, {"send_alerts": True}))
        wh = _wh()
        try:
            found = wh.query(
                "SELECT monitor_type, monitor_key, peak_day, actual, expected, severity, alerted_at IS NOT NULL "
                "FROM anomalies WHERE status = 'open' ORDER BY delta DESC"
            )
        finally:
            wh.close()
        res.lines.append("  Open anomalies (peak day, actual vs expected daily cost):")
        for mtype, key, day, actual, expected, sev, sent in found:
            res.lines.append(
                f"    {mtype:<8} {str(key)[:40]:<40} {day} {Decimal(actual):>11,.2f} vs "
                f"{Decimal(expected):>10,.2f} [{sev}]{' alerted' if sent else ''}"
            )
        res.need(bool(found), "no anomaly found: the demo data carries a spike on the last day")
        posts, mails = slack.posts[before_slack:], inbox.messages[before_mail:]
        res.lines.append(f"  Alerts sent: {len(posts)} Slack messages, {len(mails)} e-mails:")
        for p in posts:
            res.lines.append(f"    slack  {p.get('text')}")
        for m in mails:
            res.lines.append(f"    e-mail to {m['To']}: {m['Subject']}")
        if fresh:
            res.need(bool(posts), "no Slack alert reached the local webhook endpoint")
            res.need(bool(mails), "no alert e-mail reached the local SMTP server")
        slack_file, mail_files = write_captured(slack, inbox, out)
        res.files += [slack_file, *mail_files]

    return timed("Anomaly detection and alerts", body)


# ------------------------------------------------------------------ 4. policies (dry run)
def policies(endpoint: str, run_dag: RunDag, period: str) -> StageResult:
    def body(res: StageResult) -> None:
        import boto3

        from finops.demo import fleet
        from finops.paths import subdir

        kw = {
            "endpoint_url": endpoint,
            "region_name": "us-east-1",
            "aws_access_key_id": "demo",
            "aws_secret_access_key": "demo",
        }
        ec2, cw = boto3.client("ec2", **kw), boto3.client("cloudwatch", **kw)
        specs = fleet.build_demo_fleet(ec2, cw)
        res.lines.append("  Demo fleet (moto EC2, GPU utilisation in CloudWatch, last 12 h):")
        for iid, spec in specs.items():
            res.lines.append(f"    {iid} {spec.name:<16} {spec.itype:<13} {spec.util:>5.1f} %  {spec.why}")
        before = fleet.instances(ec2)
        started = time.time()
        _dag_ok(res, "finops_audit", run_dag("finops_audit", {"dry_run": True, "billing_period": period}))
        res.need(fleet.instances(ec2) == before, "the dry run changed an instance's state or tags")
        reports = [p for p in subdir("reports").glob("violations-*.txt") if p.stat().st_mtime >= started - 1]
        if not res.need(bool(reports), "finops_audit wrote no violations report"):
            return
        report = max(reports, key=lambda p: p.stat().st_mtime)
        res.files += [report, report.with_suffix(".csv")]
        res.lines.append("  finops_audit's report (dry run: nothing was tagged, stopped or terminated):")
        res.lines += [f"    {line}" for line in report.read_text().splitlines()]
        wh = _wh()
        try:
            noncompliant = {
                r
                for (r,) in wh.query(
                    "SELECT DISTINCT resource_id FROM tag_compliance WHERE compliant = FALSE "
                    "AND snapshot_date = (SELECT max(snapshot_date) FROM tag_compliance)"
                )
            }
            decisions = dict(
                wh.query(
                    "SELECT resource_id, max(decision) FROM policy_actions WHERE policy_kind = 'idle' "
                    "AND created_at >= ? GROUP BY 1",
                    [_naive_utc(started)],
                )
            )
        finally:
            wh.close()
        want_bad = {i for i, s in specs.items() if s.name in ("eval-sweep-7", "mystery-gpu")}
        res.need(
            want_bad <= noncompliant,
            f"tag policy missed non-compliant instances {sorted(want_bad - noncompliant)}",
        )
        for iid, spec in specs.items():
            want = "idle" if spec.util < 5 else "busy"
            got = decisions.get(iid)
            res.need(got == want, f"the idle policy judged {iid} ({spec.name}) {got}, not {want}")

    return timed("Tagging and idle-GPU policies (dry run)", body)


def _naive_utc(epoch: float) -> Any:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(epoch, UTC).replace(tzinfo=None)


# ------------------------------------------------------------------ 5. price history
def prices(run_dag: RunDag) -> StageResult:
    def body(res: StageResult) -> None:
        _dag_ok(res, "finops_prices", run_dag("finops_prices", {"provider": "all"}))
        wh = _wh()
        try:
            counts = {
                (t, p): n
                for t in ("spot_prices", "ondemand_prices", "instance_catalog")
                for p, n in wh.query(f"SELECT provider, count(*) FROM {t} GROUP BY 1")
            }
            cheapest = wh.query(
                "SELECT provider, region, instance_type, pricing_model, price_per_hour, currency FROM latest_prices "
                "WHERE os = 'linux' ORDER BY price_per_hour LIMIT 6"
            )
            # GCP's specs come from the Compute API fake (finops.demo.price_apis), not the static table
            sources = wh.query(
                "SELECT source, count(*) FROM instance_catalog WHERE provider = 'gcp' GROUP BY 1"
            )
            rates = wh.query(
                "SELECT provider, product, count(*) FROM commitment_rates GROUP BY 1, 2 ORDER BY 1, 2"
            )
            blocks = wh.query("SELECT count(*) FROM capacity_block_offerings")[0][0]
        finally:
            wh.close()
        res.lines.append("  GCP GPU catalog by source: " + ", ".join(f"{s} {n}" for s, n in sorted(sources)))
        res.lines.append(
            "  Commitment rates from the price data (for the purchase advice): "
            + ", ".join(f"{p} {x} {n}" for p, x, n in rates)
        )
        res.need(
            {p for p, _, _ in rates} >= {"aws", "azure", "gcp"}, "commitment rates missing for a provider"
        )
        res.lines.append(f"  AWS Capacity Block offerings described (never bought): {blocks}")
        res.need(blocks > 0, "no Capacity Block offering stored")
        res.need(any(s != "static" for s, _ in sources), "the GCP catalog did not come from the Compute API")
        res.lines.append("  Rows stored (history keeps every observed change):")
        for prov in ("aws", "azure", "gcp", "lambda"):
            row = [counts.get((t, prov), 0) for t in ("spot_prices", "ondemand_prices", "instance_catalog")]
            res.lines.append(f"    {prov:<7} spot {row[0]:>4}  on-demand {row[1]:>4}  catalog {row[2]:>4}")
            res.need(row[1] > 0, f"no on-demand prices stored for {prov}")
        res.need(
            counts.get(("spot_prices", "azure"), 0) + counts.get(("spot_prices", "gcp"), 0) > 0,
            "no spot prices stored",
        )
        res.lines.append("  Cheapest GPU offers now (latest_prices, Linux):")
        for prov, region, it, model, price, cur in cheapest:
            res.lines.append(
                f"    {prov:<7} {region:<12} {it:<28} {model:<9} {Decimal(str(price)):>9.4f} {cur}/h"
            )

    return timed("Price history (local fakes of the price APIs)", body)


# ------------------------------------------------------------------ 6. commitments
def commitments(run_dag: RunDag, slack: SlackCatcher) -> StageResult:
    def body(res: StageResult) -> None:
        before = len(slack.posts)
        _dag_ok(res, "finops_commitments", run_dag("finops_commitments", {"send_alerts": True}))
        wh = _wh()
        try:
            util = wh.query(
                "SELECT provider, commitment_id, currency, sum(used_cost), sum(unused_cost) "
                "FROM commitment_utilisation WHERE billing_period = (SELECT max(billing_period) "
                "FROM commitment_utilisation) GROUP BY 1, 2, 3 ORDER BY 1, 2 LIMIT 6"
            )
            cover = wh.query(
                "SELECT provider, currency, sum(covered_list), sum(eligible_list) FROM commitment_coverage "
                "WHERE billing_period = (SELECT max(billing_period) FROM commitment_coverage) GROUP BY 1, 2 ORDER BY 1"
            )
            ending = wh.query(
                "SELECT provider, commitment_id, end_date FROM commitment_inventory ORDER BY end_date LIMIT 4"
            )
            from finops.commitments.report import capacity_block_rows

            blocks = capacity_block_rows(wh)
            advice = wh.query(
                "SELECT provider, product, term_years, payment, commitment_hourly, expected_savings_monthly, "
                "drop_savings_term, currency, rate_source FROM commitment_advice WHERE NOT what_if AND run_id = "
                "(SELECT max(run_id) FROM commitment_advice) ORDER BY expected_savings_monthly DESC LIMIT 4"
            )
        finally:
            wh.close()
        res.lines.append("  Coverage, last month (at list price: covered / (covered + on-demand eligible)):")
        for prov, cur, covered, eligible in cover:
            c, e = Decimal(str(covered)), Decimal(str(eligible))
            share = c / (c + e) if c + e else Decimal(0)
            res.lines.append(f"    {prov:<7} {c:>12.2f} covered, {e:>12.2f} on demand {cur}  ({share:.0%})")
            res.need(0 <= share <= 1, f"{prov} coverage {share} is outside 0-100 %")
        res.need(bool(cover), "no commitment coverage computed")
        res.lines.append("  Utilisation, last month (used / unused commitment):")
        for prov, cid, cur, used, unused in util:
            res.lines.append(
                f"    {prov:<7} {str(cid)[-40:]:<40} used {Decimal(str(used)):>10.2f}  unused {Decimal(str(unused)):>9.2f} {cur}"
            )
        res.need(bool(util), "no commitment utilisation computed")
        res.lines.append("  Expiry calendar (soonest first):")
        for prov, cid, end in ending:
            res.lines.append(f"    {prov:<7} {str(cid)[-40:]:<40} ends {end}")
        res.need(
            bool(ending), "the expiry calendar is empty (the demo CUR carries RI / Savings Plan end dates)"
        )
        alerts = [json.dumps(p) for p in slack.posts[before:]]
        res.lines.append(f"  expiry alerts sent to the local Slack: {sum('ommitment' in a for a in alerts)}")
        res.need(any("ommitment" in a for a in alerts), "no commitment expiry alert reached Slack")
        res.lines.append("  Purchase advice (advice only: nothing is bought), best expected monthly savings:")
        for prov, product, term, pay, hourly, monthly, drop, cur, source in advice:
            res.lines.append(
                f"    {prov:<7} {product:<22} {term}y {pay:<16} commit {Decimal(str(hourly)):>8.3f}/h  "
                f"saves {Decimal(str(monthly)):>9.2f}/month; if usage falls 20 %: saves {Decimal(str(drop)):>10.2f} over the term {cur}"
                f"  (discount from {source})"
            )
        res.need(bool(advice), "no purchase advice computed")
        res.need(
            any(str(a[8]).startswith("price_data") for a in advice),
            "no advice priced from the price jobs' commitment rates",
        )
        res.lines.append("  GPU capacity: AWS Capacity Blocks on offer (described, never bought):")
        for b in blocks[:3]:
            res.lines.append(
                f"    {b['region']:<10} {b['instance_type']:<12} x{b['instance_count']} {b['hours']} h from {b['start']}: "
                f"{b['upfront_fee']} {b['currency']} = {b['per_instance_hour']}/instance-hour "
                f"(on demand {b['on_demand_per_instance_hour'] or '-'}; saves {b['saving_vs_on_demand'] or '-'})"
            )
        res.need(bool(blocks), "no Capacity Block offering priced")

    return timed("Commitments: coverage, utilisation, expiry, purchase advice", body)


# ------------------------------------------------------------------ 7. benchmark
def pick_offer(wh: Any) -> tuple[str, str, str] | None:
    """The cheapest instance type priced both on demand and spot: its spot saving shows too."""
    rows = wh.query(
        "SELECT o.provider, o.region, o.instance_type FROM latest_prices o JOIN latest_prices s "
        "ON s.provider = o.provider AND s.region = o.region AND s.instance_type = o.instance_type "
        "AND s.os = o.os AND s.pricing_model = 'spot' WHERE o.pricing_model = 'ondemand' AND o.os = 'linux' "
        "ORDER BY o.price_per_hour, o.provider, o.region, o.instance_type LIMIT 1"
    )
    return tuple(rows[0]) if rows else None


def benchmark(out: Path) -> StageResult:
    def body(res: StageResult) -> None:
        from finops.gpubench import report, store

        doc_path = out / "bench-cpu.json"
        out.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "finops.gpubench",
                "--json",
                str(doc_path),
                "--device",
                "cpu",
                "--threads",
                "2",
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if not res.need(
            proc.returncode == 0 and doc_path.exists(),
            f"python -m finops.gpubench failed (exit {proc.returncode}): {proc.stderr[-500:]}",
        ):
            return
        doc = json.loads(doc_path.read_text())
        res.files.append(doc_path)
        res.lines.append(
            f"  python -m finops.gpubench --device cpu: {doc['device'].get('name')}, profile "
            f"{doc['profile']}, {doc['duration_s']:.1f} s"
        )
        for m in doc["results"]:
            if m["metric"] in ("matmul_tflops", "train_step_time"):
                res.lines.append(
                    f"    {m['metric']:<16} {m['dtype'] or '':<9} {m['value']:>10.4g} {m['unit']}"
                )
        res.need(
            any(m["metric"] == "train_step_time" for m in doc["results"]), "no training step time measured"
        )
        wh = _wh()
        try:
            offer = pick_offer(wh)
            if not res.need(offer is not None, "no instance type priced both on demand and spot"):
                return
            assert offer is not None
            prov, region, itype = offer
            target = {
                "provider": prov,
                "region": region,
                "instance_type": itype,
                "pricing_model": "ondemand",
                "gpu_count": 1,
            }
            # The CPU's figures stand in for the instance's GPU (finops_gpu_benchmark measures the
            # GPU itself): the stored run keeps the device the document names (the CPU, profile
            # "cpu"), and a real run of that instance type replaces it (the newest figures win).
            store.store_result(wh, bench_run_id="demo-cpu", dag_run_id=None, target=target, doc=doc)
            rows = [
                r
                for r in report.price_performance(wh)
                if (r["provider"], r["region"], r["instance_type"]) == offer
            ]
        finally:
            wh.close()
        res.lines.append(
            f"  Priced at {prov} {region} {itype} (this machine's CPU figures standing in for its GPU):"
        )
        for r in rows:
            steps = r["usd_per_1k_steps"].get("fp32")
            tflop = r["usd_per_tflop_hour"].get("fp32")
            saving = r["spot_saving"]
            res.lines.append(
                f"    {r['pricing_model']:<9} {r['price_per_hour']:>8.4f} {r['currency']}/h  "
                f"$/1k fp32 steps {steps if steps is None else f'{steps:.6f}'}  "
                f"$/TFLOP-h fp32 {tflop if tflop is None else f'{tflop:,.2f}'}"
                + (f"  spot saves {saving:.0%}" if saving is not None else "")
            )
        res.need(
            {r["pricing_model"] for r in rows} == {"ondemand", "spot"},
            f"the benchmark was not priced on demand and spot for {offer}",
        )

    return timed("GPU benchmark (CPU) priced against the loaded prices", body)


# ------------------------------------------------------------------ training job
def _run_training_job(run_dag: RunDag, res: StageResult, conf: dict[str, Any]) -> tuple[Any, list[Any]]:
    """Run finops_training_job with `conf`; the job's row and its attempts (None, [] if absent)."""
    from finops.jobs.store import JobStore

    _dag_ok(res, "finops_training_job", run_dag("finops_training_job", conf))
    wh = _wh()
    try:
        store = JobStore(wh)
        job = next((j for j in store.jobs(50) if j.name == conf["name"]), None)
        return job, store.attempts(job.job_id) if job is not None else []
    finally:
        wh.close()


def training_job(run_dag: RunDag) -> StageResult:
    """finops_training_job, live, on the local provider: the example job on spot, reclaimed
    (SIGKILL) after step 170 of 200, resumed from its step-160 checkpoint on on-demand (the
    spot limit is one preemption); then the same job all on-demand, for the comparison."""

    def body(res: StageResult) -> None:
        name = f"demo-train-{int(time.time())}"  # a fresh checkpoint prefix on every demo run
        cands = [
            {"provider": "local", "region": "here", "instance_type": "cpu-box", "pricing_model": model,
             "price_per_hour": price, "gpu_model": "CPU", "gpu_memory_gib": 8, "interruption_rate_per_h": 0.2}
            for model, price in (("spot", "12.00"), ("ondemand", "40.00"))
        ]  # fmt: skip
        conf = {
            "name": name, "steps": 200, "checkpoint_every_steps": 20, "max_spot_preemptions": 1,
            "args": ["--step-sleep", "0.05", "--fault", "attempt=1,phase=step,step=170"],
            "step_times": [{"gpu_model": "CPU", "precision": "fp32", "step_ms": 50}], "candidates": cands,
            "budget_usd": "5", "poll_seconds": 0.2, "dry_run": False,
        }  # fmt: skip
        job, attempts = _run_training_job(run_dag, res, conf)
        if not res.need(job is not None, f"no training_jobs row for {name}"):
            return
        for a in attempts:
            res.lines.append(
                f"  attempt {a.attempt}: {a.label:<28} steps {a.steps_at_start:>3} -> {a.steps_at_end!s:>3}  "
                f"${a.estimated_cost_usd:>7}  {a.outcome}: {a.end_reason}"
            )
        res.need(job.state == "finished", f"the training job ended {job.state}: {job.state_reason}")
        res.need(
            [(a.pricing_model, a.outcome) for a in attempts]
            == [("spot", "preempted"), ("ondemand", "finished")],
            f"expected a preempted spot attempt, then an on-demand one: {[(a.pricing_model, a.outcome) for a in attempts]}",
        )
        res.need(
            bool(attempts) and attempts[-1].steps_at_start == 160, "the fallback did not resume from step 160"
        )
        # the same work all on-demand, measured the same way (wall time x price, start-up included)
        od_conf = conf | {"name": f"{name}-od", "args": ["--step-sleep", "0.05"], "candidates": cands[1:]}
        od_job, _ = _run_training_job(run_dag, res, od_conf)
        if not res.need(
            od_job is not None and od_job.state == "finished", "the all-on-demand run did not finish"
        ):
            return
        saved = od_job.estimated_cost_usd - job.estimated_cost_usd
        res.lines.append(
            f"  spot + fallback: ${job.estimated_cost_usd}   the same job all on-demand: "
            f"${od_job.estimated_cost_usd}   saved ${saved} ({saved / od_job.estimated_cost_usd:.0%})"
        )
        res.lines.append(
            f"  (planner's estimate for all on-demand, start-up not counted: ${job.ondemand_cost_usd})"
        )

    return timed("Training job: spot, one preemption, fallback to on-demand", body)
