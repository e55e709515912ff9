"""The UI-tree action space's extensions (ENTER, typed spans of the instruction, answers)
and the overlap-feature switch: what is offered when, what each candidate does, how
demonstrated actions map onto candidates, and decide/evaluate agreeing on all of it."""

from __future__ import annotations

import math

import pytest
import torch

from distrl_sdk.actions import Answer, Complete, Key, LongPress, OpenApp, Scroll, Tap, TypeText
from distrl_sdk.learn.api import StepRecord
from distrl_sdk.policies.uitree import (
    UITreePolicy,
    candidate_action,
    encode_observation,
    instruction_spans,
    match_action,
)
from distrl_sdk.policy import Observation
from distrl_sdk.uitree import Bounds, UIElement

SMALL = {"buckets": 512, "embed_dim": 8, "hidden": 16, "seed": 0}


def _el(i: int, text: str, box: tuple[int, int, int, int], *, parent: int | None = 0,
        cls: str = "android.widget.TextView", clickable: bool = False,
        focused: bool = False) -> UIElement:
    return UIElement(index=i, depth=0 if parent is None else 1, parent=parent, text=text,
                     resource_id=f"app:id/e{i}", class_name=cls, package="app",
                     content_desc="", bounds=Bounds(*box), clickable=clickable,
                     focusable=focused, focused=focused)


def _screen(focused: bool) -> list[UIElement]:
    return [_el(0, "", (0, 0, 1000, 2000), parent=None),
            _el(1, "", (0, 100, 1000, 300), cls="android.widget.EditText", clickable=True,
                focused=focused),
            _el(2, "Save", (0, 400, 1000, 500), clickable=True),
            _el(3, "Save", (400, 420, 600, 480)),  # a label inside the button
            _el(4, "Email alice@example.com", (0, 600, 1000, 700)),
            _el(5, "21°C", (0, 800, 1000, 900))]


ADD = "Add a new contact named Liam Rossi with the phone number 6505550142"
ASK = "What is Alice's email address? Look it up in Contacts."


def _kinds(enc: dict) -> list[str]:  # type: ignore[type-arg]
    return [c[0] for c in enc["c"]]


def test_typing_candidates_only_while_a_text_field_has_focus() -> None:
    cfg = UITreePolicy.from_config(SMALL).config
    idle = encode_observation(Observation(ADD, _screen(False), (1000, 2000), 0), cfg)
    assert "enter" not in _kinds(idle) and "type" not in _kinds(idle)  # no quoted phrase
    typing = encode_observation(Observation(ADD, _screen(True), (1000, 2000), 1), cfg)
    typed = [c[1] for c in typing["c"] if c[0] == "type"]
    assert {"Liam", "Rossi", "Liam Rossi", "6505550142"} <= set(typed)
    assert not {"named", "the phone", "Add"} & set(typed)  # glue never bounds a span
    assert "enter" in _kinds(typing) and "answer" not in _kinds(typing)  # not a question


def test_spans_split_times_and_strip_punctuation() -> None:
    assert {"9", "13"} <= set(instruction_spans("Set an alarm for 9:13 PM"))
    assert "en.wikipedia.org/wiki/Coffee" in instruction_spans(
        "Go to en.wikipedia.org/wiki/Coffee in Chrome")
    assert instruction_spans('Search for "yoga mat"')[0] == "yoga mat"
    assert "Alice" in instruction_spans("What is Alice's email?")


def test_answers_on_a_question_and_what_each_candidate_does() -> None:
    cfg = UITreePolicy.from_config(SMALL).config
    enc = encode_observation(Observation(ASK, _screen(False), (1000, 2000), 2), cfg)
    answers = [c for c in enc["c"] if c[0] == "answer"]
    assert [c[1] for c in answers] == ["Save", "Email alice@example.com", "21°C"]
    assert candidate_action(answers[1]) == Answer("Email alice@example.com")
    typing = encode_observation(Observation(ADD, _screen(True), (1000, 2000), 1), cfg)
    enter = next(c for c in typing["c"] if c[0] == "enter")
    assert candidate_action(enter) == Key("enter")


