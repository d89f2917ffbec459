"""Fetching pages. The "network" is a dict from URL to HTML so that tests never go online."""

from __future__ import annotations

SITE: dict[str, str] = {
    "https://example.test/": (
        '<h1>Home</h1><a href="https://example.test/about">About</a>'
        '<a href="https://example.test/blog">Blog</a>'
    ),
    "https://example.test/about": "<h1>About</h1><p>A small site.</p>",
    "https://example.test/blog": (
        '<h1>Blog</h1><a href="https://example.test/">Home</a>'
        '<a href="https://example.test/missing">Old post</a>'
    ),
}


class PageNotFound(LookupError):
    """The URL is not on the site."""


def fetch(url: str, site: dict[str, str] | None = None) -> str:
    """The HTML of ``url``; raises ``PageNotFound`` when the site has no such page."""
    pages = SITE if site is None else site
    try:
        return pages[url]
    except KeyError:
        raise PageNotFound(url) from None
