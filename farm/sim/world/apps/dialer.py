"""Phone (com.google.android.dialer): a dialpad for ``DIAL`` and an in-call screen for
``CALL``, as agent stacks place calls (``am start -a android.intent.action.CALL -d
tel:N``).

A sim call reaches nobody: it is "Dialing" until it ends, by the End call button or
``KEYCODE_ENDCALL``. While it lasts the line is off-hook (``dumpsys telephony.registry``
says ``mCallState=2``); when it ends, an outgoing entry with its duration goes into the
call log (Contacts Storage), as the telecom service writes it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from farm.sim.intents import ACTION_VIEW, IntentFilter, IntentQuery
from farm.sim.world import widgets as w
from farm.sim.world.apps import kit
from farm.sim.world.apps.base import Activity, App, Host, register
from farm.sim.world.apps.contacts_provider import (
    INCOMING,
    MISSED,
    OUTGOING,
    ContactsProvider,
    normalize_phone,
)
from farm.sim.world.apps.contacts_provider import PKG as PROVIDER_PKG
from farm.sim.world.views import Paint, TextField, View

PKG = "com.google.android.dialer"
DIALPAD = "com.google.android.dialer.extensions.GoogleDialtactsActivity"
INCALL = "com.android.incallui.InCallActivity"
RID = f"{PKG}:id/"
ACTION_DIAL = "android.intent.action.DIAL"
ACTION_CALL = "android.intent.action.CALL"
# TelephonyManager.CALL_STATE_*
IDLE, RINGING, OFFHOOK = 0, 1, 2
KEYS = ("1", "2", "3", "4", "5", "6", "7", "8", "9", "*", "0", "#")


@dataclass
class Call:
    number: str
    started: float  # wall time, seconds
    incoming: bool = False
    answered: bool = True  # an incoming call rings until accepted


def _number(data: str) -> str:
    """The number of a ``tel:`` URI (``tel:+1%20650`` → ``+1 650``)."""
    from urllib.parse import unquote

    return unquote(data.partition(":")[2]) if data.lower().startswith("tel:") else ""


class DialpadActivity(Activity):
    def __init__(self, app: App, host: Host, name: str, args: dict[str, str]) -> None:
        super().__init__(app, host, name, args)
        self.digits = TextField(hint="", text=args.get("number", ""))

    def build(self, ctx: w.Ctx) -> View:
        c = ctx.content
        root = View(cls=w.FRAME, bounds=c, paint=Paint("fill", bg="bg"), rid=f"{RID}dialpad")
        shown = self.digits.text
        root.add(w.text(ctx, ctx.dp(24), c[1] + ctx.dp(48), ctx.width - ctx.dp(48), shown, 34,
                        rid=f"{RID}digits", align="center"))
        cell_w, cell_h = ctx.width // 3, ctx.dp(72)
        top = c[1] + ctx.dp(140)
        for i, key in enumerate(KEYS):
            x, y = (i % 3) * cell_w, top + (i // 3) * cell_h
            root.add(w.button(ctx, (x, y, x + cell_w, y + cell_h), key,
                              rid=f"{RID}dialpad_key_{key}",
                              on_click=self._press(key)))
        y = top + 4 * cell_h + ctx.dp(16)
        s = ctx.dp(64)
        x = (ctx.width - s) // 2
        root.add(kit.icon_button(ctx, x, y, "phone", "dial", f"{RID}dialpad_voice_call_button",
                                 self._call, size=64, color="on_primary", bg="primary"))
        return root

    def _press(self, key: str) -> Callable[[], None]:
        return lambda: self.digits.insert(key)

    def _call(self) -> None:
        if self.digits.text:
            app = self.app
            assert isinstance(app, Dialer)
            app.place_call(self.digits.text)


class InCallActivity(Activity):
    def __init__(self, app: App, host: Host, name: str, args: dict[str, str]) -> None:
        super().__init__(app, host, name, args)
        assert isinstance(app, Dialer)
        app.screens.append(self)  # closed when the call ends, however it ends

    def build(self, ctx: w.Ctx) -> View:
        c = ctx.content
        app = self.app
        assert isinstance(app, Dialer)
        root = View(cls=w.FRAME, bounds=c, paint=Paint("fill", bg="surface_var"),
                    rid=f"{RID}incall_screen")
        call = app.call
        who = app.caller_name(call.number) if call else ""
        root.add(w.text(ctx, 0, c[1] + ctx.dp(96), ctx.width, who or (call.number if call
                                                                        else ""), 34,
                        rid=f"{RID}contactgrid_contact_name", align="center"))
        if call is not None and who:
            root.add(w.text(ctx, 0, c[1] + ctx.dp(150), ctx.width, call.number, 16,
                            "on_surface_var", rid=f"{RID}contactgrid_phone_number",
                            align="center"))
        status = "Call ended" if call is None else "Incoming call" if not call.answered \
            else "Dialing" if not call.incoming else "On call"
        root.add(w.text(ctx, 0, c[1] + ctx.dp(184), ctx.width, status, 16, "on_surface_var",
                        rid=f"{RID}contactgrid_status_text", align="center"))
        s = ctx.dp(72)
        root.add(kit.icon_button(ctx, (ctx.width - s) // 2, c[3] - ctx.dp(120), "phone",
                                 "End call", f"{RID}incall_end_call_button", app.end_call,
                                 size=72, color="on_primary", bg="error"))
        return root


@register
class Dialer(App):
    package = PKG
    label = "Phone"
    apk_path = "/product/priv-app/GoogleDialer/GoogleDialer.apk"
    launcher_activity = DIALPAD
    icon = "phone"
    icon_color = "#1a73e8"
    activities: ClassVar[dict[str, type[Activity]]] = {
        DIALPAD: DialpadActivity, INCALL: InCallActivity}
    intent_filters = (
        # VIEW tel: (a "Call us" link, a contact's number) opens the dialpad, as DIAL does
        IntentFilter(DIALPAD, (ACTION_DIAL, ACTION_VIEW), schemes=("tel",)),
        IntentFilter(DIALPAD, (ACTION_DIAL,)),
        IntentFilter(INCALL, (ACTION_CALL,), schemes=("tel",)),
    )

    def reset(self) -> None:
        self.call: Call | None = None
        self.screens: list[InCallActivity] = []

    def intent_args(self, activity: str, intent: IntentQuery) -> dict[str, str]:
        number = _number(intent.data)
        return {"number": number} if number else {}

    def on_intent(self, activity: str, args: dict[str, str]) -> None:
        if activity == INCALL and args.get("number"):
            self.place_call(args["number"], show=False)

    def _provider(self) -> ContactsProvider:
        db = self.host.app(PROVIDER_PKG)
        assert isinstance(db, ContactsProvider)
        return db

    def caller_name(self, number: str) -> str:
        want = normalize_phone(number)
        for c in self._provider().contacts:
            if want is not None and normalize_phone(c.phone) == want:
                return c.display_name
        return ""

    def place_call(self, number: str, *, show: bool = True) -> None:
        """Dial ``number`` (one call at a time: a new one ends the current)."""
        if self.call is not None:
            self.end_call()
        self.call = Call(number, self.host.wall_time())
        if show:
            self.host.start(PKG, INCALL, {"number": number})
        self.host.data_changed()

    def ring(self, number: str) -> None:
        """An incoming call (the emulator console's ``gsm call``): RINGING, with its
        number in telephony.registry and the in-call screen up, until accepted or ended."""
        if self.call is not None:
            self.end_call()
        self.call = Call(number, self.host.wall_time(), incoming=True, answered=False)
        self.host.start(PKG, INCALL, {"number": number})
        self.host.data_changed()

    def accept(self) -> bool:
        if self.call is None or self.call.answered:
            return False
        self.call.answered, self.call.started = True, self.host.wall_time()
        self.host.data_changed()
        return True

    def end_call(self) -> None:
        call, self.call = self.call, None
        if call is None:
            return
        duration = max(0, int(self.host.wall_time() - call.started)) if call.answered else 0
        kind = OUTGOING if not call.incoming else INCOMING if call.answered else MISSED
        self._provider().add_call(call.number, kind, duration, int(call.started * 1000))
        screens, self.screens = self.screens, []
        for screen in screens:
            self.host.finish(screen)
        self.host.data_changed()

    def line_state(self) -> tuple[int, str]:
        """(TelephonyManager call state, incoming number) for telephony.registry."""
        if self.call is None:
            return IDLE, ""
        if not self.call.answered:
            return RINGING, self.call.number
        return OFFHOOK, ""
