"""The FinOps view lists quarantined loads with a link to their Data Docs, and the link opens the
docs through the view's login, sandboxed; the quarantined billing files stay unreachable."""

from __future__ import annotations

from finops.paths import subdir
from finops.warehouse.base import LoadLogEntry


def _quarantined(wh, load_id: str, with_docs: bool) -> None:
    folder = subdir("quarantine") / "aws-main" / "2025-03" / load_id
    (folder / "data_docs").mkdir(parents=True)
    (folder / "cur.csv.gz").write_bytes(b"billing rows")
    if with_docs:
        (folder / "data_docs" / "index.html").write_text("<html>docs of " + load_id + "</html>")
    wh.append_log(
        LoadLogEntry(
            load_id=load_id,
            source="aws-main",
            provider="aws",
            billing_period="2025-03",
            status="quarantined",
            quarantine_path=str(folder),
            quarantine_summary={
                "cause": "validation",
                "headline": "A FOCUS rule failed",
                "column": "charge_category",
                "rule": "allowed_values",
            },
        )
    )


def test_quarantined_loads_link_to_their_data_docs(ui_client, ui_headers, duckdb_wh):
    _quarantined(duckdb_wh, "L-docs", with_docs=True)
    _quarantined(duckdb_wh, "L-nodocs", with_docs=False)
    r = ui_client.get("/api/quarantines", headers=ui_headers)
    assert r.status_code == 200, r.text
    items = {i["load_id"]: i for i in r.json()["items"]}
    assert set(items) == {"L-docs", "L-nodocs"}
    docs = items["L-docs"]
    assert docs["data_docs"] == "quarantine-docs/aws-main/2025-03/L-docs/data_docs/index.html"
    assert (docs["headline"], docs["column"], docs["rule"]) == (
        "A FOCUS rule failed",
        "charge_category",
        "allowed_values",
    )
    assert items["L-nodocs"]["data_docs"] is None
    page = ui_client.get("/" + docs["data_docs"], headers=ui_headers)
    assert page.status_code == 200 and "docs of L-docs" in page.text
    assert page.headers["content-security-policy"].startswith("sandbox")
    assert ui_client.get("/" + docs["data_docs"]).status_code in (302, 303, 401, 403)  # the view's login
    raw = "/quarantine-docs/aws-main/2025-03/L-docs/data_docs/../cur.csv.gz"
    assert ui_client.get(raw, headers=ui_headers).status_code == 404
    assert (
        ui_client.get("/quarantine-docs/aws-main/2025-03/L-docs/cur.csv.gz/x", headers=ui_headers).status_code
        == 404
    )


def test_no_loads_yet_is_an_empty_state(ui_client, ui_headers, finops_home):
    r = ui_client.get("/api/quarantines", headers=ui_headers)
    assert r.status_code == 200 and r.json()["items"] == []
