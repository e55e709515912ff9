"""Trainer checkpoints without pickle: safetensors for tensors, JSON for the rest.

A checkpoint is a directory::

    trainer.safetensors       Trainer.state_tensors(): policy, critics, optimiser moments
    trainer.json              Trainer.state_meta() + the policy's kind/config, format 1
    replay.jsonl              line 1: replay counters and sampling RNG; then one stored
                              episode per line (with its priority, slot, insertion order)
    replay_frames.safetensors screen frames of replayed steps as uint8 tensors (if any)

It is written to a sibling temporary directory and swapped in with ``os.replace``: a
crash mid-save leaves the previous checkpoint whole (kept as ``.<name>.old`` until the
swap finishes, and used by :func:`load_trainer_state` if the swap was interrupted).

Rewriting the whole replay every checkpoint costs O(replay) each time (10 k episodes of
UI-tree steps are ~140 MB). With ``replay_store=DIR`` the replay goes to an
**append-only store** shared by successive checkpoints instead: stored episodes never
change (only their priorities and slots do), so each save appends just the episodes
added since the previous save as one new segment, and the checkpoint keeps a small
index::

    replay_index.json         format 2: replay counters + RNG, the segments it needs,
                              and [slot, seq, episode id, priority, scored_at, segment,
                              measured]
                              per stored episode
    DIR/seg-<lo>-<hi>-<tag>.jsonl / .safetensors   one line per episode (+ its frames)

When less than half of what the referenced segments hold is still in replay, the save
compacts: the live episodes go to one fresh segment (amortised O(1) per episode).
Segments are never deleted by a save (older checkpoints may still need them):
:func:`gc_replay_store` removes those no kept checkpoint references.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import tempfile
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from distrl_sdk.errors import ConfigError
from distrl_sdk.learn.api import (
    EpisodeRecord,
    StepRecord,
    TrainablePolicy,
    Trainer,
    training_mode,
)
from distrl_sdk.learn.critics import StepCritic, TrajectoryCritic
from distrl_sdk.learn.replay import PrioritizedReplay, ReplayEntry

__all__ = ["ActorCriticState", "gc_replay_store", "load_optimizer_state", "load_trainer_state",
           "optimizer_state", "save_trainer"]

FORMAT = 1
STORE_FORMAT = 2
_TENSORS, _META = "trainer.safetensors", "trainer.json"
_REPLAY, _FRAMES = "replay.jsonl", "replay_frames.safetensors"
_INDEX = "replay_index.json"
#: compact once the live episodes are less than this share of what the segments hold
_COMPACT_LIVE_SHARE = 0.5


# -- optimiser state as tensors + JSON ------------------------------------------
def optimizer_state(opt: torch.optim.Optimizer, prefix: str
                    ) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """``opt.state_dict()`` split into ``{prefix.<param>.<name>: tensor}`` and JSON."""
    sd = opt.state_dict()
    tensors: dict[str, torch.Tensor] = {}
    scalars: dict[str, Any] = {}
    for pid, st in sd["state"].items():
        for name, value in st.items():
            if isinstance(value, torch.Tensor):
                tensors[f"{prefix}.{pid}.{name}"] = value.detach().cpu().contiguous()
            else:
                scalars[f"{pid}.{name}"] = value
    return tensors, {"param_groups": sd["param_groups"], "scalars": scalars}


def load_optimizer_state(opt: torch.optim.Optimizer, prefix: str,
                         tensors: Mapping[str, torch.Tensor], meta: Mapping[str, Any]) -> None:
    """Inverse of :func:`optimizer_state`."""
    state: dict[int, dict[str, Any]] = {}
    for key, value in tensors.items():
        if key.startswith(prefix + "."):
            pid, name = key[len(prefix) + 1 :].split(".", 1)
            state.setdefault(int(pid), {})[name] = value
    for key, value in meta["scalars"].items():
        pid, name = key.split(".", 1)
        state.setdefault(int(pid), {})[name] = value
    opt.load_state_dict({"state": state, "param_groups": meta["param_groups"]})


# -- episodes as JSON ------------------------------------------------------------
class ActorCriticState:
    """What A-RIDE and the DigiRL baseline share as trainers with a policy, a step critic,
    a trajectory critic and named optimisers: guarded gradient steps, and checkpoints as
    tensors plus JSON (never unpickled)."""

    trainer_kind: str  # "aride" | "digirl": a checkpoint only loads into its own kind
    trainer_label: str  # for messages: "A-RIDE", "DigiRL"
    policy: TrainablePolicy
    critic: StepCritic
    traj_critic: TrajectoryCritic
    config: Any  # a dataclass
    version: int
    updates: int
    skipped_steps: int

    def _optimizers(self) -> dict[str, torch.optim.Optimizer]:
        raise NotImplementedError

    @torch.no_grad()
    def instruction_values(self, instructions: Sequence[str]) -> list[float]:
        """V_traj per instruction: estimated success probability (the trajectory filter's
        baseline; also usable for a task curriculum). Unique instructions are scored
        once."""
        if not instructions:
            return []
        unique = sorted(set(instructions))
        vals = self.traj_critic(self.policy.instruction_features(unique)).tolist()
        lookup = dict(zip(unique, vals, strict=True))
        return [float(lookup[i]) for i in instructions]

    # -- the demonstration anchor ------------------------------------------------
    def _init_demos(self, seed: int) -> None:
        self.demos: list[StepRecord] = []
        self._demo_rng = random.Random(seed + 7919)  # apart from replay's own stream

    def add_demonstrations(self, steps: Sequence[StepRecord]) -> int:
        """Keep demonstration steps (encoded by this policy: :func:`~distrl_sdk.learn.sft.
        sft_examples`) for the **demonstration anchor**. With the config's ``demo_coef``
        > 0, every actor update adds ``demo_coef`` × the mean −log π of
        ``demo_batch_steps`` of them drawn uniformly: behaviour cloning beside the RL loss
        (demonstrations kept in play, as DQfD and DAPG do), so online RL refines what SFT
        taught instead of drifting from it. They never enter replay. Returns how many are
        kept."""
        prepare = getattr(self.policy, "prepare", None)
        if prepare is not None:  # featurise once, like replayed steps
            prepare(list(steps))
        self.demos.extend(steps)
        return len(self.demos)

    def _actor_training(self) -> contextlib.AbstractContextManager[None]:
        """The actor's gradient passes in the policy's training mode (the UI-tree policy's
        token dropout) when the config's ``actor_dropout`` is on; ratios, targets and the
        critics' features always come from passes with every token."""
        return training_mode(self.policy, getattr(self.config, "actor_dropout", False))

    def _demo_nll(self) -> torch.Tensor | None:
        """The anchor's loss for this update (mean −log π of sampled demonstration steps),
        or None when it is off or there are no demonstrations."""
        coef = float(getattr(self.config, "demo_coef", 0.0))
        if coef <= 0 or not self.demos:
            return None
        n = min(int(self.config.demo_batch_steps), len(self.demos))
        picks = [self.demos[self._demo_rng.randrange(len(self.demos))] for _ in range(n)]
        with self._actor_training():
            return -self.policy.evaluate(picks).log_prob.mean()

    def _step(self, opt: torch.optim.Optimizer, loss: torch.Tensor, params: Any) -> bool:
        """One clipped gradient step; skipped (and counted) if the loss or gradients are
        not finite, so one hostile or broken episode cannot poison the weights."""
        opt.zero_grad(set_to_none=True)
        if not torch.isfinite(loss):
            return self._skip(opt)
        loss.backward()  # type: ignore[no-untyped-call]
        return self._step_accumulated(opt, True, params)

    def _step_accumulated(self, opt: torch.optim.Optimizer, finite: bool, params: Any,
                          *, reduce: bool = False) -> bool:
        """The clipped step once ``.grad`` is filled (by :meth:`_step`, or by
        ``microbatch.accumulate_gradients``, whose ``finite`` says whether every slice was).
        ``reduce``: first sum the gradients over a data-parallel group's ranks (the actor's
        step, when ``self.parallel`` is set; every rank then steps alike)."""
        parallel = getattr(self, "parallel", None)
        if reduce and parallel is not None:
            params = list(params)
            finite = parallel.all_reduce_gradients(params, finite)
        if not finite:
            return self._skip(opt)
        norm = torch.nn.utils.clip_grad_norm_(list(params), self.config.max_grad_norm)
        if not torch.isfinite(norm):
            return self._skip(opt)
        opt.step()
        return True

    def _skip(self, opt: torch.optim.Optimizer) -> bool:
        opt.zero_grad(set_to_none=True)
        self.skipped_steps += 1
        return False

    def _extra_meta(self) -> dict[str, Any]:
        return {}

    def _load_extra_meta(self, meta: Mapping[str, Any]) -> None:
        return None

    def state_tensors(self) -> dict[str, torch.Tensor]:
        tensors = {f"policy.{k}": v for k, v in self.policy.weights().items()}
        tensors |= {f"critic.{k}": v for k, v in self.critic.state_dict().items()}
        tensors |= {f"traj_critic.{k}": v for k, v in self.traj_critic.state_dict().items()}
        for name, opt in self._optimizers().items():
            tensors |= optimizer_state(opt, f"opt.{name}")[0]
        # copies: safetensors refuses tensors that share storage (tied weights, views)
        return {k: v.detach().cpu().clone() for k, v in tensors.items()}

    def state_meta(self) -> dict[str, Any]:
        return {"trainer": self.trainer_kind, "version": self.version, "updates": self.updates,
                "skipped_steps": self.skipped_steps, "config": asdict(self.config),
                "optimizers": {name: optimizer_state(opt, f"opt.{name}")[1]
                               for name, opt in self._optimizers().items()},
                **self._extra_meta()}

    def load_state(self, tensors: Mapping[str, torch.Tensor], meta: Mapping[str, Any]) -> None:
        if meta.get("trainer") != self.trainer_kind:
            raise ConfigError(f"checkpoint is from a {meta.get('trainer')!r} trainer, "
                              f"not {self.trainer_label}")

        def part(prefix: str) -> dict[str, torch.Tensor]:
            return {k[len(prefix):]: v for k, v in tensors.items() if k.startswith(prefix)}

        self.policy.load_weights(part("policy."))
        self.critic.load_state_dict(part("critic."))
        self.traj_critic.load_state_dict(part("traj_critic."))
        for name, opt in self._optimizers().items():
            load_optimizer_state(opt, f"opt.{name}", tensors, meta["optimizers"][name])
        self.version, self.updates = int(meta["version"]), int(meta["updates"])
        self.skipped_steps = int(meta.get("skipped_steps", 0))
        self._load_extra_meta(meta)


