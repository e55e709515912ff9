"""UITreePolicy's per-step featurisation cache: computed once, reused on every replay,
collated into the same batch as a fresh featurisation, and decide/evaluate still agree."""

from __future__ import annotations

import random
import zlib
from typing import Any

import pytest
import torch

import distrl_sdk.policies.uitree as uitree
from distrl_sdk.actions import Tap
from distrl_sdk.learn.api import StepRecord
from distrl_sdk.policies.uitree import StepArrays, UITreePolicy
from distrl_sdk.policy import Observation
from distrl_sdk.uitree import parse_ui_dump

SMALL = {"buckets": 2048, "embed_dim": 16, "hidden": 32}
WORDS = ("Network", "internet", "Bluetooth", "Display", "Sound", "Battery", "Wi-Fi",
         "Alarm", "Timer", "Contacts", "Search", "Dark theme")


def _screen(rng: random.Random, rows: int, field: bool) -> str:
    nodes = []
    for i in range(rows):
        top = 200 + 150 * i
        label = " ".join(rng.sample(WORDS, 2))
        nodes.append(
            f'<node index="{i}" text="" resource-id="" class="android.widget.LinearLayout" '
            f'package="p" content-desc="" clickable="true" bounds="[0,{top}][1080,{top + 150}]">'
            f'<node index="0" text="{label}" resource-id="android:id/title" '
            f'class="android.widget.TextView" package="p" content-desc="" clickable="false" '
            f'bounds="[40,{top + 20}][1000,{top + 120}]"/></node>')
    if field:
        nodes.append('<node index="99" text="" resource-id="p:id/search" '
                     'class="android.widget.EditText" package="p" content-desc="" '
                     'clickable="true" focused="true" bounds="[0,100][1080,190]"/>')
    return ("<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\">"
            '<node index="0" text="" resource-id="" class="android.widget.FrameLayout" '
            'package="p" content-desc="" clickable="false" bounds="[0,0][1080,2400]">'
            + "".join(nodes) + "</node></hierarchy>")


def _steps(policy: UITreePolicy, n: int = 12, seed: int = 0) -> list[StepRecord]:
    """Decided steps on screens of varying size (6–30 candidates), some with a focused
    field (span candidates), a question (answers), history."""
    rng = random.Random(seed)
    instructions = ("Turn on Bluetooth", 'Search for "red shoes"', "What is the alarm time?",
                    "Add Liam Rossi to contacts")
    obs = [Observation(rng.choice(instructions),
                       parse_ui_dump(_screen(rng, rng.randint(1, 14), rng.random() < 0.5)),
                       (1080, 2400), t % 5, [Tap(0.5, 0.3)] * (t % 3))
           for t in range(n)]
    return [StepRecord(obs=d.obs or {}, choice=d.choice or {}, log_mu=d.log_prob or 0.0,
                       reward=0.0, policy_version=0) for d in policy.decide(obs)]


def test_featurisation_is_computed_once_and_kept_as_compact_arrays(
        monkeypatch: pytest.MonkeyPatch) -> None:
    policy = UITreePolicy.from_config(SMALL)
    steps = _steps(policy)
    first = policy.evaluate(steps)
    for s in steps:
        [arr] = s.cache.values()
        assert isinstance(arr, StepArrays)
        assert arr.instr_ids.dtype.name == "uint16" == arr.cand_ids.dtype.name  # 2048 buckets
        assert arr.cand_len.dtype.name == "int32" and arr.dense.dtype.name == "float32"
        assert arr.count == len(s.obs["c"])
        assert 0 < arr.nbytes < 20_000
    calls: list[int] = []
    real = uitree.step_arrays

    def counted(*a: Any, **k: Any) -> StepArrays:
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(uitree, "step_arrays", counted)
    again = policy.evaluate(steps[::-1])  # another batch composition: still the cache
    assert not calls
    assert torch.equal(again.log_prob, first.log_prob.flip(0))
    policy.step_cache = False  # the switch: featurise again every time, same numbers
    fresh = policy.evaluate(steps)
    assert len(calls) == len(steps)
    assert torch.equal(fresh.log_prob, first.log_prob)
    assert torch.equal(fresh.entropy, first.entropy)
    assert torch.equal(fresh.features, first.features)


def test_decide_and_cached_evaluate_agree_after_training() -> None:
    policy = UITreePolicy.from_config(SMALL)
    steps = _steps(policy, seed=1)
    opt = torch.optim.Adam(policy.trainable_parameters(), lr=0.05)
    for _ in range(3):  # steps are cached on the first pass; weights move under them
        loss = -policy.evaluate(steps).log_prob.sum()
        opt.zero_grad()
        loss.backward()  # type: ignore[no-untyped-call]
        opt.step()
    redecided = _steps(policy, seed=1)  # same screens, new weights, fresh steps (no cache)
    out = policy.evaluate(redecided)
    assert out.log_prob.tolist() == pytest.approx([s.log_mu for s in redecided], abs=1e-6)
    cached = policy.evaluate([StepRecord(obs=s.obs, choice=s.choice, log_mu=0.0, reward=0.0,
                                         policy_version=0, cache=s.cache) for s in redecided])
    assert torch.equal(cached.log_prob, out.log_prob)


