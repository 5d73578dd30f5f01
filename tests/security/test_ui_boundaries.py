"""The FinOps view against a hostile viewer: what a 503 says, broken config, static paths,
HEAD, periods, the login redirect, and any query parameter value (TestClient, real JWTs)."""

from __future__ import annotations

import os
import subprocess
import sys
from urllib.parse import parse_qs, urlsplit

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.fixtures.hostile import hostile_text

API = [
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
]


def test_busy_warehouse_503_names_no_path_interpreter_or_pid(
    ui_client, ui_headers, duckdb_wh, monkeypatch, caplog
):
    path = duckdb_wh.path
    duckdb_wh.close()
    code = "import duckdb, sys; c = duckdb.connect(sys.argv[1]); print('ready', flush=True); sys.stdin.read()"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout.readline().strip() == "ready"
        monkeypatch.setenv("FINOPS_UI_LOCK_TIMEOUT_S", "0.2")
        with caplog.at_level("WARNING", logger="finops.ui"):
            r = ui_client.get("/api/showback", headers=ui_headers)
        assert r.status_code == 503 and "warehouse unavailable" in r.json()["detail"]
        for leak in (str(path), os.path.dirname(str(path)), sys.executable, "python", str(proc.pid), "PID"):
            assert leak not in r.text, leak
        assert str(path) in caplog.text  # the operator still finds the details in the server log
    finally:
        proc.stdin.close()
        proc.wait(30)


@pytest.mark.parametrize("path", API)
def test_broken_config_is_503_on_every_api_route(
    ui_client, ui_headers, finops_home, tmp_path, monkeypatch, path
):
    cfg = tmp_path / "broken-finops.yaml"
    cfg.write_text("warehouse: [unclosed\n")
    monkeypatch.setenv("FINOPS_CONFIG", str(cfg))
    r = ui_client.get(path, headers=ui_headers)
    assert r.status_code == 503, (r.status_code, r.text)
    assert str(cfg) not in r.text and "configuration" in r.json()["detail"]


@pytest.mark.parametrize(
    "path",
    [
        "/static/%00",
        "/static/app.js%00.png",
        "/static/" + "a" * 5000,
        "/static/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
        "/static/vendor/%00/x",
    ],
)
def test_hostile_static_paths_are_404(ui_client, ui_headers, path):
    assert ui_client.get(path, headers=ui_headers).status_code == 404


@pytest.mark.parametrize("path", API + ["/api/me", "/static/app.js", "/"])
def test_head_is_answered_like_get_without_a_body(ui_client, ui_headers, finops_home, path):
    get = ui_client.get(path, headers=ui_headers)
    head = ui_client.head(path, headers=ui_headers)
    assert head.status_code == get.status_code == 200, (head.status_code, head.text)
    assert head.content == b""
    assert head.headers["content-type"] == get.headers["content-type"]
    assert head.headers["x-content-type-options"] == "nosniff"
    assert ui_client.head(path).status_code == 401  # the same login as GET


def test_method_not_allowed_advertises_what_is_answered(ui_client, ui_headers):
    r = ui_client.request("PUT", "/api/showback", headers=ui_headers)
    assert r.status_code == 405
    for method in (m.strip() for m in r.headers["allow"].split(",")):
        assert ui_client.request(method, "/api/overview", headers=ui_headers).status_code != 405, method


@pytest.mark.parametrize(
    "period", ["２０２５-03", "\u0662\u0660\u0662\u0665-03", "2025-\u0660\u0663", "2025-03\n"]
)
def test_unicode_digit_periods_are_refused(ui_client, ui_headers, finops_home, period):
    assert ui_client.get("/api/showback", headers=ui_headers, params={"period": period}).status_code == 422
    r = ui_client.get("/api/showback/team", headers=ui_headers, params={"period": period, "team": "x"})
    assert r.status_code == 422


@pytest.mark.parametrize("url, host", [("/", "evil.example"), ("/?x=1", "evil.example:443")])
def test_login_redirect_next_is_a_relative_path_never_the_host_header(ui_client, url, host):
    r = ui_client.get(url, headers={"Accept": "text/html", "Host": host}, follow_redirects=False)
    assert r.status_code == 303
    (nxt,) = parse_qs(urlsplit(r.headers["location"]).query)["next"]
    assert nxt == url


@given(path=hostile_text(6), query=hostile_text(3))
def test_property_next_path_is_relative_to_this_site(path, query):
    from starlette.requests import Request

    from finops.ui.auth import next_path

    scope = {
        "type": "http",
        "method": "GET",
        "path": path,
        "query_string": query.encode("utf-8", "replace"),
        "headers": [(b"host", b"evil.example")],
        "root_path": "",
    }
    nxt = next_path(Request(scope))
    parts = urlsplit(nxt)
    assert parts.scheme == "" and parts.netloc == ""
    assert nxt.startswith("/") and not nxt.startswith(("//", "/\\"))


_PARAMS = {
    "/api/cost": ["dim", "view", "grain", "start", "end", "currency", "top"],
    "/api/showback": ["period", "view", "page", "page_size"],
    "/api/showback/team": ["period", "team", "view", "page"],
    "/api/anomalies": ["status", "severity", "page_size"],
    "/api/policy-actions": ["policy", "provider", "decision", "result", "dry_run"],
    "/api/gpu/cheapest": ["steps", "precision", "limit", "currency", "scaling_efficiency"],
}


@given(route=st.sampled_from(sorted(_PARAMS)), data=st.data())
def test_property_any_query_value_is_answered_or_refused_never_a_500(
    ui_client, ui_headers, finops_home, route, data
):
    names = data.draw(st.lists(st.sampled_from(_PARAMS[route]), unique=True, max_size=4))
    params = {
        n: data.draw(st.one_of(hostile_text(4), st.integers().map(str), st.just("2025-03"))) for n in names
    }
    params = {k: v.replace("\x00", "") for k, v in params.items()}  # httpx refuses NUL in a URL itself
    r = ui_client.get(route, headers=ui_headers, params=params)
    assert r.status_code in (200, 422), (r.status_code, r.text[:300])
    r.json()
