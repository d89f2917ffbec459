"""A one-line summary per page: its URL and its first heading."""

from __future__ import annotations

import re

from webtool.client import fetch

TITLE_RE = re.compile(r"<h1>(.*?)</h1>")


def title(url: str, site: dict[str, str] | None = None) -> str:
    match = TITLE_RE.search(fetch(url, site))
    return match.group(1) if match else ""


def summary(urls: list[str], site: dict[str, str] | None = None) -> list[str]:
    return [f"{url}: {title(url, site)}" for url in urls]
