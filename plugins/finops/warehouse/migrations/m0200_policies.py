"""Policy enforcement: policy_actions (audit log of every decision / action), tag_compliance
(daily snapshots), policy_marks (marks for clouds without tags, e.g. Lambda Cloud)."""

from __future__ import annotations

VERSION = 200
DESCRIPTION = "policy_actions, tag_compliance, policy_marks"


def statements(dialect: str) -> list[str]:
    text = "VARCHAR" if dialect == "duckdb" else "TEXT"
    js = "JSON" if dialect == "duckdb" else "JSONB"
    return [
        f"""CREATE TABLE IF NOT EXISTS policy_actions (
            action_id {text} NOT NULL PRIMARY KEY,
            run_id {text} NOT NULL,
            policy {text} NOT NULL,
            policy_kind {text} NOT NULL,
            provider {text} NOT NULL,
            account {text},
            region {text},
            resource_id {text} NOT NULL,
            resource_name {text},
            owner {text},
            decision {text} NOT NULL,
            action {text} NOT NULL,
            result {text} NOT NULL,
            reason {text},
            dry_run BOOLEAN NOT NULL,
            evidence {js},
            created_at TIMESTAMP NOT NULL
        )""",
        "CREATE INDEX IF NOT EXISTS policy_actions_run ON policy_actions (run_id)",
        "CREATE INDEX IF NOT EXISTS policy_actions_resource ON policy_actions (resource_id, created_at)",
        f"""CREATE TABLE IF NOT EXISTS tag_compliance (
            snapshot_date DATE NOT NULL,
            policy {text} NOT NULL,
            provider {text} NOT NULL,
            account {text} NOT NULL,
            region {text},
            resource_id {text} NOT NULL,
            resource_name {text},
            team {text},
            missing_tags {js},
            invalid_tags {js},
            compliant BOOLEAN NOT NULL,
            run_id {text},
            created_at TIMESTAMP NOT NULL,
            PRIMARY KEY (snapshot_date, policy, provider, resource_id)
        )""",
        f"""CREATE TABLE IF NOT EXISTS policy_marks (
            policy {text} NOT NULL,
            provider {text} NOT NULL,
            resource_id {text} NOT NULL,
            marked_at TIMESTAMP NOT NULL,
            run_id {text},
            PRIMARY KEY (policy, provider, resource_id)
        )""",
    ]
