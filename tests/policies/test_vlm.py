"""VLMPolicy end to end on CPU with a tiny random LLaVA built from configs (no hub):
act, log-probs that agree between farm and learner, an update that moves only LoRA,
adapter save/load, and a broadcast to a worker that acts with the new version."""

from __future__ import annotations

import asyncio
import io
import json
import math
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")

from distrl_sdk.actions import InvalidAction, Tap  # noqa: E402
from distrl_sdk.errors import ConfigError  # noqa: E402
from distrl_sdk.learn import EpisodeRecord, PolicyAgent, StepRecord, TrainablePolicy  # noqa: E402
from distrl_sdk.policies import build_policy, load_policy, save_policy  # noqa: E402
from distrl_sdk.policies.vlm import VLMPolicy  # noqa: E402
from distrl_sdk.policy import Decision, Observation  # noqa: E402
from distrl_sdk.uitree import Bounds, UIElement  # noqa: E402

CONFIG: dict[str, Any] = {"tiny": {"seed": 0}, "max_new_tokens": 16}
# the other tiny architecture: 3-D rope positions, merged patches, mm_token_type_ids
QWEN: dict[str, Any] = {"tiny": {"arch": "qwen2_vl", "image_size": 56, "patch_size": 14},
                        "max_new_tokens": 16}
TARGET = '{"action_type": "click", "x": 0.5, "y": 0.25}'


def _png(color: tuple[int, int, int], size: tuple[int, int] = (108, 240)) -> bytes:
    from PIL import Image, ImageDraw

    img = Image.new("RGB", size, color)
    draw = ImageDraw.Draw(img)
    draw.rectangle((10, 20, 98, 50), fill=(255, 255, 255))  # a "button"
    draw.text((14, 28), "Wi-Fi", fill=(0, 0, 0))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def _obs(step: int = 0, history: list[Any] | None = None, shot: bytes | None = None,
         instruction: str = "Turn off Wi-Fi") -> Observation:
    button = UIElement(index=0, depth=0, parent=None, text="Wi-Fi", resource_id="",
                       class_name="android.widget.Button",
                       package="com.android.settings", content_desc="", clickable=True,
                       bounds=Bounds(10, 20, 98, 50))
    return Observation(instruction, [button], (1080, 2400), step, history or [], shot)


def _step(d: Decision, frame: bytes | None) -> StepRecord:
    assert d.obs is not None and d.choice is not None and d.log_prob is not None
    return StepRecord(obs=d.obs, choice=d.choice, log_mu=d.log_prob, reward=0.0,
                      policy_version=0, invalid=isinstance(d.action, InvalidAction), frame=frame)


def _policy(config: dict[str, Any] = CONFIG) -> VLMPolicy:
    p = build_policy("vlm", config)
    assert isinstance(p, VLMPolicy)
    return p


def _lp(policy: VLMPolicy, steps: list[StepRecord]) -> list[float]:
    with torch.no_grad():
        return [float(x) for x in policy.evaluate(steps).log_prob]


def _train(policy: VLMPolicy, step: StepRecord, n: int = 1, lr: float = 0.05) -> None:
    opt = torch.optim.Adam(policy.trainable_parameters(), lr=lr)
    for _ in range(n):
        loss = -policy.evaluate([step]).log_prob.sum()
        opt.zero_grad()
        loss.backward()
        opt.step()


@pytest.fixture(scope="module")
def shot() -> bytes:
    return _png((30, 120, 200))


def test_acts_on_a_screenshot(shot: bytes) -> None:
    policy = _policy()
    assert isinstance(policy, TrainablePolicy) and policy.kind == "vlm"
    hist: list[Any] = [Tap(0.5, 0.5), InvalidAction("no action found", "blah")]
    obs = [_obs(2, hist, shot), _obs(0, None, None, "Open the Clock app")]
    decisions = policy.decide(obs)
    assert len(decisions) == 2
    for o, d in zip(obs, decisions, strict=True):
        assert d.log_prob is not None and math.isfinite(d.log_prob) and d.log_prob < 0
        assert d.obs is not None and d.obs["instruction"] == o.instruction
        assert d.obs["image"] is (o.screenshot_png is not None)
        assert d.choice is not None and isinstance(d.choice["text"], str)
        assert 0 < d.info["entropy"] <= math.log(len(policy.tokenizer)) + 1e-4
        json.dumps(d.obs), json.dumps(d.choice)  # they travel as JSON
    assert decisions[0].obs is not None
    assert decisions[0].obs["history"] == ['{"action_type": "click", "x": 0.5, "y": 0.5}',
                                           "(invalid output: no action found)"]
    # greedy decoding is deterministic; sampling at temperature 1 is not (in general)
    g1, g2 = policy.decide(obs, greedy=True), policy.decide(obs, greedy=True)
    assert [d.choice for d in g1] == [d.choice for d in g2]
    assert [d.log_prob for d in g1] == pytest.approx([d.log_prob for d in g2], abs=1e-4)


