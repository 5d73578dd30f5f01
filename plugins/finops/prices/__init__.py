"""Spot / on-demand price history, the cross-cloud GPU instance catalog and spot placement risk.

Fetchers per provider (aws, azure, gcp, lambda_cloud) produce `records.PriceRecord`s;
`store` appends them as de-duplicated time series; `queries` answers the questions in one call;
`jobs` + `dag` wire them into the `finops_prices` DAG.
"""