def test_a_padded_batch_scores_every_step_as_it_scores_alone() -> None:
    """Offsets of the collated bags: a wrong offset mixes one candidate's words into
    another's, which changes its logit."""
    policy = UITreePolicy.from_config({**SMALL, "overlap_prior": 0.0, "seed": 3})
    torch.nn.init.normal_(policy.model.score_out.weight)  # type: ignore[union-attr,arg-type]
    steps = _steps(policy, n=10, seed=2)
    counts = {len(s.obs["c"]) for s in steps}
    assert len(counts) > 3  # really mixed sizes
    with torch.no_grad():
        batch = policy.evaluate(steps)
        alone = torch.cat([policy.evaluate([s]).log_prob for s in steps])
    assert torch.allclose(batch.log_prob, alone, atol=1e-6)


def test_no_grad_evaluation_feeds_a_critic() -> None:
    policy = UITreePolicy.from_config(SMALL)
    steps = _steps(policy, n=4)
    out = policy.evaluate(steps, grad=False)
    assert not out.log_prob.requires_grad and not out.features.requires_grad
    assert torch.equal(out.log_prob, policy.evaluate(steps).log_prob.detach())
    critic = torch.nn.Linear(policy.feature_dim, 1)
    critic(out.features).sum().backward()  # a plain tensor, not an inference tensor
    assert critic.weight.grad is not None


def test_the_cache_never_changes_what_a_step_is() -> None:
    policy = UITreePolicy.from_config(SMALL)
    [s] = _steps(policy, n=1)
    twin = StepRecord(obs=s.obs, choice=s.choice, log_mu=s.log_mu, reward=s.reward,
                      policy_version=s.policy_version)
    policy.prepare([s])
    assert s.cache and not twin.cache
    assert s == twin and "cache" not in repr(s)


def test_collated_bags_hold_each_candidates_own_words() -> None:
    """Against the JSON directly: every candidate's bag embeds exactly its text (not for
    a typed span or an answer with context: those are read by their context bag),
    resource-id and class tokens, its context bag exactly its context tokens, its dense
    row names its kind and bounds, and padding candidates are empty bags and masked
    out."""
    policy = UITreePolicy.from_config(SMALL)
    steps = _steps(policy, n=4, seed=5)
    batch = uitree.collate([policy._arrays(s) for s in steps])
    bsz, n = batch.mask.shape
    embed: Any = policy.model.embed
    with torch.no_grad():
        bags = embed(batch.cand_ids, batch.cand_off).view(bsz, n, -1)
        ctx_bags = embed(batch.ctx_ids, batch.ctx_off).view(bsz, n, -1)
        instr = embed(batch.instr_ids, batch.instr_off)
    buckets = policy.config.buckets
    for b, s in enumerate(steps):
        want_i = torch.tensor(uitree._hashed(s.obs["i"], "", buckets))
        assert torch.allclose(instr[b], embed.weight[want_i].mean(0), atol=1e-6)
        cands = s.obs["c"]
        assert batch.mask[b].sum() == len(cands) and not batch.mask[b, len(cands):].any()
        zero = torch.zeros(embed.weight.shape[1])
        with_ctx = 0
        for j, (kind, text, rid, cls, *rest) in enumerate(cands):
            ctx = str(rest[5]) if len(rest) > 5 else ""
            ctx_ids = [zlib.crc32(f"x{t}".encode()) % buckets for t in ctx.split()]
            want_ctx = embed.weight[torch.tensor(ctx_ids)].mean(0) if ctx_ids else zero
            assert torch.allclose(ctx_bags[b, j], want_ctx, atol=1e-6), (b, j, ctx)
            with_ctx += bool(ctx)
            own = not (ctx and kind in ("type", "answer"))
            ids = list(uitree._hashed(str(text), "", buckets)) if own else []
            if rid:
                ids += uitree._hashed(uitree._rid_text(str(rid)), "r", buckets)
            if cls:
                ids += uitree._hashed(str(cls), "k", buckets)
            want = embed.weight[torch.tensor(ids)].mean(0) if ids else torch.zeros(
                embed.weight.shape[1])
            assert torch.allclose(bags[b, j], want, atol=1e-6), (b, j, text)
            row = batch.dense[b, j]
            assert row[uitree.KINDS.index(kind)] == 1.0
            o = len(uitree.KINDS) + uitree._FLAG_BITS
            assert row[o:o + 4].tolist() == pytest.approx([float(v) for v in cands[j][5:9]])
        assert torch.equal(bags[b, len(cands):], torch.zeros_like(bags[b, len(cands):]))
        assert not s.obs["c"] or with_ctx or not any(c[0] in ("type", "answer")
                                                      for c in s.obs["c"])
