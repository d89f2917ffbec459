"""Prometheus metrics of a handler process (``--metrics-port``; docs/operations.md, "Metrics").

One private registry per process, so tests can read it and nothing else registers into it.
The recording functions are cheap no-ops until ``enable()`` is called, so a process without
``--metrics-port`` pays nothing for them.
"""

from __future__ import annotations

import threading
from typing import Any

_lock = threading.Lock()
_metrics: dict[str, Any] | None = None
_registry: Any = None

LATENCY_BUCKETS = (
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1,
    2.5,
    5,
    10,
    30,
    60,
    300,
)


def enable() -> Any:
    """Create the registry and metrics (idempotent); returns the registry."""
    global _metrics, _registry
    with _lock:
        if _registry is not None:
            return _registry
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        reg = CollectorRegistry(auto_describe=True)
        _metrics = {
            "handled": Counter(
                "oopav_events_handled",
                "Events a handler processed, by input type and result (ok, error, parked).",
                ["handler", "type", "result"],
                registry=reg,
            ),
            "latency": Histogram(
                "oopav_handling_seconds",
                "Time to decide and append the outputs for one input event.",
                ["handler", "type"],
                buckets=LATENCY_BUCKETS,
                registry=reg,
            ),
            "redelivered": Counter(
                "oopav_redeliveries",
                "Deliveries after the first (a failure, a timeout or a crash before the ack).",
                ["handler"],
                registry=reg,
            ),
            "dead_letters": Counter(
                "oopav_dead_letters",
                "Messages parked on oopav.dlq.<handler>, by reason.",
                ["handler", "reason"],
                registry=reg,
            ),
            "pending": Gauge(
                "oopav_consumer_pending",
                "Messages not yet delivered to the handler's durable consumer (lag).",
                ["handler"],
                registry=reg,
            ),
            "ack_pending": Gauge(
                "oopav_consumer_ack_pending",
                "Messages delivered and not yet acknowledged.",
                ["handler"],
                registry=reg,
            ),
            "inflight": Gauge(
                "oopav_inflight_sessions",
                "Sessions whose messages this process is handling right now.",
                ["handler"],
                registry=reg,
            ),
            "tokens": Counter(
                "oopav_model_tokens",
                "Model tokens, by backend, role and kind (prompt, completion).",
                ["backend", "role", "kind"],
                registry=reg,
            ),
            "model_latency": Histogram(
                "oopav_model_latency_seconds",
                "Model call latency by backend and role.",
                ["backend", "role"],
                buckets=LATENCY_BUCKETS,
                registry=reg,
            ),
        }
        _registry = reg
        return reg


def serve(port: int, addr: str = "127.0.0.1") -> Any:
    """Serve ``/metrics`` on ``addr:port`` from a daemon thread; returns the server."""
    from prometheus_client import start_http_server

    reg = enable()
    server, _thread = start_http_server(port, addr=addr, registry=reg)
    return server


def exposition() -> str:
    """The current metrics in the Prometheus text format (what a scrape returns)."""
    from prometheus_client import generate_latest

    return generate_latest(enable()).decode()


def enabled() -> bool:
    return _metrics is not None


def handled(handler: str, event_type: str, seconds: float, result: str = "ok") -> None:
    m = _metrics
    if m is None:
        return
    m["handled"].labels(handler, event_type, result).inc()
    m["latency"].labels(handler, event_type).observe(seconds)


def redelivered(handler: str) -> None:
    if _metrics is not None:
        _metrics["redelivered"].labels(handler).inc()


def dead_letter(handler: str, reason: str) -> None:
    if _metrics is not None:
        _metrics["dead_letters"].labels(handler, reason).inc()


def consumer_lag(handler: str, pending: int, ack_pending: int) -> None:
    if _metrics is not None:
        _metrics["pending"].labels(handler).set(pending)
        _metrics["ack_pending"].labels(handler).set(ack_pending)


def inflight(handler: str, sessions: int) -> None:
    if _metrics is not None:
        _metrics["inflight"].labels(handler).set(sessions)


def model_call(
    backend: str, role: str, prompt_tokens: int, completion_tokens: int, seconds: float
) -> None:
    m = _metrics
    if m is None:
        return
    m["tokens"].labels(backend, role, "prompt").inc(prompt_tokens)
    m["tokens"].labels(backend, role, "completion").inc(completion_tokens)
    m["model_latency"].labels(backend, role).observe(seconds)
