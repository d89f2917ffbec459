"""Projections: pure folds of the stream, LMDB snapshots, and the runners that keep them."""

from oopav.projections.runner import SESSIONS, Projection, ProjectionRunner, load_session
from oopav.projections.session import SessionState, evolve, fold, initial
from oopav.projections.store import Snapshots, SnapshotStore

__all__ = [
    "SESSIONS",
    "Projection",
    "ProjectionRunner",
    "SessionState",
    "SnapshotStore",
    "Snapshots",
    "evolve",
    "fold",
    "initial",
    "load_session",
]
