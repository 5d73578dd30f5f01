"""Monthly showback report per team: HTML (with a daily chart by line) + CSV, saved under
FINOPS_HOME/reports/<period>/ and e-mailed to the team's routes. Data comes only from the
showback tables, which reconcile with focus_costs to the cent.

User-controlled strings (team names, services, tags) are HTML-escaped by Jinja autoescape,
CSV cells are formula-safe, and e-mail headers / file names are cleaned.
"""

from __future__ import annotations

import base64
import logging
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from finops.exceptions import FinopsError

if TYPE_CHECKING:
    from finops.alerts.dedup import AlertLedger
    from finops.config import AlertsConfig
    from finops.warehouse.base import Warehouse

log = logging.getLogger(__name__)
ZERO = Decimal(0)

_TEMPLATE = """<html><head><meta charset="utf-8"><title>Showback {{ r.team }} {{ r.period }}</title></head>
<body style="font-family:sans-serif">
<h1>Cloud cost showback: {{ r.team }}</h1>
<p>Billing period <b>{{ r.period }}</b>, {{ r.view }} cost{% if r.cost_centre %}, cost centre {{ r.cost_centre }}{% endif %}.</p>
<table border="1" cellpadding="4" cellspacing="0">
<tr><th>Currency</th><th>Total</th><th>Direct</th><th>Shared</th><th>Unallocated</th><th>GPU</th><th>Storage</th><th>Egress</th></tr>
{% for t in r.totals %}<tr><td>{{ t.currency }}</td><td><b>{{ t.total_cents }}</b></td><td>{{ t.direct }}</td>
<td>{{ t.shared }}</td><td>{{ t.unallocated }}</td><td>{{ t.gpu }}</td><td>{{ t.storage }}</td><td>{{ t.egress }}</td></tr>
{% endfor %}</table>
{% if img_src %}<p><img src="{{ img_src }}" alt="daily cost by line" width="800"></p>{% endif %}
{% if r.gpu %}<h2>GPU</h2><table border="1" cellpadding="4" cellspacing="0">
<tr><th>GPU model</th><th>Purchase</th><th>Currency</th><th>Cost</th><th>Savings vs list</th><th>Idle cost</th></tr>
{% for g in r.gpu %}<tr><td>{{ g[0] }}</td><td>{{ g[1] }}</td><td>{{ g[2] }}</td><td>{{ g[3] }}</td><td>{{ g[4] }}</td><td>{{ g[5] }}</td></tr>
{% endfor %}</table>{% endif %}
<h2>Top services</h2><table border="1" cellpadding="4" cellspacing="0">
<tr><th>Provider</th><th>Service</th><th>Line</th><th>Currency</th><th>Cost</th></tr>
{% for s in r.top_services %}<tr><td>{{ s[0] }}</td><td>{{ s[1] }}</td><td>{{ s[2] }}</td><td>{{ s[3] }}</td><td>{{ s[4] }}</td></tr>
{% endfor %}</table>
{% if r.forecast %}<h2>Month-end forecast</h2><table border="1" cellpadding="4" cellspacing="0">
<tr><th>Month</th><th>As of</th><th>Currency</th><th>So far</th><th>Forecast</th><th>80 % interval</th><th>95 % interval</th></tr>
{% for f in r.forecast %}<tr><td>{{ f.period }}</td><td>{{ f.as_of }}</td><td>{{ f.currency }}</td><td>{{ f.to_date }}</td>
<td><b>{{ f.forecast }}</b></td><td>{{ f.lo80 }} - {{ f.hi80 }}</td><td>{{ f.lo95 }} - {{ f.hi95 }}</td></tr>
{% endfor %}</table>{% endif %}
{% if r.budgets %}<h2>Budgets</h2><table border="1" cellpadding="4" cellspacing="0">
<tr><th>Budget</th><th>Month</th><th>Kind</th><th>Currency</th><th>Amount</th><th>Actual</th><th>Forecast</th></tr>
{% for b in r.budgets %}<tr><td>{{ b.budget }}</td><td>{{ b.period }}</td><td>{{ b.kind }}</td><td>{{ b.currency }}</td>
<td>{{ b.amount }}</td><td>{{ b.actual }}</td><td><b>{{ b.forecast }}</b></td></tr>
{% endfor %}</table>{% endif %}
{% if r.commitments %}<h2>Commitments</h2><table border="1" cellpadding="4" cellspacing="0">
<tr><th>Currency</th><th>Covered (list price)</th><th>On demand, could be covered</th><th>Coverage</th><th>Unused commitment</th></tr>
{% for c in r.commitments %}<tr><td>{{ c.currency }}</td><td>{{ c.covered }}</td><td>{{ c.eligible }}</td>
<td>{% if c.coverage_pct is not none %}{{ c.coverage_pct }} %{% else %}-{% endif %}</td><td>{{ c.unused }}</td></tr>
{% endfor %}</table>{% endif %}
{% if r.capacity_blocks %}<h2>GPU capacity on offer: AWS Capacity Blocks (described, never bought)</h2><table border="1" cellpadding="4" cellspacing="0">
<tr><th>Region</th><th>Instance type</th><th>Instances</th><th>Hours</th><th>Start</th><th>Currency</th><th>Upfront fee</th><th>Per instance-hour</th><th>On demand per instance-hour</th><th>Saving vs on demand</th></tr>
{% for b in r.capacity_blocks %}<tr><td>{{ b.region }}</td><td>{{ b.instance_type }}</td><td>{{ b.instance_count }}</td><td>{{ b.hours }}</td>
<td>{{ b.start }}</td><td>{{ b.currency }}</td><td>{{ b.upfront_fee }}</td><td>{{ b.per_instance_hour }}</td>
<td>{{ b.on_demand_per_instance_hour or "-" }}</td><td>{{ b.saving_vs_on_demand or "-" }}</td></tr>
{% endfor %}</table>{% endif %}
{% if r.inference %}<h2>Inference cost at the P99 target (cheapest offers, all teams)</h2><table border="1" cellpadding="4" cellspacing="0">
<tr><th>Model</th><th>Precision</th><th>Batch</th><th>P99 target (ms)</th><th>Offer</th><th>Currency</th><th>Per 1,000 requests</th><th>Per 1M output tokens</th></tr>
{% for i in r.inference %}<tr><td>{{ i.model }}</td><td>{{ i.dtype }}</td><td>{{ i.batch }}</td><td>{{ i.p99_target_ms }}</td>
<td>{{ i.offer }}</td><td>{{ i.currency }}</td><td>{{ i.per_1k_requests }}</td><td>{{ i.per_1m_output_tokens }}</td></tr>
{% endfor %}</table>{% endif %}
<p>Full detail in the attached CSV.</p>
</body></html>"""


