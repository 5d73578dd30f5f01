"""The GX dialect hands GX a DuckDB connection we hold: GX then sees that connection's temp
views and the uncommitted rows of its open transaction, and never closes it."""

from __future__ import annotations

import duckdb
import pytest
import sqlalchemy as sa

import finops.quality.gx_duckdb as gd
from finops.quality.gx_run import run_suite
from finops.quality.rules import Rule


def test_engine_borrows_the_connection_and_sees_its_transaction():
    con = duckdb.connect()
    con.execute("CREATE TABLE t (x INTEGER)")
    con.execute("BEGIN")
    con.execute("INSERT INTO t VALUES (1), (2), (NULL)")
    con.execute("CREATE TEMP VIEW v AS SELECT * FROM t")
    with gd.shared(con) as kwargs:
        engine = sa.create_engine(f"{gd.SCHEME}:///:memory:", **kwargs)
        with engine.connect() as c:
            assert c.execute(sa.text("SELECT count(*), count(x) FROM v")).fetchone() == (3, 2)
        engine.dispose()  # closes pooled connections: ours must survive
    assert con.execute("SELECT count(*) FROM t").fetchone() == (3,)  # still open, still in the transaction
    con.execute("ROLLBACK")
    assert con.execute("SELECT count(*) FROM t").fetchone() == (0,)
    con.close()


def test_gx_failure_inside_a_transaction_does_not_abort_it():
    """duckdb-engine's inherited reflection query fails on DuckDB; inside a transaction that
    used to abort it and turn every rule into 'could not be checked'."""
    con = duckdb.connect()
    con.execute("CREATE TABLE t (billed_cost DECIMAL(38,10))")
    con.execute("BEGIN")
    con.execute("INSERT INTO t VALUES (1), (NULL)")
    rule = Rule(
        "billed_cost", "not_null", "not_null", "null values in a not-null column", needs=("billed_cost",)
    )
    _result, failed, _docs = run_suite(con, "t", [rule])
    assert [(r.key, e["result"]["unexpected_count"]) for r, e in failed] == [("billed_cost:not_null", 1)]
    assert con.execute("SELECT count(*) FROM t").fetchone() == (2,)  # transaction alive
    con.execute("ROLLBACK")
    con.close()


def test_token_is_forgotten_after_use():
    con = duckdb.connect()
    with gd.shared(con) as kwargs:
        token = kwargs["connect_args"][gd.SHARED_ARG]
    engine = sa.create_engine(f"{gd.SCHEME}:///:memory:", connect_args={gd.SHARED_ARG: token})
    with pytest.raises(RuntimeError, match="no longer registered"):
        engine.connect()
    con.close()
