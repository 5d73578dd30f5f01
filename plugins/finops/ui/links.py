"""Links from alerts into the FinOps view. The base is Airflow's own `[api] base_url`
(AIRFLOW__API__BASE_URL: the address people open the Airflow UI at); without it an alert
carries no link rather than a guessed one. Ids travel percent-encoded, and each sink checks
the URL again before it renders it (finops.alerts.slack / email)."""

from __future__ import annotations

import re
from urllib.parse import quote, urlencode

from finops.ui.prefix import URL_PREFIX

_BASE = re.compile(r"^https?://[^\s<>\"'|]{1,500}$")


def base_url() -> str | None:
    try:
        from airflow.configuration import conf

        raw = conf.get("api", "base_url", fallback=None)
    except Exception:  # noqa: BLE001 - no Airflow config here (a script): no link
        return None
    raw = (raw or "").strip().rstrip("/")
    return raw if raw and _BASE.match(raw) else None


def view_url(section: str, **query: str) -> str | None:
    """`<base>/finops/?<query>#<section>`, or None when no base URL is configured."""
    base = base_url()
    if base is None:
        return None
    q = f"?{urlencode(query, quote_via=quote)}" if query else ""
    return f"{base}{URL_PREFIX}/{q}#{quote(section, safe='')}"
