"""The FinOps JSON API through FastAPI's TestClient, with Airflow's real SimpleAuthManager JWTs,
on a seeded DuckDB warehouse (the real read-only open path) and on PostgreSQL."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from finops.ui import rollup
from tests.fixtures.ui import UI_FACTS, ui_seed

ENDPOINTS = [
    "/api/overview",
    "/api/cost?dim=provider",
    "/api/cost?dim=team",
    "/api/showback",
    "/api/showback/team?period=2025-03&team=x",
    "/api/showback/resources?period=2025-03&team=x",
    "/api/anomalies",
    "/api/policy-actions",
    "/api/tag-compliance",
    "/api/gpu/price-performance",
    "/api/gpu/cheapest",
    "/api/me",
    "/static/app.js",
    "/static/vendor/chart.umd.min.js",
]


@pytest.fixture
def seeded(duckdb_wh):
    facts = ui_seed(duckdb_wh)
    yield duckdb_wh, facts


def _get(client, path, headers, **params):
    r = client.get(path, headers=headers, params=params or None)
    assert r.status_code == 200, r.text
    return r.json()


# -- access control ----------------------------------------------------------------------------


@pytest.mark.parametrize("path", ENDPOINTS + ["/"])
def test_every_route_refuses_without_login(ui_client, path):
    r = ui_client.get(path, headers={"Accept": "application/json"})
    assert r.status_code == 401
    assert "app.js" not in r.text and "Chart" not in r.text


def test_invalid_and_forged_tokens_are_refused(ui_client, ui_auth):
    assert ui_client.get("/api/overview", headers={"Authorization": "Bearer not-a-jwt"}).status_code == 403
    import jwt

    forged = jwt.encode(
        {"sub": "mallory", "role": "ADMIN"}, "another-secret-" + "0123456789abcdef" * 4, algorithm="HS512"
    )
    assert ui_client.get("/api/overview", headers={"Authorization": f"Bearer {forged}"}).status_code == 403
    ui_client.cookies.set("_token", forged)
    try:
        assert ui_client.get("/api/overview").status_code == 403
    finally:
        ui_client.cookies.clear()


def test_logged_in_user_without_permission_gets_403(ui_client, ui_auth):
    token = ui_auth.token(role=None, username="nobody")  # authenticated, no role: no FinOps view
    r = ui_client.get("/api/overview", headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 403
    assert "FinOps" in r.json()["detail"]


def test_cookie_login_like_the_airflow_ui_works(ui_client, ui_auth, finops_home):
    ui_client.cookies.set("_token", ui_auth.token())
    try:
        r = ui_client.get("/api/me")
        assert r.status_code == 200 and r.json()["name"] == "analyst"
        page = ui_client.get("/", headers={"Accept": "text/html"})
        assert page.status_code == 200 and 'src="static/app.js"' in page.text
        assert "frame-ancestors 'self'" in page.headers["content-security-policy"]
    finally:
        ui_client.cookies.clear()


def test_browser_without_login_is_sent_to_the_login_page(ui_client):
    r = ui_client.get("/", headers={"Accept": "text/html"}, follow_redirects=False)
    assert r.status_code == 303
    assert r.headers["location"].startswith("/auth/login?next=")


def test_read_only_no_other_methods(ui_client, ui_headers):
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        r = ui_client.request(method, "/api/showback", headers=ui_headers)
        assert r.status_code == 405, method


def test_static_path_traversal_refused(ui_client, ui_headers):
    assert ui_client.get("/static/..%2Fapp.py", headers=ui_headers).status_code == 404
    assert ui_client.get("/static/../api.py", headers=ui_headers).status_code == 404
    assert ui_client.get("/static/vendor/chart.js.LICENSE.md", headers=ui_headers).status_code == 200


def test_plugin_import_stays_light():
    """Every Airflow component imports the plugin; only the api-server needs FastAPI for it."""
    import subprocess
    import sys

    code = (
        "import sys; from finops.ui.app import plugin_apps, plugin_external_views; plugin_apps(); "
        "plugin_external_views(); print(sorted(m for m in sys.modules if m.startswith(('fastapi', 'finops.ui'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['finops.ui', 'finops.ui.app', 'finops.ui.prefix']", out  # no FastAPI


def test_plugin_entries_match_airflow_schema():
    from airflow.api_fastapi.core_api.datamodels.plugins import ExternalViewResponse

    from finops.ui.app import plugin_apps, plugin_external_views

    (app,) = plugin_apps()
    assert app["url_prefix"] == "/finops" and app["name"] == "FinOps"
    (view,) = plugin_external_views()
    parsed = ExternalViewResponse.model_validate(view)
    assert parsed.href == "/finops/" and parsed.destination == "nav" and parsed.url_route == "finops"
    routes = {r.path: r.methods for r in app["app"].app.routes if hasattr(r, "methods")}
    # the one write: feedback on an anomaly (tests/ui/test_plan_api.py checks its login and CSRF guards)
    writes = {p: m for p, m in routes.items() if not m <= {"GET", "HEAD"}}
    assert writes == {"/api/anomalies/{anomaly_id}/feedback": {"POST"}}, routes


# -- empty states -------------------------------------------------------------------------------


def test_no_warehouse_yet_every_page_is_an_empty_state(ui_client, ui_headers, finops_home):
    for path in ENDPOINTS[1:11]:
        body = _get(ui_client, path, ui_headers)
        assert body["empty"] is True and body["reason"], path


def test_empty_tables_give_empty_states(ui_client, ui_headers, duckdb_wh):
    duckdb_wh.close()
    for path in ENDPOINTS[1:11]:
        body = _get(ui_client, path, ui_headers)
        assert body["empty"] is True, (path, body)


# -- content (DuckDB) ---------------------------------------------------------------------------


def test_cost_by_provider_matches_seed_with_and_without_rollup(ui_client, ui_headers, seeded):
    wh, facts = seeded
    q = {"dim": "provider", "start": "2025-03-01", "end": "2025-04-01"}
    raw = _get(ui_client, "/api/cost", ui_headers, **q)  # nothing rolled up: read from focus_costs
    assert raw["currency"] == "USD" and raw["currencies"] == ["USD", "EUR"]
    got = {s["name"]: Decimal(s["total"]) for s in raw["series"]}
    assert got == facts.effective_usd_by_provider
    assert len(raw["labels"]) == 31 and raw["labels"][0] == "2025-03-01"
    # roll one source up: the answer must not change (rollup for aws, focus_costs for the rest)
    rollup.refresh_partition(wh, "aws-main", "2025-03")
    assert rollup.stale_partitions(wh) == [("azure-main", "2025-03"), ("gcp-main", "2025-03")]
    assert _get(ui_client, "/api/cost", ui_headers, **q)["series"] == raw["series"]
    assert rollup.refresh_stale(wh) == [("azure-main", "2025-03"), ("gcp-main", "2025-03")]
    assert rollup.stale_partitions(wh) == []
    assert _get(ui_client, "/api/cost", ui_headers, **q)["series"] == raw["series"]
    eur = _get(ui_client, "/api/cost", ui_headers, **q, currency="EUR", view="billed", grain="month")
    assert eur["labels"] == ["2025-03-01"] and eur["series"] == [
        {"name": "Microsoft", "total": "1240.00", "values": [1240.0]}
    ]


def test_rollup_goes_stale_after_a_new_load(seeded):
    wh, _ = seeded
    rollup.refresh_stale(wh)
    wh.execute(
        "UPDATE load_log SET finished_at = finished_at + INTERVAL 1 DAY WHERE source = ?", ["gcp-main"]
    )
    assert rollup.stale_partitions(wh) == [("gcp-main", "2025-03")]


def test_top_n_folds_the_rest_into_other(ui_client, ui_headers, seeded):
    body = _get(
        ui_client, "/api/cost", ui_headers, dim="service", top=2, start="2025-03-01", end="2025-04-01"
    )
    names = [s["name"] for s in body["series"]]
    assert names == ["Amazon EC2", "Compute Engine", "(other)"]
    assert Decimal(body["series"][2]["total"]) == Decimal("465.00") + Decimal("313.10")


def test_cost_by_team_comes_from_showback(ui_client, ui_headers, seeded):
    body = _get(ui_client, "/api/cost", ui_headers, dim="team")
    assert body["start"] <= "2025-03-01" and body["end"] == "2025-04-01"  # default range ends at the data
    assert {s["name"]: s["total"] for s in body["series"]} == {
        "ml-research": "3107.75",
        "ml-platform": "1984.00",
        "unallocated": "930.00",
        "data-eng": "778.10",
    }


def test_cost_range_is_validated(ui_client, ui_headers):
    assert (
        ui_client.get(
            "/api/cost", headers=ui_headers, params={"start": "2025-03-02", "end": "2025-03-01"}
        ).status_code
        == 422
    )
    assert ui_client.get("/api/cost", headers=ui_headers, params={"dim": "x; DROP"}).status_code == 422


def test_cost_range_with_one_bound_is_still_bounded(ui_client, ui_headers, seeded):
    """One bound alone used to skip the range check: end=9999-12-31 answered 61 MB (2.9M labels per
    series), start=1900-01-01 45,746 labels. The missing bound comes from the default range first."""
    for bound in ({"start": "1900-01-01"}, {"end": "9999-12-31"}, {"start": "2025-05-01"}):
        for dim in ("provider", "team"):
            r = ui_client.get("/api/cost", headers=ui_headers, params={"dim": dim, **bound})
            assert r.status_code == 422, (bound, dim, len(r.content))
    body = _get(ui_client, "/api/cost", ui_headers, dim="provider", start="2025-03-01")  # end: the data's end
    assert body["end"] == "2025-04-01" and len(body["labels"]) == 31
    assert {s["name"]: Decimal(s["total"]) for s in body["series"]} == UI_FACTS.effective_usd_by_provider
    body = _get(ui_client, "/api/cost", ui_headers, dim="provider", end="2025-04-01")  # start: 90 days back
    assert body["start"] == "2025-01-01" and len(body["labels"]) == 90


def test_showback_paging_and_drill_down(ui_client, ui_headers, seeded):
    p1 = _get(ui_client, "/api/showback", ui_headers, page_size=3)
    assert p1["period"] == "2025-03" and p1["total"] == 4 and len(p1["items"]) == 3
    assert [i["team"] for i in p1["items"]] == ["ml-research", "ml-platform", "unallocated"]
    p2 = _get(ui_client, "/api/showback", ui_headers, page_size=3, page=2)
    assert [i["team"] for i in p2["items"]] == ["data-eng"]
    assert p1["totals"] == {"USD": "6799.85"}
    res = _get(ui_client, "/api/showback/resources", ui_headers, period="2025-03", team="data-eng")
    # both spellings of the team tag ("team" and "Team") count
    assert [(i["resource_id"], i["cost"]) for i in res["items"]] == [
        ("bq-warehouse", "465.00"),
        ("bucket-data", "313.10"),
    ]
    rollup.refresh_partition(duckdb_wh := seeded[0], "aws-main", "2025-03")  # aws from the rollup, gcp raw
    assert _get(ui_client, "/api/showback/resources", ui_headers, period="2025-03", team="data-eng") == res
    rollup.refresh_stale(duckdb_wh)
    assert _get(ui_client, "/api/showback/resources", ui_headers, period="2025-03", team="data-eng") == res
    bd = _get(ui_client, "/api/showback/team", ui_headers, period="2025-03", team="data-eng")
    assert bd["items"][0]["cost"] == "778.10"


def test_anomalies_with_contributors(ui_client, ui_headers, seeded):
    body = _get(ui_client, "/api/anomalies", ui_headers)
    assert [a["anomaly_id"] for a in body["items"]] == ["an-1", "an-0"]
    top = body["items"][0]
    assert top["contributors"][0] == {
        "key": "i-gpu-001",
        "actual": "800.00",
        "expected": "250.00",
        "delta": "550.00",
        "share": 0.9167,
    }
    assert _get(ui_client, "/api/anomalies", ui_headers, status="closed")["total"] == 1


def test_policy_actions_filters_and_hostile_text_is_data(ui_client, ui_headers, seeded):
    body = _get(ui_client, "/api/policy-actions", ui_headers)
    assert [a["action_id"] for a in body["items"]] == ["pa-2", "pa-1", "pa-0"]
    assert body["items"][1]["reason"] == UI_FACTS.hostile
    assert _get(ui_client, "/api/policy-actions", ui_headers, dry_run="false")["total"] == 1
    injected = _get(ui_client, "/api/policy-actions", ui_headers, policy="x' OR '1'='1")
    assert injected["total"] == 0


def test_tag_compliance_costs_non_compliant_resources(ui_client, ui_headers, seeded):
    rollup.refresh_partition(seeded[0], "aws-main", "2025-03")
    body = _get(ui_client, "/api/tag-compliance", ui_headers)
    assert body["snapshot_date"] == "2025-03-31" and body["billing_period"] == "2025-03"
    assert [i["resource_id"] for i in body["items"]] == ["i-untagged-9", "bucket-data"]
    expected = sum((UI_FACTS.effective_by_resource[r] for r in UI_FACTS.noncompliant), Decimal(0))
    assert Decimal(body["non_compliant_cost"]["USD"]) == expected
    (group,) = body["summary"]
    assert group["resources"] == 3 and group["non_compliant"] == 2
    assert body["items"][0]["missing_tags"] == ["team", "cost_centre"]


def test_gpu_price_performance_and_cheapest(ui_client, ui_headers, seeded):
    body = _get(ui_client, "/api/gpu/price-performance", ui_headers)
    rows = {(r["instance_type"], r["pricing_model"]): r for r in body["items"]}
    assert body["dtypes"] == ["bf16", "fp32"]
    p4d = rows[("p4d.24xlarge", "ondemand")]
    assert p4d["usd_per_tflop_hour"]["bf16"] == pytest.approx(32.7726 / (250 * 8))
    assert p4d["amp_saving"]["amp_bf16"] == pytest.approx(1 - 16 / 40)
    assert rows[("g5.xlarge", "spot")]["spot_saving"] == pytest.approx(1 - 0.4 / 1.006)
    ranked = _get(
        ui_client,
        "/api/gpu/cheapest",
        ui_headers,
        steps=1_000_000,
        precision="fp32",
        spot_interruption_rate_per_h=0,
    )
    costs = [i["expected_cost"] for i in ranked["items"]]
    assert costs == sorted(costs) and len(costs) == 4
    # no interruptions: cost = steps x step_s / 3600 / gpus x price
    best = ranked["items"][0]
    assert best["instance_type"] == "g5.xlarge" and best["pricing_model"] == "spot"
    assert best["expected_cost"] == pytest.approx(1_000_000 * 0.090 / 3600 * 0.4, rel=1e-3)
    assert ranked["items"][1]["expected_cost"] == pytest.approx(1_000_000 * 0.040 / 3600 / 8 * 9.83, rel=1e-3)
    assert ui_client.get("/api/gpu/cheapest", headers=ui_headers, params={"steps": 0}).status_code == 422


def test_cheapest_ranks_one_currency_only(ui_client, ui_headers, seeded):
    """A EUR price (prices.azure.currency: EUR) was ranked among USD ones as if it were USD, with no
    currency in the answer: 30 EUR/h came out cheaper than 32.77 USD/h and showed as "$30.00"."""
    from datetime import datetime

    wh, _ = seeded
    m = datetime(2025, 3, 30, 12)
    wh.execute(
        "INSERT INTO gpu_benchmarks (bench_run_id, provider, region, instance_type, pricing_model, "
        "gpu_model, gpu_count, metric, dtype, value, unit, section, details, measured_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            "b-az",
            "azure",
            "westeurope",
            "Standard_ND96amsr_A100_v4",
            "ondemand",
            "A100",
            8,
            "train_step_time",
            "amp_bf16",
            16.0,
            "ms",
            "train_step_time",
            "{}",
            m,
        ],
    )
    wh.execute(
        "INSERT INTO ondemand_prices (provider, region, zone, instance_type, os, price_per_hour, currency, "
        "observed_at, source, fetched_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        ["azure", "westeurope", "", "Standard_ND96amsr_A100_v4", "linux", Decimal("30.00"), "EUR", m, "t", m],
    )
    usd = _get(ui_client, "/api/gpu/cheapest", ui_headers)
    assert usd["currency"] == "USD" and usd["currencies"] == ["EUR", "USD"]
    assert {i["provider"] for i in usd["items"]} == {"aws"} and len(usd["items"]) == 4
    assert {i["currency"] for i in usd["items"]} == {"USD"}
    eur = _get(ui_client, "/api/gpu/cheapest", ui_headers, currency="EUR")
    assert [(i["instance_type"], i["price_per_hour"], i["currency"]) for i in eur["items"]] == [
        ("Standard_ND96amsr_A100_v4", 30.0, "EUR")
    ]
    none = _get(ui_client, "/api/gpu/cheapest", ui_headers, currency="GBP")
    assert none["empty"] is True and "EUR, USD" in none["reason"]
    assert (
        ui_client.get("/api/gpu/cheapest", headers=ui_headers, params={"currency": "usd'--"}).status_code
        == 422
    )


def test_locked_warehouse_answers_503(ui_client, ui_headers, duckdb_wh, monkeypatch):
    """A writer process holding the DuckDB file -> 503 after a short wait, not a hang or a 500."""
    import subprocess
    import sys

    path = duckdb_wh.path
    duckdb_wh.close()
    code = "import duckdb, sys; c = duckdb.connect(sys.argv[1]); print('ready', flush=True); sys.stdin.read()"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout.readline().strip() == "ready"
        monkeypatch.setenv("FINOPS_UI_LOCK_TIMEOUT_S", "0.3")
        r = ui_client.get("/api/showback", headers=ui_headers)
        assert r.status_code == 503 and "warehouse unavailable" in r.json()["detail"]
    finally:
        proc.stdin.close()
        proc.wait(30)


# -- PostgreSQL ---------------------------------------------------------------------------------


@pytest.mark.postgres
def test_postgres_warehouse_through_config(ui_client, ui_headers, pg_wh, pg_conn_id, tmp_path, monkeypatch):
    """The same pages on PostgreSQL, opened the way the api-server does (config -> conn_id)."""
    ui_seed(pg_wh)
    cfg = tmp_path / "finops.yaml"
    cfg.write_text(json.dumps({"warehouse": {"conn_id": pg_conn_id.conn_id, "schema": pg_wh.schema}}))
    monkeypatch.setenv("FINOPS_CONFIG", str(cfg))
    q = {"dim": "provider", "start": "2025-03-01", "end": "2025-04-01"}
    raw = _get(ui_client, "/api/cost", ui_headers, **q)
    assert {s["name"]: Decimal(s["total"]) for s in raw["series"]} == UI_FACTS.effective_usd_by_provider
    rollup.refresh_partition(pg_wh, "aws-main", "2025-03")
    assert _get(ui_client, "/api/cost", ui_headers, **q)["series"] == raw["series"]
    assert _get(ui_client, "/api/cost", ui_headers, **q, grain="month")["labels"] == ["2025-03-01"]
    res = _get(ui_client, "/api/showback/resources", ui_headers, period="2025-03", team="data-eng")
    assert [i["resource_id"] for i in res["items"]] == ["bq-warehouse", "bucket-data"]
    tags = _get(ui_client, "/api/tag-compliance", ui_headers)
    assert Decimal(tags["non_compliant_cost"]["USD"]) == sum(
        (UI_FACTS.effective_by_resource[r] for r in UI_FACTS.noncompliant), Decimal(0)
    )
    assert _get(ui_client, "/api/anomalies", ui_headers)["items"][0]["contributors"][0]["key"] == "i-gpu-001"
    assert _get(ui_client, "/api/policy-actions", ui_headers, dry_run="true")["total"] == 2
    assert _get(ui_client, "/api/showback", ui_headers)["totals"] == {"USD": "6799.85"}
    assert len(_get(ui_client, "/api/gpu/price-performance", ui_headers)["items"]) == 4
    assert _get(ui_client, "/api/gpu/cheapest", ui_headers)["items"][0]["feasible"] is True
    assert _get(ui_client, "/api/overview", ui_headers)["dialect"] == "postgres"
