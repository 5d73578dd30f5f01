"""FOCUS 1.2 schema and per-provider converters (pure: no Airflow or cloud imports)."""
