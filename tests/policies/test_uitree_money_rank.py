"""``UITreeConfig.money_rank``: candidates whose text shows the lowest / highest amount of
money on screen carry ``mr:lo`` / ``mr:hi`` — checked on the sim Shop's real screens
(every instance of "add the cheapest product …", both splits) and on the edges."""

from __future__ import annotations

import asyncio

import pytest

from distrl_sdk.learn.demo_record import record_episode
from distrl_sdk.policies.uitree import UITreeConfig, UITreePolicy, encode_observation
from distrl_sdk.policy import Observation, OraclePolicy
from distrl_sdk.registry import TaskRegistry
from distrl_sdk.uitree import Bounds, UIElement
from farm.device import AdbDevice

CHEAPEST = TaskRegistry.discover(use_env=False).get("shop.cheapest_in_category")


@pytest.fixture(scope="module")
def device(shared_sim_device: AdbDevice) -> AdbDevice:
    return shared_sim_device


def _ranks(cands: list[list]) -> dict[str, str]:  # type: ignore[type-arg]
    return {str(c[1]): t for c in cands if len(c) > 9
            for t in str(c[9]).split() if t.startswith("mr:")}


@pytest.mark.parametrize("asked", [False, True])
@pytest.mark.parametrize("split", ["train", "test"])
def test_the_cheapest_products_row_is_marked_on_the_real_shop_screen(
        split: str, asked: bool, device: AdbDevice) -> None:
    spec = CHEAPEST.spec  # type: ignore[attr-defined]
    for params in spec.params["c"].split(split):
        task = CHEAPEST({"c": params})
        ep, unmatched = asyncio.run(record_episode(
            task, device, OraclePolicy(task.oracle(device)), split=split,
            uitree=UITreeConfig(money_rank=True, money_rank_asked=asked), drive=True,
            frames=False))
        assert not unmatched and ep.status == "success", (task.instruction, ep.error)
        # the step that taps the product: its candidate, and only it, is the cheapest
        pick = next(s.encodings["uitree"] for s in ep.steps
                    if s.encodings["uitree"]["choice"]["kind"] == "tap"
                    and params["cheapest"] in s.encodings["uitree"]["choice"]["label"])
        cands = pick["obs"]["c"]
        chosen = cands[pick["choice"]["index"]]
        ranks = _ranks(cands)
        assert ranks[str(chosen[1])] == "mr:lo", (params, ranks)
        assert list(ranks.values()).count("mr:lo") == 1 and "mr:hi" in ranks.values()
        assert all(c[0] == "tap" for c in cands if str(c[1]) in ranks)


def _row(i: int, text: str, clickable: bool = True) -> UIElement:
    return UIElement(index=i, depth=1, parent=0, text=text, resource_id=f"app:id/r{i}",
                     class_name="android.widget.TextView", package="app", content_desc="",
                     bounds=Bounds(0, 100 * i, 1000, 100 * i + 90), clickable=clickable)


def _enc(texts: list[str], *, on: bool = True, clickable: bool = True,
         instruction: str = "Add the cheapest one", **config: object
         ) -> dict:  # type: ignore[type-arg]
    root = UIElement(index=0, depth=0, parent=None, text="", resource_id="", class_name="F",
                     package="app", content_desc="", bounds=Bounds(0, 0, 1000, 2000))
    screen = [root, *(_row(i + 1, t, clickable) for i, t in enumerate(texts))]
    cfg = UITreePolicy.from_config({"buckets": 256, "embed_dim": 8, "hidden": 8,
                                    "money_rank": on, **config}).config
    return encode_observation(Observation(instruction, screen, (1000, 2000), 0), cfg)


def test_ranks_read_the_first_amount_and_need_two_different_ones() -> None:
    enc = _enc(["Mug $12.50", "Lamp $1,249.00 (2 for $2,000)", "Pen 3 for $4", "Mat $12.50",
                "Free shipping"])
    assert _ranks(enc["c"]) == {"Mug $12.50": "mr:mid", "Mat $12.50": "mr:mid",
                                "Lamp $1,249.00 (2 for $2,000)": "mr:hi",
                                "Pen 3 for $4": "mr:lo"}
    assert _ranks(_enc(["Mug $12.50", "Mat $12.50"])["c"]) == {}  # nothing to rank
    off = _enc(["Mug $12.50", "Pen $4"], on=False)
    assert _ranks(off["c"]) == {} and all(len(c) == 9 for c in off["c"] if c[0] == "tap")


def test_answers_are_ranked_among_answers_after_their_context() -> None:
    enc = _enc(["High $30", "Low $10"], clickable=False,
               instruction="What is the lowest price? Find out in the Shop.")
    answers = {c[1]: c[9].split() for c in enc["c"] if c[0] == "answer"}
    assert answers["Low $10"][-1] == "mr:lo" and answers["High $30"][-1] == "mr:hi"
    assert "sh:Aa_$9" in answers["Low $10"]  # the context is kept, the rank added
    # without candidate context an answer is read by its own words: no rank makes it a
    # context-only candidate behind the ablation's back
    enc = _enc(["High $30", "Low $10"], clickable=False,
               instruction="What is the lowest price?", candidate_context=False)
    assert [c[9] for c in enc["c"] if c[0] == "answer"] == ["", ""]


@pytest.mark.parametrize(("instruction", "ranked"), [
    ("Add the cheapest one", True), ("Which is the most expensive lamp?", True),
    ("Find the lowest-priced mug", True), ("Add the Mug to the cart", False),
    ("How much does the Mug cost?", False)])
def test_asked_ranks_only_when_the_instruction_asks_about_price(
        instruction: str, ranked: bool) -> None:
    screen = ["Mug $12.50", "Lamp $99"]
    assert bool(_ranks(_enc(screen, instruction=instruction, money_rank_asked=True)["c"])) \
        is ranked
    assert _ranks(_enc(screen, instruction=instruction,  # ungated: always
                       money_rank_asked=False)["c"])


def test_asked_leaves_the_results_of_a_named_product_unranked(device: AdbDevice) -> None:
    task_type = TaskRegistry.discover(use_env=False).get("shop.add_to_cart")
    ungated_ranks = 0
    for split in ("train", "test"):
        for params in task_type.spec.params["p"].split(split):  # type: ignore[attr-defined]
            task = task_type({"p": params})
            for asked in (True, False):
                ep, _ = asyncio.run(record_episode(
                    task, device, OraclePolicy(task.oracle(device)), split=split,
                    uitree=UITreeConfig(money_rank=True, money_rank_asked=asked),
                    drive=True, frames=False))
                assert ep.status == "success", (task.instruction, ep.error)
                found = sum(bool(_ranks(s.encodings["uitree"]["obs"]["c"])) for s in ep.steps)
                if asked:
                    assert found == 0, task.instruction
                else:
                    ungated_ranks += found
    assert ungated_ranks > 0  # the results lists do show several prices
