"""Bad input never crashes a phone: the toybox subset, implicit intents, resolve-activity,
the new dumpsys sections, the shade's commands and the socket/reverse services, fed by
hypothesis.

"Crash" means a command fell through to the shell's last line of defence (an
exception logged by ``farm.sim.shell``) or the protocol layer's, or hung. A command
failing with its own usage error is fine — that is what a phone does.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncIterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from farm.sim.adbd.services import resolve_service
from farm.sim.adbd.socket_service import reverse_reply, socket_spec
from farm.sim.intents import IntentFilter, IntentQuery
from farm.sim.phone import SimPhone
from farm.sim.spec import PhoneSpec
from tests.sim.adb_helpers import RawAdbClient

COMMANDS = ["sed", "awk", "find", "ps", "pidof", "md5sum", "stat", "df", "top", "timeout",
            "tr", "cut", "xargs", "kill", "pkill", "pgrep", "am start",
            "cmd package resolve-activity", "pm query-activities", "dumpsys activity recents",
            "dumpsys input_method",
            "am stack remove", "sha1sum", "ime", "ime enable", "ime set", "am broadcast -a",
            "am broadcast -a ADB_INPUT_CHARS --eia chars", "screenrecord --help",
            "sqlite3 /data/data/com.android.providers.contacts/databases/contacts2.db",
            "content delete --uri content://call_log/calls --where",
            "input keycombination", "input keycombination -t", "input motionevent",
            "input motionevent DOWN", "input motionevent UP",
            "content insert --uri content://settings/secure --bind",
            "content update --uri content://settings/global --bind value:s:1 --where",
            "content query --uri content://settings/system --where",
            "cmd statusbar", "cmd statusbar expand-notifications", "cmd notification post",
            "cmd notification post -t", "dumpsys notification", "dumpsys window windows",
            "wait", "read", "read -r", "sleep 0 &", "kill -INT"]
TOKENS = st.one_of(
    st.sampled_from(["-n", "-e", "-E", "-i", "-F", "-v", "-d", "-f", "-c", "-s", "-o", "-A",
                     "-p", "-l", "-9", "-x", "-0", "-I", "{}", "-a", "-t", "--brief",
                     "--components", "-name", "-type", "f", "d", "-maxdepth", "1", "0", "-1",
                     "$", "/sdcard", "/nope", "s/a/b/g", "s/(/x/", "p", "1d", "y/ab/c/",
                     "{print $1}", "{print", "BEGIN{print NR}", "$1 > 2", "/x/", "a-z", "[:upper:]",
                     "1-3", ",", ":", "android.intent.action.VIEW", "https://x.org/a?b#c",
                     "market://details?id=x", "tel:+1", "package:com.android.chrome",
                     "content://contacts/people/1", "android.intent.category.HOME",
                     "vnd.android.cursor.dir/contact", "-W", "-S", "com.android.settings",
                     "system_server", "99999", "1000", "%s %Y %n %q", "0.01", "sleep",
                     "ADB_INPUT_TEXT", "ADB_INPUT_B64", "ADB_INPUT_CODE", "--es", "--ei",
                     "--eia", "msg", "code", "1,2,-3", "com.android.adbkeyboard/.AdbIME",
                     "SELECT * FROM data", ".tables", ".schema", "-csv", "-header",
                     "DROP TABLE data", "type=1", "'x", "SELECT 1;SELECT 2", "113",
                     "KEYCODE_CTRL_LEFT", "29", "67", "DOWN", "MOVE", "UP", "CANCEL", "540",
                     "1e9", "-5", "nan", "name:s:x", "value:i:z", "value:b:true",
                     "name:n:", "x:q:1", "name='wifi_on'", "--bind", "expand-settings",
                     "collapse", "--noredact", "--title", "-S", "bigtext"]),
    st.text(alphabet=st.characters(codec="utf-8", max_codepoint=0x2FF),
            max_size=12),
)


def _quote(token: str) -> str:
    return "'" + token.replace("'", "'\\''") + "'"


@pytest.fixture(scope="module")
def phone() -> SimPhone:
    p = SimPhone(PhoneSpec(name="fuzz", seed=11))
    asyncio.run(p.run_shell("mkdir -p /sdcard/f; printf 'a:1\\nb:2\\n' > /sdcard/f/kv"))
    return p


def _run(phone: SimPhone, line: str) -> tuple[int, bytes]:
    async def go() -> tuple[int, bytes]:
        r = await asyncio.wait_for(phone.run_shell(line), 30)
        return r.exit_code, r.stderr_bytes
    return asyncio.run(go())


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@given(cmd=st.sampled_from(COMMANDS), args=st.lists(TOKENS, max_size=6),
       stdin=st.text(max_size=40))
def test_new_commands_never_crash(phone: SimPhone, cmd: str, args: list[str], stdin: str,
                                  caplog: pytest.LogCaptureFixture) -> None:
    caplog.clear()
    line = f"printf %s {_quote(stdin)} | {cmd} {' '.join(_quote(a) for a in args)}"
    with caplog.at_level(logging.ERROR, logger="farm.sim"):
        code, err = _run(phone, line)
    assert 0 <= code <= 255
    assert b"internal error" not in err, (line, err)
    crashes = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not crashes, (line, [r.getMessage() for r in crashes])


@given(st.text(max_size=80))
def test_service_names_resolve_or_refuse(name: str) -> None:
    resolve_service(name)  # a handler or None, never an exception
    socket_spec(name)


class _Table:
    def __init__(self) -> None:
        self.reverse: dict[str, str] = {}
        self.device_serial = "host-20"


@given(st.lists(st.one_of(
    st.text(max_size=40),
    st.builds(lambda a, b: f"forward:{a};{b}", st.text(max_size=12), st.text(max_size=12)),
    st.builds(lambda a: f"killforward:{a}", st.text(max_size=12)),
    st.sampled_from(["list-forward", "killforward-all", "forward:norebind:tcp:1;tcp:2",
                     "forward:tcp:0;tcp:9"]),
), max_size=8))
def test_reverse_requests_always_answer(requests: list[str]) -> None:
    table = _Table()
    for req in requests:
        reply = reverse_reply(req, table)
        assert reply[:4] in (b"OKAY", b"FAIL") or int(reply[:4], 16) == len(reply) - 4


@given(action=st.text(max_size=20), cats=st.lists(st.text(max_size=10), max_size=3),
       data=st.text(max_size=30), mime=st.text(max_size=15))
def test_intent_filters_match_any_query(action: str, cats: list[str], data: str,
                                        mime: str) -> None:
    q = IntentQuery(action, tuple(cats), data, mime)
    for f in (IntentFilter("A", ("android.intent.action.VIEW",), schemes=("http", "https")),
              IntentFilter("B", ("X",), schemes=("content",), authorities=("contacts",),
                           path=r"/people/\d+"),
              IntentFilter("C", ("Y",), mimes=("vnd.android.cursor.dir/*",))):
        assert f.match(q) >= 0


@pytest.fixture
async def served() -> AsyncIterator[SimPhone]:
    p = SimPhone(PhoneSpec(name="fuzz-net", seed=12))
    await p.start()
    try:
        yield p
    finally:
        await p.stop()


async def test_random_socket_and_reverse_opens_leave_the_phone_serving(
        served: SimPhone) -> None:
    rng = random.Random(5)
    alphabet = "tcp:localabstract:reverse:forward;killforward-all0123456789:/*\x00\xff é"
    c = await RawAdbClient.connected(served.port)
    try:
        for _ in range(150):
            prefix = rng.choice(["tcp:", "localabstract:", "reverse:", "reverse:forward:",
                                 "localfilesystem:", "dev:", ""])
            name = prefix + "".join(rng.choice(alphabet) for _ in range(rng.randrange(12)))
            stream = await c.open(name.encode("utf-8", "replace"))
            if stream is not None:
                await stream.read_until_close()
        assert await c.run("exec:echo alive") == b"alive\n"
    finally:
        await c.close()
