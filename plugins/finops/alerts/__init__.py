"""Alert path: every producer (validation failures, policy notices, anomalies) calls
`emit(AlertEvent)`; sinks (log always; Slack / email when routed in config) deliver it."""

from finops.alerts.events import AlertEvent, emit, register_sink, unregister_sink

__all__ = ["AlertEvent", "emit", "register_sink", "unregister_sink"]
