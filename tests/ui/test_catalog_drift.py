"""The FinOps view lists GPU types a spec API names that the catalog cannot classify."""

from __future__ import annotations

from finops.prices.records import CatalogEntry
from finops.prices.store import upsert_catalog


def test_drift_lists_unknown_gpu_types_only(ui_client, ui_headers, duckdb_wh):
    upsert_catalog(
        duckdb_wh,
        [
            CatalogEntry(
                "azure",
                "Standard_ND128isr_B300_v7",
                None,
                8,
                None,
                128,
                2048.0,
                source="api",
                gpu_name="NVIDIA B300 <b>",
            ),
            CatalogEntry("aws", "p5.48xlarge", "H100", 8, 80.0, 192, 2048.0, source="api"),
            CatalogEntry("gcp", "a2-highgpu-1g", "A100", 1, 40.0, 12, 85.0, source="static"),
        ],
    )
    r = ui_client.get("/api/gpu/catalog-drift", headers=ui_headers)
    assert r.status_code == 200, r.text
    items = r.json()["items"]
    assert [(i["provider"], i["instance_type"], i["gpu_name"], i["gpu_count"]) for i in items] == [
        ("azure", "Standard_ND128isr_B300_v7", "NVIDIA B300 <b>", 8)
    ]


def test_drift_refuses_without_login(ui_client):
    assert ui_client.get("/api/gpu/catalog-drift", headers={"Accept": "application/json"}).status_code == 401


def test_drift_before_any_catalog_is_empty_with_a_reason(ui_client, ui_headers, duckdb_wh):
    body = ui_client.get("/api/gpu/catalog-drift", headers=ui_headers).json()
    assert body.get("items", []) == []