def _episode_json(ep: EpisodeRecord, key: str, frames: dict[str, torch.Tensor]
                  ) -> dict[str, Any]:
    steps = []
    for j, s in enumerate(ep.steps):
        frame_key = None
        if s.frame is not None:
            frame_key = f"{key}.{j}"
            frames[frame_key] = torch.frombuffer(bytearray(s.frame), dtype=torch.uint8)
        steps.append({"obs": s.obs, "choice": s.choice, "log_mu": s.log_mu, "reward": s.reward,
                      "policy_version": s.policy_version, "invalid": s.invalid,
                      "frame": frame_key})
    return {"id": ep.id, "task": ep.task, "instruction": ep.instruction, "success": ep.success,
            "reward": ep.reward, "farm_id": ep.farm_id, "device_id": ep.device_id,
            "meta": ep.meta, "steps": steps}


def _episode_from_json(d: Mapping[str, Any], frames: Mapping[str, torch.Tensor]
                       ) -> EpisodeRecord:
    steps = [StepRecord(obs=s["obs"], choice=s["choice"], log_mu=float(s["log_mu"]),
                        reward=float(s["reward"]), policy_version=int(s["policy_version"]),
                        invalid=bool(s["invalid"]),
                        frame=bytes(frames[s["frame"]].numpy().tobytes()) if s["frame"] else None)
             for s in d["steps"]]
    return EpisodeRecord(id=d["id"], task=d["task"], instruction=d["instruction"], steps=steps,
                         success=bool(d["success"]), reward=float(d["reward"]),
                         farm_id=d["farm_id"], device_id=d["device_id"], meta=dict(d["meta"]))