def test_demonstrated_actions_map_onto_candidates() -> None:
    cfg = UITreePolicy.from_config(SMALL).config
    typing = encode_observation(Observation(ADD, _screen(True), (1000, 2000), 1), cfg)
    ask = encode_observation(Observation(ASK, _screen(False), (1000, 2000), 2), cfg)

    def cand(enc: dict, action: object) -> list:  # type: ignore[type-arg]
        k = match_action(enc, action)
        assert k is not None, action
        return enc["c"][k]  # type: ignore[no-any-return]

    # a tap on the label inside the button is the button (the smallest tappable box)
    assert cand(typing, Tap(0.5, 0.225))[1] == "Save"
    assert candidate_action(cand(typing, Tap(0.5, 0.225))) == Tap(0.5, 0.225)
    assert cand(typing, TypeText("liam rossi"))[1] == "Liam Rossi"  # case-insensitive
    assert cand(typing, Key("enter"))[0] == "enter"
    assert cand(typing, OpenApp("settings"))[1] == "Settings"
    assert cand(typing, Scroll("down"))[0] == "scroll_down"
    assert cand(typing, Complete())[0] == "complete"
    assert cand(ask, Answer("21°C"))[1] == "21°C"
    assert cand(ask, Answer("alice@example.com"))[1] == "Email alice@example.com"
    for inexpressible in (LongPress(0.5, 0.45), TypeText("Bob"), Scroll("left"),
                          Tap(0.5, 0.99)):
        assert match_action(typing, inexpressible) is None, inexpressible


def test_decide_and_evaluate_agree_on_the_new_candidates() -> None:
    policy = UITreePolicy.from_config(SMALL)
    with torch.no_grad():  # a non-uniform policy, so agreement is not trivial
        for prm in policy.trainable_parameters():
            prm.add_(0.1 * torch.randn(prm.shape, generator=torch.Generator().manual_seed(3)))
    screens = [Observation(ADD, _screen(True), (1000, 2000), 1),
               Observation(ASK, _screen(False), (1000, 2000), 2)] * 16
    ds = policy.decide(screens)
    steps = [StepRecord(obs=d.obs or {}, choice=d.choice or {}, log_mu=d.log_prob or 0.0,
                        reward=0.0, policy_version=0) for d in ds]
    lp = policy.evaluate(steps).log_prob.tolist()
    for d, v in zip(ds, lp, strict=True):
        assert math.isclose(d.log_prob or 0.0, v, abs_tol=1e-5)
    assert {d.choice["kind"] for d in ds if d.choice} & {"type", "answer", "enter"}
    old = StepRecord(obs={**(ds[0].obs or {}), "v": 3}, choice={"index": 0}, log_mu=0.0,
                     reward=0.0, policy_version=0)
    with pytest.raises(ValueError, match="version 5"):
        policy.evaluate([old])


def test_overlap_feature_switch() -> None:
    """``overlap_feature=False`` zeroes the input: with the prior on, the fresh policy is
    uniform (the prior has nothing to multiply); with it on, it prefers the named row."""
    screen = [_el(0, "", (0, 0, 1000, 2000), parent=None),
              _el(1, "Bluetooth", (0, 100, 1000, 200), clickable=True),
              _el(2, "Display", (0, 300, 1000, 400), clickable=True)]
    o = Observation("Turn on Bluetooth", screen, (1000, 2000), 0)

    def probs(**kw: object) -> torch.Tensor:
        p = UITreePolicy.from_config({**SMALL, **kw})
        [d] = p.decide([o])
        st = StepRecord(obs=d.obs or {}, choice={"index": 0}, log_mu=0.0, reward=0.0,
                        policy_version=0)
        n = len((d.obs or {})["c"])
        return torch.stack([p.evaluate([StepRecord(**{**st.__dict__,
                                                      "choice": {"index": k}})]).log_prob[0]
                            for k in range(n)]).exp()

    on, off = probs(overlap_prior=2.0), probs(overlap_prior=2.0, overlap_feature=False)
    assert on[0] > 3 * on[1]  # "Bluetooth" is candidate 0 and names the instruction
    assert torch.allclose(off, torch.full_like(off, 1 / len(off)), atol=1e-6)
    scratch = probs(overlap_prior=0.0, overlap_feature=False)
    assert torch.allclose(scratch, off, atol=1e-6)
