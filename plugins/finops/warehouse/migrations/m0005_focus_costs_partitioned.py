"""PostgreSQL: focus_costs becomes a table partitioned per (x_source, x_billing_period).

Why: a load then writes a fresh, index-less table over several connections, builds its
indexes once, and swaps it in as the partition in one short transaction (postgres_wh), instead
of deleting the old rows and inserting new ones through two live indexes. PostgreSQL allows one
LIST key, and not a generated column, so the key is the expression
`x_source || U+001F || x_billing_period` (the separator cannot occur in either value).
Readers keep reading focus_costs. A DEFAULT partition takes rows inserted directly (tests,
fixtures), so an INSERT never fails for want of a partition. Existing rows move into one
partition per key; the parent's indexes are re-created from their definitions, so any index
added since m0001 survives. DuckDB is unchanged."""

from __future__ import annotations

VERSION = 5
DESCRIPTION = "postgres: focus_costs partitioned by LIST (x_source, x_billing_period)"

# Shared with postgres_wh: the key expression, the partition naming and the default partition.
KEY_SQL = "(x_source || E'\\x1f' || x_billing_period)"
KEY_SEP = "\x1f"
PART_PREFIX = "focus_costs_p_"
DEFAULT_PART = "focus_costs_default"


def statements(dialect: str) -> list[str]:
    if dialect != "postgres":
        return []
    return [
        f"""DO $$
DECLARE
  defs text[];
  d text;
  r record;
BEGIN
  IF (SELECT relkind FROM pg_class WHERE oid = to_regclass('focus_costs')) = 'p' THEN
    RETURN;
  END IF;
  SELECT coalesce(array_agg(pg_get_indexdef(indexrelid)), '{{}}') INTO defs
    FROM pg_index WHERE indrelid = to_regclass('focus_costs');
  FOR r IN SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
           WHERE i.indrelid = to_regclass('focus_costs') LOOP
    EXECUTE format('ALTER INDEX %I RENAME TO %I', r.relname, left('m5_' || r.relname, 63));
  END LOOP;
  ALTER TABLE focus_costs RENAME TO focus_costs_unpartitioned;
  CREATE TABLE focus_costs (LIKE focus_costs_unpartitioned INCLUDING DEFAULTS INCLUDING CONSTRAINTS
    INCLUDING GENERATED INCLUDING COMMENTS INCLUDING STATISTICS) PARTITION BY LIST ({KEY_SQL});
  FOREACH d IN ARRAY defs LOOP
    EXECUTE d;
  END LOOP;
  CREATE TABLE {DEFAULT_PART} PARTITION OF focus_costs DEFAULT;
  FOR r IN SELECT DISTINCT {KEY_SQL} AS k FROM focus_costs_unpartitioned WHERE {KEY_SQL} IS NOT NULL LOOP
    EXECUTE format('CREATE TABLE %I PARTITION OF focus_costs FOR VALUES IN (%L)',
                   '{PART_PREFIX}' || left(md5(r.k), 24), r.k);
  END LOOP;
  INSERT INTO focus_costs SELECT * FROM focus_costs_unpartitioned;
  DROP TABLE focus_costs_unpartitioned;
END
$$""",
    ]