@pytest.mark.parametrize("config", [CONFIG, QWEN], ids=["llava", "qwen2_vl"])
def test_decide_log_prob_equals_evaluate(shot: bytes, config: dict[str, Any]) -> None:
    policy = _policy(config)
    other = _png((200, 40, 40), (90, 200))
    obs = [_obs(0, None, shot), _obs(1, [Tap(0.1, 0.9)], other), _obs(3, None, None)]
    frames = [shot, other, None]
    decisions = policy.decide(obs)
    steps = [_step(d, f) for d, f in zip(decisions, frames, strict=True)]
    out = policy.evaluate(steps)
    mus = [d.log_prob for d in decisions]
    assert out.log_prob.tolist() == pytest.approx(mus, abs=2e-3)
    # a different batch composition (other padding) gives the same numbers
    alone = [_lp(policy, [s])[0] for s in steps[::-1]][::-1]
    assert alone == pytest.approx(mus, abs=2e-3)
    assert out.log_prob.requires_grad and out.entropy.shape == (3,)
    assert out.features.shape == (3, policy.feature_dim)
    assert bool(torch.isfinite(out.entropy).all()) and bool((out.entropy > 0).all())
    # the frame matters: the same choice on another screen has another probability
    swapped = StepRecord(obs=steps[0].obs, choice=steps[0].choice, log_mu=0.0, reward=0.0,
                         policy_version=0, frame=other)
    assert _lp(policy, [swapped])[0] != pytest.approx(mus[0], abs=1e-6)
    feats = policy.instruction_features(["Turn off Wi-Fi", "Open the Clock app"])
    assert feats.shape == (2, policy.feature_dim) and not feats.requires_grad


@pytest.mark.parametrize("config", [CONFIG, QWEN], ids=["llava", "qwen2_vl"])
def test_mixed_batches_score_like_single_steps(shot: bytes, config: dict[str, Any]) -> None:
    """Rows of very different lengths (an empty reply, a cut one) in one padded batch:
    same numbers as one by one, and finite gradients."""
    policy = _policy(config)
    obs = [_obs(0, None, shot), _obs(4, [Tap(0.5, 0.5)] * 5, None, "x"), _obs(1, None, shot)]
    choices = [{"text": "", "eos": True}, {"text": TARGET + " and some more words", "eos": True},
               {"text": "{", "eos": False}]
    steps = [StepRecord(obs=policy.encode_observation(o), choice=c, log_mu=0.0, reward=0.0,
                        policy_version=0, frame=o.screenshot_png)
             for o, c in zip(obs, choices, strict=True)]
    out = policy.evaluate(steps)
    singles = [_lp(policy, [s])[0] for s in steps]
    assert out.log_prob.tolist() == pytest.approx(singles, abs=2e-3)
    assert all(math.isfinite(x) and x < 0 for x in singles)
    (out.log_prob.sum() + out.entropy.sum()).backward()
    grads = [p.grad for p in policy.trainable_parameters()]
    assert all(g is not None and bool(torch.isfinite(g).all()) for g in grads)
    assert any(bool(g.abs().sum() > 0) for g in grads if g is not None)


@pytest.mark.parametrize("config", [CONFIG, QWEN], ids=["llava", "qwen2_vl"])
def test_one_update_moves_only_lora_and_raises_log_prob(shot: bytes,
                                                        config: dict[str, Any]) -> None:
    policy = _policy(config)
    obs = policy.encode_observation(_obs(0, None, shot))
    step = StepRecord(obs=obs, choice={"text": TARGET, "eos": True}, log_mu=0.0, reward=1.0,
                      policy_version=0, frame=shot)
    lora = {n for n, p in policy.model.named_parameters() if p.requires_grad}
    assert lora and all(".lora_" in n and "language_model" in n for n in lora)
    assert {id(p) for p in policy.trainable_parameters()} == {
        id(p) for n, p in policy.model.named_parameters() if n in lora}
    before = {n: p.detach().clone() for n, p in policy.model.named_parameters()}
    lp0 = _lp(policy, [step])[0]
    _train(policy, step, n=1)
    lp1 = _lp(policy, [step])[0]
    after = dict(policy.model.named_parameters())
    for n, p in after.items():
        if n in lora:
            continue
        assert torch.equal(p.detach(), before[n]), f"base weight {n} changed"
        assert p.grad is None
    assert any(not torch.equal(after[n].detach(), before[n]) for n in lora)
    assert lp1 > lp0, (lp0, lp1)


