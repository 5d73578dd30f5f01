"""policy_actions rows get a life cycle: an action's row is written (committed) BEFORE the cloud
call and updated to its outcome after, so an action never happens without a row; a row left
`pending` (the task died between the call and the outcome) stays visible as outcome unknown.

status: recorded (a decision, no call) | reserved (planned, not attempted yet) | pending (being
attempted: outcome unknown) | done | failed | unknown (a later run found it pending) |
not_attempted (a later run found it reserved). updated_at: the owning run's last write (the
cap's overlap window, finops.policies.engine). Rows written before this migration, and by other
writers (the benchmark audit), are final: `done`, updated_at = created_at."""

from __future__ import annotations

VERSION = 201
DESCRIPTION = "policy_actions status + updated_at (intent rows before actions)"


def statements(dialect: str) -> list[str]:
    text = "VARCHAR" if dialect == "duckdb" else "TEXT"
    return [
        f"ALTER TABLE policy_actions ADD COLUMN IF NOT EXISTS status {text} DEFAULT 'done'",
        "ALTER TABLE policy_actions ADD COLUMN IF NOT EXISTS updated_at TIMESTAMP",
        "CREATE INDEX IF NOT EXISTS policy_actions_policy_status ON policy_actions (policy, status)",
        "CREATE INDEX IF NOT EXISTS policy_actions_policy_updated ON policy_actions (policy, updated_at)",
        # after the indexes: DuckDB cannot create an index over a transaction's outstanding updates
        "UPDATE policy_actions SET updated_at = created_at WHERE updated_at IS NULL",
    ]
