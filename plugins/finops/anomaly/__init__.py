"""Cost anomaly detection.

detect.py        PURE, vectorised detector (log level + weekday profile, new-level acceptance; $ AND % AND z)
series.py        rows -> matrix, flags -> events
state.py         stable anomaly ids, update-not-repeat lifecycle
contributors.py  root cause: which usage types / resources carry the jump
settings.py      finops.yaml `anomaly:` (monitors, thresholds)
store.py         edge: warehouse -> detector -> anomalies table -> emit()
render.py        Anomaly -> AlertEvent
dags.py          the two DAGs: billing-data monitors on finops://focus_costs, team monitors on finops://showback
"""
