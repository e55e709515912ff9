"""Chrome (com.android.chrome): omnibox, New Tab page, Google results, articles, history.

One tab whose navigation stack lives in the app (Chrome restores tabs after a force
stop; ``pm clear`` starts over on the New Tab page). The web is the offline corpus of
``browser_corpus``. Every visit is also written to Chrome's real History database
(SQLite, ``/data/data/com.android.chrome/app_chrome/Default/History``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar
from urllib.parse import parse_qsl, quote_plus, urlsplit

from farm.sim.intents import (
    ACTION_VIEW,
    CATEGORY_BROWSABLE,
    CATEGORY_DEFAULT,
    IntentFilter,
    IntentQuery,
)
from farm.sim.world import widgets as w
from farm.sim.world.apps import browser_corpus as corpus
from farm.sim.world.apps import kit
from farm.sim.world.apps.base import Activity, App, Host, register
from farm.sim.world.views import Paint, View

PKG = "com.android.chrome"
MAIN = "com.google.android.apps.chrome.Main"
NTP_URL = "chrome-native://newtab/"
HISTORY_URL = "chrome://history/"
GOOGLE = "https://www.google.com/"
HINT = "Search or type web address"
DATA = f"/data/data/{PKG}"
HISTORY_DB = f"{DATA}/app_chrome/Default/History"
RID = f"{PKG}:id/"
WEBVIEW = "android.webkit.WebView"
WEB_VIEW_NODE = "android.view.View"


@dataclass(frozen=True)
class Page:
    url: str
    title: str
    kind: str  # ntp | serp | article | google | error | history
    query: str = ""
    error: str = ""


NTP = Page(NTP_URL, "New tab", "ntp")


def display_url(url: str) -> str:
    """What the unfocused omnibox shows: the URL without ``https://``."""
    if url == NTP_URL:
        return ""
    for scheme in ("https://", "http://"):
        if url.startswith(scheme):
            return url[len(scheme):]
    return url


def serp(query: str) -> Page:
    return Page(f"{GOOGLE}search?q={quote_plus(query)}", f"{query} - Google Search", "serp",
                query=query)


def resolve(text: str, offline: bool) -> Page:
    """What typing ``text`` + ENTER in the omnibox opens."""
    t = text.strip()
    if not t:
        return NTP
    low = t.lower()
    if low.startswith("chrome://history"):
        return Page(HISTORY_URL, "History", "history")
    looks_like_url = low.startswith(("http://", "https://")) or (
        " " not in t and "." in t.strip(".") and not t.replace(".", "").isdecimal())
    if not looks_like_url:
        return serp(t) if not offline else _offline(serp(t).url)
    url = t if low.startswith(("http://", "https://")) else "https://" + t
    if offline:
        return _offline(url)
    host = urlsplit(url).hostname or ""
    if host in ("google.com", "www.google.com"):
        q = dict(_query_pairs(urlsplit(url).query)).get("q", "")
        return serp(q) if q else Page(GOOGLE, "Google", "google")
    art = corpus.lookup(url)
    if art is not None:
        return Page(art.url, art.title, "article")
    return Page(url, host or url, "error", error="ERR_NAME_NOT_RESOLVED")


def _offline(url: str) -> Page:
    return Page(url, urlsplit(url).hostname or url, "error", error="ERR_INTERNET_DISCONNECTED")


def _query_pairs(q: str) -> list[tuple[str, str]]:
    return parse_qsl(q)


def history_db(entries: list[tuple[str, str, float]]) -> bytes:
    """Chrome's History database (urls + visits tables) as SQLite bytes."""
    con = sqlite3.connect(":memory:")
    con.executescript(
        "CREATE TABLE urls(id INTEGER PRIMARY KEY AUTOINCREMENT, url LONGVARCHAR, "
        "title LONGVARCHAR, visit_count INTEGER DEFAULT 0 NOT NULL, typed_count INTEGER "
        "DEFAULT 0 NOT NULL, last_visit_time INTEGER NOT NULL, hidden INTEGER DEFAULT 0 NOT "
        "NULL);"
        "CREATE TABLE visits(id INTEGER PRIMARY KEY, url INTEGER NOT NULL, visit_time INTEGER "
        "NOT NULL, from_visit INTEGER, transition INTEGER DEFAULT 0 NOT NULL);")
    ids: dict[str, int] = {}
    for url, title, when in entries:
        t = int((when + 11644473600) * 1_000_000)  # Chrome time: µs since 1601
        if url in ids:
            con.execute("UPDATE urls SET title=?, visit_count=visit_count+1, last_visit_time=? "
                        "WHERE id=?", (title, t, ids[url]))
        else:
            cur = con.execute("INSERT INTO urls(url, title, visit_count, last_visit_time) "
                              "VALUES (?, ?, 1, ?)", (url, title, t))
            ids[url] = int(cur.lastrowid or 0)
        con.execute("INSERT INTO visits(url, visit_time, transition) VALUES (?, ?, 1)",
                    (ids[url], t))
    con.commit()
    data = con.serialize()
    con.close()
    return bytes(data)


