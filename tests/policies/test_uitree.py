"""UITreePolicy: candidates, masks, log-prob consistency, determinism, checkpoints."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from distrl_sdk.actions import Complete, Key, OpenApp, Scroll, Tap
from distrl_sdk.errors import ConfigError
from distrl_sdk.learn.api import StepRecord, TrainablePolicy
from distrl_sdk.policies import build_policy, load_policy, save_policy
from distrl_sdk.policies.uitree import SIM_APPS, UITreeConfig, UITreePolicy, encode_observation
from distrl_sdk.policy import Observation
from distrl_sdk.uitree import parse_ui_dump

SIZE = (1080, 2400)
SMALL = {"buckets": 2048, "embed_dim": 16, "hidden": 32}  # fast on a loaded box
# A Settings-like screen: clickable rows whose labels live in child TextViews, a switch,
# the system nav bar, and a zero-size clickable that must be skipped.
DUMP = """<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation="0">
<node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="p"
 content-desc="" clickable="false" bounds="[0,0][1080,2400]">
 <node index="0" text="" resource-id="" class="android.widget.LinearLayout" package="p"
  content-desc="" clickable="true" bounds="[0,525][1080,735]">
  <node index="0" text="Network &amp; internet" resource-id="android:id/title"
   class="android.widget.TextView" package="p" content-desc="" clickable="false"
   bounds="[231,573][1017,636]"/>
  <node index="1" text="Mobile, Wi-Fi, hotspot" resource-id="android:id/summary"
   class="android.widget.TextView" package="p" content-desc="" clickable="false"
   bounds="[231,636][1017,686]"/>
 </node>
 <node index="1" text="" resource-id="" class="android.widget.LinearLayout" package="p"
  content-desc="" clickable="true" bounds="[0,735][1080,945]">
  <node index="0" text="Bluetooth" resource-id="android:id/title"
   class="android.widget.TextView" package="p" content-desc="" clickable="false"
   bounds="[210,626][818,689]"/>
  <node index="1" text="OFF" resource-id="android:id/switch_widget"
   class="android.widget.Switch" package="p" content-desc="" checkable="true"
   checked="false" clickable="false" bounds="[881,641][1017,725]"/>
 </node>
 <node index="2" text="Hidden" resource-id="" class="android.widget.Button" package="p"
  content-desc="" clickable="true" bounds="[0,0][0,0]"/>
 <node index="3" text="" resource-id="com.android.systemui:id/back"
  class="android.widget.ImageView" package="com.android.systemui" content-desc="Back"
  clickable="true" bounds="[86,2274][274,2400]"/>