# -- whole checkpoints -----------------------------------------------------------
def _write(path: Path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def _write_tensors(path: Path, tensors: dict[str, torch.Tensor]) -> None:
    """safetensors straight to disk (replay frames can be large), then fsync."""
    from safetensors.torch import save_file

    save_file(tensors, str(path))
    with open(path, "rb") as f:
        os.fsync(f.fileno())


# -- the append-only replay store -------------------------------------------------
@dataclass
class _Persisted:
    """What of one replay buffer is already in a store: seq → (segment, episode id), and
    how many episodes each segment holds (live or not)."""

    root: Path
    where: dict[int, tuple[str, str]] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)


# per live replay object: saving twice into the same store appends only what is new
_PERSISTED: weakref.WeakKeyDictionary[PrioritizedReplay, _Persisted] = \
    weakref.WeakKeyDictionary()


def _write_segment(root: Path, entries: list[ReplayEntry]) -> str:
    """One new segment holding ``entries``' episodes; returns its name (no suffix)."""
    lo, hi = entries[0].seq, entries[-1].seq
    name = f"seg-{lo:010d}-{hi:010d}-{os.urandom(3).hex()}"
    frames: dict[str, torch.Tensor] = {}
    lines = [json.dumps({"seq": e.seq, "episode": _episode_json(e.episode, f"e{e.seq}", frames)})
             for e in entries]
    if frames:  # frames first: a segment whose .jsonl exists is complete
        _write_tensors(root / f"{name}.safetensors", frames)
    _write(root / f"{name}.jsonl", ("\n".join(lines) + "\n").encode())
    return name