def test_adapter_and_policy_checkpoints_round_trip(shot: bytes, tmp_path: Path) -> None:
    policy = _policy()
    step = StepRecord(obs=policy.encode_observation(_obs(0, None, shot)),
                      choice={"text": TARGET, "eos": True}, log_mu=0.0, reward=1.0,
                      policy_version=0, frame=shot)
    _train(policy, step, n=2)
    trained = _lp(policy, [step])[0]

    policy.save_adapter(tmp_path / "adapter")
    assert (tmp_path / "adapter" / "adapter_model.safetensors").is_file()
    fresh = _policy()
    assert _lp(fresh, [step])[0] != pytest.approx(trained, abs=1e-4)
    fresh.load_adapter(tmp_path / "adapter")
    assert _lp(fresh, [step])[0] == pytest.approx(trained, abs=1e-5)
    w, wf = policy.weights(), fresh.weights()
    assert w.keys() == wf.keys() and all(torch.equal(w[k], wf[k]) for k in w)
    assert all(".lora_" in k for k in w)  # the adapter only, never the base model

    save_policy(policy, tmp_path / "ckpt", version=7)
    loaded, version = load_policy(tmp_path / "ckpt")
    assert version == 7 and isinstance(loaded, VLMPolicy)
    assert loaded.config_dict() == policy.config_dict()
    assert _lp(loaded, [step])[0] == pytest.approx(trained, abs=1e-5)

    # an adapter of another shape is refused with a message, never half-loaded
    meta = json.loads((tmp_path / "ckpt" / "policy.json").read_text())
    meta["config"]["lora_r"] = 4
    (tmp_path / "ckpt" / "policy.json").write_text(json.dumps(meta))
    with pytest.raises(ConfigError, match="do not fit"):
        load_policy(tmp_path / "ckpt")
    other = build_policy("vlm", {**CONFIG, "lora_r": 4})
    assert isinstance(other, VLMPolicy)
    with pytest.raises(ConfigError, match="adapter r=8"):
        other.load_adapter(tmp_path / "adapter")


def test_broadcast_to_a_worker_that_acts_with_the_new_version(shot: bytes) -> None:
    from safetensors.torch import load as st_load
    from safetensors.torch import save as st_save

    learner = _policy()
    obs = _obs(0, None, shot)
    step = StepRecord(obs=learner.encode_observation(obs), choice={"text": TARGET, "eos": True},
                      log_mu=0.0, reward=1.0, policy_version=0, frame=shot)
    before = learner.decide([obs], greedy=True)[0]
    _train(learner, step, n=3)
    after = learner.decide([obs], greedy=True)[0]
    assert after.log_prob != pytest.approx(before.log_prob, abs=1e-4)

    blob = st_save(learner.weights())  # what goes on the wire (sha256 + chunks elsewhere)
    config = json.loads(json.dumps(learner.config_dict()))
    worker = build_policy("vlm", config)
    assert isinstance(worker, VLMPolicy)
    worker.load_weights(st_load(blob))
    agent = PolicyAgent(_policy(), version=0, greedy=True, max_batch=2)
    agent.swap(worker, 5)

    async def act() -> list[Decision]:  # five devices at once: batches run concurrently
        return list(await asyncio.gather(*(agent.act(obs) for _ in range(5))))

    decisions = asyncio.run(act())
    assert agent.name == "vlm@v5"
    for d in decisions:
        assert d.policy_version == 5
        assert d.choice == after.choice
        assert d.log_prob == pytest.approx(after.log_prob, abs=1e-4)
    d = decisions[0]
    # the learner scores the worker's decision as its own
    lp = _lp(learner, [_step(d, shot)])[0]
    assert lp == pytest.approx(d.log_prob, abs=2e-3)
    with pytest.raises(ValueError, match="does not fit"):
        worker.load_weights({k: v for k, v in learner.weights().items() if "lora_A" in k})


def test_config_errors_name_the_problem() -> None:
    with pytest.raises(ConfigError, match="exactly one of model_path"):
        build_policy("vlm", {})
    with pytest.raises(ConfigError, match="unknown key"):
        build_policy("vlm", {**CONFIG, "lr": 1})
    with pytest.raises(ConfigError, match="not a Hugging Face model directory"):
        build_policy("vlm", {"model_path": "/nonexistent/model"})
    with pytest.raises(ConfigError, match="temperature"):
        build_policy("vlm", {**CONFIG, "temperature": 0})
    with pytest.raises(ConfigError, match="match"):
        build_policy("vlm", {**CONFIG, "lora_target_modules": ["no_such_proj"]})


