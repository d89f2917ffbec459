"""The handlers by name. ``oopav up`` runs them all; ``oopav handler <name>`` runs one."""

from __future__ import annotations

from oopav.handlers.runtime import Handler

LOOP_HANDLERS = ("observer", "orient", "planner", "actor", "verifier")
# The learner (finished sessions -> datasets) runs with the others; `oopav up --no-learner`
# leaves it out.
ALL_HANDLERS = ("intake", "grants", *LOOP_HANDLERS, "reflector", "learner")


def build_reflector(nc: object, ports: object, config: object | None = None) -> object:
    """The reflector (it reads sessions and writes missions, so it is not a loop handler)."""
    from oopav.handlers.reflector import Reflector, ReflectorConfig

    return Reflector(nc, ports, config if isinstance(config, ReflectorConfig) else None)  # type: ignore[arg-type]  # object-typed so callers need not import the handler


def build_learner(nc: object, data_dir: object) -> object:
    from pathlib import Path

    from oopav.handlers.learner import Learner

    return Learner(nc, Path(str(data_dir)) / "datasets")  # type: ignore[arg-type]  # object-typed so callers need not import the handler


def build_loop_handler(name: str, memory: object | None = None) -> Handler:
    if name == "observer":
        from oopav.handlers.observer import Observer

        return Observer()
    if name == "orient":
        from oopav.handlers.orient import Orient

        return Orient(memory=memory)
    if name == "planner":
        from oopav.handlers.planner import Planner

        return Planner()
    if name == "actor":
        from oopav.handlers.actor import Actor

        return Actor()
    if name == "verifier":
        from oopav.handlers.verifier import Verifier

        return Verifier()
    raise ValueError(f"unknown handler {name!r}; known: {', '.join(ALL_HANDLERS)}")