@dataclass
class TeamReport:
    team: str
    period: str
    view: str
    cost_centre: str | None
    totals: list[dict[str, Any]]
    daily_by_line: dict[str, list[tuple[date, float]]]
    top_services: list[tuple]
    gpu: list[tuple]
    detail: list[tuple]
    chart_png: bytes = b""
    files: dict[str, Path] = field(default_factory=dict)
    # the month in progress (finops_budgets' latest run): not part of dedup_key, so a forecast
    # that moved does not re-send an unchanged month's report
    forecast: list[dict[str, Any]] = field(default_factory=list)
    budgets: list[dict[str, Any]] = field(default_factory=list)
    commitments: list[dict[str, Any]] = field(default_factory=list)  # finops.commitments.report
    capacity_blocks: list[dict[str, Any]] = field(
        default_factory=list
    )  # commitments.report.capacity_block_rows
    inference: list[dict[str, Any]] = field(default_factory=list)  # finops.gpubench.serving_store.report_rows

    def html(self, img_src: str | None) -> str:
        from jinja2 import Environment

        return Environment(autoescape=True).from_string(_TEMPLATE).render(r=self, img_src=img_src)

    def dedup_key(self) -> str:
        """Same period, view, team and figures -> same key: a retry or a re-run re-sends nothing,
        a restated month (other figures) is sent again."""
        import hashlib
        import json

        body = json.dumps(
            [self.period, self.view, self.team, self.cost_centre, self.totals, self.csv()],
            default=str,
            sort_keys=True,
        )
        return f"report:{self.period}:{self.view}:" + hashlib.sha256(body.encode()).hexdigest()[:24]

    def csv(self) -> str:
        from finops.alerts.csv_safe import to_csv

        return to_csv(
            [
                "day",
                "team",
                "cost_centre",
                "allocation",
                "rule",
                "provider",
                "billing_account_id",
                "sub_account_id",
                "service_name",
                "line",
                "currency",
                "cost",
            ],
            self.detail,
        )


def _q(v: Any) -> Decimal:
    return Decimal(v or 0).quantize(Decimal("0.01"))


