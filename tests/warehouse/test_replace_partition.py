"""replace_partition on both engines: replaces only its partition, atomically, with load_log."""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from finops.warehouse.base import LoadLogEntry, WarehouseError
from tests.fixtures.focus_rows import focus_row, focus_table, write_focus


def _load(wh, tmp_path, source, period, n, tag="v1", cost="1.25"):
    rows = [focus_row(source, period, i, billed_cost=Decimal(cost), x_load_id=f"{tag}") for i in range(n)]
    f = write_focus(tmp_path / f"{source}-{period}-{tag}.parquet", rows)
    entry = LoadLogEntry(
        load_id=tag, source=source, provider="aws", billing_period=period, status="loaded", files=[f.name]
    )
    got = wh.replace_partition("focus_costs", {"x_source": source, "x_billing_period": period}, [f], entry)
    assert got == n
    return entry


def _counts(wh) -> dict[tuple[str, str], tuple[int, str]]:
    rows = wh.query(
        "SELECT x_source, x_billing_period, count(*), min(x_load_id) FROM focus_costs GROUP BY 1, 2 ORDER BY 1, 2"
    )
    return {(r[0], r[1]): (r[2], r[3]) for r in rows}


def _log(wh) -> list[tuple]:
    return wh.query(
        "SELECT load_id, source, billing_period, status, row_count FROM load_log ORDER BY load_id"
    )


@pytest.fixture
def loaded(any_wh, tmp_path):
    _load(any_wh, tmp_path, "a", "2024-01", 3, "a1")
    _load(any_wh, tmp_path, "a", "2024-02", 2, "a2")
    _load(any_wh, tmp_path, "b", "2024-01", 4, "b1")
    return any_wh


def test_replace_touches_only_its_partition(loaded, tmp_path):
    entry = _load(loaded, tmp_path, "a", "2024-01", 5, "a1-restated")
    assert entry.row_count == 5
    assert _counts(loaded) == {
        ("a", "2024-01"): (5, "a1-restated"),
        ("a", "2024-02"): (2, "a2"),
        ("b", "2024-01"): (4, "b1"),
    }
    assert _log(loaded) == [
        ("a1", "a", "2024-01", "loaded", 3),
        ("a1-restated", "a", "2024-01", "loaded", 5),
        ("a2", "a", "2024-02", "loaded", 2),
        ("b1", "b", "2024-01", "loaded", 4),
    ]
    # Re-running the same delivery is idempotent.
    _load(loaded, tmp_path, "a", "2024-01", 5, "a1-restated")
    assert _counts(loaded)[("a", "2024-01")] == (5, "a1-restated")


def test_several_files_and_empty_replace(loaded, tmp_path):
    f1 = write_focus(tmp_path / "p1.parquet", [focus_row("a", "2024-02", i) for i in range(3)])
    f2 = write_focus(tmp_path / "p2.parquet", [focus_row("a", "2024-02", i) for i in range(3, 10)])
    part = {"x_source": "a", "x_billing_period": "2024-02"}
    assert loaded.replace_partition("focus_costs", part, [f1, f2]) == 10
    assert _counts(loaded)[("a", "2024-02")][0] == 10
    # No files: the partition is emptied (a delivery that legitimately has no rows).
    entry = LoadLogEntry("empty", "a", "aws", "2024-02", "empty")
    assert loaded.replace_partition("focus_costs", part, [], entry) == 0
    assert ("a", "2024-02") not in _counts(loaded)
    assert ("empty", "a", "2024-02", "empty", 0) in _log(loaded)


def _assert_untouched(wh, before_counts, before_log):
    assert _counts(wh) == before_counts
    assert _log(wh) == before_log


