"""gpu_serving_benchmarks: one row per measured serving point (instance type x model x precision x
batch) of a benchmark run, and gpu_serving_latest, the newest full-profile batch sweep per
(instance type, model, precision, workload).

Smoke-test and CPU runs (profiles cuda-quick, cpu: smaller models) never become the latest
figures; the profile names are literals here, as migrations are fixed snapshots
(tests/gpubench/test_serving_store.py checks them against finops.gpubench.profiles)."""

from __future__ import annotations

VERSION = 302
DESCRIPTION = "gpu_serving_benchmarks, gpu_serving_latest"
SMALL_PROFILES = ("cuda-quick", "cpu")


def statements(dialect: str) -> list[str]:
    text = "VARCHAR" if dialect == "duckdb" else "TEXT"
    js = "JSON" if dialect == "duckdb" else "JSONB"
    small = ", ".join(f"'{p}'" for p in SMALL_PROFILES)
    return [
        f"""CREATE TABLE IF NOT EXISTS gpu_serving_benchmarks (
            bench_run_id {text} NOT NULL,
            provider {text} NOT NULL,
            region {text} NOT NULL,
            instance_type {text} NOT NULL,
            pricing_model {text} NOT NULL,
            gpu_model {text},
            gpu_count INTEGER NOT NULL,
            profile {text} NOT NULL,
            model {text} NOT NULL,
            dtype {text} NOT NULL,
            batch INTEGER NOT NULL,
            tokens_in INTEGER,
            tokens_out INTEGER,
            requests_per_s DOUBLE PRECISION,
            output_tokens_per_s DOUBLE PRECISION,
            p50_ms DOUBLE PRECISION NOT NULL,
            p95_ms DOUBLE PRECISION NOT NULL,
            p99_ms DOUBLE PRECISION NOT NULL,
            peak_memory_bytes BIGINT,
            samples INTEGER NOT NULL,
            p99_target_ms DOUBLE PRECISION NOT NULL,
            model_config {js},
            measured_at TIMESTAMP NOT NULL
        )""",
        "CREATE INDEX IF NOT EXISTS gpu_serving_run ON gpu_serving_benchmarks (bench_run_id)",
        # a type's figures stand for it in every region. Per (provider, type, model, precision,
        # workload) every batch of the newest run: the batch sweep is never mixed across runs.
        f"""CREATE OR REPLACE VIEW gpu_serving_latest AS
           SELECT * FROM (
             SELECT s.*, DENSE_RANK() OVER (
               PARTITION BY provider, instance_type, model, dtype, COALESCE(tokens_in, 0), COALESCE(tokens_out, 0)
               ORDER BY measured_at DESC, bench_run_id DESC) AS rn
             FROM gpu_serving_benchmarks s
             WHERE profile NOT IN ({small})) ranked
           WHERE rn = 1""",
    ]
