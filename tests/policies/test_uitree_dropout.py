"""Token dropout: supervised passes of the UI-tree policy leave a share of hashed tokens
out of every bag (so the network cannot lean on one instance's words); acting and the
learner's ratio/target passes read every token, so behaviour log-probs stay exact."""

from __future__ import annotations

import pytest
import torch

from distrl_sdk.learn.api import StepRecord
from distrl_sdk.learn.sft import SFTConfig, train_sft
from distrl_sdk.policies.uitree import UITreeConfig, UITreePolicy, _drop_tokens
from distrl_sdk.policy import Observation
from tests.policies.test_uitree_context import ADD, _form

SMALL = {"buckets": 512, "embed_dim": 8, "hidden": 16, "seed": 0, "token_dropout": 0.5}


def _steps(policy: UITreePolicy) -> list[StepRecord]:
    obs = [Observation(ADD.format(first=f), _form(f), (1000, 2000), 3)
           for f in ("Liam", "Omar", "")] * 3
    return [StepRecord(obs=d.obs or {}, choice=d.choice or {}, log_mu=d.log_prob or 0.0,
                       reward=0.0, policy_version=0) for d in policy.decide(obs)]


def _perturbed() -> UITreePolicy:
    policy = UITreePolicy.from_config(SMALL)
    with torch.no_grad():
        for prm in policy.trainable_parameters():
            prm.add_(0.3 * torch.randn(prm.shape, generator=torch.Generator().manual_seed(2)))
    return policy


def test_drop_tokens_keeps_each_bag_a_subset_with_consistent_offsets() -> None:
    ids = torch.arange(100)
    offsets = torch.tensor([0, 10, 10, 40, 90])  # bag 1 is empty
    gen = torch.Generator().manual_seed(0)
    kept, off = _drop_tokens(ids, offsets, 0.3, gen)
    assert off[0] == 0 and bool((off[1:] >= off[:-1]).all())
    bounds = [*offsets.tolist(), 100]
    new_bounds = [*off.tolist(), kept.numel()]
    for b in range(5):  # every kept token stays in its own bag, in order
        part = kept[new_bounds[b]:new_bounds[b + 1]].tolist()
        assert all(bounds[b] <= t < bounds[b + 1] for t in part) and part == sorted(part)
    assert 50 < kept.numel() < 90  # ≈ 70 % kept
    assert _drop_tokens(ids, offsets, 0.0, gen) == (ids, offsets)


def test_acting_and_learner_passes_read_every_token() -> None:
    policy = _perturbed()
    steps = _steps(policy)
    mu = torch.tensor([s.log_mu for s in steps])
    assert not policy.model.training  # a fresh policy acts with every token
    assert torch.allclose(policy.evaluate(steps).log_prob, mu, atol=1e-5)
    policy.set_training(True)
    assert torch.allclose(policy.evaluate(steps, grad=False).log_prob, mu, atol=1e-5)
    dropped = policy.evaluate(steps).log_prob  # a supervised gradient pass
    assert not torch.allclose(dropped, mu, atol=1e-3)
    policy.set_training(False)
    assert torch.allclose(policy.evaluate(steps).log_prob, mu, atol=1e-5)


def test_sft_trains_with_dropout_and_hands_back_an_acting_policy() -> None:
    policy = _perturbed()
    steps = _steps(policy)
    seen: list[bool] = []
    orig = policy.set_training
    policy.set_training = lambda on: (seen.append(on), orig(on))[1]  # type: ignore[method-assign]
    report = train_sft(policy, steps, steps, SFTConfig(epochs=2, batch_size=4))
    assert seen[0] is True and seen[-1] is False and not policy.model.training
    assert report["after"]["train"]["steps"] == len(steps)


def test_token_dropout_is_validated_and_travels_in_the_config() -> None:
    assert UITreeConfig().token_dropout == 0.25
    assert UITreePolicy.from_config(SMALL).config_dict()["token_dropout"] == 0.5
    for bad in (-0.1, 1.0):
        with pytest.raises(ValueError, match="token_dropout"):
            UITreeConfig.from_dict({"token_dropout": bad})