def test_corrupt_second_file_rolls_back(loaded, tmp_path):
    before, before_log = _counts(loaded), _log(loaded)
    good = write_focus(tmp_path / "good.parquet", [focus_row("a", "2024-01", i) for i in range(50)])
    bad = tmp_path / "bad.parquet"
    data = (tmp_path / "a-2024-01-a1.parquet").read_bytes()
    bad.write_bytes(data[: len(data) // 2])  # truncated parquet: footer gone
    entry = LoadLogEntry("broken", "a", "aws", "2024-01", "loaded")
    with pytest.raises(Exception):  # noqa: B017 - engines word it differently; state is what matters
        loaded.replace_partition(
            "focus_costs", {"x_source": "a", "x_billing_period": "2024-01"}, [good, bad], entry
        )
    _assert_untouched(loaded, before, before_log)


def test_type_mismatch_rolls_back(loaded, tmp_path):
    before, before_log = _counts(loaded), _log(loaded)
    t = focus_table([focus_row("a", "2024-01", i) for i in range(3)])
    t = t.set_column(t.schema.get_field_index("billed_cost"), "billed_cost", pa.array(["1.0", "abc", "2"]))
    f = tmp_path / "mismatch.parquet"
    pq.write_table(t, f)
    with pytest.raises(Exception):  # noqa: B017
        loaded.replace_partition(
            "focus_costs",
            {"x_source": "a", "x_billing_period": "2024-01"},
            [f],
            LoadLogEntry("x", "a", "aws", "2024-01", "loaded"),
        )
    _assert_untouched(loaded, before, before_log)


def test_null_in_not_null_column_rolls_back(loaded, tmp_path):
    before, before_log = _counts(loaded), _log(loaded)
    t = focus_table([focus_row("a", "2024-01", i) for i in range(3)])
    schema = t.schema.set(
        t.schema.get_field_index("billing_currency"), pa.field("billing_currency", pa.string())
    )
    t = t.cast(schema)
    t = t.set_column(
        t.schema.get_field_index("billing_currency"), "billing_currency", pa.array(["USD", None, "USD"])
    )
    f = tmp_path / "nulls.parquet"
    pq.write_table(t, f)
    with pytest.raises(Exception):  # noqa: B017
        loaded.replace_partition("focus_costs", {"x_source": "a", "x_billing_period": "2024-01"}, [f])
    _assert_untouched(loaded, before, before_log)


def test_unknown_column_is_refused(loaded, tmp_path):
    before, before_log = _counts(loaded), _log(loaded)
    t = focus_table([focus_row("a", "2024-01")]).append_column("surprise", pa.array(["x"]))
    f = tmp_path / "extra.parquet"
    pq.write_table(t, f)
    with pytest.raises(Exception, match="surprise"):
        loaded.replace_partition("focus_costs", {"x_source": "a", "x_billing_period": "2024-01"}, [f])
    _assert_untouched(loaded, before, before_log)


def test_missing_file_rolls_back(loaded, tmp_path):
    before, before_log = _counts(loaded), _log(loaded)
    with pytest.raises(Exception):  # noqa: B017
        loaded.replace_partition(
            "focus_costs", {"x_source": "b", "x_billing_period": "2024-01"}, [tmp_path / "nope.parquet"]
        )
    _assert_untouched(loaded, before, before_log)


@pytest.mark.postgres
def test_postgres_refuses_nul_characters_and_keeps_old_data(pg_wh, tmp_path):
    _load(pg_wh, tmp_path, "a", "2024-01", 2, "a1")
    f = write_focus(tmp_path / "nul.parquet", [focus_row("a", "2024-01", charge_description="bad\x00byte")])
    with pytest.raises(WarehouseError, match="charge_description.*NUL"):
        pg_wh.replace_partition("focus_costs", {"x_source": "a", "x_billing_period": "2024-01"}, [f])
    assert _counts(pg_wh) == {("a", "2024-01"): (2, "a1")}


@pytest.mark.postgres
def test_postgres_concurrent_replace_of_one_partition_never_duplicates(pg_dsn, pg_wh, tmp_path):
    """Two loaders racing on the same partition: the advisory lock serialises them."""

    from finops.warehouse.postgres_wh import PostgresWarehouse

    _replace_at_once(tmp_path, 300, lambda: PostgresWarehouse.from_dsn(pg_dsn, schema=pg_wh.schema))
    assert pg_wh.query("SELECT count(*) FROM focus_costs")[0][0] == 300


def _replace_at_once(tmp_path, rows: int, open_wh) -> None:
    """Four threads, each with its own warehouse connection, replace one partition at the same moment."""
    import threading

    files = [
        write_focus(tmp_path / f"r{k}.parquet", [focus_row("a", "2024-03", i) for i in range(rows)])
        for k in range(4)
    ]
    errors: list[BaseException] = []
    barrier = threading.Barrier(4)

    def worker(f) -> None:
        try:
            wh = open_wh()
            try:
                barrier.wait()
                wh.replace_partition("focus_costs", {"x_source": "a", "x_billing_period": "2024-03"}, [f])
            finally:
                wh.close()
        except BaseException as e:  # noqa: BLE001 - reported by the assert below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(f,)) for f in files]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors


def test_duckdb_concurrent_replace_of_one_partition_never_duplicates(duckdb_wh, tmp_path):
    """Threads of one process share the DuckDB file, whose MVCC sees no conflict between two
    transactions that each delete nothing and insert: a new month was loaded twice (doubled)."""

    from finops.paths import warehouse_path
    from finops.warehouse.duckdb_wh import DuckDBWarehouse

    _replace_at_once(tmp_path, 3000, lambda: DuckDBWarehouse(warehouse_path()))
    assert duckdb_wh.query("SELECT count(*) FROM focus_costs")[0][0] == 3000


def test_files_may_differ_in_optional_columns(any_wh, tmp_path):
    full = write_focus(tmp_path / "full.parquet", [focus_row("c", "2024-06", i) for i in range(2)])
    slim_t = focus_table([focus_row("c", "2024-06", 9)]).drop_columns(["resource_id", "tags"])
    slim = tmp_path / "slim.parquet"
    pq.write_table(slim_t, slim)
    n = any_wh.replace_partition(
        "focus_costs", {"x_source": "c", "x_billing_period": "2024-06"}, [full, slim]
    )
    assert n == 3
    assert any_wh.query("SELECT count(*) FROM focus_costs WHERE resource_id IS NULL AND tags IS NULL") == [
        (1,)
    ]


def test_failures_are_warehouse_errors(any_wh, tmp_path):
    with pytest.raises(WarehouseError):
        any_wh.replace_partition(
            "focus_costs", {"x_source": "x", "x_billing_period": "2024-01"}, [tmp_path / "nope.parquet"]
        )
    with pytest.raises(WarehouseError, match="partition key"):
        any_wh.replace_partition("focus_costs", {}, [])


@pytest.mark.postgres
def test_postgres_copy_logs_progress(pg_wh, tmp_path, progress_lines):
    """A 10M-row COPY runs for minutes: the task log shows it move (interval 0: every batch)."""
    _load(pg_wh, tmp_path, "a", "2024-01", 3, "p1")
    lines = progress_lines
    assert len(lines) == 1
    assert lines[0].startswith(f"a 2024-01: COPY into {pg_wh.schema}.focus_costs: 3 of 3 rows (100%), ")
