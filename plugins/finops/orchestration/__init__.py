"""Glue between DAGs and the package.

One module per DAG family builds its DAG objects (`billing_dags`, `prices_dag`, `policy_dags`,
`anomaly_dags`, `showback_dag`, `report_dag`, `budgets_dag`, `gpu_benchmark_dags`, ...; the
files in dags/ only call their `build_*`), all with `defaults.default_args(...)` and the Assets
of `assets`. `failures.fail_on_bad_input` is where a task turns errors no retry can fix into
AirflowFailException. Task bodies stay thin: what a task does lives in the feature packages
(or here, Airflow-free, as in `billing`), testable with plain calls."""
