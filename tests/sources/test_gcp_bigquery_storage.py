"""Which transport the BigQuery extract reads results with: the Storage Read API client, built
from the connection's own credentials, for real BigQuery; for an emulator its gRPC port when the
connection names one, else REST (no client)."""

from __future__ import annotations

import json
import os

from finops.sources import gcp_bigquery


def test_real_bigquery_gets_a_read_client_with_the_connections_credentials(monkeypatch, gcp_service_account):
    from google.cloud.bigquery_storage import BigQueryReadClient

    monkeypatch.setenv(
        "AIRFLOW_CONN_GCP_BILLING_REAL",
        json.dumps(
            {
                "conn_type": "google_cloud_platform",
                "extra": {
                    "keyfile_dict": json.dumps(gcp_service_account),
                    "scope": "https://www.googleapis.com/auth/bigquery",
                },
            }
        ),
    )
    client = gcp_bigquery.bqstorage_client("gcp_billing_real")
    assert isinstance(client, BigQueryReadClient)
    creds = client._transport._credentials
    assert creds.service_account_email == gcp_service_account["client_email"]
    assert creds.project_id == "acme-finops"
    assert client._transport._host.startswith("bigquerystorage.googleapis.com")


def test_an_emulator_connection_reads_over_its_grpc_port_or_rest(gcp_conn, monkeypatch):
    from google.cloud.bigquery_storage import BigQueryReadClient

    from finops.demo.emulators import conn_env_var

    client = gcp_bigquery.bqstorage_client(gcp_conn)  # the emulator names its gRPC port
    assert isinstance(client, BigQueryReadClient)
    client.transport.close()
    conn = json.loads(os.environ[conn_env_var(gcp_conn)])
    conn["extra"].pop("storage_api_endpoint")
    monkeypatch.setenv(conn_env_var(gcp_conn), json.dumps(conn))
    assert gcp_bigquery.bqstorage_client(gcp_conn) is None  # REST pages
    conn["extra"]["storage_api_endpoint"] = "127.0.0.1:1"
    conn["extra"].pop("anonymous")  # a plaintext channel only for an anonymous (emulator) connection
    monkeypatch.setenv(conn_env_var(gcp_conn), json.dumps(conn))
    assert gcp_bigquery.bqstorage_client(gcp_conn) is None
