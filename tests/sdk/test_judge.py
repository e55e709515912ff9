"""ModelJudge (backend-agnostic part): screens in, prompt built, verdict parsed."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from distrl_sdk.errors import TaskError
from distrl_sdk.evaluators import JudgeBackend, ModelJudge, parse_verdict, safe_evaluate
from distrl_sdk.trajectory import Step, Trajectory
from tests.sdk.sim_device import SimDevice


class FakeBackend(JudgeBackend):
    name = "fake"

    def __init__(self, reply: str | object = "Status: success") -> None:
        self.reply = reply
        self.calls: list[tuple[list[bytes], str]] = []

    async def judge(self, images: list[bytes], prompt: str) -> str:
        self.calls.append((images, prompt))
        return self.reply  # type: ignore[return-value]


@pytest.mark.parametrize(("reply", "verdict"), [
    ("The screen shows Wi-Fi off.\nStatus: success", True),
    ("Status: failure", False),
    ("**Status:** Success", True),
    ("status - FAILED", False),
    ("Status: not successful", False),
    ("Status: unsuccessful", False),
    ("Status: completed", True),
    ("Status: incomplete", False),
    ("Status: success? No wait.\nStatus: failure", False),  # the last one counts
    ("Verdict: yes", True),
    ("Final answer: No.", False),
    ("Yes, the alarm is set.", True),
    ("no", False),
    ("I am not sure what the screen shows", None),
    ("", None),
    ("The task was a success", None),  # prose without a labelled verdict is not trusted
])
def test_parse_verdict(reply: str, verdict: bool | None) -> None:
    assert parse_verdict(reply) is verdict


def _png(color: tuple[int, int, int]) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (8, 8), color).save(out, "PNG")
    return out.getvalue()


async def test_model_judge_sends_final_screen_and_task() -> None:
    dev = SimDevice()
    backend = FakeBackend("The Settings app is open.\nStatus: success")
    judge = ModelJudge(backend)
    t = Trajectory(task="settings.open", instruction="Open the Settings app")
    assert await judge.evaluate(dev, t, {}) == 1.0
    (images, prompt), = backend.calls
    assert images == [await dev.screenshot_png()]
    assert images[0].startswith(b"\x89PNG")
    assert "Task: Open the Settings app" in prompt and "Status: success" in prompt
    assert judge.last_verdict is True and judge.describe() == "judge(fake, last 1 screen(s))"

    backend.reply = "Status: failure"
    assert await judge.evaluate(dev, t, {}) == 0.0


async def test_model_judge_takes_earlier_screens_from_steps() -> None:
    dev = SimDevice()
    backend = FakeBackend()
    red, green, blue = _png((255, 0, 0)), _png((0, 255, 0)), _png((0, 0, 255))
    t = Trajectory(task="t", instruction="i", answer="42", steps=[
        Step(0, None, info={"screenshot_png": red}),
        Step(1, None),  # no screenshot recorded: skipped
        Step(2, None, info={"screenshot_png": green}),
        Step(3, None, info={"screenshot_png": blue}),
    ])
    judge = ModelJudge(backend, last_n_screens=3,
                       prompt_template="{task} for {who}; answer {answer}; {n_screens} screens")
    await judge.evaluate(dev, t, {"who": "me"})
    images, prompt = backend.calls[-1]
    assert images[:2] == [green, blue] and len(images) == 3
    assert prompt == "i for me; answer 42; 3 screens"


async def test_unparsed_verdict_policy() -> None:
    dev = SimDevice()
    t = Trajectory(task="t", instruction="i")
    assert await ModelJudge(FakeBackend("hmm")).evaluate(dev, t, {}) == 0.0
    strict = ModelJudge(FakeBackend("hmm"), on_unparsed="error")
    out = await safe_evaluate(strict, dev, t, {})
    assert isinstance(out.error, TaskError) and "gave no verdict" in str(out.error)
    out = await safe_evaluate(ModelJudge(FakeBackend(None)), dev, t, {})
    assert isinstance(out.error, TaskError) and "not text" in str(out.error)
    with pytest.raises(TaskError):
        ModelJudge(FakeBackend(), last_n_screens=0)