def _persist_replay(replay: PrioritizedReplay, root: Path) -> dict[str, Any]:
    """Append the episodes ``root`` lacks; the index a checkpoint keeps (format 2)."""
    root.mkdir(parents=True, exist_ok=True)
    known = _PERSISTED.get(replay)
    if known is None or known.root != root.resolve():
        known = _Persisted(root.resolve())
        _PERSISTED[replay] = known
    live = list(replay.entries())

    def stored(e: ReplayEntry) -> bool:
        at = known.where.get(e.seq)
        return at is not None and at[1] == e.episode.id

    fresh = [e for e in live if not stored(e)]
    held = sum(known.sizes.get(seg, 0) for seg in {known.where[e.seq][0]
                                                   for e in live if stored(e)})
    if held and len(live) < _COMPACT_LIVE_SHARE * (held + len(fresh)):
        known.where.clear()  # compaction: every live episode into one new segment
        known.sizes.clear()
        fresh = live
    if fresh:
        name = _write_segment(root, fresh)
        known.sizes[name] = len(fresh)
        known.where.update({e.seq: (name, e.episode.id) for e in fresh})
    rows = [[e.slot, e.seq, e.episode.id, e.priority, e.scored_at, known.where[e.seq][0],
             e.measured] for e in live]
    return {"format": STORE_FORMAT, "replay": replay.state_meta(),
            "segments": sorted({r[5] for r in rows}), "entries": rows}