def build_reports(
    wh: Warehouse, period: str, view: str = "amortised", teams: list[str] | None = None
) -> list[TeamReport]:
    from finops.alerts.chart import daily_chart_png

    cb = wh.query(
        "SELECT team, cost_centre, currency, total_cost, total_cents, direct_cost, shared_cost, unallocated_cost, "
        "gpu_cost, storage_cost, egress_cost FROM chargeback_monthly WHERE billing_period = ? AND cost_view = ? "
        "ORDER BY team, currency",
        [period, view],
    )
    by_team: dict[str, TeamReport] = {}
    for team, cc, cur, total, cents, direct, shared, unalloc, gpu, storage, egress in cb:
        if teams and team not in teams:
            continue
        r = by_team.setdefault(team, TeamReport(team, period, view, cc, [], {}, [], [], []))
        r.totals.append(
            {
                "currency": cur,
                "total": total,
                "total_cents": _q(cents),
                "direct": _q(direct),
                "shared": _q(shared),
                "unallocated": _q(unalloc),
                "gpu": _q(gpu),
                "storage": _q(storage),
                "egress": _q(egress),
            }
        )
    for team, r in by_team.items():
        daily: dict[str, dict[date, float]] = defaultdict(lambda: defaultdict(float))
        for day, line, cost in wh.query(
            "SELECT day, line, SUM(cost) FROM showback_daily WHERE billing_period = ? AND cost_view = ? AND team = ? "
            "GROUP BY 1, 2 ORDER BY 1, 2",
            [period, view, team],
        ):
            daily[line][day] += float(cost)
        r.daily_by_line = {k: sorted(v.items()) for k, v in sorted(daily.items())}
        r.top_services = [
            (p, s, ln, c, _q(v))
            for p, s, ln, c, v in wh.query(
                "SELECT provider, service_name, line, currency, SUM(cost) AS c FROM showback_daily WHERE billing_period = ? "
                "AND cost_view = ? AND team = ? GROUP BY 1, 2, 3, 4 ORDER BY c DESC, 1, 2, 3, 4 LIMIT 10",
                [period, view, team],
            )
        ]
        r.gpu = [
            (m, po, c, _q(v), _q(s), _q(i))
            for m, po, c, v, s, i in wh.query(
                "SELECT gpu_model, purchase_option, currency, SUM(cost), SUM(savings), SUM(idle_cost) "
                "FROM showback_gpu_monthly WHERE billing_period = ? AND cost_view = ? AND team = ? GROUP BY 1, 2, 3 "
                "ORDER BY 1, 2, 3",
                [period, view, team],
            )
        ]
        # every ORDER BY is total: the detail CSV is part of dedup_key, so a re-run must render it identically
        r.detail = wh.query(
            "SELECT day, team, cost_centre, allocation, rule, provider, billing_account_id, sub_account_id, "
            "service_name, line, currency, SUM(cost) FROM showback_daily WHERE billing_period = ? AND cost_view = ? "
            "AND team = ? GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11 "
            "ORDER BY 1, 9, 2, 3, 4, 5, 6, 7, 8, 10, 11",
            [period, view, team],
        )
        r.chart_png = daily_chart_png(r.daily_by_line, f"{team} {period} ({view}) daily cost by line")
    add_outlook(wh, list(by_team.values()), period, view)
    from finops.commitments.report import capacity_block_rows, team_sections

    for team, rows in team_sections(wh, period, list(by_team)).items():
        by_team[team].commitments = rows
    blocks = capacity_block_rows(wh)  # organisation-wide: the same for every team
    for r in by_team.values():
        r.capacity_blocks = blocks
    from finops.gpubench.serving_store import report_rows

    inference = report_rows(wh)  # organisation-wide: the same for every team
    for r in by_team.values():
        r.inference = inference
    return [by_team[t] for t in sorted(by_team)]


def add_outlook(wh: Warehouse, reports: list[TeamReport], period: str, view: str) -> None:
    """The month-end forecast and budgets of each team for the months after the report's
    (the month in progress when the report goes out), from finops_budgets' tables."""
    teams = [r.team for r in reports]
    if not teams:
        return
    marks = ", ".join("?" for _ in teams)
    by_team: dict[str, TeamReport] = {r.team: r for r in reports}
    if wh.table_exists("cost_forecasts"):
        for team, p, as_of, cur, to_date, fc, lo80, hi80, lo95, hi95 in wh.query(
            "SELECT series_key, billing_period, as_of, currency, to_date, forecast, lo80, hi80, lo95, hi95 "
            f"FROM cost_forecasts WHERE dimension = 'team' AND cost_view = ? AND billing_period > ? "
            f"AND series_key IN ({marks}) ORDER BY 1, 2, 4",
            [view, period, *teams],
        ):
            by_team[team].forecast.append(
                {
                    "period": p,
                    "as_of": as_of,
                    "currency": cur,
                    "to_date": _q(to_date),
                    "forecast": _q(fc),
                    "lo80": _q(lo80),
                    "hi80": _q(hi80),
                    "lo95": _q(lo95),
                    "hi95": _q(hi95),
                }
            )
    if wh.table_exists("budget_status"):
        for team, name, p, kind, cur, amount, actual, fc in wh.query(
            "SELECT team, budget, billing_period, kind, currency, amount, actual, forecast FROM budget_status "
            f"WHERE billing_period > ? AND team IN ({marks}) ORDER BY 1, 2, 3",
            [period, *teams],
        ):
            by_team[team].budgets.append(
                {
                    "budget": name,
                    "period": p,
                    "kind": kind,
                    "currency": cur,
                    "amount": _q(amount),
                    "actual": _q(actual),
                    "forecast": _q(fc),
                }
            )


