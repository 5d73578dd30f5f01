"""PostgreSQL-only behaviour: Airflow connection, schema isolation, result types, input checks."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

import pyarrow as pa
import pytest

from finops.warehouse.base import Warehouse, WarehouseError

pytestmark = pytest.mark.postgres


def test_from_conn_id_uses_the_airflow_connection(pg_conn_id):
    from finops.warehouse.postgres_wh import PostgresWarehouse

    wh = PostgresWarehouse.from_conn_id(pg_conn_id.conn_id, schema=pg_conn_id.schema)
    try:
        assert isinstance(wh, Warehouse)
        assert wh.query("SELECT current_schema()") == [(pg_conn_id.schema,)]
        assert wh.migrate()
        assert wh.table_exists("focus_costs")
    finally:
        wh.close()


def test_connect_picks_postgres_from_config(pg_conn_id):
    from finops.config import parse_config
    from finops.warehouse import connect

    cfg = parse_config({"warehouse": {"conn_id": pg_conn_id.conn_id, "schema": pg_conn_id.schema}})
    wh = connect(cfg)
    try:
        assert wh.dialect == "postgres"
        assert wh.query("SELECT count(*) FROM schema_migrations")[0][0] >= 1
    finally:
        wh.close()


def test_schemas_isolate_warehouses(pg_wh, pg_dsn, pg_schema):
    from finops.warehouse.postgres_wh import PostgresWarehouse
    from tests.fixtures.postgres import _drop_schema, new_schema_name

    pg_wh.execute("CREATE TABLE only_here (x INTEGER)")
    other_schema = new_schema_name()
    other = PostgresWarehouse.from_dsn(pg_dsn, schema=other_schema)
    try:
        assert not other.table_exists("only_here")
        assert not other.table_exists("focus_costs")
    finally:
        other.close()
        _drop_schema(pg_dsn, other_schema)


@pytest.mark.parametrize("schema", ["Finops", "a-b", "x; drop", "", "a" * 64])
def test_odd_schema_names_are_refused(pg_dsn, schema):
    import psycopg

    from finops.warehouse.postgres_wh import PostgresWarehouse

    conn = psycopg.connect(pg_dsn)
    try:
        with pytest.raises(WarehouseError, match="schema"):
            PostgresWarehouse(conn, schema=schema)
    finally:
        conn.close()


def test_query_arrow_types_match_duckdb_shapes(pg_wh):
    t = pg_wh.query_arrow(
        "SELECT CAST(? AS NUMERIC(38,10)) AS money, CAST(? AS NUMERIC) AS free_num, CAST(? AS BIGINT) AS n, "
        "CAST(? AS TIMESTAMP) AS ts, CAST(? AS JSONB) AS j, CAST(? AS TEXT) AS s, CAST(? AS BOOLEAN) AS b, "
        "CAST(NULL AS NUMERIC(38,10)) AS nothing, gen_random_uuid() AS u",
        [
            Decimal("1.5"),
            Decimal("12345678901234567890.123456789012"),
            7,
            datetime(2024, 1, 2, 3, 4, 5, 6),
            '{"team": "ml"}',
            "x",
            True,
        ],
    )
    assert t.schema.field("money").type == pa.decimal128(38, 10)
    assert pa.types.is_decimal(t.schema.field("free_num").type)
    assert t.column("free_num")[0].as_py() == Decimal("12345678901234567890.123456789012")
    assert t.schema.field("n").type == pa.int64()
    assert t.schema.field("ts").type == pa.timestamp("us")
    assert t.column("ts")[0].as_py() == datetime(2024, 1, 2, 3, 4, 5, 6)
    assert t.schema.field("j").type == pa.string() and t.column("j")[0].as_py() == '{"team": "ml"}'
    assert t.schema.field("b").type == pa.bool_()
    assert t.column("nothing")[0].as_py() is None
    assert len(t.column("u")[0].as_py()) == 36
    empty = pg_wh.query_arrow("SELECT billed_cost FROM focus_costs WHERE false")
    assert empty.num_rows == 0 and empty.schema.field("billed_cost").type == pa.decimal128(38, 10)


def test_dict_parameters_bind_as_json_and_placeholder_count_is_checked(pg_wh):
    assert pg_wh.query("SELECT CAST(? AS JSONB) ->> 'team'", [{"team": "o'neil"}]) == [("o'neil",)]
    with pytest.raises(WarehouseError, match="placeholder"):
        pg_wh.query("SELECT ?, ?", [1])


def test_query_arrow_streams_many_rows(pg_wh):
    from finops.warehouse import postgres_wh

    n = postgres_wh.FETCH_ROWS * 2 + 17  # several fetch chunks
    t = pg_wh.query_arrow(
        "SELECT g AS i, CAST(g AS NUMERIC(38,10)) / 3 AS third FROM generate_series(1, ?) g", [n]
    )
    assert t.num_rows == n
    assert t.column("i").to_pylist()[-1] == n


def test_existing_schema_is_used_by_a_role_that_cannot_create_schemas(pg_dsn, pg_schema):
    """Production setups pre-create the schema; the warehouse must not need CREATE on the database."""
    import psycopg

    from finops.warehouse.postgres_wh import PostgresWarehouse

    role = f"r_{pg_schema}"
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        admin.execute(f'CREATE ROLE "{role}" LOGIN')
        admin.execute(f'CREATE SCHEMA "{pg_schema}" AUTHORIZATION "{role}"')
    try:
        conn = psycopg.connect(pg_dsn + f" user={role}")
        wh = PostgresWarehouse(conn, schema=pg_schema)
        assert wh.migrate()
        assert wh.table_exists("focus_costs")
        # The role really lacks CREATE on the database (PostgreSQL's default for non-owners).
        assert wh.query("SELECT has_database_privilege(current_user, current_database(), 'CREATE')") == [
            (False,)
        ]
        wh.close()
    finally:
        with psycopg.connect(pg_dsn, autocommit=True) as admin:
            admin.execute(f'DROP SCHEMA IF EXISTS "{pg_schema}" CASCADE')
            admin.execute(f'DROP ROLE IF EXISTS "{role}"')
