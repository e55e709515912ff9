"""Why do trained policies fail held-out instances? Each policy is evaluated on the test
split with ``distrl eval --episodes-out``; every failed episode is then checked for a
**training instance's words**: a touched element, a typed text or an answer that
contains a parameter value of the task's *train* split which no test instance has and
this episode's instruction does not name (the "Eiffel Tower - Wikipedia" tapped for
"Mars"). Such a failure is memorisation; the rest are other mistakes (a wrong field, a
missed step, stopping early).

    python bench/heldout_failures.py POLICY_DIR [POLICY_DIR …] [--sim 8] [-k 5] [--seed 0]
        [--task PATTERN …] [--json OUT]

Prints, per policy, held-out success, failed episodes, how they ended (declared complete
too early, a wrong answer, the step budget spent) and how many named a training
instance, then the tasks where that happened with an example.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from distrl_sdk.registry import TaskRegistry  # noqa: E402
from distrl_sdk.task import Split, Task  # noqa: E402

_DRAWS = 400  # parameter draws per split: the sample packs have ≤ 12 values per split
_MIN_LEN = 3  # shorter values ("PM", "7") are not evidence of one instance


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _strings(v)


def _values(task: type[Task], split: Split) -> set[str]:
    rng = random.Random(0)
    out: set[str] = set()
    for _ in range(_DRAWS):
        out.update(s.lower() for s in _strings(task.generate_params(rng, split))
                   if len(s) >= _MIN_LEN)
    return out


def train_only_values(tasks: Iterable[type[Task]]) -> dict[str, set[str]]:
    """Task name → the train split's string parameter values that no test instance has."""
    return {t.name: _values(t, "train") - _values(t, "test") for t in tasks}


def produced_texts(record: dict[str, Any]) -> list[str]:
    """What an episode put on or took from the screen: touched labels, typed texts, the
    answer."""
    out = []
    for s in record["steps"]:
        if s.get("target"):
            out.append(s["target"])
        a = s.get("action") or {}
        if a.get("action_type") == "input_text" and a.get("text"):
            out.append(a["text"])
    if record.get("answer"):
        out.append(record["answer"])
    return out


def memorised(record: dict[str, Any], train_only: set[str]) -> str | None:
    """The first text the episode produced that contains a training-only value its own
    instruction does not name, or None."""
    instruction = record["instruction"].lower()
    foreign = [v for v in train_only if v not in instruction]
    return next((text for text in produced_texts(record)
                 if any(v in text.lower() for v in foreign)), None)


def ending(record: dict[str, Any]) -> str:
    """How a failed episode ended: ``answer`` (a wrong answer), ``complete`` (declared
    done too early), or ``budget`` (the step budget ran out)."""
    last = (record["steps"][-1].get("action") or {}) if record["steps"] else {}
    if last.get("action_type") == "answer" or record.get("answer"):
        return "answer"
    if last.get("action_type") == "status":
        return "complete"
    return "budget"


def evaluate(policy: str, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "farm.cli", "eval", "--policy", policy, "--sim",
           str(args.sim), "-k", str(args.k), "--seed", str(args.seed), "--json",
           "--episodes-out", str(out)]
    for t in args.tasks:
        cmd += ["--task", t]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=False)
    if done.returncode != 0:
        sys.exit(f"distrl eval failed for {policy}:\n{done.stderr[-2000:]}")
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def analyse(records: list[dict[str, Any]], train_only: dict[str, set[str]]
            ) -> dict[str, Any]:
    scored = [r for r in records if r["scored"]]
    failed = [r for r in scored if r["status"] == "failure"]
    by_task: dict[str, dict[str, Any]] = defaultdict(lambda: {"failed": 0, "memorised": 0,
                                                              "example": None})
    n_mem = 0
    endings: Counter[str] = Counter()
    for r in failed:
        row = by_task[r["task"]]
        row["failed"] += 1
        endings[ending(r)] += 1
        hit = memorised(r, train_only.get(r["task"], set()))
        if hit is not None:
            n_mem += 1
            row["memorised"] += 1
            row["example"] = row["example"] or {"instruction": r["instruction"],
                                                "produced": hit}
    return {"episodes": len(scored), "failed": len(failed), "memorised": n_mem,
            "endings": dict(endings), "by_task": dict(sorted(by_task.items()))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("policies", nargs="+", help="policy checkpoint directories")
    ap.add_argument("--sim", type=int, default=8)
    ap.add_argument("-k", type=int, default=5, help="episodes per task")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--task", dest="tasks", action="append", default=[])
    ap.add_argument("--json", type=Path, default=None, help="write the analysis here")
    args = ap.parse_args()
    reg = TaskRegistry.discover()
    train_only = train_only_values(reg.get(n) for n in reg.names())
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i, policy in enumerate(args.policies):
            ep = Path(tmp) / f"{i}.jsonl"
            report = evaluate(policy, args, ep)
            records = [json.loads(line) for line in ep.read_text().splitlines()]
            res = analyse(records, train_only)
            res["success_rate"] = report["success_rate"]
            results[policy] = res
            share = res["memorised"] / res["failed"] if res["failed"] else 0.0
            print(f"{policy}: held-out {report['success_rate']:.3f}, {res['failed']} of "
                  f"{res['episodes']} episodes failed, {res['memorised']} of them "
                  f"({100 * share:.0f} %) touched, typed or answered a training "
                  "instance's value")
            e = res["endings"]
            print(f"    failures ended: {e.get('complete', 0)} declared complete too early, "
                  f"{e.get('answer', 0)} answered wrong, {e.get('budget', 0)} ran out of "
                  "steps")
            for task, row in res["by_task"].items():
                if row["memorised"]:
                    ex = row["example"]
                    print(f"    {task:32s} {row['memorised']}/{row['failed']}  "
                          f"{ex['instruction']!r} → {ex['produced']!r}")
    totals: Counter[str] = Counter()
    for res in results.values():
        totals.update(failed=res["failed"], memorised=res["memorised"])
    if totals["failed"]:
        print(f"all policies: {totals['memorised']} of {totals['failed']} failed episodes "
              f"({100 * totals['memorised'] / totals['failed']:.0f} %) named a training "
              "instance")
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