</node></hierarchy>"""


@pytest.fixture(scope="module")
def elements() -> list:  # type: ignore[type-arg]
    return parse_ui_dump(DUMP)


def obs(elements: list, instruction: str = "Turn on Bluetooth", step: int = 0,  # type: ignore[type-arg]
        history: list | None = None) -> Observation:  # type: ignore[type-arg]
    return Observation(instruction, elements, SIZE, step, history or [])


def records(decisions: list, reward: float = 0.0) -> list[StepRecord]:  # type: ignore[type-arg]
    return [StepRecord(obs=d.obs, choice=d.choice, log_mu=d.log_prob, reward=reward,
                       policy_version=0) for d in decisions]


def test_candidates_cover_the_action_space(elements: list) -> None:  # type: ignore[type-arg]
    policy = UITreePolicy.from_config({**SMALL, "seed": 0})
    enc = encode_observation(obs(elements, 'Search for "red shoes"'), policy.config)
    kinds = [c[0] for c in enc["c"]]
    taps = [c for c in enc["c"] if c[0] == "tap"]
    # two rows (labelled by their children); not the zero-size button, not the nav bar
    assert [t[1] for t in taps] == ["Network & internet Mobile, Wi-Fi, hotspot", "Bluetooth OFF"]
    assert taps[1][4] & 2, "a row holding a switch is marked checkable"
    assert kinds.count("open_app") == len(SIM_APPS)
    assert {"scroll_down", "scroll_up", "back", "home", "complete"} <= set(kinds)
    assert "type" not in kinds  # no text field has the focus (test_uitree_context)
    assert set(enc) == {"v", "i", "s", "h", "so", "c"}
    again = encode_observation(obs(elements, "x", 1, [Tap(0.5, 0.35)]), policy.config)
    assert [bool(c[4] & 32) for c in again["c"] if c[0] == "tap"] == [False, True]
    assert again["h"] == ["tap"]


def test_actions_are_sdk_actions_at_element_centres(elements: list) -> None:  # type: ignore[type-arg]
    policy = UITreePolicy.from_config({**SMALL, "seed": 0})
    enc = encode_observation(obs(elements, 'Type "hi"'), policy.config)
    from distrl_sdk.policies.uitree import candidate_action

    acts = [candidate_action(c) for c in enc["c"]]
    assert isinstance(acts[0], Tap)
    assert (acts[0].x, acts[0].y) == pytest.approx((540 / 1080, 630 / 2400), abs=1e-3)
    assert {type(a) for a in acts} == {Tap, OpenApp, Scroll, Key, Complete}  # no field focused


def test_cap_on_elements_keeps_the_fixed_actions(elements: list) -> None:  # type: ignore[type-arg]
    policy = UITreePolicy.from_config({"max_elements": 11, "type_quoted": False})
    enc = encode_observation(obs(elements), policy.config)
    assert len(enc["c"]) == 11
    assert [c[0] for c in enc["c"]].count("tap") == 1
    assert enc["c"][-1][0] == "complete"


def test_fresh_policy_is_uniform_and_implements_the_protocol(elements: list) -> None:  # type: ignore[type-arg]
    policy = UITreePolicy.from_config({**SMALL, "seed": 3, "overlap_prior": 0})
    assert isinstance(policy, TrainablePolicy)
    [d] = policy.decide([obs(elements)])
    n = d.info["candidates"]
    assert d.log_prob == pytest.approx(-math.log(n), abs=1e-5)
    assert d.choice is not None and 0 <= d.choice["index"] < n


def test_reading_prior_favours_what_the_instruction_names(elements: list) -> None:  # type: ignore[type-arg]
    policy = UITreePolicy.from_config({**SMALL, "overlap_prior": 2.0})
    enc = encode_observation(obs(elements), policy.config)
    [d] = policy.decide([obs(elements)], greedy=True)
    assert enc["c"][d.choice["index"]][1] == "Bluetooth OFF"  # type: ignore[index]
    n = len(enc["c"])
    bonus = 10.0 * math.tanh(2.0 / 10.0)  # the prior's logit, under the default cap of 10
    assert d.log_prob == pytest.approx(bonus - math.log(n - 1 + math.e ** bonus), abs=1e-5)


def test_logits_are_soft_capped_so_log_pi_is_bounded(elements: list) -> None:  # type: ignore[type-arg]
    """However large the weights grow, cap·tanh(l/cap) keeps every logit in (−cap, cap):
    log π ≥ −(2·cap + ln N), so the RL losses in log π are bounded (a 30-minute run without
    the cap grew logits to ~10⁶ and its entropy to 0.01 nats whatever β). cap 0 = none."""
    for cap in (5.0, 0.0):
        policy = UITreePolicy.from_config({**SMALL, "logit_cap": cap})
        with torch.no_grad():
            for prm in policy.trainable_parameters():
                prm.mul_(0).add_(50.0 * torch.randn(prm.shape,
                                                     generator=torch.Generator().manual_seed(1)))
        [d] = policy.decide([obs(elements)], greedy=False)
        steps = [StepRecord(obs=d.obs or {}, choice={"index": k}, log_mu=0.0, reward=0.0,
                            policy_version=0) for k in range(d.info["candidates"])]
        log_pi = policy.evaluate(steps).log_prob.detach()
        floor = -(2 * 5.0 + math.log(len(steps)))
        if cap:
            assert bool(torch.isfinite(log_pi).all()) and float(log_pi.min()) >= floor - 1e-4
        else:
            assert float(log_pi.min()) < floor  # uncapped: far below any such bound
    with pytest.raises(ValueError, match="logit_cap"):
        UITreeConfig.from_dict({"logit_cap": -1.0})
    assert UITreeConfig().logit_cap == 10.0


def test_decide_log_prob_equals_evaluate_after_training(elements: list) -> None:  # type: ignore[type-arg]
    policy = UITreePolicy.from_config({**SMALL, "seed": 1})
    # move the weights off the uniform start so the check is not trivial (plain SGD:
    # importing torch.optim alone costs seconds)
    for _ in range(5):
        ds = policy.decide([obs(elements)] * 4)
        out = policy.evaluate(records(ds))
        policy.model.zero_grad()
        (-out.log_prob.sum()).backward()
        with torch.no_grad():
            for prm in policy.trainable_parameters():
                if prm.grad is not None:
                    prm.sub_(1.0 * prm.grad)
    # a batch mixing screens of different sizes (padding + masks in evaluate)
    screens = [obs(elements), obs(elements[:2], "Open Settings", 1, [OpenApp("Settings")]),
               obs([], "Go home", 2, [Tap(0.5, 0.5), Key("back")]), obs(elements, 'Find "x"')]
    ds = policy.decide(screens)
    out = policy.evaluate(records(ds))
    assert out.log_prob.shape == out.entropy.shape == (4,)
    assert out.features.shape == (4, policy.feature_dim)
    assert out.log_prob.requires_grad
    for d, lp in zip(ds, out.log_prob.tolist(), strict=True):
        assert d.log_prob == pytest.approx(lp, abs=1e-5)
    ns = torch.tensor([len(d.obs["c"]) for d in ds], dtype=torch.float)  # type: ignore[index]
    assert bool(((out.entropy > 0) & (out.entropy <= ns.log() + 1e-5)).all())
    assert not math.isclose(ds[0].log_prob or 0.0, -math.log(len(ds[0].obs["c"])),  # type: ignore[index]
                            abs_tol=1e-3)


def test_evaluate_rejects_a_foreign_choice(elements: list) -> None:  # type: ignore[type-arg]
    policy = UITreePolicy.from_config(SMALL)
    [d] = policy.decide([obs(elements)])
    bad = StepRecord(obs=d.obs or {}, choice={"index": 999}, log_mu=0.0, reward=0.0,
                     policy_version=0)
    with pytest.raises(ValueError, match="does not index"):
        policy.evaluate([bad])


def test_sampling_and_greedy_are_deterministic(elements: list) -> None:  # type: ignore[type-arg]
    screens = [obs(elements)] * 16

    def picks(seed: int, greedy: bool) -> list[int]:
        p = UITreePolicy.from_config({**SMALL, "seed": seed})
        with torch.no_grad():  # make the greedy choice non-trivial
            for prm in p.trainable_parameters():
                prm.add_(0.3 * torch.randn(prm.shape,  # not so large that one choice is sure
                                           generator=torch.Generator().manual_seed(7)))
        return [d.choice["index"] for d in p.decide(screens, greedy=greedy)]  # type: ignore[index]

    assert picks(1, False) == picks(1, False)
    assert picks(1, False) != picks(2, False)
    g = picks(1, True)
    assert g == picks(1, True) and len(set(g)) == 1


def test_alternatives_are_the_likeliest_candidates_with_their_probabilities(
        elements: list) -> None:  # type: ignore[type-arg]
    policy = UITreePolicy.from_config({**SMALL, "overlap_prior": 2.0})
    [plain] = policy.decide([obs(elements)], greedy=True)
    assert "alternatives" not in plain.info  # off unless asked: info rides in trajectories
    policy.alternatives = 3
    # two screens in one batch: the shorter one's padding is never an alternative
    short = obs(elements[:2])
    d, d_short = policy.decide([obs(elements), short], greedy=True)
    alts = d.info["alternatives"]
    enc = encode_observation(obs(elements), policy.config)
    assert len(alts) == 3 and [a["p"] for a in alts] == sorted((a["p"] for a in alts),
                                                               reverse=True)
    assert alts[0]["index"] == d.choice["index"]  # type: ignore[index]  # greedy: the top
    assert alts[0]["p"] == pytest.approx(math.exp(d.log_prob), abs=1e-4)  # type: ignore[arg-type]
    assert (alts[0]["kind"], alts[0]["label"]) == ("tap", "Bluetooth OFF")
    assert all(enc["c"][a["index"]][0] == a["kind"] for a in alts)
    n_short = d_short.info["candidates"]
    policy.alternatives = 50
    [d_short] = policy.decide([short, obs(elements)], greedy=True)[:1]
    assert len(d_short.info["alternatives"]) == n_short
    assert sum(a["p"] for a in d_short.info["alternatives"]) == pytest.approx(1.0, abs=1e-3)


def test_weights_round_trip_through_a_checkpoint(elements: list, tmp_path: Path) -> None:  # type: ignore[type-arg]
    policy = UITreePolicy.from_config({"seed": 5, "hidden": 32, "buckets": 4096})
    with torch.no_grad():
        for prm in policy.trainable_parameters():
            prm.add_(0.1)
    save_policy(policy, tmp_path / "ck", version=7)
    loaded, version = load_policy(tmp_path / "ck")
    assert version == 7 and isinstance(loaded, UITreePolicy)
    assert loaded.config == policy.config
    for k, v in policy.weights().items():
        assert torch.equal(v, loaded.weights()[k])
    screens = [obs(elements)] * 3
    a = policy.decide(screens, greedy=True)
    b = loaded.decide(screens, greedy=True)
    assert [d.log_prob for d in a] == pytest.approx([d.log_prob for d in b])
    other = build_policy("uitree", {"hidden": 16, "buckets": 4096})
    with pytest.raises(RuntimeError):
        other.load_weights(policy.weights())


def test_bad_config_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown uitree config keys: nope"):
        UITreePolicy.from_config({"nope": 1})
    with pytest.raises(ValueError, match="max_elements"):
        UITreePolicy.from_config({"max_elements": 2})
    with pytest.raises(ConfigError):
        build_policy("uitreee", {})


def test_instruction_features() -> None:
    policy = UITreePolicy.from_config(SMALL)
    f = policy.instruction_features(["Turn on Bluetooth", "Open the display settings"])
    assert f.shape == (2, policy.feature_dim)
    assert not torch.allclose(f[0], f[1])


def test_a_checkpoint_keeps_the_encoding_switches_it_was_trained_with(tmp_path: Path) -> None:
    import json

    switches = ("money_rank", "money_rank_asked", "last_tap_same_element")
    fresh = UITreePolicy.from_config({"buckets": 256, "embed_dim": 8, "hidden": 8})
    assert all(getattr(fresh.config, k) for k in switches)  # new policies: on
    save_policy(fresh, tmp_path / "new")
    assert all(getattr(load_policy(tmp_path / "new")[0].config, k) for k in switches)
    # a checkpoint written before the switches existed has no such keys: they stay off
    meta_path = save_policy(fresh, tmp_path / "old") / "policy.json"
    meta = json.loads(meta_path.read_text())
    for k in switches:
        del meta["config"][k]
    meta_path.write_text(json.dumps(meta))
    old, _ = load_policy(tmp_path / "old")
    assert not any(getattr(old.config, k) for k in switches)
    meta["config"]["nope"] = 1
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(ConfigError, match="unknown uitree config keys: nope"):
        load_policy(tmp_path / "old")
