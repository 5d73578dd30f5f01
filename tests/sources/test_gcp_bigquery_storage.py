"""Which transport the BigQuery extract reads results with: the Storage Read API client, built
from the connection's own credentials, for real BigQuery; REST (no client) for an emulator."""

from __future__ import annotations

import json

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


def test_an_emulator_connection_reads_over_rest(gcp_conn):
    assert gcp_bigquery.bqstorage_client(gcp_conn) is None
