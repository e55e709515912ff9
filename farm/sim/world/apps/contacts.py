"""Contacts (com.google.android.contacts): list + search, create/edit, details, delete.

The data lives in Contacts Storage (``contacts_provider``); this app only shows and edits it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from farm.sim.intents import ACTION_VIEW, IntentFilter, IntentQuery
from farm.sim.world import widgets as w
from farm.sim.world.apps import kit
from farm.sim.world.apps.base import Activity, App, Host, register
from farm.sim.world.apps.contacts_provider import PKG as PROVIDER_PKG
from farm.sim.world.apps.contacts_provider import Contact, ContactsProvider
from farm.sim.world.views import Paint, TextField, View

PKG = "com.google.android.contacts"
PEOPLE = "com.android.contacts.activities.PeopleActivity"
EDITOR = "com.android.contacts.activities.ContactEditorActivity"
DETAIL = "com.android.contacts.quickcontact.QuickContactActivity"
RID = f"{PKG}:id/"
_AVATAR_COLORS = ("#1a73e8", "#d93025", "#188038", "#e37400", "#9334e6", "#007b83", "#c5221f")
FIELDS = (("first_name", "First name"), ("last_name", "Last name"), ("company", "Company"),
          ("phone", "Phone"), ("email", "Email"))


def avatar(ctx: w.Ctx, x: int, y: int, size: float, c: Contact) -> View:
    s = ctx.dp(size)
    letter = (c.display_name[:1] or "?").upper()
    v = View(cls=w.IMAGE_VIEW, bounds=(x, y, x + s, y + s), rid=f"{RID}avatar",
             paint=Paint("fill", bg=_AVATAR_COLORS[c.id % len(_AVATAR_COLORS)],
                         radius=size / 2))
    v.add(View(cls=w.VIEW_GROUP, bounds=v.bounds,
               paint=Paint("text", text=letter, color="on_icon_bg", size=size * 0.45,
                           align="center")))
    return v


class ContactsActivity(Activity):
    def __init__(self, app: App, host: Host, name: str, args: dict[str, str]) -> None:
        super().__init__(app, host, name, args)
        db = host.app(PROVIDER_PKG)
        assert isinstance(db, ContactsProvider)
        self.db = db

    def open_detail(self, cid: int) -> Callable[[], None]:
        return lambda: self.host.start(PKG, DETAIL, {"id": str(cid)})


class PeopleActivity(ContactsActivity):
    def __init__(self, app: App, host: Host, name: str, args: dict[str, str]) -> None:
        super().__init__(app, host, name, args)
        self.query = TextField(hint="Search contacts")
        self.query.on_submit = lambda _t: self.host.focus(self, None)
        self.searching = False

    def _start_search(self) -> None:
        self.searching = True
        self.host.focus(self, self.query)

    def _end_search(self) -> None:
        self.searching = False
        self.query.set("")
        self.host.focus(self, None)

    def on_back(self) -> bool:
        if self.searching:
            self._end_search()
            return True
        return super().on_back()

    def build(self, ctx: w.Ctx) -> View:
        c = ctx.content
        root = View(cls=w.FRAME, bounds=c, paint=Paint("fill", bg="bg"))
        m = ctx.dp(16)
        y = c[1] + ctx.dp(8)
        bh = ctx.dp(56)
        bar = View(cls=w.FRAME, bounds=(m, y, ctx.width - m, y + bh), rid=f"{RID}open_search_bar",
                   clickable=not self.searching, focusable=True,
                   on_click=None if self.searching else self._start_search,
                   paint=Paint("fill", bg="search_bg", radius=28))
        if self.searching:
            bar.add(kit.icon_button(ctx, m + ctx.dp(4), y + ctx.dp(4), "arrow_back",
                                    "Navigate up", "", self._end_search))
            bar.add(w.edit_text(ctx, (m + ctx.dp(56), y, ctx.width - m - ctx.dp(16), y + bh),
                                self.query, self.focus is self.query, rid=f"{RID}search_view",
                                on_focus=self.focus_field(self.query), size=16, boxed=False))
        else:
            bar.add(w.icon(ctx, m + ctx.dp(16), y + (bh - ctx.dp(24)) // 2, 24, "search"))
            bar.add(w.text(ctx, m + ctx.dp(56), y + (bh - ctx.line(16)) // 2,
                           ctx.width - 2 * m - ctx.dp(72), "Search contacts", 16,
                           "on_surface_var", rid=f"{RID}open_search_bar_text_view"))
        root.add(bar)
        top = y + bh + ctx.dp(8)
        root.add(w.scroll_list(ctx, self.scroll, "people", (0, top, ctx.width, c[3]),
                               self._rows(ctx), rid=f"{RID}contact_list",
                               bottom_pad=ctx.dp(88)))
        if not self.searching:
            root.add(kit.fab(ctx, "add", "Create contact", f"{RID}floating_action_button",
                             lambda: self.host.start(PKG, EDITOR), label="Create contact"))
        return root

    def _rows(self, ctx: w.Ctx) -> list[w.Row]:
        q = self.query.text.strip().lower() if self.searching else ""
        contacts = [c for c in self.db.sorted() if not q or q in c.display_name.lower()
                    or q in c.phone.replace(" ", "").replace("-", "")
                    .replace("(", "").replace(")", "") or q in c.phone or q in c.email.lower()]
        rows: list[w.Row] = []
        if not contacts:
            rows.append(kit.para(ctx, "No contacts" if not q else f'No results for "{q}"', 16,
                                 color="on_surface_var", x=ctx.dp(24), rid=f"{RID}empty_text"))
        if not q:
            fav = [c for c in contacts if c.starred]
            if fav:
                rows.append(self._header(ctx, "Favorites"))
                rows += [self._row(ctx, c) for c in fav]
                rows.append(self._header(ctx, "Contacts"))
            else:
                rows.append(self._header(ctx, f"Contacts ({len(contacts)})"))
        rows += [self._row(ctx, c) for c in contacts]
        return rows

    def _header(self, ctx: w.Ctx, text: str) -> w.Row:
        return kit.para(ctx, text, 14, color="primary", x=ctx.dp(24), gap=8)

    def _row(self, ctx: w.Ctx, c: Contact) -> w.Row:
        h = ctx.dp(64)

        def build(y: int) -> View:
            row = View(cls=w.LINEAR, bounds=(0, y, ctx.width, y + h), clickable=True,
                       focusable=True, long_clickable=True, on_click=self.open_detail(c.id),
                       rid=f"{RID}cliv_container")
            row.add(avatar(ctx, ctx.dp(24), y + ctx.dp(12), 40, c))
            x = ctx.dp(80)
            row.add(w.text(ctx, x, y + (h - ctx.line(16)) // 2, ctx.width - x - ctx.dp(16),
                           c.display_name, 16, rid=f"{RID}cliv_name_textview"))
            return row
        return (h, build)


class EditorActivity(ContactsActivity):
    def __init__(self, app: App, host: Host, name: str, args: dict[str, str]) -> None:
        super().__init__(app, host, name, args)
        self.cid = int(args["id"]) if args.get("id", "").isdecimal() else None
        c = self.db.get(self.cid) if self.cid is not None else None
        values = ((c.first, c.last, c.company, c.phone, c.email) if c is not None
                  else ("", "", "", "", ""))
        self.fields: list[TextField] = []
        for (_, hint), value in zip(FIELDS, values, strict=True):
            self.fields.append(TextField(hint=hint, text=value))
        for i, f in enumerate(self.fields):
            nxt = self.fields[i + 1] if i + 1 < len(self.fields) else None
            f.on_submit = self._next(nxt)

    def _next(self, nxt: TextField | None) -> Callable[[str], None]:
        return lambda _t: self.host.focus(self, nxt)

    def _save(self) -> None:
        first, last, company, phone, email = (f.text.strip() for f in self.fields)
        self.host.focus(self, None)
        if not any((first, last, company, phone, email)):
            self.finish()
            return
        c = self.db.save(self.cid, first, last, phone, email, company)
        self.finish()
        if self.cid is None:
            self.host.start(PKG, DETAIL, {"id": str(c.id)})

    def build(self, ctx: w.Ctx) -> View:
        c = ctx.content
        root = View(cls=w.FRAME, bounds=c, paint=Paint("fill", bg="bg"))
        tb = kit.toolbar(ctx, "Create contact" if self.cid is None else "Edit contact", PKG,
                         on_up=self.finish, up_icon="close", up_desc="Cancel",
                         title_rid=f"{RID}title")
        sw = ctx.text_w("Save", 14) + ctx.dp(40)
        tb.add(w.button(ctx, (ctx.width - ctx.dp(16) - sw, tb.bounds[1] + ctx.dp(12),
                              ctx.width - ctx.dp(16), tb.bounds[3] - ctx.dp(12)), "Save",
                        rid=f"{RID}editor_menu_save_button", filled=True, on_click=self._save))
        root.add(tb)
        rows: list[w.Row] = []
        icons = ("person", "", "info", "phone", "email")
        for (rid, _), f, glyph in zip(FIELDS, self.fields, icons, strict=True):
            rows.append(self._field_row(ctx, f, rid, glyph))
        root.add(w.scroll_list(ctx, self.scroll, "editor", (0, tb.bounds[3], ctx.width, c[3]),
                               rows, rid=f"{RID}editors", cls="android.widget.ScrollView",
                               bottom_pad=ctx.dp(24)))
        return root

    def _field_row(self, ctx: w.Ctx, f: TextField, rid: str, glyph: str) -> w.Row:
        h = ctx.dp(72)

        def build(y: int) -> View:
            row = View(cls=w.LINEAR, bounds=(0, y, ctx.width, y + h))
            if glyph:
                row.add(w.icon(ctx, ctx.dp(20), y + (h - ctx.dp(24)) // 2, 24, glyph))
            x = ctx.dp(64)
            row.add(w.edit_text(ctx, (x, y + ctx.dp(10), ctx.width - ctx.dp(20), y + h - ctx.dp(6)),
                                f, self.focus is f, rid=f"{RID}{rid}",
                                on_focus=self.focus_field(f), size=16, boxed=False))
            return row
        return (h, build)


class DetailActivity(ContactsActivity):
    def _contact(self) -> Contact | None:
        cid = self.args.get("id", "")
        return self.db.get(int(cid)) if cid.isdecimal() else None

    def build(self, ctx: w.Ctx) -> View:
        c = ctx.content
        root = View(cls=w.FRAME, bounds=c, paint=Paint("fill", bg="bg"))
        ct = self._contact()
        actions: list[kit.Action] = []
        if ct is not None:
            actions = [
                ("star" if ct.starred else "star_border",
                 "Remove from favorites" if ct.starred else "Add to favorites",
                 f"{RID}menu_star", self._star),
                ("edit", "Edit contact", f"{RID}menu_edit",
                 lambda: self.host.start(PKG, EDITOR, {"id": str(ct.id)})),
                ("delete", "Delete", f"{RID}menu_delete", self._ask_delete)]
        tb = kit.toolbar(ctx, "", PKG, on_up=self.finish, actions=actions)
        root.add(tb)
        if ct is None:
            root.add(w.text(ctx, 0, tb.bounds[3] + ctx.dp(32), ctx.width, "Contact not found",
                            18, align="center"))
            return root
        rows: list[w.Row] = [
            (ctx.dp(136), lambda y: avatar(ctx, (ctx.width - ctx.dp(120)) // 2, y + ctx.dp(8),
                                           120, ct)),
            kit.para(ctx, ct.display_name, 28, rid=f"{RID}large_title", gap=4),
        ]
        if ct.company:
            rows.append(kit.para(ctx, ct.company, 16, color="on_surface_var",
                                 rid=f"{RID}organization", gap=4))
        rows.append(kit.spacer(ctx, 16))
        rows.append(kit.para(ctx, "Contact info", 16, gap=4))
        if ct.phone:
            rows.append(self._info(ctx, "phone", ct.phone, "Mobile"))
        if ct.email:
            rows.append(self._info(ctx, "email", ct.email, "Home"))
        if not ct.phone and not ct.email:
            rows.append(kit.para(ctx, "No contact info", 14, color="on_surface_var"))
        root.add(w.scroll_list(ctx, self.scroll, "detail", (0, tb.bounds[3], ctx.width, c[3]),
                               rows, rid=f"{RID}quickcontact_scroll",
                               cls="android.widget.ScrollView"))
        return root

    def _info(self, ctx: w.Ctx, glyph: str, value: str, kind: str) -> w.Row:
        h = ctx.dp(72)

        def build(y: int) -> View:
            row = View(cls=w.LINEAR, bounds=(0, y, ctx.width, y + h), clickable=True,
                       focusable=True, on_click=lambda: None, rid=f"{RID}expanding_entry")
            row.add(w.icon(ctx, ctx.dp(24), y + (h - ctx.dp(24)) // 2, 24, glyph))
            x = ctx.dp(72)
            ty = y + (h - ctx.line(16) - ctx.line(13)) // 2
            row.add(w.text(ctx, x, ty, ctx.width - x - ctx.dp(16), value, 16, rid=f"{RID}header"))
            row.add(w.text(ctx, x, ty + ctx.line(16), ctx.width - x - ctx.dp(16), kind, 13,
                           "on_surface_var", rid=f"{RID}sub_header"))
            return row
        return (h, build)

    def _star(self) -> None:
        ct = self._contact()
        if ct is not None:
            ct.starred = not ct.starred

    def _ask_delete(self) -> None:
        self.dialog_open = "delete"

    def build_dialog(self, ctx: w.Ctx) -> View | None:
        if self.dialog_open != "delete":
            return None

        def body(x: int, y: int, width: int) -> tuple[list[View], int]:
            v = w.text(ctx, x, y, width, "This contact will be permanently deleted.", 14,
                       "on_surface_var", rid="android:id/message", lines=2)
            return [v], v.bounds[3] - v.bounds[1]

        def delete() -> None:
            ct = self._contact()
            self.dialog_open = ""
            if ct is not None:
                self.db.delete(ct.id)
            self.finish()
        return w.dialog(ctx, "Delete this contact?", body,
                        [("Delete", "android:id/button1", delete),
                         ("Cancel", "android:id/button2", self._cancel)], package=PKG)

    def _cancel(self) -> None:
        self.dialog_open = ""


@register
class Contacts(App):
    package = PKG
    label = "Contacts"
    apk_path = "/product/app/GoogleContacts/GoogleContacts.apk"
    launcher_activity = PEOPLE
    icon = "person"
    icon_color = "#1a73e8"
    activities: ClassVar[dict[str, type[Activity]]] = {
        PEOPLE: PeopleActivity, EDITOR: EditorActivity, DETAIL: DetailActivity}
    intent_filters = (
        IntentFilter(DETAIL, (ACTION_VIEW,), schemes=("content",),
                     authorities=("com.android.contacts", "contacts"),
                     path=r"/(contacts|people)/\d+(/.*)?"),
        IntentFilter(PEOPLE, (ACTION_VIEW,), schemes=("content",),
                     authorities=("com.android.contacts", "contacts"),
                     path=r"(/(contacts|people))?/?"),
        IntentFilter(EDITOR, ("android.intent.action.INSERT",),
                     mimes=("vnd.android.cursor.dir/contact",
                            "vnd.android.cursor.dir/raw_contact")),
    )

    def intent_args(self, activity: str, intent: IntentQuery) -> dict[str, str]:
        tail = intent.data.rstrip("/").rsplit("/", 1)[-1]
        return {"id": tail} if activity == DETAIL and tail.isdecimal() else {}
