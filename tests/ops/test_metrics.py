"""Prometheus metrics: recorded by the handler runtime and model calls, served over HTTP."""

from __future__ import annotations

import urllib.request

from oopav import metrics
from oopav.bus.server import free_port


def test_metrics_are_recorded_and_served() -> None:
    metrics.enable()
    metrics.handled("planner", "orient_reported", 0.012)
    metrics.handled("planner", "orient_reported", 0.3, result="error")
    metrics.redelivered("planner")
    metrics.dead_letter("actor", "handler_failed")
    metrics.consumer_lag("planner", pending=7, ack_pending=2)
    metrics.inflight("planner", 3)
    metrics.model_call("scripted", "planner", 120, 30, 0.05)
    port = free_port()
    server = metrics.serve(port)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
            body = resp.read().decode()
    finally:
        server.shutdown()
    assert (
        'oopav_events_handled_total{handler="planner",result="ok",type="orient_reported"} 1.0'
        in body
    )
    assert (
        'oopav_handling_seconds_bucket{handler="planner",le="0.025",type="orient_reported"} 1.0'
        in body
    )
    assert 'oopav_redeliveries_total{handler="planner"} 1.0' in body
    assert 'oopav_dead_letters_total{handler="actor",reason="handler_failed"} 1.0' in body
    assert 'oopav_consumer_pending{handler="planner"} 7.0' in body
    assert 'oopav_inflight_sessions{handler="planner"} 3.0' in body
    assert 'oopav_model_tokens_total{backend="scripted",kind="prompt",role="planner"} 120.0' in body
