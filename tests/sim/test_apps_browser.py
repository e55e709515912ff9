"""Chrome: omnibox search over the offline corpus, results, articles, back, history."""

from __future__ import annotations

import sqlite3

from farm.sim.world.apps import browser_corpus as corpus
from tests.sim.apps_driver import Droid

PKG = "com.android.chrome"
MAIN = "com.google.android.apps.chrome.Main"
URL_BAR = f"{PKG}:id/url_bar"
HISTORY = "/data/data/com.android.chrome/app_chrome/Default/History"


def url(d: Droid) -> str:
    return d.get(resource_id=URL_BAR).text


def page_title(d: Droid) -> str:
    return d.get(class_name="android.webkit.WebView").text


async def search(d: Droid, query: str) -> None:
    await d.tap(resource_id=f"{PKG}:id/search_box_text")
    assert d.get(resource_id=URL_BAR).focused
    await d.type(query)
    await d.key("KEYCODE_ENTER")


async def test_search_the_web_and_open_a_result() -> None:
    d = Droid()
    await d.tap(text="Chrome", content_desc="Chrome")  # the launcher icon
    assert d.focus() == (PKG, MAIN)
    assert d.get(resource_id=URL_BAR).text == "Search or type web address"  # the hint
    await search(d, "eiffel tower")
    assert url(d) == "www.google.com/search?q=eiffel+tower"
    assert page_title(d) == "eiffel tower - Google Search"
    await d.tap(text="Eiffel Tower - Wikipedia")
    assert url(d) == "en.wikipedia.org/wiki/Eiffel_Tower"
    assert page_title(d) == "Eiffel Tower - Wikipedia"
    assert d.find(text_contains="330 metres tall") is not None
    # the article scrolls; "See also" links open other articles
    link = await d.scroll_to(text="Roman Empire")
    await d.sh(f"input tap {link.bounds.center[0]} {link.bounds.center[1]}")
    assert url(d) == "en.wikipedia.org/wiki/Roman_Empire"
    # BACK walks the tab's history, then leaves Chrome
    await d.key("KEYCODE_BACK")
    assert url(d) == "en.wikipedia.org/wiki/Eiffel_Tower"
    await d.key("KEYCODE_BACK")
    assert page_title(d) == "eiffel tower - Google Search"
    await d.key("KEYCODE_BACK")
    assert d.find(resource_id=f"{PKG}:id/search_box_text") is not None  # New Tab page
    await d.key("KEYCODE_BACK")
    assert d.focus() is not None and d.focus() != (PKG, MAIN)


async def test_history_database_lists_visits() -> None:
    d = Droid()
    await d.launch(PKG)
    await search(d, "carbonara")
    await d.tap(text="Spaghetti carbonara - Example Recipes")
    raw = d.phone.vfs.read(HISTORY)
    assert raw.startswith(b"SQLite format 3\x00")
    con = sqlite3.connect(":memory:")
    con.deserialize(raw)
    rows = con.execute("SELECT url, title, visit_count FROM urls ORDER BY id").fetchall()
    assert rows == [
        ("https://www.google.com/search?q=carbonara", "carbonara - Google Search", 1),
        ("https://www.example-recipes.com/recipes/spaghetti-carbonara",
         "Spaghetti carbonara - Example Recipes", 1)]
    # the history page lists the same, newest first
    await d.tap(content_desc="Customize and control Google Chrome")
    await d.tap(text="History")
    assert url(d) == "chrome://history/"
    lines = d.texts(f"{PKG}:id/line_1")
    assert lines[:2] == ["Spaghetti carbonara - Example Recipes", "carbonara - Google Search"]


async def test_typed_urls_errors_and_offline() -> None:
    d = Droid()
    await d.launch(PKG)
    await search(d, "en.wikipedia.org/wiki/Mars")
    assert url(d) == "en.wikipedia.org/wiki/Mars" and page_title(d) == "Mars - Wikipedia"
    # focusing the omnibox selects the URL: typing replaces it
    await d.tap(resource_id=URL_BAR)
    assert d.get(resource_id=URL_BAR).text == "en.wikipedia.org/wiki/Mars"
    await d.type("nosuchsite.example.org")
    assert d.get(resource_id=URL_BAR).text == "nosuchsite.example.org"
    await d.key("KEYCODE_ENTER")
    assert d.find(text="This site can't be reached") is not None
    assert d.find(text="ERR_NAME_NOT_RESOLVED") is not None
    await d.sh("settings put global airplane_mode_on 1; settings put global wifi_on 0")
    await d.tap(resource_id=URL_BAR)
    await d.type("weather")
    await d.key("KEYCODE_ENTER")
    assert d.find(text="No internet") is not None


async def test_suggestions_while_typing() -> None:
    d = Droid()
    await d.launch(PKG)
    await d.tap(resource_id=f"{PKG}:id/search_box_text")
    await d.type("tokyo")
    lines = d.texts(f"{PKG}:id/line_1")
    assert lines[0] == "tokyo" and "Tokyo for first-timers - Example Travel" in lines
    await d.tap(text="Tokyo for first-timers - Example Travel")
    assert url(d) == "www.example-travel.com/guides/tokyo-first-timers"


async def test_force_stop_keeps_the_tab_and_pm_clear_resets() -> None:
    d = Droid()
    await d.launch(PKG)
    await search(d, "python")
    await d.sh(f"am force-stop {PKG}")
    await d.launch(PKG)
    assert page_title(d) == "python - Google Search"  # Chrome restores its tabs
    assert await d.sh(f"pm clear {PKG}") == "Success\n"
    assert not d.phone.vfs.exists(HISTORY)
    await d.launch(PKG)
    assert d.find(resource_id=f"{PKG}:id/search_box_text") is not None


async def test_small_screen_and_dark_theme() -> None:
    d = Droid("small")
    await d.sh("settings put secure ui_night_mode 2")
    await d.launch(PKG)
    await search(d, "weather london")
    await d.tap(text="London weather: cloudy with light rain - Example News")
    assert url(d) == "www.example-news.com/weather/london-forecast"
    for e in d.elements():
        assert 0 <= e.bounds.left <= e.bounds.right <= 360
        assert 0 <= e.bounds.top <= e.bounds.bottom <= 800


def test_corpus_is_deterministic_and_covers_topics() -> None:
    assert len(corpus.ARTICLES) >= 40
    assert len(corpus.BY_URL) == len(corpus.ARTICLES)
    topics = {a.topic for a in corpus.ARTICLES}
    assert {"weather", "recipes", "sports", "history", "tech", "travel"} <= topics
    assert [a.heading for a in corpus.search("weather paris")][:1] == [
        "Paris weather: sunny and warm"]
    assert corpus.search("weather paris") == corpus.search("Weather  PARIS")
    assert corpus.search("zzzz") == []
    assert corpus.lookup("http://en.wikipedia.org/wiki/Mars/") is corpus.BY_URL[
        "https://en.wikipedia.org/wiki/Mars"]
