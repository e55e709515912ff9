"""Text candidates read by their place, not their words: a typed span carries its
neighbours in the instruction, its shape and the focused field; an answer its
neighbours on screen; neither carries its own words (a held-out name is a word no
training instance taught). Plus the on-screen flag and the screen's instruction overlap."""

from __future__ import annotations

import pytest
import torch

import distrl_sdk.policies.uitree as uitree
from distrl_sdk.learn.api import StepRecord
from distrl_sdk.policies.uitree import UITreePolicy, encode_observation, step_arrays
from distrl_sdk.policy import Observation
from distrl_sdk.uitree import Bounds, UIElement

SMALL = {"buckets": 512, "embed_dim": 8, "hidden": 16, "seed": 0}
ADD = "Add a new contact named {first} Rossi with the phone number 6505550142"


def _el(i: int, text: str, box: tuple[int, int, int, int], *, rid: str = "",
        cls: str = "android.widget.TextView", clickable: bool = False,
        focused: bool = False) -> UIElement:
    return UIElement(index=i, depth=0 if i == 0 else 1, parent=None if i == 0 else 0,
                     text=text, resource_id=rid or f"app:id/e{i}", class_name=cls,
                     package="app", content_desc="", bounds=Bounds(*box),
                     clickable=clickable, focusable=focused, focused=focused)


def _form(first: str) -> list[UIElement]:
    """A contact form: First name already typed, Last name focused (showing its hint)."""
    edit = "android.widget.EditText"
    return [_el(0, "", (0, 0, 1000, 2000)),
            _el(1, first, (0, 100, 1000, 200), rid="app:id/first_name", cls=edit,
                clickable=True),
            _el(2, "Last name", (0, 250, 1000, 350), rid="app:id/last_name", cls=edit,
                clickable=True, focused=True),
            _el(3, "Save", (0, 400, 1000, 500), clickable=True)]


def _typed(enc: dict) -> dict[str, list]:  # type: ignore[type-arg]
    return {c[1]: c for c in enc["c"] if c[0] == "type"}


def test_a_typed_span_carries_its_neighbours_shape_and_the_focused_field() -> None:
    cfg = UITreePolicy.from_config(SMALL).config
    enc = encode_observation(Observation(ADD.format(first="Liam"), _form("Liam"),
                                         (1000, 2000), 3), cfg)
    rossi = _typed(enc)["Rossi"]
    ctx = rossi[9].split()
    # the neighbour "Liam" is a value too: read by its shape; glue words by name
    assert {"p1:~Aa", "p2:named", "n1:with", "n2:the", "sh:Aa", "f:last", "f:name",
            "fi:last", "fi:name"} <= set(ctx)
    assert not any("liam" in t for t in ctx)
    assert rossi[10] == round(6 / 12, 3) and rossi[11] == 0.25  # 7th of 12 words, 1 word
    assert _typed(enc)["Liam Rossi"][11] == 0.5
    assert "sh:9" in _typed(enc)["6505550142"][9].split()


def test_a_quoted_phrase_is_typed_only_into_a_focused_field() -> None:
    """Text sent with no focused field goes nowhere (Android, the sims): no candidate."""
    cfg = UITreePolicy.from_config(SMALL).config
    instruction = 'Search for "red shoes"'
    unfocused = [_el(0, "", (0, 0, 1000, 2000)),
                 _el(1, "Search", (0, 100, 1000, 200), rid="app:id/q",
                     cls="android.widget.EditText", clickable=True)]
    enc = encode_observation(Observation(instruction, unfocused, (1000, 2000), 1), cfg)
    assert not _typed(enc) and "enter" not in [c[0] for c in enc["c"]]
    focused = [*unfocused[:1], _el(1, "Search", (0, 100, 1000, 200), rid="app:id/q",
                                   cls="android.widget.EditText", clickable=True,
                                   focused=True)]
    enc = encode_observation(Observation(instruction, focused, (1000, 2000), 2), cfg)
    assert next(iter(_typed(enc))) == "red shoes"  # the quoted phrase comes first