def save_reports(
    reports: list[TeamReport], out_dir: Path | None = None, *, prune: bool = False
) -> list[Path]:
    """Write <team>-<view>.html (chart embedded as a data URI) and <team>-<view>.csv per team.

    A team name the file system cannot take as is gets a short hash of the exact name, so two
    teams that clean to the same name ("ml research", "ml_research") never overwrite each other;
    the view is in the name so the billed and amortised reports of a month both stay.
    `prune` (`reports` are every team of their month and view): remove that month and view's
    other reports, left by figures a restatement replaced (a team no longer billed)."""
    from finops.paths import path_segment, subdir

    written: list[Path] = []
    folders: set[tuple[Path, str]] = set()  # (month folder, view suffix) these reports were written to
    for r in reports:
        base = (out_dir or subdir("reports")) / path_segment(r.period)
        base.mkdir(parents=True, exist_ok=True)
        team = path_segment(r.team, max_len=80)  # a tag value: hashed when rewritten
        view = path_segment(r.view)
        folders.add((base, view))
        stem = f"{team}-{view}"
        html = base / f"{stem}.html"
        csv_path = base / f"{stem}.csv"
        img = "data:image/png;base64," + base64.b64encode(r.chart_png).decode() if r.chart_png else None
        html.write_text(r.html(img), encoding="utf-8")
        csv_path.write_text(r.csv(), encoding="utf-8", newline="")
        r.files = {"html": html, "csv": csv_path}
        written += [html, csv_path]
    if prune:
        keep = set(written)
        for base, view in folders:
            for ext in ("html", "csv"):
                for old in base.glob(f"*-{view}.{ext}"):
                    if old not in keep:
                        old.unlink(missing_ok=True)
    return written


def _send_report(r: TeamReport, conn_id: str, to: list[str]) -> None:
    from finops.alerts.email import Attachment, build_message, chart_ref, default_sender, send_message

    msg = build_message(
        sender=default_sender(conn_id),
        to=to,
        subject=f"Cloud cost showback {r.period}: {r.team}",
        html=r.html(chart_ref("chart")),
        chart_png=r.chart_png,
        chart_cid="chart",
        attachments=[Attachment(f"showback-{r.team}-{r.period}.csv", r.csv().encode("utf-8"))],
    )
    send_message(conn_id, msg)


class ReportDeliveryError(FinopsError, RuntimeError):
    """Some report e-mails failed (after every other one was tried)."""


def email_reports(
    reports: list[TeamReport],
    alerts: AlertsConfig,
    ledger: AlertLedger | None = None,
    *,
    resend: bool = False,
    run_id: str | None = None,
) -> dict[str, list[str]]:
    """E-mail each team's report to the e-mail routes for that team; returns team -> recipients
    sent now. One failing route does not stop the others; with a ledger, a report already
    delivered to a channel is not sent there again (a task retry after a partial failure used
    to re-send every report before the failing one), nor sent twice by two runs at once, unless
    `resend` (someone asked for it again): then once more for `run_id` (a retry of that run
    does not repeat what it already re-sent; no run_id: this call is the run).
    Raises ReportDeliveryError at the end."""
    import uuid

    from finops.alerts.routing import email_channel, routes_for

    resend_run = (run_id or f"adhoc-{uuid.uuid4().hex}") if resend else None
    sent: dict[str, list[str]] = {}
    errors: list[str] = []
    for r in reports:
        key = r.dedup_key()
        seen: set[str] = set()
        for route in routes_for(r.team, alerts):
            if not (route.email_conn_id and route.email_to):
                continue
            channel = email_channel(route.email_conn_id, route.email_to)
            if channel in seen:
                continue
            seen.add(channel)
            send = partial(_send_report, r, route.email_conn_id, list(route.email_to))
            try:
                if ledger is None:
                    send()
                elif not ledger.deliver_once(key, channel, send, resend_run=resend_run):
                    log.info("report %s %s already sent to %s", r.period, r.team, channel)
                    continue
            except Exception as e:  # noqa: BLE001 - try the other routes, then report
                errors.append(f"{r.team!r} -> {channel}: {e}")
                continue
            sent.setdefault(r.team, []).extend(route.email_to)
    if errors:
        raise ReportDeliveryError(f"{len(errors)} report e-mail(s) failed: " + "; ".join(errors)[:2000])
    return sent
