"""The project on Airflow's distributed executor, for real: PostgreSQL metadata DB, Redis broker,
and `airflow api-server`, `scheduler`, `dag-processor`, `triggerer` and `celery worker` as
separate processes on loopback; CUR 2.0 exports in a moto server S3, price APIs on local HTTP
emulators, the warehouse in a PostgreSQL schema. Everything goes through the REST API.

1. finops_billing_aws (two sources, mapped per source x period) and finops_prices run at once,
   then finops_showback: warehouse totals equal the generator's to the cent, every billed cent
   is allocated to a team, price rows are what the emulators served.
2. A restated delivery is loaded while the test holds a lock that stops `load_partition` in the
   middle of its replace transaction (old rows deleted, new rows copied, load_log insert
   waiting). The Celery worker is SIGKILLed there; nothing of the half-done load is visible;
   the scheduler notices the missing heartbeat, a NEW worker runs the retry, and the partition
   ends exactly at the restated totals with one load id: no duplicated or missing cost.
"""

from __future__ import annotations

import json
from decimal import Decimal
from urllib.parse import urlsplit

import psycopg
import pytest
import yaml

from tests.integration import procs

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.timeout(900)]

PERIOD = "2026-10"
SOURCES = {"main-payer": "exports/main-payer", "second-payer": "exports/second-payer"}
CENT = Decimal("0.01")
# What the price emulators serve, as tests/prices/test_dag.py counts it under dag.test().
PRICES_SPOT = [("azure", 6), ("gcp", 26)]
PRICES_ONDEMAND = [("azure", 6), ("gcp", 38), ("lambda", 6)]


@pytest.fixture
def ct_finops_config(
    tmp_path,
    pg_conn_id,
    awsb_bucket,
    prices_azure,
    prices_gcp,
    prices_lambda,
    prices_lambda_conn,
    monkeypatch,
):
    """finops.yaml for the deployment: two AWS sources in moto, price emulators, PG warehouse."""
    g = urlsplit(prices_gcp.base)
    monkeypatch.setenv(
        "AIRFLOW_CONN_FINOPS_GCP_PRICES",
        json.dumps({"conn_type": "http", "host": g.hostname, "port": g.port, "schema": "http"}),
    )
    cfg = {
        "warehouse": {"conn_id": pg_conn_id.conn_id, "schema": pg_conn_id.schema},
        "sources": {
            "aws": [
                {
                    "name": n,
                    "conn_id": "aws_default",
                    "bucket": awsb_bucket.name,
                    "prefix": p,
                    "format": "cur2",
                }
                for n, p in SOURCES.items()
            ]
        },
        "prices": {
            "aws": {"enabled": False},  # moto's spot history is a one-price stub: covered by Stubber tests
            "azure": {"base_url": prices_azure.base + "/api/retail/prices", "regions": ["eastus", "westus2"]},
            "gcp": {"conn_id": "finops_gcp_prices", "regions": ["us-central1", "us-east4"]},
            "lambda": {"conn_id": prices_lambda_conn},
            "http": {"backoff_base_s": 0.01},
        },
    }
    path = tmp_path / "finops.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _partition(wh_conn, source: str) -> tuple[int, Decimal, list[str]]:
    """Rows, BilledCost and the distinct load ids of one (source, PERIOD) partition."""
    n, billed = wh_conn.execute(
        "SELECT count(*), coalesce(sum(billed_cost), 0) FROM focus_costs WHERE x_source = %s AND x_billing_period = %s",
        [source, PERIOD],
    ).fetchone()
    ids = [
        r[0]
        for r in wh_conn.execute(
            "SELECT DISTINCT x_load_id FROM focus_costs WHERE x_source = %s AND x_billing_period = %s",
            [source, PERIOD],
        ).fetchall()
    ]
    return n, Decimal(billed).quantize(CENT), ids


def _check_partition(wh_conn, source: str, delivery) -> tuple[int, Decimal, list[str]]:
    """The partition holds exactly one load of `delivery`: BilledCost equals the generator's
    invoice total to the cent, one load id (the latest `loaded` one), and as many rows as that
    load wrote (a duplicated or a missing batch would break one of the three)."""
    n, billed, ids = got = _partition(wh_conn, source)
    assert billed == delivery.totals.billed_total.quantize(CENT), (source, billed)
    latest, rows = wh_conn.execute(
        "SELECT load_id, row_count FROM load_log WHERE source = %s AND billing_period = %s AND status = 'loaded' "
        "ORDER BY finished_at DESC LIMIT 1",
        [source, PERIOD],
    ).fetchone()
    assert ids == [latest], (source, ids, latest)
    assert n == rows >= delivery.totals.rows, (source, n, rows)  # FOCUS splits some fee lines in two
    return got


def _load_tis(topo, run_id: str) -> list[dict]:
    return [t for t in topo.task_instances("finops_billing_aws", run_id) if t["task_id"] == "load_partition"]