@pytest.mark.parametrize("cls", ["android.widget.AutoCompleteTextView",
                                 "android.widget.SearchView$SearchAutoComplete",
                                 "android.widget.MultiAutoCompleteTextView"])
def test_a_focused_search_box_of_any_edittext_subclass_takes_typing(cls: str) -> None:
    """Real apps' search boxes dump as EditText subclasses under their own names."""
    cfg = UITreePolicy.from_config(SMALL).config
    screen = [_el(0, "", (0, 0, 1000, 2000)),
              _el(1, "Search", (0, 100, 1000, 200), cls=cls, clickable=True, focused=True)]
    enc = encode_observation(Observation('Search for "red shoes"', screen, (1000, 2000), 1),
                             cfg)
    assert next(iter(_typed(enc))) == "red shoes"
    assert "enter" in [c[0] for c in enc["c"]]
    button = [screen[0], _el(1, "Search", (0, 100, 1000, 200), cls="android.widget.Button",
                             clickable=True, focused=True)]
    enc = encode_observation(Observation('Search for "red shoes"', button, (1000, 2000), 1),
                             cfg)
    assert not _typed(enc)  # a focused button takes no text


def test_a_span_the_screen_already_shows_is_flagged() -> None:
    cfg = UITreePolicy.from_config(SMALL).config
    enc = encode_observation(Observation(ADD.format(first="Liam"), _form("Liam"),
                                         (1000, 2000), 3), cfg)
    flagged = {t for t, c in _typed(enc).items() if c[4] & uitree._F_ON_SCREEN}
    assert flagged == {"Liam"}  # typed into First name; "Liam Rossi" is not there yet


def test_spans_are_scored_by_place_so_a_held_out_name_scores_as_a_trained_one() -> None:
    """Two instances that differ only in the first name: the first-name candidate's
    bag of own words is empty and its context is the same, so a trained network gives
    it the same features whatever the name — and so does the last name's, whose
    neighbour the first name is."""
    policy = UITreePolicy.from_config({**SMALL, "overlap_feature": False})
    with torch.no_grad():
        for prm in policy.trainable_parameters():
            prm.add_(0.3 * torch.randn(prm.shape, generator=torch.Generator().manual_seed(1)))
    feats: dict[str, list[torch.Tensor]] = {"first": [], "last": []}
    for first in ("Liam", "Omar"):
        enc = encode_observation(Observation(ADD.format(first=first), _form(""),
                                             (1000, 2000), 3), policy.config)
        arr = step_arrays(enc, policy.config.buckets, overlap=False)
        batch = uitree.collate([arr])
        for which, text in (("first", first), ("last", "Rossi")):
            k = next(i for i, c in enumerate(enc["c"]) if c[0] == "type" and c[1] == text)
            assert arr.cand_len[k] == 0 and arr.ctx_len[k] > 0
            with torch.no_grad():
                embed = policy.model.embed  # type: ignore[union-attr]
                ctx = embed(batch.ctx_ids, batch.ctx_off).view(1, arr.count, -1)[0, k]
            feats[which].append(torch.cat([ctx, batch.dense[0, k]]))
    assert torch.equal(feats["first"][0], feats["first"][1])
    assert torch.equal(feats["last"][0], feats["last"][1])


def test_answers_carry_bounds_and_the_texts_beside_them() -> None:
    cfg = UITreePolicy.from_config(SMALL).config
    screen = [_el(0, "", (0, 0, 1000, 2000)),
              _el(1, "Email", (0, 100, 1000, 200)),
              _el(2, "alice@example.com", (0, 200, 1000, 300)),
              _el(3, "Phone", (0, 300, 1000, 400))]
    enc = encode_observation(Observation("What is Alice's email address?", screen,
                                         (1000, 2000), 2), cfg)
    answer = next(c for c in enc["c"] if c[0] == "answer" and c[1] == "alice@example.com")
    assert answer[5:9] == [0.0, 0.1, 1.0, 0.15]
    assert {"p1:email", "n1:phone", "sh:a@a.a", "ws:a@a.a"} <= set(answer[9].split())
    arr = step_arrays(enc, cfg.buckets)
    k = enc["c"].index(answer)
    assert arr.cand_len[k] == 0 and arr.ctx_len[k] > 0


