"""The example Grafana dashboard and Prometheus alert rules (deploy/) name only metrics that
interlock exports, with the suffixes their types have."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml
from prometheus_client.parser import text_string_to_metric_families

from interlock.observe.metrics import Metrics

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
NAME = re.compile(r"\binterlock_[a-z_]+\b")


def exported() -> set[str]:
    """What a server or a worker exports (the heartbeat is a worker's only)."""
    names: set[str] = set()
    text = Metrics().exposition().decode() + Metrics(worker=True).exposition().decode()
    for f in text_string_to_metric_families(text):
        suffixes = {"counter": ["_total"], "histogram": ["_bucket", "_count", "_sum"]}
        names |= {f.name + s for s in suffixes.get(f.type, [""])}
    return names


def test_the_dashboard_shows_only_exported_metrics() -> None:
    dashboard = json.loads((DEPLOY / "grafana-dashboard.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    used = {n for e in exprs for n in NAME.findall(e)}
    assert used and used <= exported(), used - exported()
    # every signal of docs/observability.md has a panel
    assert {"interlock_pending_calls", "interlock_pending_calls_by_role",
            "interlock_oldest_pending_seconds", "interlock_time_to_decision_seconds_bucket",
            "interlock_decision_to_tool_start_seconds_bucket", "interlock_decisions_total",
            "interlock_expiries_total", "interlock_escalations_total",
            "interlock_outbox_backlog", "interlock_outbox_delivery_failures_total",
            "interlock_worker_claims_total", "interlock_lease_takeovers_total",
            "interlock_recoveries_total", "interlock_storage_errors_total",
            "interlock_worker_last_poll_timestamp_seconds"} <= used


def test_the_alert_rules_use_exported_metrics() -> None:
    rules = yaml.safe_load((DEPLOY / "prometheus-alerts.yml").read_text())
    alerts = {r["alert"]: r["expr"] for g in rules["groups"] for r in g["rules"]}
    assert {"InterlockRequestWaitingTooLong", "InterlockOutboxFailing",
            "InterlockNoWorkerAlive"} <= set(alerts)
    used = {n for e in alerts.values() for n in NAME.findall(e)}
    assert used <= exported(), used - exported()
