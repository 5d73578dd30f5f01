"""GPU benchmarks: gpu_benchmark_runs (one row per launched benchmark: where, status, errors,
the raw result document) and gpu_benchmarks (one row per measured metric, for joins)."""

from __future__ import annotations

VERSION = 300
DESCRIPTION = "gpu_benchmark_runs, gpu_benchmarks"


def statements(dialect: str) -> list[str]:
    text = "VARCHAR" if dialect == "duckdb" else "TEXT"
    js = "JSON" if dialect == "duckdb" else "JSONB"
    return [
        f"""CREATE TABLE IF NOT EXISTS gpu_benchmark_runs (
            bench_run_id {text} NOT NULL PRIMARY KEY,
            dag_run_id {text},
            provider {text} NOT NULL,
            region {text} NOT NULL,
            instance_type {text} NOT NULL,
            pricing_model {text} NOT NULL,
            status {text} NOT NULL,
            instance_ids {js},
            results_uri {text},
            gpu_model {text},
            gpu_count INTEGER,
            schema_version INTEGER,
            profile {text},
            errors {js},
            raw {js},
            launched_at TIMESTAMP,
            measured_at TIMESTAMP,
            finished_at TIMESTAMP NOT NULL
        )""",
        f"""CREATE TABLE IF NOT EXISTS gpu_benchmarks (
            bench_run_id {text} NOT NULL,
            provider {text} NOT NULL,
            region {text} NOT NULL,
            instance_type {text} NOT NULL,
            pricing_model {text} NOT NULL,
            gpu_model {text},
            gpu_count INTEGER NOT NULL,
            metric {text} NOT NULL,
            dtype {text},
            value DOUBLE PRECISION NOT NULL,
            unit {text} NOT NULL,
            section {text},
            details {js},
            measured_at TIMESTAMP NOT NULL
        )""",
        "CREATE INDEX IF NOT EXISTS gpu_benchmarks_run ON gpu_benchmarks (bench_run_id)",
        "CREATE INDEX IF NOT EXISTS gpu_benchmarks_where ON gpu_benchmarks (provider, instance_type, metric, measured_at)",
        # newest successful figure per (provider, region, instance type, metric, dtype)
        """CREATE OR REPLACE VIEW gpu_benchmarks_latest AS
           SELECT * FROM (
             SELECT b.*, ROW_NUMBER() OVER (
               PARTITION BY provider, region, instance_type, metric, COALESCE(dtype, '')
               ORDER BY measured_at DESC, bench_run_id DESC) AS rn
             FROM gpu_benchmarks b) ranked
           WHERE rn = 1""",
    ]
