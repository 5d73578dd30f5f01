"""Feedback on an anomaly in real headless Chromium against the real `airflow api-server`: the
browser's own POST (cookie login, its Origin and Sec-Fetch-Site headers, the /finops mount)
is accepted and stored with the logged-in user; the budget and forecast sections render."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures.ui import UI_PASSWORD, UI_USER

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def test_mark_an_anomaly_expected_from_the_view(ui_server, tmp_path):
    if not Path(CHROMIUM).exists():  # `make test` installs it (apt-get install chromium)
        pytest.fail(f"{CHROMIUM} not found: apt-get install -y chromium", pytrace=False)
    from playwright.sync_api import sync_playwright

    base = ui_server.url
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(f"{base}/finops/?anomaly=an-1#anomalies")
            page.wait_for_selector("input[name=username]", timeout=30_000)
            page.fill("input[name=username]", UI_USER)
            page.fill("input[name=password]", UI_PASSWORD)
            page.click("button[type=submit]")
            page.wait_for_selector("body[data-ready=true]", timeout=30_000)
            cell = page.locator("#anomalies-table [data-anomaly=an-1]")
            assert "no feedback yet" in cell.inner_text()
            assert "selected" in (cell.get_attribute("class") or "")  # the alert's link points here
            cell.locator("select").select_option("expected")
            cell.locator("input[type=text]").fill("<b>planned</b> load test")
            cell.locator("button[type=submit]").click()
            page.wait_for_function(
                "() => document.querySelector('[data-anomaly=an-1]').innerText.includes('saved')",
                timeout=15_000,
            )
            assert "expected · analyst" in cell.inner_text()
            page.wait_for_function(
                "() => document.getElementById('anomaly-precision').innerText.includes('0 real')",
                timeout=10_000,
            )
            assert "no budgets configured" in page.locator("#budgets-table").inner_text()
            assert page.locator("#forecasts-table").inner_text().strip()
            assert not errors, errors
        finally:
            browser.close()
    from finops.warehouse.duckdb_wh import DuckDBWarehouse

    wh = DuckDBWarehouse(Path(ui_server.log).parent / "finops_home" / "warehouse.duckdb", read_only=True)
    try:
        assert wh.query("SELECT anomaly_id, label, note, created_by FROM anomaly_feedback") == [
            ("an-1", "expected", "<b>planned</b> load test", UI_USER)
        ]
    finally:
        wh.close()
