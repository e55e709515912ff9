"""``distrl sft``: behaviour cloning from a demonstration dataset into a policy checkpoint
that ``distrl learner --init``, ``distrl deploy --policy`` and ``distrl eval`` load."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from distrl_sdk.errors import DistRLError
from farm.cli.common import CONTEXT, fail

__all__ = ["sft"]

console = Console(highlight=False, soft_wrap=True)
err_console = Console(stderr=True, soft_wrap=True, highlight=False)



def _parse_config(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        d = json.loads(text)
    except ValueError as exc:
        raise click.BadParameter(f"not JSON: {exc}", param_hint="--policy-config") from None
    if not isinstance(d, dict):
        raise click.BadParameter("must be a JSON object", param_hint="--policy-config")
    return d


@click.command("sft", context_settings=CONTEXT, epilog="""\b
Exit status: 0 trained and saved; 2 bad input (not a dataset, no train steps, a
checkpoint of another kind); 130 interrupted (nothing saved).""")
@click.option("--demos", "demo_dirs", multiple=True, required=True,
              type=click.Path(file_okay=False, path_type=Path),
              help="Demonstration dataset (`distrl demos record`); repeatable. Its train "
                   "split is trained on, its test split held out.")
@click.option("--policy", "policy_kind", type=click.Choice(["uitree", "vlm"]),
              default="uitree", show_default=True, help="Policy kind to train.")
@click.option("--policy-config", default=None,
              help='Architecture config as JSON (e.g. \'{"tiny": {"seed": 0}}\' for a tiny '
                   "VLM); ignored with --init.")
@click.option("--init", "init_ckpt", type=click.Path(file_okay=False, path_type=Path),
              default=None, help="Start from this policy checkpoint instead of fresh weights.")
@click.option("--epochs", type=click.IntRange(1, 100_000), default=60, show_default=True)
@click.option("--lr", type=click.FloatRange(0, min_open=True), default=None,
              help="Adam learning rate [default: 1e-3 uitree, 1e-4 vlm].")
@click.option("--batch-size", type=click.IntRange(1, 100_000), default=64, show_default=True)
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Checkpoint directory to write (policy.json, policy.safetensors, "
                   "sft_report.json).")
@click.option("--seed", default=0, show_default=True, type=int,
              help="Seed of fresh weights and of the batch order.")
@click.option("--threads", type=click.IntRange(1, 256), default=None,
              help="torch intra-op threads (default: torch's).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def sft(demo_dirs: tuple[Path, ...], policy_kind: str, policy_config: str | None,
        init_ckpt: Path | None, epochs: int, lr: float | None, batch_size: int, out: Path,
        seed: int, threads: int | None, as_json: bool) -> None:
    """Behaviour cloning: maximise log π(demonstrated action | observation) on the
    datasets' train split; report NLL and oracle-action accuracy on train and held-out
    (test split) steps; save a policy checkpoint."""
    try:
        report = _sft(demo_dirs, policy_kind, _parse_config(policy_config), init_ckpt,
                      epochs, lr, batch_size, out, seed, threads, as_json)
    except KeyboardInterrupt:
        fail("interrupted (nothing saved)", 130)
    except (DistRLError, ValueError) as exc:
        fail(str(exc))
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    b, a = report["before"], report["after"]
    for part in ("train", "heldout"):
        if a[part]["steps"]:
            console.print(f"{part:8s} {a[part]['steps']:5d} steps · accuracy "
                          f"{b[part]['accuracy']:.1%} → {a[part]['accuracy']:.1%} · NLL "
                          f"{b[part]['nll']:.3f} → {a[part]['nll']:.3f}")
        else:
            console.print(f"{part:8s} no steps (record --split test to hold some out)")
    console.print(f"saved {out} ({report['seconds']:.1f} s of training)")


def _sft(demo_dirs: tuple[Path, ...], kind: str, config: dict[str, Any], init: Path | None,
         epochs: int, lr: float | None, batch_size: int, out: Path, seed: int,
         threads: int | None, quiet: bool) -> dict[str, Any]:
    from distrl_sdk.learn.demos import read_demos, read_manifest
    from distrl_sdk.learn.sft import SFTConfig, sft_examples, train_sft
    from distrl_sdk.policies import build_policy, load_policy, save_policy

    if threads:
        import torch

        torch.set_num_threads(threads)
    for d in demo_dirs:
        read_manifest(d)  # a clear error before any model is built
    if init is not None:
        policy, _ = load_policy(init)
        if policy.kind != kind:
            raise ValueError(f"--init {init} is a {policy.kind} policy, not {kind}")
    else:
        if kind == "uitree":
            config = {"seed": seed, **config}
        policy = build_policy(kind, config)
    train_eps = [ep for d in demo_dirs for ep in read_demos(d, split="train",
                                                            successful_only=True)]
    test_eps = [ep for d in demo_dirs for ep in read_demos(d, split="test",
                                                           successful_only=True)]
    train, skip_tr = sft_examples(policy, train_eps)
    heldout, skip_te = sft_examples(policy, test_eps)
    cfg = SFTConfig(epochs=epochs, lr=lr or (1e-3 if kind == "uitree" else 1e-4),
                    batch_size=batch_size, seed=seed)
    if not quiet:
        err_console.print(f"{len(train_eps)} train episodes ({len(train)} steps), "
                          f"{len(test_eps)} held-out ({len(heldout)} steps); "
                          f"{skip_tr + skip_te} step(s) not expressible, skipped",
                          markup=False)

    def progress(row: dict[str, Any]) -> None:
        if quiet:
            return
        held = row.get("heldout")
        extra = (f" · held-out accuracy {held['accuracy']:.1%} NLL {held['nll']:.3f}"
                 if held else "")
        err_console.print(f"[{row['seconds']:7.1f} s] epoch {row['epoch']}/{epochs} · "
                          f"train loss {row['train_loss']:.3f}{extra}", markup=False)

    report = train_sft(policy, train, heldout, cfg, progress=progress)
    report.update({"demos": [str(d) for d in demo_dirs], "init": str(init) if init else None,
                   "train_episodes": len(train_eps), "heldout_episodes": len(test_eps),
                   "skipped_steps": skip_tr + skip_te})
    save_policy(policy, out, version=0)
    (out / "sft_report.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
    return report
