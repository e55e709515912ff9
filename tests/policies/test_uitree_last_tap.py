"""``UITreeConfig.last_tap_same_element``: the "previous action tapped here" flag marks the
element the previous tap hit, not whatever the next screen draws under that point —
checked on the sim Shop's real screens and on hand-built ones."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from distrl_sdk.actions import Tap
from distrl_sdk.learn.demo_record import record_episode
from distrl_sdk.learn.sft import sft_examples
from distrl_sdk.policies.uitree import (
    _F_LAST_TAPPED,
    UITreeConfig,
    UITreePolicy,
    encode_observation,
)
from distrl_sdk.policy import Observation, OraclePolicy
from distrl_sdk.registry import TaskRegistry
from distrl_sdk.uitree import Bounds, UIElement
from farm.device import AdbDevice

TASKS = TaskRegistry.discover(use_env=False)


@pytest.fixture(scope="module")
def device(shared_sim_device: AdbDevice) -> AdbDevice:
    return shared_sim_device


def _record(name: str, params: dict[str, Any], split: str, device: AdbDevice,
            config: UITreeConfig) -> Any:
    task = TASKS.get(name)({"c" if "cheapest" in name else "p": params})
    ep, unmatched = asyncio.run(record_episode(
        task, device, OraclePolicy(task.oracle(device)), split=split, uitree=config,
        drive=True, frames=False))
    assert not unmatched and ep.status == "success", (task.instruction, ep.error)
    return ep


def _flagged(step: Any, label: str) -> bool:
    cands = step.encodings["uitree"]["obs"]["c"]
    return any(c[0] == "tap" and c[1] == label and c[4] & _F_LAST_TAPPED for c in cands)


def _step_choosing(ep: Any, label: str) -> Any:
    return next(s for s in ep.steps if s.encodings["uitree"]["choice"]["label"] == label)


def test_a_product_rows_tap_does_not_flag_add_to_cart_on_the_product_page(
        device: AdbDevice) -> None:
    spec = TASKS.get("shop.cheapest_in_category").spec  # type: ignore[attr-defined]
    positional_flags = 0
    for split in ("train", "test"):
        for params in spec.params["c"].split(split):
            on = _record("shop.cheapest_in_category", params, split, device,
                         UITreeConfig(last_tap_same_element=True))
            assert not _flagged(_step_choosing(on, "Add to cart"), "Add to cart"), params
            off = _record("shop.cheapest_in_category", params, split, device,
                          UITreeConfig(last_tap_same_element=False))
            positional_flags += _flagged(_step_choosing(off, "Add to cart"), "Add to cart")
    # the held-out Audio category's cheapest product is its first row, whose tap point the
    # product page's "Add to cart" covers: the positional flag said "already added"
    assert positional_flags >= 1


def test_tapping_add_to_cart_flags_it_on_the_screen_after(device: AdbDevice) -> None:
    params = TASKS.get("shop.add_two").spec.params["p"].split("train")[0]  # type: ignore
    ep = _record("shop.add_two", params, "train", device,
                 UITreeConfig(last_tap_same_element=True))
    assert _flagged(_step_choosing(ep, "Cart"), "Add to cart")


def test_sft_re_encodes_a_demonstration_as_it_was_recorded(device: AdbDevice) -> None:
    params = TASKS.get("shop.cheapest_in_category").spec.params["c"].split("test")[1]  # type: ignore
    cfg = {"buckets": 256, "embed_dim": 8, "hidden": 8, "last_tap_same_element": True}
    policy = UITreePolicy.from_config(cfg)
    ep = _record("shop.cheapest_in_category", params, "test", device, policy.config)
    steps, skipped = sft_examples(policy, [ep])
    assert skipped == 0
    assert [s.obs for s in steps] == [s.encodings["uitree"]["obs"] for s in ep.steps]


def _button(i: int, text: str, top: int) -> UIElement:
    return UIElement(index=i, depth=1, parent=0, text=text, resource_id=f"app:id/b{i}",
                     class_name="android.widget.Button", package="app", content_desc="",
                     bounds=Bounds(0, top, 1000, top + 100), clickable=True)


def _flags(prev: list[UIElement] | None, now: list[UIElement], on: bool) -> dict[str, bool]:
    obs = Observation("Add it", now, (1000, 2000), 1, [Tap(0.5, 0.525)], None, prev)
    enc = encode_observation(obs, UITreeConfig(last_tap_same_element=on))
    return {str(c[1]): bool(c[4] & _F_LAST_TAPPED) for c in enc["c"] if c[0] == "tap"}


def test_the_flag_follows_the_element_not_the_point() -> None:
    row, other = _button(1, "Speaker $99", 1000), _button(2, "Lamp $5", 1200)
    add = _button(1, "Add to cart", 1000)  # the next screen's button under the same point
    assert _flags([row, other], [add], on=True) == {"Add to cart": False}
    assert _flags([row, other], [add], on=False) == {"Add to cart": True}
    assert _flags([add], [add], on=True) == {"Add to cart": True}  # tapped, still there
    # a caller that keeps no previous screen: the positional flag, as before
    assert _flags(None, [add], on=True) == {"Add to cart": True}
