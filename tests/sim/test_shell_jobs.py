"""Background jobs in the sim shell, as scripts on a phone use them (adbutils' screen
recording: `cmd &`, `PID=$!`, `read` on the stream's stdin, `kill -INT $PID`, `wait`),
and `sh FILE ARGS` setting $1 …"""

from __future__ import annotations

import asyncio

import pytest

from farm.sim.phone import SimPhone
from farm.sim.spec import PhoneSpec
from tests.sim.test_ime import sh


class Stdin:
    """A stream's stdin that delivers a line when told to."""

    def __init__(self) -> None:
        self.lines: asyncio.Queue[bytes] = asyncio.Queue()

    async def readline(self) -> bytes:
        return await self.lines.get()


@pytest.fixture
async def phone() -> SimPhone:
    return SimPhone(PhoneSpec(name="jobs", seed=1))


async def test_a_job_runs_beside_the_shell_and_wait_collects_it(phone: SimPhone) -> None:
    code, out, _ = await sh(phone, "(sleep 0.2; echo late) & echo first; wait; echo done")
    assert code == 0 and out.splitlines() == ["first", "late", "done"]
    code, out, _ = await sh(phone, "sleep 30 & P=$!; kill -INT $P; wait $P; echo $?")
    assert out.strip() == "130"  # ended by SIGINT, reported as 128 + 2
    for sig, status in (("TERM", "143"), ("KILL", "137"), ("9", "137")):
        code, out, _ = await sh(phone, f"sleep 30 & P=$!; kill -{sig} $P; wait $P; echo $?")
        assert out.strip() == status, sig  # 128 + the signal's number, as sh reports
    assert (await sh(phone, "wait 4242; echo $?"))[1].strip() == "127"
    code, out, _ = await sh(phone, "echo a b c | read x y; echo $x/$y")
    assert out.strip() == "a/b c"


async def test_jobs_left_running_end_with_the_command_line(phone: SimPhone) -> None:
    t0 = asyncio.get_running_loop().time()
    code, _out, _ = await asyncio.wait_for(sh(phone, "sleep 30 &"), 5)
    assert code == 0 and asyncio.get_running_loop().time() - t0 < 5


async def test_adbutils_recording_script_stops_on_the_newline(phone: SimPhone) -> None:
    script = ('screenrecord --time-limit 30 "$1" &\nPID=$!\nread ANY\nkill -INT $PID\n'
              'wait\n')
    phone.vfs.write("/sdcard/rec.sh", script.encode())
    stdin = Stdin()
    run = asyncio.create_task(phone.run_shell("sh /sdcard/rec.sh /sdcard/v.mp4",
                                              live_stdin=stdin))
    await asyncio.sleep(1.0)
    assert not run.done()  # recording, waiting for the newline
    await stdin.lines.put(b"\n")
    result = await asyncio.wait_for(run, 20)
    assert result.exit_code == 0, result.stderr_bytes
    assert phone.vfs.read("/sdcard/v.mp4")[4:8] == b"ftyp"  # a finished MP4
