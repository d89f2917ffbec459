"""webtool: a tiny crawler over an in-memory site, the oopav demo repository."""