def test_the_screen_overlap_and_the_ablation_switch() -> None:
    cfg = UITreePolicy.from_config(SMALL).config
    obs = Observation(ADD.format(first="Liam"), _form("Liam"), (1000, 2000), 3)
    assert encode_observation(obs, cfg)["so"] > 0  # "liam" of its content words shows
    off = UITreePolicy.from_config({**SMALL, "candidate_context": False})
    enc = encode_observation(obs, off.config)
    assert enc["so"] == 0.0
    assert all(not c[9] and c[4] == 0 for c in enc["c"] if c[0] == "type")
    arr = step_arrays(enc, off.config.buckets)
    assert int(arr.ctx_len.sum()) == 0
    typed = [i for i, c in enumerate(enc["c"]) if c[0] == "type"]
    assert all(arr.cand_len[i] > 0 for i in typed)  # without context: its own words


def test_decide_and_evaluate_agree_with_context() -> None:
    policy = UITreePolicy.from_config(SMALL)
    with torch.no_grad():
        for prm in policy.trainable_parameters():
            prm.add_(0.1 * torch.randn(prm.shape, generator=torch.Generator().manual_seed(2)))
    obs = [Observation(ADD.format(first=f), _form(f), (1000, 2000), 3)
           for f in ("Liam", "Omar", "")] * 4
    ds = policy.decide(obs)
    steps = [StepRecord(obs=d.obs or {}, choice=d.choice or {}, log_mu=d.log_prob or 0.0,
                        reward=0.0, policy_version=0) for d in ds]
    out = policy.evaluate(steps).log_prob.tolist()
    assert out == pytest.approx([d.log_prob for d in ds], abs=1e-5)


def _article(topic: str, other: str, named_words: bool) -> tuple[UITreePolicy, dict]:  # type: ignore[type-arg]
    policy = UITreePolicy.from_config({**SMALL, "named_words": named_words})
    screen = [_el(0, "", (0, 0, 1000, 2000)),
              _el(1, f"{other} - Wikipedia", (0, 100, 1000, 200), clickable=True),
              _el(2, f"{topic} - Wikipedia", (0, 200, 1000, 300), clickable=True)]
    obs = Observation(f"Open the Wikipedia article about {topic} in Chrome", screen,
                      (1000, 2000), 4)
    return policy, encode_observation(obs, policy.config)


def test_named_words_read_what_the_instruction_names_as_one_word() -> None:
    def cand_ids(topic: str, other: str, on: bool) -> list[list[int]]:
        policy, enc = _article(topic, other, on)
        arr = policy._step_arrays(enc)
        ends = arr.cand_len.cumsum().tolist()
        starts = [0, *ends[:-1]]
        return [arr.cand_ids[a:b].tolist() for a, b in zip(starts[:2], ends[:2], strict=True)]

    # "about Titanic" and "about Mars", the same distractor beside each: with the switch
    # the named row reads the same for both topics, the distractor keeps its own words
    a, b = cand_ids("Titanic", "Eiffel Tower", True), cand_ids("Mars", "Eiffel Tower", True)
    assert a == b
    assert not set(uitree._hashed("mars", "", SMALL["buckets"])) & set(b[1])
    a, b = cand_ids("Titanic", "Eiffel Tower", False), cand_ids("Mars", "Eiffel Tower", False)
    assert a[0] == b[0] and a[1] != b[1]  # without it: the topic's own words


def test_named_words_are_part_of_the_overlap_help_and_of_the_cache_key() -> None:
    policy, enc = _article("Mars", "Titanic", True)
    plain = step_arrays(enc, policy.config.buckets, overlap=False, named_words=True)
    assert plain.cand_ids.tolist() == step_arrays(enc, policy.config.buckets,
                                                  overlap=False).cand_ids.tolist()
    off = UITreePolicy.from_config({**SMALL, "named_words": False})
    assert policy._cache_key != off._cache_key
