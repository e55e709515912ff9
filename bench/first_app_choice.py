"""Which app does a policy open first, for the phrasings it trained on and for held-out
ones? Most tasks start on the home screen and their oracle's first action opens an app;
a held-out instruction that names the same goal in words the policy never saw
("Deactivate airplane mode" for "Turn off airplane mode") fails there before anything
else is tried. No phone is needed: the home screen is the one each task's
demonstration started on, and every distinct instruction of each split is scored on it.

For each wrong held-out choice the report also names the instruction **word to blame**:
the word whose removal raises the right app's probability most ("phone" in "Take the
phone out of airplane mode", when the only training instructions with "phone" were the
contacts tasks' "phone number").

    python bench/first_app_choice.py POLICY_DIR [POLICY_DIR …] --demos DEMOS_DIR
        [--draws 200] [--json OUT]

Greedy choices, as ``distrl eval --greedy`` makes them. For policies that report their
candidates' probabilities (the UI-tree policy).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from distrl_sdk.actions import OpenApp  # noqa: E402
from distrl_sdk.errors import ConfigError  # noqa: E402
from distrl_sdk.learn.demos import DemoStep, read_demos  # noqa: E402
from distrl_sdk.policy import Observation  # noqa: E402
from distrl_sdk.registry import TaskRegistry  # noqa: E402
from distrl_sdk.task import Split, Task  # noqa: E402

_ALL = 1 << 10  # ask for every candidate's probability (a screen has at most 1 024)
_EXAMPLES = 2  # held-out mistakes printed per task (--json has them all)


@dataclass(frozen=True)
class Start:
    """A task's first screen and the app its oracle opened there."""

    app: str
    step: DemoStep


@dataclass(frozen=True)
class Mistake:
    task: str
    instruction: str
    chose: str  # the chosen candidate ("open_app Contacts", "back" …)
    p_chose: float
    app: str
    p_app: float
    blame: str  # the word whose removal raises p(app) most ("" for a one-word instruction)
    p_app_without: float


def starts(demos: str | Path) -> dict[str, Start]:
    """Tasks whose (successful) demonstration opened an app first, with that screen."""
    out: dict[str, Start] = {}
    for ep in read_demos(demos, frames=False, successful_only=True):
        if ep.steps and isinstance(ep.steps[0].action, OpenApp) and ep.task not in out:
            out[ep.task] = Start(ep.steps[0].action.app_name, ep.steps[0])
    return out


def phrasings(task: type[Task], split: Split, draws: int) -> list[str]:
    """The distinct instructions of ``draws`` parameter draws (seeded: the same every run)."""
    rng = random.Random(0)
    return sorted({task.sample(rng, split).instruction for _ in range(draws)})


def app_probabilities(policy: Any, instruction: str, step: DemoStep
                      ) -> tuple[dict[str, float], str, float]:
    """p of each open_app candidate, and the greedy choice with its p."""
    obs = Observation(instruction, step.elements, step.screen_size, 0)
    policy.alternatives = _ALL
    (dec,) = policy.decide([obs], greedy=True)
    alts = dec.info.get("alternatives")
    if not isinstance(alts, list):
        raise ConfigError(f"a {policy.kind} policy does not report its candidates' "
                          "probabilities: this probe needs one that does (uitree)")
    apps = {str(a["label"]): float(a["p"]) for a in alts if a["kind"] == "open_app"}
    top = alts[0]
    return apps, f"{top['kind']} {top['label']}".strip(), float(top["p"])


def blame(policy: Any, instruction: str, step: DemoStep, app: str) -> tuple[str, float]:
    """The word whose removal raises p(app) most, and p(app) without it."""
    words = instruction.split()
    if len(words) < 2:
        return "", 0.0
    best, best_p = "", -1.0
    for i, word in enumerate(words):
        apps, _, _ = app_probabilities(policy, " ".join(words[:i] + words[i + 1:]), step)
        if apps.get(app, 0.0) > best_p:
            best, best_p = word, apps.get(app, 0.0)
    return best, best_p


