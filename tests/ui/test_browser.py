"""End to end in real headless Chromium (Debian `chromium`, driven by Playwright; no browser
download): the real `airflow api-server` with the plugin, a login through Airflow's own login
page, the FinOps view inside the Airflow UI, charts rendered, screenshot in test-artifacts/."""

from __future__ import annotations

import shutil
import urllib.error
import urllib.request
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
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def _status(url: str, headers: dict[str, str] | None = None) -> int:
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def test_finops_view_in_the_airflow_ui(ui_server):
    if not Path(CHROMIUM).exists():  # `make test` installs it (apt-get install chromium)
        pytest.fail(f"{CHROMIUM} not found: apt-get install -y chromium", pytrace=False)
    from playwright.sync_api import sync_playwright

    base = ui_server.url
    # refused without a login, on the real server (API and assets)
    assert _status(f"{base}/finops/api/showback") == 401
    assert _status(f"{base}/finops/static/app.js") == 401
    # the nav entry is registered with Airflow
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            dialogs: list[str] = []
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(f"{base}/finops/")  # -> Airflow's login page, then back here
            page.wait_for_selector("input[name=username]", timeout=30_000)
            page.fill("input[name=username]", UI_USER)
            page.fill("input[name=password]", UI_PASSWORD)
            page.click("button[type=submit]")
            page.wait_for_url("**/finops/", timeout=30_000)
            page.wait_for_selector("body[data-ready=true]", timeout=30_000)
            # the API answers with the browser's cookie: the same login as the Airflow UI
            plugins = page.request.get(f"{base}/api/v2/plugins").json()
            views = [v for pl in plugins["plugins"] for v in pl["external_views"]]
            assert any(v["name"] == "FinOps" and v["href"] == "/finops/" for v in views), views

            # the view inside the Airflow UI (nav entry url_route "finops" -> /plugin/finops, an iframe)
            page.goto(f"{base}/plugin/finops")
            frame = page.frame_locator("iframe")
            frame.locator("body[data-ready=true]").wait_for(timeout=30_000)
            for dim in ("provider", "team", "service"):
                fig = frame.locator(f"figure[data-dim={dim}]")
                assert fig.get_attribute("data-rendered") == "true", dim
                box = fig.locator("canvas").bounding_box()
                assert box and box["width"] > 100 and box["height"] > 100
            assert frame.locator("#gpu figure").get_attribute("data-rendered") == "true"
            # the chart drew real pixels (not a blank canvas)
            inked = frame.locator("#chart-provider").evaluate(
                "c => { const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;"
                " let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++; return n; }"
            )
            assert inked > 1000
            page.screenshot(path=str(ARTIFACTS / "finops-in-airflow-ui.png"))

            # content, read as the user sees it
            assert "$6,799.85" in frame.locator("figure[data-dim=provider] figcaption").inner_text()
            rows = frame.locator("#showback-table tbody tr")
            assert rows.count() == 4 and "ml-research" in rows.nth(0).inner_text()
            rows.nth(3).locator("button").click()  # drill-down to data-eng
            frame.locator("#drill-resources tbody tr").first.wait_for(timeout=10_000)
            assert "bq-warehouse" in frame.locator("#drill-resources").inner_text()
            assert "i-gpu-001" in frame.locator("#anomalies-table").inner_text()
            assert "$1,243.10" in frame.locator("#tags-cost").inner_text()
            # hostile text from the warehouse is shown as text, never run
            assert '<img src=x onerror="document.title=' in frame.locator("#policies-table").inner_text()
            assert frame.locator("#policies-table img").count() == 0
            frame.locator("#cheapest-form input[name=steps]").fill("1000000")
            frame.locator("#cheapest-form button").click()
            frame.locator("#cheapest-table tbody tr").first.wait_for(timeout=10_000)
            assert "g5.xlarge" in frame.locator("#cheapest-table tbody tr").first.inner_text()

            standalone = browser.new_page(viewport={"width": 1400, "height": 1000})
            standalone.context.add_cookies(page.context.cookies())
            standalone.goto(f"{base}/finops/")
            standalone.wait_for_selector("body[data-ready=true]", timeout=30_000)
            standalone.screenshot(path=str(ARTIFACTS / "finops-full-page.png"), full_page=True)
            assert not dialogs and not errors, (dialogs, errors)
            assert page.title() != "pwned"
        finally:
            browser.close()
    # a browser with no cookie is sent to the login page (never sees the view)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            anon = browser.new_page()
            anon.goto(f"{base}/finops/")
            assert "/auth/login" in anon.url
            assert anon.locator("#chart-provider").count() == 0
        finally:
            browser.close()
    shutil.copy(ui_server.log, ARTIFACTS / "api-server.log")