def _load_from_store(replay: PrioritizedReplay, index: Mapping[str, Any], root: Path) -> None:
    from safetensors.torch import load_file

    if index.get("format") != STORE_FORMAT:
        raise ValueError(f"replay index format {index.get('format')!r}, expected {STORE_FORMAT}")
    want = {int(r[1]): r for r in index["entries"]}
    episodes: dict[int, EpisodeRecord] = {}
    known = _Persisted(root.resolve())
    for seg in index["segments"]:
        frames_path = root / f"{seg}.safetensors"
        frames = load_file(str(frames_path)) if frames_path.is_file() else {}
        n = 0
        with open(root / f"{seg}.jsonl", encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    continue
                n += 1
                rec = json.loads(line)
                seq = int(rec["seq"])
                if seq in want and want[seq][5] == seg:
                    episodes[seq] = _episode_from_json(rec["episode"], frames)
        known.sizes[seg] = n
    entries = []
    for seq, row in sorted(want.items()):
        slot, _, eid, prio, scored_at, seg = row[:6]
        measured = bool(row[6]) if len(row) > 6 else True  # older indexes: all scored
        ep = episodes.get(seq)
        if ep is None or ep.id != eid:
            raise ValueError(f"episode seq {seq} ({eid}) is missing from segment {seg}")
        entries.append(ReplayEntry(int(slot), ep, float(prio), seq, int(scored_at), measured))
        known.where[seq] = (seg, eid)
    replay.restore(entries, index["replay"])
    _PERSISTED[replay] = known


def gc_replay_store(root: str | Path, checkpoints: Iterable[str | Path]) -> list[str]:
    """Delete the segments of ``root`` that none of ``checkpoints`` (trainer checkpoint
    directories saved with ``replay_store=root``) references; returns what went."""
    root = Path(root)
    if not root.is_dir():
        return []
    needed: set[str] = set()
    for ckpt in checkpoints:
        index = Path(ckpt) / _INDEX
        if index.is_file():
            needed.update(json.loads(index.read_text())["segments"])
    gone = []
    for path in root.iterdir():
        if path.name.startswith("seg-") and path.suffix in (".jsonl", ".safetensors") \
                and path.stem not in needed:
            path.unlink(missing_ok=True)
            gone.append(path.name)
    return sorted(gone)


def save_trainer(trainer: Trainer, directory: str | Path, *,
                 replay_store: str | Path | None = None) -> Path:
    """Checkpoint ``trainer`` (and its ``replay``, if it has one) into ``directory``.

    ``replay_store``: keep the replay in that append-only store (module docstring)
    instead of rewriting all of it inside the checkpoint."""
    d = Path(directory)
    d.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{d.name}.tmp-", dir=d.parent))
    try:
        _write_tensors(tmp / _TENSORS, dict(trainer.state_tensors()))
        meta = {"format": FORMAT, "policy_kind": trainer.policy.kind,
                "policy_config": trainer.policy.config_dict(), "state": trainer.state_meta()}
        _write(tmp / _META, json.dumps(meta, indent=1).encode())
        replay = getattr(trainer, "replay", None)
        if isinstance(replay, PrioritizedReplay) and replay_store is not None:
            index = _persist_replay(replay, Path(replay_store))
            index["store"] = os.path.relpath(Path(replay_store).resolve(), d.parent.resolve())
            _write(tmp / _INDEX, json.dumps(index).encode())
        elif isinstance(replay, PrioritizedReplay):
            frames: dict[str, torch.Tensor] = {}
            lines = [json.dumps({"format": FORMAT, "replay": replay.state_meta()})]
            for e in replay.entries():
                lines.append(json.dumps({"slot": e.slot, "priority": e.priority, "seq": e.seq,
                                         "scored_at": e.scored_at, "measured": e.measured,
                                         "episode": _episode_json(e.episode, f"e{e.seq}",
                                                                  frames)}))
            _write(tmp / _REPLAY, ("\n".join(lines) + "\n").encode())
            if frames:
                _write_tensors(tmp / _FRAMES, frames)
        old = d.parent / f".{d.name}.old"
        if old.exists():
            shutil.rmtree(old)
        if d.exists():
            os.replace(d, old)
        os.replace(tmp, d)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return d


def _resolve(directory: Path) -> Path:
    if (directory / _META).is_file():
        return directory
    old = directory.parent / f".{directory.name}.old"
    if (old / _META).is_file():  # a save was interrupted between its two renames
        return old
    raise ConfigError(f"{directory} is not a trainer checkpoint (no {_META}; "
                      "`distrl learner` writes one with save_trainer)")


def load_trainer_state(trainer: Trainer, directory: str | Path) -> dict[str, Any]:
    """Restore ``trainer`` (policy, critics, optimisers, counters, replay with its
    priorities and sampling RNG) from :func:`save_trainer`'s directory; returns the
    saved meta. Errors say what does not fit."""
    from safetensors.torch import load_file

    d = _resolve(Path(directory))
    try:
        meta = json.loads((d / _META).read_text())
        tensors = load_file(str(d / _TENSORS))
    except Exception as exc:  # OSError, JSON errors, safetensors' own SafetensorError
        raise ConfigError(f"{d}: unreadable trainer checkpoint ({exc})") from exc
    if meta.get("format") != FORMAT:
        raise ConfigError(f"{d}: checkpoint format {meta.get('format')!r}, expected {FORMAT}")
    if meta.get("policy_kind") != trainer.policy.kind:
        raise ConfigError(f"{d}: checkpoint holds a {meta.get('policy_kind')!r} policy, "
                          f"the trainer a {trainer.policy.kind!r} one")
    trainer.load_state(tensors, meta["state"])
    replay = getattr(trainer, "replay", None)
    if isinstance(replay, PrioritizedReplay) and (d / _INDEX).is_file():
        try:
            index = json.loads((d / _INDEX).read_text())
            # the store's path is kept relative to the checkpoint's parent: both move together
            _load_from_store(replay, index, (Path(directory).parent / index["store"]))
        except Exception as exc:
            raise ConfigError(f"{d}: unreadable replay store of the checkpoint ({exc})") from exc
    elif isinstance(replay, PrioritizedReplay) and (d / _REPLAY).is_file():
        try:
            frames = load_file(str(d / _FRAMES)) if (d / _FRAMES).is_file() else {}
            with open(d / _REPLAY, encoding="utf-8") as f:
                header = json.loads(f.readline())
                entries = [ReplayEntry(int(r["slot"]), _episode_from_json(r["episode"], frames),
                                       float(r["priority"]), int(r["seq"]), int(r["scored_at"]),
                                       bool(r.get("measured", True)))
                           for r in (json.loads(line) for line in f if line.strip())]
            replay.restore(entries, header["replay"])
        except Exception as exc:
            raise ConfigError(f"{d}: unreadable replay in the checkpoint ({exc})") from exc
    return dict(meta)
