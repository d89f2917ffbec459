import pytest

from webtool.client import PageNotFound, fetch
from webtool.crawler import crawl
from webtool.report import summary


def test_fetch_returns_page() -> None:
    assert fetch("https://example.test/about") == "<h1>About</h1><p>A small site.</p>"


def test_fetch_uses_given_site() -> None:
    assert fetch("x", {"x": "<h1>X</h1>"}) == "<h1>X</h1>"


def test_fetch_missing_page() -> None:
    with pytest.raises(PageNotFound):
        fetch("https://example.test/nope")


def test_crawl_finds_pages_and_broken_links() -> None:
    visited, broken = crawl("https://example.test/")
    assert visited == [
        "https://example.test/",
        "https://example.test/about",
        "https://example.test/blog",
    ]
    assert broken == ["https://example.test/missing"]


def test_summary_lists_titles() -> None:
    assert summary(["https://example.test/", "https://example.test/about"]) == [
        "https://example.test/: Home",
        "https://example.test/about: About",
    ]