def analyse(policy: Any, tasks: Mapping[str, type[Task]], first: Mapping[str, Start],
            draws: int = 200) -> dict[str, Any]:
    """Per split: the share of each task's distinct phrasings on which the greedy first
    action opens the right app (``open_app`` or a tap on its launcher icon), averaged over
    tasks so that a task with many phrasings counts once; the mean p of the app's
    ``open_app``; the held-out mistakes with the word to blame."""
    result: dict[str, Any] = {}
    mistakes: list[Mistake] = []
    for split in ("train", "test"):
        per_task: dict[str, float] = {}
        probs: list[float] = []
        count = 0
        for name, start in sorted(first.items()):
            if name not in tasks:
                continue
            right = []
            for text in phrasings(tasks[name], split, draws):
                apps, chose, p = app_probabilities(policy, text, start.step)
                ok = chose in (f"open_app {start.app}", f"tap {start.app}")
                right.append(ok)
                probs.append(apps.get(start.app, 0.0))
                if not ok and split == "test":
                    word, p_without = blame(policy, text, start.step, start.app)
                    mistakes.append(Mistake(name, text, chose, p, start.app,
                                            apps.get(start.app, 0.0), word, p_without))
            per_task[name] = statistics.fmean(right)
            count += len(right)
        result[split] = {"tasks": len(per_task), "instructions": count,
                         "accuracy": statistics.fmean(per_task.values()) if per_task else None,
                         "mean_p": statistics.fmean(probs) if probs else None,
                         "by_task": per_task}
    result["mistakes"] = [asdict(m) for m in mistakes]
    result["blamed_words"] = dict(Counter(m.blame.lower() for m in mistakes).most_common())
    return result


def report(name: str, r: Mapping[str, Any]) -> Iterable[str]:
    def split(s: str) -> str:
        x = r[s]
        if not x["tasks"]:
            return "—"
        return (f"{x['accuracy']:.3f} (p {x['mean_p']:.3f}; {x['tasks']} tasks, "
                f"{x['instructions']} phrasings)")
    yield f"{name}\n    first app right: train {split('train')}, held out {split('test')}"
    by_task: dict[str, list[Mapping[str, Any]]] = {}
    for m in r["mistakes"]:
        by_task.setdefault(m["task"], []).append(m)
    for task, ms in by_task.items():
        more = f" (and {len(ms) - _EXAMPLES} more)" if len(ms) > _EXAMPLES else ""
        for m in ms[:_EXAMPLES]:
            yield (f"    {task}: {m['instruction']!r} → {m['chose']} ({m['p_chose']:.2f}; "
                   f"{m['app']} {m['p_app']:.2f}); without {m['blame']!r}: "
                   f"{m['app']} {m['p_app_without']:.2f}{more}")
            more = ""
    if r["blamed_words"]:
        yield "    words to blame: " + ", ".join(f"{w} ×{n}" for w, n in
                                                  r["blamed_words"].items())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("policies", nargs="+", metavar="POLICY_DIR",
                    help="saved policies (distrl sft / learner checkpoints)")
    ap.add_argument("--demos", required=True, metavar="DIR",
                    help="a demonstration dataset (distrl demos record): each task's "
                         "first screen and the app its oracle opened")
    ap.add_argument("--draws", type=int, default=200,
                    help="parameter draws per task and split (distinct phrasings are "
                         "scored once)")
    ap.add_argument("--json", metavar="OUT", help="also write the figures as JSON")
    opts = ap.parse_args(argv)
    if opts.draws < 1:
        ap.error("--draws must be ≥ 1")
    from distrl_sdk.policies import load_policy

    try:
        first = starts(opts.demos)
        if not first:
            raise ConfigError(f"no demonstration in {opts.demos} opens an app first")
        tasks = {t.name: t for t in TaskRegistry.discover()}
        out: dict[str, Any] = {}
        for path in opts.policies:
            policy, _ = load_policy(path)
            out[path] = analyse(policy, tasks, first, opts.draws)
            for line in report(path, out[path]):
                print(line)
    except (ConfigError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if opts.json:
        Path(opts.json).write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
