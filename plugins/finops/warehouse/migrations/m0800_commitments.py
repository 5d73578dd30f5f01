"""Commitments (finops.commitments, finops_commitments DAG).

commitment_inventory    each commitment's start / end date and what it covers, from the raw
                        exports (AWS CUR 2.0 end-time columns), the providers' APIs or
                        finops.yaml; one row per (provider, commitment_id);
commitment_utilisation  per commitment and day: used / unused commitment, covered usage at
                        list price (GCP CUDs: fee, committed and used quantity);
commitment_coverage     per provider, account, team, instance family and day: covered vs
                        on-demand-eligible spend and unused commitment;
commitment_advice       the latest purchase advice per (run, product, term, payment, scope):
                        advice only, nothing is bought.
The two daily tables are rewritten per billing_period (YYYY-MM) in one transaction.
"""

from __future__ import annotations

VERSION = 800
DESCRIPTION = "commitment_inventory, commitment_utilisation, commitment_coverage, commitment_advice"


def statements(dialect: str) -> list[str]:
    money = "DECIMAL(38,10)" if dialect == "duckdb" else "NUMERIC(38,10)"
    text = "VARCHAR" if dialect == "duckdb" else "TEXT"
    return [
        f"""CREATE TABLE IF NOT EXISTS commitment_inventory (
            provider {text} NOT NULL,
            commitment_id {text} NOT NULL,
            start_date DATE,
            end_date DATE NOT NULL,
            commitment_type {text},
            description {text},
            term {text},
            payment_option {text},
            source {text},
            updated_at TIMESTAMP NOT NULL,
            PRIMARY KEY (provider, commitment_id)
        )""",
        f"""CREATE TABLE IF NOT EXISTS commitment_utilisation (
            billing_period {text} NOT NULL,
            day DATE NOT NULL,
            provider {text} NOT NULL,
            commitment_id {text} NOT NULL,
            commitment_type {text},
            currency {text} NOT NULL,
            used_cost {money} NOT NULL,
            unused_cost {money} NOT NULL,
            covered_list {money} NOT NULL,
            used_quantity {money},
            unused_quantity {money},
            unit {text},
            computed_at TIMESTAMP NOT NULL
        )""",
        "CREATE INDEX IF NOT EXISTS commitment_utilisation_period ON commitment_utilisation (billing_period, provider)",
        f"""CREATE TABLE IF NOT EXISTS commitment_coverage (
            billing_period {text} NOT NULL,
            day DATE NOT NULL,
            provider {text} NOT NULL,
            account {text},
            team {text},
            family {text},
            currency {text} NOT NULL,
            covered_list {money} NOT NULL,
            covered_effective {money} NOT NULL,
            eligible_list {money} NOT NULL,
            eligible_effective {money} NOT NULL,
            unused_cost {money} NOT NULL,
            computed_at TIMESTAMP NOT NULL
        )""",
        "CREATE INDEX IF NOT EXISTS commitment_coverage_period ON commitment_coverage (billing_period, provider)",
        f"""CREATE TABLE IF NOT EXISTS commitment_advice (
            run_id {text} NOT NULL,
            computed_at TIMESTAMP NOT NULL,
            provider {text} NOT NULL,
            product {text} NOT NULL,
            scope {text} NOT NULL,
            term_years INTEGER NOT NULL,
            payment {text} NOT NULL,
            discount {money} NOT NULL,
            currency {text} NOT NULL,
            what_if BOOLEAN NOT NULL,
            covers_on_demand_hourly {money} NOT NULL,
            commitment_hourly {money} NOT NULL,
            upfront {money} NOT NULL,
            monthly_recurring {money} NOT NULL,
            on_demand_hourly {money} NOT NULL,
            expected_hourly {money} NOT NULL,
            expected_utilisation {money},
            expected_savings_monthly {money} NOT NULL,
            expected_savings_term {money} NOT NULL,
            break_even_utilisation {money} NOT NULL,
            break_even_months INTEGER,
            drop_share {money} NOT NULL,
            drop_utilisation {money},
            drop_savings_term {money} NOT NULL,
            samples INTEGER NOT NULL
        )""",
        "CREATE INDEX IF NOT EXISTS commitment_advice_run ON commitment_advice (computed_at, provider, product)",
    ]
