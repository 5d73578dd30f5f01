"""Anomaly -> AlertEvent (plain data; each sink escapes for its own medium)."""

from __future__ import annotations

import math

from finops.alerts.events import AlertEvent
from finops.anomaly.state import Anomaly


def alert_event(a: Anomaly) -> AlertEvent:
    pct = "new spend" if not math.isfinite(a.pct) else f"{a.pct:+.0%}"
    facts: dict[str, object] = {
        "Monitor": f"{a.monitor_type}: {a.monitor_key}",
        "Since": a.start_day.isoformat(),
        "Peak day": a.peak_day.isoformat(),
        "Actual": f"{a.actual:,.2f} {a.currency}",
        "Expected": f"{a.expected:,.2f} {a.currency}",
        "Change": f"{a.delta:+,.2f} {a.currency} ({pct})",
        "Impact so far": f"{a.total_impact:,.2f} {a.currency}",
    }
    for i, c in enumerate(a.contributors[:5], 1):
        facts[f"Cause {i}"] = f"{c['key']}: {float(c['delta']):+,.2f} ({float(c['share']):.0%})"
    from finops.ui.links import view_url

    link = view_url("anomalies", anomaly=a.anomaly_id)
    return AlertEvent(
        kind="anomaly",
        title=f"Cost anomaly: {a.monitor_type} {a.monitor_key} {pct}",
        severity="critical" if a.severity == "critical" else "warning",
        team=a.monitor_key if a.monitor_type == "team" else None,
        summary=f"{a.monitor_key} spent {a.actual:,.2f} {a.currency} on {a.peak_day.isoformat()}, "
        f"expected about {a.expected:,.2f}.",
        facts=facts,
        dedup_key=a.anomaly_id,
        # acknowledge / mark expected / snooze it in the FinOps view
        links={"Acknowledge, mark expected or snooze": link} if link else {},
    )