def test_dags_on_celery_and_a_killed_worker_loses_no_cost(
    ct_topology, ct_finops_config, pg_conn_id, awsb_deliver, request
):
    from finops.demo.cur_generator import GenSpec
    from finops.warehouse.postgres_wh import PostgresWarehouse

    # The warehouse schema exists before the deployment starts (as a DBA would do it).
    PostgresWarehouse.from_dsn(pg_conn_id.dsn, schema=pg_conn_id.schema).migrate()
    deliveries = {
        name: awsb_deliver(GenSpec(period=PERIOD, rows=2000, seed=7 + i), prefix=prefix)
        for i, (name, prefix) in enumerate(SOURCES.items())
    }

    topo = ct_topology({"FINOPS_CONFIG": str(ct_finops_config)})
    topo.wait_worker_ready(topo.workers[0])
    for dag_id in ("finops_billing_aws", "finops_prices", "finops_showback"):
        topo.wait_dag(dag_id)
    topo.unpause("finops_billing_aws")
    topo.unpause("finops_prices")

    # ---- 1. billing + prices at once, then showback, all through the REST API
    billing_run = topo.trigger("finops_billing_aws", {"billing_period": PERIOD, "source": "all"})
    prices_run = topo.trigger("finops_prices", {"provider": "all"})
    assert topo.wait_run("finops_billing_aws", billing_run, timeout=300) == "success"
    loads = _load_tis(topo, billing_run)
    assert sorted(t["rendered_map_index"] for t in loads) == sorted(f"{s} {PERIOD}" for s in SOURCES)
    assert all(t["state"] == "success" for t in loads)

    wh = psycopg.connect(pg_conn_id.dsn, autocommit=True)
    request.addfinalizer(wh.close)
    wh.execute("SELECT set_config('search_path', %s, false)", [pg_conn_id.schema])
    first = {name: _check_partition(wh, name, d) for name, d in deliveries.items()}

    topo.unpause("finops_showback")
    showback_run = topo.trigger("finops_showback", {"billing_period": PERIOD})
    assert topo.wait_run("finops_prices", prices_run, timeout=240) == "success"
    assert topo.wait_run("finops_showback", showback_run, timeout=240) == "success"

    for table, expected in (("spot_prices", PRICES_SPOT), ("ondemand_prices", PRICES_ONDEMAND)):
        got = wh.execute(f"SELECT provider, count(*) FROM {table} GROUP BY 1 ORDER BY 1").fetchall()  # noqa: S608
        assert got == expected, table
    allocated = wh.execute(
        "SELECT coalesce(sum(total_cost), 0) FROM chargeback_monthly WHERE billing_period = %s AND cost_view = 'billed'",
        [PERIOD],
    ).fetchone()[0]
    assert Decimal(allocated).quantize(CENT) == sum(
        d.totals.billed_total for d in deliveries.values()
    ).quantize(CENT)

    # ---- 2. kill the worker in the middle of a restatement load of main-payer
    before = first["main-payer"]
    restated = awsb_deliver(
        GenSpec(period=PERIOD, rows=1700, seed=7, restatement=1), prefix=SOURCES["main-payer"]
    )
    assert restated.totals.billed_total.quantize(CENT) != before[1]
    gate = psycopg.connect(
        pg_conn_id.dsn
    )  # a transaction holding SHARE on load_log: reads pass, inserts wait
    try:
        gate.execute(f'LOCK TABLE "{pg_conn_id.schema}".load_log IN SHARE MODE')
        kill_run = topo.trigger("finops_billing_aws", {"billing_period": PERIOD, "source": "main-payer"})

        def mid_load():
            tis = _load_tis(topo, kill_run)
            if not tis or tis[0]["state"] != "running":
                return None
            rows = wh.execute(
                "SELECT a.pid FROM pg_stat_activity a WHERE a.datname = current_database() "
                "AND a.wait_event_type = 'Lock' AND a.query ILIKE 'INSERT INTO load_log%%' "
                "AND EXISTS (SELECT 1 FROM pg_locks l JOIN pg_class c ON c.oid = l.relation "
                # DELETE + COPY writes focus_costs; the partition swap detaches / attaches its
                # partition (focus_costs or focus_costs_p_*, whichever lock the swap took first)
                "            WHERE l.pid = a.pid AND l.granted AND c.relname LIKE 'focus\\_costs%%' "
                "            AND l.mode IN ('RowExclusiveLock', 'ShareUpdateExclusiveLock', "
                "                           'ShareRowExclusiveLock', 'AccessExclusiveLock'))"
            ).fetchall()
            return (tis[0], rows[0][0]) if rows else None

        ti, orphan_pid = procs.wait_until(
            "load_partition to be running and inside its replace transaction",
            mid_load,
            300,
            interval=1.0,
            on_timeout=topo.diagnostics,
        )
        assert ti["try_number"] == 1
        old_worker = topo.workers[0]
        old_worker.kill()  # SIGKILL to the worker's process group (+ any escaped descendant)
        assert old_worker.survivors() == []
        new_worker = topo.start_worker()  # like a restarted worker pod
    finally:
        gate.rollback()
        gate.close()

    # The killed load's transaction dies with its client: nothing of it is visible, ever.
    procs.wait_until(
        "the killed load's backend to roll back",
        lambda: not wh.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", [orphan_pid]).fetchone(),
        60,
    )
    assert _partition(wh, "main-payer") == before

    topo.wait_worker_ready(new_worker)
    assert topo.wait_run("finops_billing_aws", kill_run, timeout=300) == "success"
    (ti,) = _load_tis(topo, kill_run)
    assert ti["state"] == "success" and ti["try_number"] >= 2, ti  # a retry after the lost heartbeat

    _n, _billed, ids = _check_partition(wh, "main-payer", restated)  # no duplicated or missing cost
    assert ids != before[2]
    loaded = wh.execute(
        "SELECT count(*) FROM load_log WHERE source = 'main-payer' AND billing_period = %s AND load_id = %s "
        "AND status = 'loaded'",
        [PERIOD, ids[0]],
    ).fetchone()[0]
    assert loaded == 1  # the killed attempt left no load_log row behind
    assert _partition(wh, "second-payer") == first["second-payer"]  # untouched
    # the fixtures stop every service, drop the metadata DB and the warehouse schema
