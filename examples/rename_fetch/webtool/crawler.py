"""Breadth-first crawl from a start page, following links that stay on the site."""

from __future__ import annotations

import re

from webtool.client import PageNotFound, fetch

LINK_RE = re.compile(r'href="([^"]+)"')


def links(html: str) -> list[str]:
    return LINK_RE.findall(html)


def crawl(start: str, site: dict[str, str] | None = None) -> tuple[list[str], list[str]]:
    """Visited pages in crawl order, and the broken links found on the way."""
    visited: list[str] = []
    broken: list[str] = []
    queue = [start]
    while queue:
        url = queue.pop(0)
        if url in visited or url in broken:
            continue
        try:
            html = fetch(url, site)
        except PageNotFound:
            broken.append(url)
            continue
        visited.append(url)
        queue.extend(links(html))
    return visited, broken
