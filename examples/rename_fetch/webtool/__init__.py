"""webtool: a tiny crawler over an in-memory site, the oopav demo repository."""

from webtool.client import PageNotFound, fetch

__all__ = ["PageNotFound", "fetch"]
