"""Showback / chargeback.

rules.py     YAML allocation rules (pydantic), settings.py where they come from
money.py     exact largest-remainder splits (Decimal; totals never drift)
classify.py  showback lines (gpu / storage / egress / compute / other), GPU model, spot
engine.py    PURE allocation: CostRow -> Allocated (+ chargeback, GPU view)
store.py     edge: focus_costs -> showback_daily / chargeback_monthly / showback_gpu_monthly
report.py    monthly per-team report (HTML + chart + CSV), saved and e-mailed
tasks.py     task bodies of finops_showback / finops_anomalies(_teams) / finops_report_monthly
"""
