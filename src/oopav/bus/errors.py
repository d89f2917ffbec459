"""Typed bus errors whose messages say what to do."""

from __future__ import annotations


class BusError(RuntimeError):
    pass


class NatsUnavailable(BusError):
    def __init__(self, url: str, detail: str = "", *, permanent: bool = False) -> None:
        # A server that is there but refuses us needs a different fix than one that is down.
        hint = (
            ""
            if permanent
            else "; start one with `oopav up` (embedded) or `nats-server -js`, or pass "
            "--nats-url / OOPAV_NATS_URL"
        )
        super().__init__(f"cannot reach NATS at {url}{': ' + detail if detail else ''}{hint}")
        self.url = url
        # True when retrying cannot help (credentials refused, a missing TLS file).
        self.permanent = permanent


class ConcurrencyConflict(BusError):
    """Another writer appended to the aggregate since the state this decision was made on."""

    def __init__(self, aggregate_id: str, expected: int, detail: str = "") -> None:
        super().__init__(
            f"concurrency conflict on {aggregate_id}: expected its last sequence to be {expected} "
            f"({detail or 'another writer appended first'}); reload the aggregate, decide again "
            "and retry"
        )
        self.aggregate_id = aggregate_id
        self.expected = expected


class AppendRejected(BusError):
    pass


class ConnectionLost(BusError):
    """The client stopped reconnecting (its give-up limit passed): the process should exit."""

    def __init__(self, url: str, detail: str = "") -> None:
        super().__init__(
            f"lost the connection to NATS at {url} and gave up reconnecting"
            f"{' (' + detail + ')' if detail else ''}; check the server, then restart this process"
        )
        self.url = url


class ServerTooOld(BusError):
    pass