@pytest.mark.slow
def test_run_episode_on_a_sim_phone(sim_adb_device: Any) -> None:
    from distrl_sdk.registry import TaskRegistry
    from distrl_sdk.runner import run_episode
    from distrl_sdk.trajectory import EpisodeStatus

    task = TaskRegistry.discover(use_env=False).get("settings.wifi_off")()
    policy = _policy()
    agent = PolicyAgent(policy, version=2)
    traj = asyncio.run(run_episode(task, sim_adb_device, agent, max_steps=3,
                                   with_screenshots=True))
    assert traj.status in (EpisodeStatus.SUCCESS, EpisodeStatus.FAILURE), traj.error
    assert traj.steps
    for s in traj.steps:
        assert math.isfinite(s.info["log_prob"]) and s.info["policy_version"] == 2
        assert s.info["policy_obs"]["image"] is True
        assert isinstance(s.info["policy_choice"]["text"], str)
    record = EpisodeRecord.from_trajectory(traj, episode_id="e1")
    assert record is not None and record.policy_version == 2
    assert all(r.invalid == isinstance(s.action, InvalidAction)
               for r, s in zip(record.steps, traj.steps, strict=True))
    # the learner recomputes the farm's log μ from the recorded obs/choice/frame
    assert _lp(policy, record.steps) == pytest.approx([r.log_mu for r in record.steps],
                                                      abs=2e-3)


WORKER = """
import json, sys
from safetensors.torch import load_file
from distrl_sdk.policies import build_policy
from distrl_sdk.policy import Observation
d = sys.argv[1]
policy = build_policy("vlm", json.load(open(d + "/config.json")))
policy.load_weights(load_file(d + "/adapter.safetensors"))
shot = open(d + "/shot.png", "rb").read()
[dec] = policy.decide([Observation("Turn off Wi-Fi", [], (1080, 2400), 0, [], shot)],
                      greedy=True)
print(json.dumps({"choice": dec.choice, "log_prob": dec.log_prob}))
"""


@pytest.mark.slow
def test_a_worker_process_rebuilds_the_same_policy(shot: bytes, tmp_path: Path) -> None:
    """Another process: same tiny base weights and tokenizer from the config alone."""
    import subprocess
    import sys

    from safetensors.torch import save_file

    learner = _policy()
    obs = Observation("Turn off Wi-Fi", [], (1080, 2400), 0, [], shot)
    step = StepRecord(obs=learner.encode_observation(obs), choice={"text": TARGET, "eos": True},
                      log_mu=0.0, reward=1.0, policy_version=0, frame=shot)
    _train(learner, step, n=2)
    (tmp_path / "config.json").write_text(json.dumps(learner.config_dict()))
    save_file(learner.weights(), str(tmp_path / "adapter.safetensors"))
    (tmp_path / "shot.png").write_bytes(shot)
    run = subprocess.run([sys.executable, "-c", WORKER, str(tmp_path)], capture_output=True,
                         text=True, timeout=110, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    theirs = json.loads(run.stdout.strip().splitlines()[-1])
    [ours] = learner.decide([obs], greedy=True)
    assert theirs["choice"] == ours.choice
    assert theirs["log_prob"] == pytest.approx(ours.log_prob, abs=1e-4)


def test_malformed_steps_are_refused_and_special_text_stays_text(shot: bytes) -> None:
    policy = _policy()
    good = policy.encode_observation(_obs(0, None, shot))
    for obs, choice, frame in [
        ({**good, "history": "nope"}, {"text": "x"}, shot),
        ({**good, "screen_size": [1080]}, {"text": "x"}, shot),
        ({k: v for k, v in good.items() if k != "step"}, {"text": "x"}, shot),
        (good, {"ids": [1]}, shot),
        (good, {"text": "x", "ids": [policy.processor.image_token_id]}, shot),
        (good, {"text": "x", "ids": [10**9]}, shot),
        (good, {"text": "x"}, None),  # decided on a screenshot that did not travel
    ]:
        step = StepRecord(obs=obs, choice=choice, log_mu=0.0, reward=0.0, policy_version=0,
                          frame=frame)
        with pytest.raises(ValueError):
            policy.evaluate([step])
    # an instruction (or reply) spelling a special token is plain text, not an image slot
    tricky = _obs(0, None, shot, "type <image> and </s> <|user|>")
    [d] = policy.decide([tricky])
    assert d.log_prob is not None and math.isfinite(d.log_prob)
    step = StepRecord(obs=policy.encode_observation(tricky), choice={"text": "<image>"},
                      log_mu=0.0, reward=0.0, policy_version=0, frame=shot)
    assert math.isfinite(_lp(policy, [step])[0])