class ChromeActivity(Activity):
    def __init__(self, app: App, host: Host, name: str, args: dict[str, str]) -> None:
        super().__init__(app, host, name, args)
        assert isinstance(app, Chrome)
        self.chrome = app
        self.omnibox = kit.SelectAllField(hint=HINT)
        self.omnibox.on_submit = self._submit

    # ── actions ──────────────────────────────────────────────────────────────────────
    def _offline(self) -> bool:
        st = self.host.store
        return st.get_bool("global", "airplane_mode_on") and not st.get_bool("global", "wifi_on")

    def go(self, page: Page) -> None:
        self.dialog_open = ""
        self.host.focus(self, None)
        self.chrome.navigate(page)

    def _submit(self, text: str) -> None:
        self.go(resolve(text, self._offline()))

    def _open(self, url: str) -> Callable[[], None]:
        return lambda: self.go(resolve(url, self._offline()))

    def _search(self, q: str) -> Callable[[], None]:
        return lambda: self.go(serp(q) if not self._offline() else _offline(serp(q).url))

    def _focus_omnibox(self) -> None:
        page = self.chrome.page
        text = page.query if page.kind == "serp" else display_url(page.url)
        if page.kind in ("ntp", "history"):
            text = ""
        self.omnibox.set(text)
        self.omnibox.selected = bool(text)
        self.dialog_open = ""
        self.host.focus(self, self.omnibox)

    def on_back(self) -> bool:
        if self.dialog_open:
            self.dialog_open = ""
            return True
        if self.focus is not None:
            self.host.focus(self, None)
            return True
        return self.chrome.back()

    # ── screen ───────────────────────────────────────────────────────────────────────
    def build(self, ctx: w.Ctx) -> View:
        c = ctx.content
        root = View(cls=w.FRAME, bounds=c, rid=f"{RID}coordinator",
                    paint=Paint("fill", bg="bg"))
        bar = self._toolbar(ctx)
        root.add(bar)
        area = (0, bar.bounds[3], ctx.width, c[3])
        if self.focus is self.omnibox:
            root.add(self._suggestions(ctx, area))
            return root
        holder = View(cls=w.FRAME, bounds=area, rid=f"{RID}compositor_view_holder")
        page = self.chrome.page
        rows = getattr(self, f"_page_{page.kind}")(ctx, page)
        key = f"{len(self.chrome.tab)}:{page.url}"
        if page.kind == "ntp":
            lst = w.scroll_list(ctx, self.scroll, key, area, rows, rid=f"{RID}ntp_content")
        else:
            lst = w.scroll_list(ctx, self.scroll, key, area, rows, rid="", cls=WEBVIEW,
                                bottom_pad=ctx.dp(24))
            lst.text = page.title
            lst.focused = True
        holder.add(lst)
        root.add(holder)
        return root

    def _toolbar(self, ctx: w.Ctx) -> View:
        top = ctx.content[1]
        h = ctx.dp(56)
        bar = View(cls=w.FRAME, bounds=(0, top, ctx.width, top + h), rid=f"{RID}toolbar")
        s = ctx.dp(48)
        by = top + (h - s) // 2
        focused = self.focus is self.omnibox
        x = ctx.dp(4)
        if focused:
            bar.add(kit.icon_button(ctx, x, by, "arrow_back", "Back", f"{RID}location_bar_status",
                                    lambda: self.host.focus(self, None)))
            right = ctx.width - ctx.dp(8)
        else:
            bar.add(kit.icon_button(ctx, x, by, "home", "Open the home page", f"{RID}home_button",
                                    lambda: self.go(NTP)))
            right = ctx.width - ctx.dp(4) - 2 * s
            bar.add(kit.icon_button(ctx, right, by, "tabs", "Switch or close tabs",
                                    f"{RID}tab_switcher_button", lambda: None))
            bar.add(w.text(ctx, right, by + (s - ctx.line(12)) // 2, s, "1", 12, align="center",
                           bold=True))
            bar.add(kit.icon_button(ctx, right + s, by, "more",
                                    "Customize and control Google Chrome",
                                    f"{RID}menu_button", self._open_menu))
        left = x + s + ctx.dp(4)
        ph = ctx.dp(44)
        py = top + (h - ph) // 2
        loc = View(cls=w.FRAME, bounds=(left, py, right - ctx.dp(4), py + ph),
                   rid=f"{RID}location_bar", paint=Paint("fill", bg="search_bg", radius=22))
        rect = (left + ctx.dp(16), py, right - ctx.dp(16), py + ph)
        if focused:
            if self.omnibox.selected:  # the selected URL, highlighted as on a phone
                tw = min(ctx.text_w(self.omnibox.text, 16), rect[2] - rect[0])
                loc.add(View(cls=w.VIEW_GROUP, bounds=(rect[0], py + ctx.dp(10),
                                                       rect[0] + tw, py + ph - ctx.dp(10)),
                             paint=Paint("fill", bg="surface_var")))
            loc.add(w.edit_text(ctx, rect, self.omnibox, True, rid=f"{RID}url_bar",
                                on_focus=lambda: None, size=16, boxed=False))
        else:
            url = display_url(self.chrome.page.url)
            loc.add(View(cls=w.EDIT_TEXT, bounds=rect, text=url or HINT, rid=f"{RID}url_bar",
                         clickable=True, focusable=True, long_clickable=True,
                         on_click=self._focus_omnibox,
                         paint=Paint("text", color="on_surface" if url else "on_surface_var",
                                     size=16)))
        bar.add(loc)
        return bar

    def _suggestions(self, ctx: w.Ctx, area: tuple[int, int, int, int]) -> View:
        q = self.omnibox.text.strip()
        rows: list[w.Row] = []
        if q and not self.omnibox.selected:
            rows.append(self._suggestion(ctx, "search", q, "", self._submit_text(q)))
            for art in corpus.search(q, limit=4):
                rows.append(self._suggestion(ctx, "internet", art.title,
                                             display_url(art.url), self._open(art.url)))
        else:
            seen: set[str] = set()
            for url, title, _ in reversed(self.chrome.history):
                if url in seen or len(seen) >= 5:
                    continue
                seen.add(url)
                rows.append(self._suggestion(ctx, "history", title, display_url(url),
                                             self._open(url)))
        return w.scroll_list(ctx, self.scroll, "omnibox", area, rows,
                             rid=f"{RID}omnibox_results_container")

    def _submit_text(self, q: str) -> Callable[[], None]:
        return lambda: self._submit(q)

    def _suggestion(self, ctx: w.Ctx, glyph: str, line1: str, line2: str,
                    go: Callable[[], None]) -> w.Row:
        h = ctx.dp(64) if line2 else ctx.dp(56)

        def build(y: int) -> View:
            row = View(cls=w.LINEAR, bounds=(0, y, ctx.width, y + h), clickable=True,
                       focusable=True, on_click=go)
            row.add(w.icon(ctx, ctx.dp(16), y + (h - ctx.dp(24)) // 2, 24, glyph))
            x = ctx.dp(56)
            tw = ctx.width - x - ctx.dp(16)
            ty = y + (h - ctx.line(16) - (ctx.line(13) if line2 else 0)) // 2
            row.add(w.text(ctx, x, ty, tw, line1, 16, rid=f"{RID}line_1"))
            if line2:
                row.add(w.text(ctx, x, ty + ctx.line(16), tw, line2, 13, "primary",
                               rid=f"{RID}line_2"))
            return row
        return (h, build)

    # ── pages ────────────────────────────────────────────────────────────────────────
    def _logo(self, ctx: w.Ctx, size: float, rid: str = "") -> w.Row:
        h = ctx.line(size) + ctx.dp(16)
        return (h, lambda y: View(cls=w.IMAGE_VIEW, bounds=(0, y + ctx.dp(8), ctx.width,
                                                            y + h - ctx.dp(8)),
                                  desc="Google", rid=rid,
                                  paint=Paint("text", text="Google", color="#4285f4",
                                              size=size, align="center")))

    def _fake_box(self, ctx: w.Ctx, text: str, rid: str = "", box_rid: str = "") -> w.Row:
        h = ctx.dp(72)

        def build(y: int) -> View:
            m = ctx.dp(16)
            box = View(cls=w.FRAME, bounds=(m, y + ctx.dp(12), ctx.width - m, y + h - ctx.dp(8)),
                       rid=box_rid, paint=Paint("fill", bg="search_bg", radius=26))
            b = box.bounds
            box.add(w.icon(ctx, b[0] + ctx.dp(16), (b[1] + b[3] - ctx.dp(24)) // 2, 24,
                           "search"))
            box.add(View(cls=w.EDIT_TEXT, bounds=(b[0] + ctx.dp(52), b[1], b[2] - ctx.dp(16), b[3]),
                         text=text or HINT, rid=rid, clickable=True, focusable=True,
                         on_click=self._focus_omnibox,
                         paint=Paint("text", size=16,
                                     color="on_surface" if text else "on_surface_var")))
            return box
        return (h, build)

    def _page_ntp(self, ctx: w.Ctx, page: Page) -> list[w.Row]:
        rows = [kit.spacer(ctx, 48), self._logo(ctx, 40, f"{RID}search_provider_logo"),
                self._fake_box(ctx, "", f"{RID}search_box_text", f"{RID}search_box")]
        seen: list[tuple[str, str]] = []
        for url, title, _ in reversed(self.chrome.history):
            if all(u != url for u, _ in seen) and len(seen) < 4:
                seen.append((url, title))
        if seen:
            rows.append(kit.spacer(ctx, 16))
            tile_w = (ctx.width - ctx.dp(32)) // 4
            th = ctx.dp(96)

            def tiles(y: int) -> View:
                grid = View(cls=w.LINEAR, bounds=(ctx.dp(16), y, ctx.width - ctx.dp(16), y + th),
                            rid=f"{RID}mv_tiles_layout")
                for i, (url, title) in enumerate(seen):
                    x = ctx.dp(16) + i * tile_w
                    tile = View(cls=w.FRAME, bounds=(x, y, x + tile_w, y + th), desc=title,
                                clickable=True, focusable=True, on_click=self._open(url))
                    tile.add(w.icon(ctx, x + (tile_w - ctx.dp(48)) // 2, y + ctx.dp(8), 48,
                                    "internet", color="on_icon_bg", bg="primary"))
                    tile.add(w.text(ctx, x + ctx.dp(4), y + ctx.dp(64), tile_w - ctx.dp(8),
                                    title, 12, align="center", rid=f"{RID}tile_view_title"))
                    grid.add(tile)
                return grid
            rows.append((th, tiles))
        return rows

    def _page_google(self, ctx: w.Ctx, page: Page) -> list[w.Row]:
        return [kit.spacer(ctx, 64), self._logo(ctx, 44),
                self._fake_box(ctx, "")]

    def _page_serp(self, ctx: w.Ctx, page: Page) -> list[w.Row]:
        rows = [self._logo(ctx, 28), self._fake_box(ctx, page.query)]
        hits = corpus.search(page.query)
        if not hits:
            rows.append(kit.para(ctx, f"Your search - {page.query} - did not match any "
                                      "documents.", 16))
            return rows
        rows.append(kit.para(ctx, f"About {len(hits)} results", 13, color="on_surface_var"))
        for art in hits:
            parts = urlsplit(art.url)
            crumb = " › ".join([parts.netloc, *[p for p in parts.path.split("/") if p]])
            rows.append(kit.para(ctx, crumb, 13, color="on_surface_var", gap=2))
            rows.append(kit.para(ctx, art.title, 19, color="primary", gap=4,
                                 on_click=self._open(art.url), cls=WEB_VIEW_NODE))
            snippet = art.snippet if len(art.snippet) <= 160 else art.snippet[:157].rsplit(
                " ", 1)[0] + " ..."
            rows.append(kit.para(ctx, snippet, 14, color="on_surface_var", gap=20))
        return rows

    def _page_article(self, ctx: w.Ctx, page: Page) -> list[w.Row]:
        art = corpus.BY_URL[page.url]
        rows = [kit.spacer(ctx, 12), kit.para(ctx, art.site, 14, color="on_surface_var", gap=4),
                kit.para(ctx, art.heading, 26, gap=16)]
        rows += [kit.para(ctx, p, 16, gap=14) for p in art.paragraphs]
        related = [a for a in corpus.ARTICLES if a.topic == art.topic and a is not art][:3]
        if related:
            rows.append(kit.para(ctx, "See also", 20, gap=8))
            for a in related:
                rows.append(kit.para(ctx, a.heading, 16, color="primary", gap=12,
                                     on_click=self._open(a.url), cls=WEB_VIEW_NODE))
        return rows

    def _page_error(self, ctx: w.Ctx, page: Page) -> list[w.Row]:
        host = urlsplit(page.url).hostname or page.url
        if page.error == "ERR_INTERNET_DISCONNECTED":
            title, body = "No internet", "Try: checking the network cables, modem and router; " \
                "reconnecting to Wi-Fi; turning off airplane mode"
        else:
            title, body = "This site can't be reached", \
                f"Check if there is a typo in {host}. DNS_PROBE_FINISHED_NXDOMAIN"
        return [kit.spacer(ctx, 48),
                (ctx.dp(64), lambda y: w.icon(ctx, ctx.dp(24), y, 48, "info")),
                kit.para(ctx, title, 24, x=ctx.dp(24), gap=12),
                kit.para(ctx, body, 15, color="on_surface_var", x=ctx.dp(24), gap=12),
                kit.para(ctx, page.error, 12, color="on_surface_var", x=ctx.dp(24))]

    def _page_history(self, ctx: w.Ctx, page: Page) -> list[w.Row]:
        rows = [kit.para(ctx, "History", 24, gap=12)]
        if not self.chrome.history:
            rows.append(kit.para(ctx, "Pages you've visited appear here", 16,
                                 color="on_surface_var"))
        for url, title, _ in reversed(self.chrome.history):
            rows.append(self._suggestion(ctx, "history", title, display_url(url),
                                         self._open(url)))
        return rows

    # ── menu ─────────────────────────────────────────────────────────────────────────
    def _open_menu(self) -> None:
        self.dialog_open = "menu"

    def build_dialog(self, ctx: w.Ctx) -> View | None:
        if self.dialog_open != "menu":
            return None
        items = [("New tab", lambda: self.go(NTP)),
                 ("History", lambda: self.go(Page(HISTORY_URL, "History", "history")))]
        ih = ctx.dp(48)
        mw = ctx.dp(220)
        x1 = ctx.width - ctx.dp(8)
        y0 = ctx.content[1] + ctx.dp(8)
        card = View(cls=w.FRAME, bounds=(x1 - mw, y0, x1, y0 + ih * len(items) + ctx.dp(16)),
                    package=PKG, paint=Paint("card", bg="dialog", radius=8))
        lst = View(cls="android.widget.ListView", bounds=card.bounds,
                   rid=f"{RID}app_menu_list")
        card.add(lst)
        for i, (label, act) in enumerate(items):
            y = y0 + ctx.dp(8) + i * ih
            row = View(cls=w.LINEAR, bounds=(x1 - mw, y, x1, y + ih), clickable=True,
                       focusable=True, on_click=act, desc=label)
            row.add(w.text(ctx, x1 - mw + ctx.dp(16), y + (ih - ctx.line(16)) // 2,
                           mw - ctx.dp(32), label, 16, rid=f"{RID}menu_item_text"))
            lst.add(row)
        return card


@register
class Chrome(App):
    package = PKG
    label = "Chrome"
    apk_path = "/product/app/Chrome/Chrome.apk"
    launcher_activity = MAIN
    icon = "chrome"
    icon_color = "#ffffff"
    activities: ClassVar[dict[str, type[Activity]]] = {MAIN: ChromeActivity}
    intent_filters = (
        IntentFilter(MAIN, (ACTION_VIEW,), (CATEGORY_DEFAULT, CATEGORY_BROWSABLE),
                     schemes=("http", "https")),
        IntentFilter(MAIN, ("android.intent.action.WEB_SEARCH",)),
    )

    def intent_args(self, activity: str, intent: IntentQuery) -> dict[str, str]:
        return {"url": intent.data} if intent.data else {}

    def on_intent(self, activity: str, args: dict[str, str]) -> None:
        """A VIEW intent opens its URL in the tab (``am start -a VIEW -d URL``)."""
        url = args.get("url")
        if url:
            st = self.host.store
            offline = st.get_bool("global", "airplane_mode_on") and not st.get_bool(
                "global", "wifi_on")
            self.navigate(resolve(url, offline))

    def reset(self) -> None:
        self.tab: list[Page] = [NTP]
        self.history: list[tuple[str, str, float]] = []  # (url, title, wall time)
        kit.remove(self.host.vfs, DATA)

    @property
    def page(self) -> Page:
        return self.tab[-1]

    def navigate(self, page: Page) -> None:
        self.tab.append(page)
        if page.kind in ("serp", "article", "google"):
            self.history.append((page.url, page.title, self.host.wall_time()))
            kit.write(self.host.vfs, HISTORY_DB, history_db(self.history), self.host.wall_time())

    def back(self) -> bool:
        if len(self.tab) <= 1:
            return False
        self.tab.pop()
        return True
