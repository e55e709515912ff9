"""The learner service behind ``distrl learner``: MQTT trajectories in, policy versions out.

    farms ──traj chunks──► TrajectorySubscriber (persistent session, dedupe, acks)
                              │ handler: validate → EpisodeRecord → journal → inbox
                              ▼
          train loop ─► one worker thread: add_episode … update … weights snapshot
                              │ every ``publish_every`` updates
                              ▼
          WeightPublisher ─► retained blob chunks + pointer ─► farms hot-swap
          metrics ─► distrl/v1/learner/metrics (Metrics envelope) + scalars.jsonl

Durability (nothing lost, nothing learned twice, across a kill at any instant):

* A trajectory is acked only after its handler returned, and the handler first appends
  it to the **journal** (``run_dir/journal/seg-N.jsonl``, flushed and by default fsynced).
* A **checkpoint** (every ``checkpoint_every_s`` and on shutdown) holds the policy
  (``save_policy``), the trainer with optimiser and replay (``save_trainer``), the seen
  trajectory ids and the counters, and names the first journal segment it does *not*
  contain. It is written to a temporary directory and renamed into place; the last
  ``keep_checkpoints`` are kept, with the journal segments they need.
* On start the newest readable checkpoint is loaded and the journal after it replayed,
  so the replay and the dedupe set are exactly what had been acked.

All trainer work runs on one single-thread executor in submission order, so a
checkpoint taken "now" contains exactly the episodes journaled before it (the event
loop rotates the journal and hands over the inbox in one step) and never races an
update; the event loop never blocks on torch.

Published version numbers never repeat: the highest one is recorded (fsync) before it is
announced, and a learner restored from an older checkpoint continues above it.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import logging
import math
import os
import re
import shutil
import time
from collections import Counter, deque
from collections.abc import Callable, Coroutine, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from distrl_sdk.errors import ConfigError
from distrl_sdk.learn.api import EpisodeRecord, StepRecord
from distrl_sdk.wire import (
    DecodedTrajectory,
    Metrics,
    Reassembler,
    TrajectoryMsg,
    encode_envelope,
    topics,
)
from distrl_sdk.wire.signing import TrustedKeys
from farm.aio import cancel_and_wait
from farm.evaluate.aggregate import EvalAggregator
from farm.learner.metrics import LearnerStats, ScalarLog
from farm.learner.paths import CHECKPOINTS, CKPT_PREFIX
from farm.learner.weights import (
    MqttLink,
    PublishedBlob,
    WeightPublisher,
    deserialize_weights,
    serialize_weights,
)
from farm.transport import Backoff, SeenIds, TrajectorySubscriber

if TYPE_CHECKING:
    from distrl_sdk.learn.api import TrainablePolicy, Trainer
    from farm.learner.parallel import WorkerGroup
    from farm.serve.lora import AdapterLoader

__all__ = ["CheckpointError", "LearnerConfig", "LearnerService", "PolicyBuilder",
           "TrainerFactory"]

log = logging.getLogger(__name__)
T = TypeVar("T")

PolicyBuilder = Callable[[str, dict[str, Any]], "TrainablePolicy"]
TrainerFactory = Callable[["TrainablePolicy", "LearnerConfig"], "Trainer"]


class CheckpointError(RuntimeError):
    """A checkpoint could not be written (already logged and counted by the service)."""


#: the demonstration anchor's weight when demonstrations are given without one (measured:
#: bench/training_efficiency.py, docs/aride.md)
DEMO_COEF = 0.5


class LearnerConfig(BaseModel):
    """Everything ``distrl learner`` needs (TOML file, then CLI flags on top)."""

    model_config = ConfigDict(extra="forbid")

    broker_url: str = Field("mqtt://127.0.0.1:1883",
                            description="MQTT broker the farms publish trajectories to.")
    run_dir: Path = Field(Path("runs/learner"),
                          description="Checkpoints, journal and scalar logs live here; a "
                                      "restart with the same run dir resumes.")
    algorithm: Literal["aride", "digirl"] = Field(
        "aride", description="aride = A-RIDE (Retrace + DPER); digirl = the DigiRL-style "
                             "baseline (AWR, binarised advantage, top-10 % filter).")
    algo_config: dict[str, Any] = Field(
        default_factory=dict, description="Fields of ARIDEConfig / DigiRLConfig (e.g. "
                                          "{gamma = 0.9, min_episodes = 32}).")
    policy_kind: str = Field("uitree", description="Policy class: uitree | vlm.")
    policy_config: dict[str, Any] = Field(
        default_factory=dict, description="The policy's architecture config "
                                          "(build_policy(kind, config)).")
    init_policy: Path | None = Field(
        None, description="Policy checkpoint (e.g. `distrl sft`'s) a fresh run starts from; "
                          "its kind and config replace policy_kind/policy_config. Ignored "
                          "when the run dir has a checkpoint to resume.")
    signing_key: Path | None = Field(
        None, description="The learner's private key (`distrl keys create`): it signs every "
                          "policy pointer and trajectory ack, and farms accept only what a "
                          "learner key they trust signed. Unset: the local learner key "
                          "($DISTRL_KEYS or ~/.local/state/distrl/keys/learner.key, created "
                          "if missing), the one a farm on this host trusts by default.")
    farm_keys: list[Path] = Field(
        default_factory=list,
        description="Public keys (.pub) of the farms whose signed trajectories this learner "
                    "learns from; anything else is refused, counted and never acked. "
                    "`distrl learner` fills in the local farm key ($DISTRL_KEYS or "
                    "~/.local/state/distrl/keys/farm.key) when none is given; empty in a "
                    "config used from Python: every trajectory is taken.")
    farm_key_for: dict[str, list[Path]] = Field(
        default_factory=dict,
        description="Farm id → public keys trusted for that farm only: a trajectory such a "
                    "key signed under another farm id is refused (`wrong_farm`), so one "
                    "farm's key cannot speak for another. Keys in `farm_keys` may sign for "
                    "any farm.")
    accept_unsigned: bool = Field(
        False, description="`distrl learner` only: take trajectories from any farm, signed "
                           "or not (farms from before signatures).")
    demos: list[Path] = Field(
        default_factory=list,
        description="Demonstration datasets (`distrl demos record`) kept in play as the "
                    "demonstration anchor: every actor update also lowers −log π of "
                    "demonstrated actions of their train split, weighted by algo_config's "
                    f"demo_coef ({DEMO_COEF} when demos are given and it is unset). They "
                    "never enter replay; read again on resume.")
    farm_id: str = Field("+", description="Farm whose trajectories to learn from (+ = all).")
    client_id: str = Field("distrl-learner",
                           description="MQTT client id: keep it stable so the broker queues "
                                       "trajectories while the learner is down.")
    publish_every: int = Field(5, ge=1, description="Publish a policy version every N "
                                                    "updates (each is a full weight blob on "
                                                    "the broker).")
    checkpoint_every_s: float = Field(60.0, gt=0,
                                      description="Seconds between periodic checkpoints.")
    keep_checkpoints: int = Field(2, ge=1, description="How many checkpoints to keep.")
    keep_versions: int = Field(2, ge=1,
                               description="Policy blobs kept retained on the broker.")
    max_lag: int | None = Field(None, ge=0,
                                description="Refuse episodes whose oldest step is more than "
                                            "this many versions old (None: the trainer's own "
                                            "bound only).")
    metrics_every_s: float = Field(5.0, gt=0,
                                   description="Seconds between metrics publications.")
    success_window: int = Field(100, ge=1,
                                description="Episodes in the sliding success-rate window.")
    max_trajectory_bytes: int = Field(64 * 1024 * 1024, ge=1024,
                                      description="Larger trajectories are rejected.")
    tensorboard: bool = Field(True, description="Also write the scalars as TensorBoard "
                                               "event files (RUN_DIR/tensorboard; needs the "
                                               "tensorboard package).")
    journal_fsync: bool = Field(True, description="fsync the journal before acking (safe "
                                                  "against power loss, not only crashes).")
    idle_s: float = Field(0.05, gt=0,
                          description="Train loop wait for new data when not ready.")
    torch_threads: int | None = Field(None, ge=1,
                                      description="torch intra-op threads (None: default).")
    nproc: int = Field(1, ge=1, le=64,
                       description="Processes that share each update (torch.distributed: "
                                   "gloo on CPU, NCCL on GPU): this one keeps ingest, "
                                   "replay and publishing, the others take shards of the "
                                   "policy passes; gradients are all-reduced. A-RIDE only.")
    trackers: list[Literal["mlflow", "wandb"]] = Field(
        default_factory=list, description="Also log every scalar to these experiment "
        "trackers (installed separately): mlflow (MLFLOW_TRACKING_URI) and wandb "
        "(WANDB_PROJECT, WANDB_MODE=offline without an account). A restart on the same "
        "run dir continues the same tracker run.")
    serve_url: str | None = Field(
        None, description="An OpenAI-compatible inference server with runtime LoRA loading "
                          "(`distrl serve`, or vLLM with --enable-lora): each version's "
                          "adapter is written under RUN_DIR/adapters and loaded into it as "
                          "distrl-vN before its pointer is published, so farms with --policy "
                          "remote act through it. VLM policies only.")
    serve_api_key: str | None = Field(None, description="Bearer key of that server, if any.")
    serve_keep: int = Field(4, ge=1, description="Adapter versions kept loaded on the "
                                                 "inference server.")
    max_updates_per_episode: float | None = Field(
        None, gt=0, description="Replay-ratio cap: at most this many updates per episode "
                                "received (None: train whenever ready). On a small machine an "
                                "uncapped learner takes the CPU the phones need and overfits "
                                "a few hundred episodes.")


# ----------------------------------------------------------------------------- episodes


def _unlearnable(msg: TrajectoryMsg) -> str | None:
    """Why a valid trajectory cannot be learned from (the checks of EpisodeRecord.from_wire,
    with a reason to count), or None."""
    if msg.status not in ("success", "failure"):
        return f"status_{msg.status}"
    if not msg.steps:
        return "no_steps"
    for s in msg.steps:
        if s.obs is None or s.choice is None or s.log_prob is None:
            return "no_policy_data"
        if not math.isfinite(s.log_prob) or not math.isfinite(s.reward) \
                or not math.isfinite(msg.reward):
            return "non_finite"
    return None


def episode_to_json(ep: EpisodeRecord) -> dict[str, Any]:
    return {"id": ep.id, "task": ep.task, "instruction": ep.instruction,
            "success": ep.success, "reward": ep.reward, "farm_id": ep.farm_id,
            "device_id": ep.device_id, "meta": ep.meta,
            "steps": [{"obs": s.obs, "choice": s.choice, "log_mu": s.log_mu,
                       "reward": s.reward, "policy_version": s.policy_version,
                       "invalid": s.invalid,
                       "frame": base64.b64encode(s.frame).decode() if s.frame else None}
                      for s in ep.steps]}


def episode_from_json(d: Mapping[str, Any]) -> EpisodeRecord:
    steps = [StepRecord(obs=s["obs"], choice=s["choice"], log_mu=float(s["log_mu"]),
                        reward=float(s["reward"]), policy_version=int(s["policy_version"]),
                        invalid=bool(s["invalid"]),
                        frame=base64.b64decode(s["frame"]) if s["frame"] else None)
             for s in d["steps"]]
    return EpisodeRecord(id=d["id"], task=d["task"], instruction=d["instruction"],
                         steps=steps, success=bool(d["success"]), reward=float(d["reward"]),
                         farm_id=d["farm_id"], device_id=d["device_id"], meta=dict(d["meta"]))


# ----------------------------------------------------------------------------- journal

_SEG = re.compile(r"^seg-(\d{8})\.jsonl$")


class Journal:
    """Append-only segments of accepted trajectories since the last checkpoint: one line
    ``{"id": …, "episode": {…} | null, "reason": …}`` per trajectory (null: valid but
    unlearnable, kept so its id stays deduped).

    Durability is group-committed: :meth:`append` writes the line to the OS (a process
    crash cannot lose it) and returns its number; :meth:`durable` returns once an fsync
    covered it. One fsync, in a worker thread on a duplicate of the descriptor, covers
    every line written before it started, so the event loop never waits on the disk and
    a burst of trajectories costs one fsync, not one each."""

    def __init__(self, directory: Path, *, fsync: bool = True) -> None:
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self.fsync = fsync
        segs = self.segments()
        self.current = (segs[-1] + 1) if segs else 0
        self._f: TextIO | None = None
        self._written = 0  # lines appended (all segments)
        self._synced = 0  # … of which an fsync covered the first _synced
        self._syncing: asyncio.Future[None] | None = None
        self.fsyncs = 0

    def segments(self) -> list[int]:
        return sorted(int(m.group(1)) for p in self.dir.iterdir() if (m := _SEG.match(p.name)))

    def path(self, seg: int) -> Path:
        return self.dir / f"seg-{seg:08d}.jsonl"

    def append(self, tid: str, episode: EpisodeRecord | None, reason: str | None = None
               ) -> int:
        if self._f is None:
            self._f = open(self.path(self.current), "a", encoding="utf-8")  # noqa: SIM115
        line = json.dumps({"id": tid, "episode": episode_to_json(episode) if episode else None,
                           "reason": reason})
        self._f.write(line + "\n")
        self._f.flush()
        self._written += 1
        return self._written

    async def durable(self, line: int) -> None:
        """Return once line ``line`` (an :meth:`append` result) is on disk."""
        if not self.fsync:
            return
        while self._synced < line:
            if self._syncing is None:
                self._syncing = asyncio.ensure_future(self._sync_once())
            await asyncio.shield(self._syncing)

    async def _sync_once(self) -> None:
        target = self._written
        try:
            if self._f is not None:
                fd = os.dup(self._f.fileno())  # rotate() may close the file meanwhile
                try:
                    await asyncio.to_thread(os.fsync, fd)
                finally:
                    os.close(fd)
                self.fsyncs += 1
            self._synced = max(self._synced, target)
        finally:
            self._syncing = None

    def rotate(self) -> int:
        """Start a new segment; returns its number (the first one a checkpoint taken now
        does not contain)."""
        self.close()
        self.current += 1
        return self.current

    def read_from(self, first: int) -> list[tuple[str, EpisodeRecord | None, str]]:
        """``(id, episode, why not learnable)`` of segments ≥ ``first``, in order; a torn
        last line (a crash mid-write) is skipped."""
        out: list[tuple[str, EpisodeRecord | None, str]] = []
        for seg in self.segments():
            if seg < first:
                continue
            with open(self.path(seg), encoding="utf-8") as f:
                for line in f:
                    try:
                        rec = json.loads(line)
                        ep = episode_from_json(rec["episode"]) if rec["episode"] else None
                        out.append((str(rec["id"]), ep, str(rec.get("reason") or "")))
                    except (ValueError, KeyError, TypeError):
                        log.warning("journal %s: skipped an unreadable line", seg)
        return out

    def drop_before(self, first: int) -> None:
        for seg in self.segments():
            if seg < first and seg != self.current:
                self.path(seg).unlink(missing_ok=True)

    def close(self) -> None:
        if self._f is not None:
            if self.fsync and self._synced < self._written:
                os.fsync(self._f.fileno())  # once per segment: what it holds is durable
                self.fsyncs += 1
            self._f.close()
            self._f = None
        self._synced = self._written


# ----------------------------------------------------------------------------- trainer


#: Trainer settings per policy kind, under whatever ``algo_config`` sets. The trainers'
#: own defaults are the paper's, for a pretrained VLM fine-tuned with small steps; the
#: UI-tree policy is small and starts from SFT or from nothing, and with those it learnt
#: ~10× slower (2-4 % at 2 min against 78 % in 60 s with these; the demo's and the
#: training-efficiency bench's settings, measured there).
KIND_ALGO_DEFAULTS: dict[str, dict[str, dict[str, Any]]] = {
    "uitree": {
        # measured by bench/training_efficiency.py (whose RL arms read these): actor lr
        # 3e-4 with the actor's passes under token dropout held out better over 30 min
        # than 1e-3 without; the lag bound is wider than the paper's K = 50 because a
        # farm's policy refresh lags the learner by a publish interval and a fetch.
        # Self-imitation with uniform replay (sil_coef 1, alpha 0) held out better than
        # the paper's prioritized replay on every seed of 30-minute runs (0.830 against
        # 0.777 over 3 seeds, the same SFT starts; re-runs vary by ~6 points, so the
        # gain is within that spread): prioritized sampling re-draws the same training
        # instances, which the policy then fits rather than generalises. Self-imitation
        # on top of uniform sampling changed nothing measurable (2 seeds: the same mean
        # with sil_coef 0); it stays because the README's 30-minute rows used it.
        # The advantage floored at 0 (only better-than-expected actions pull) held out
        # at least as well as the signed advantage on each of 4 seeds from the same SFT
        # starts (0.891 against 0.860 in the mean); a push away from a failed answer
        # also pushed down the right answer's shared features on unseen pages
        "aride": {"actor_lr": 3e-4, "critic_lr": 1e-3, "traj_critic_lr": 1e-3,
                  "entropy_coef": 0.01, "actor_dropout": True, "max_policy_lag": 1000,
                  "sil_coef": 1.0, "alpha": 0.0, "advantage_floor": 0.0},
        "digirl": {"actor_lr": 3e-4, "critic_lr": 1e-3, "traj_critic_lr": 1e-3,
                   "actor_dropout": True},
    },
}


def effective_algo_config(policy_kind: str, algorithm: str,
                          algo_config: dict[str, Any]) -> dict[str, Any]:
    """What the trainer is built with: the kind's defaults, then ``algo_config``."""
    return {**KIND_ALGO_DEFAULTS.get(policy_kind, {}).get(algorithm, {}), **algo_config}


def default_trainer(policy: TrainablePolicy, config: LearnerConfig) -> Trainer:
    """The trainer ``config.algorithm`` names, configured by :func:`effective_algo_config`
    for the policy's kind."""

    algo = effective_algo_config(policy.kind, config.algorithm, config.algo_config)
    if config.demos:
        algo.setdefault("demo_coef", DEMO_COEF)
    try:
        if config.algorithm == "aride":
            from distrl_sdk.learn.aride import ARIDEConfig, ARIDETrainer

            return ARIDETrainer(policy, ARIDEConfig(**algo))
        from distrl_sdk.learn import digirl

        return digirl.DigiRLTrainer(policy, digirl.DigiRLConfig(**algo))
    except TypeError as exc:
        raise ConfigError(f"bad {config.algorithm} config {algo}: {exc}") from exc


def _default_builder(kind: str, config: dict[str, Any]) -> TrainablePolicy:
    from distrl_sdk.policies import build_policy

    return build_policy(kind, config)


def replay_size(trainer: Trainer) -> int | None:
    replay = getattr(trainer, "replay", None)
    try:
        return len(replay) if replay is not None else None
    except TypeError:
        return None


@dataclass
class _StepResult:
    refused: Counter[str] = field(default_factory=Counter)
    accepted: int = 0
    metrics: dict[str, float] | None = None  # of an update, if one ran
    version: int = 0
    replay: int | None = None
    # the trainer thread's order of reading version and replay: training and checkpoint
    # results are awaited by different tasks, so they can be merged out of that order
    seq: int = 0
    blob: tuple[int, bytes, str, dict[str, Any]] | None = None  # version, weights, kind, cfg


# ----------------------------------------------------------------------------- service


async def _cancel_all(tasks: list[asyncio.Task[Any]]) -> None:
    """Cancel ``tasks`` and wait for all of them (see :func:`farm.aio.cancel_and_wait`);
    what they raised is dropped."""
    await asyncio.gather(*(cancel_and_wait(t) for t in tasks), return_exceptions=True)


class LearnerService:
    """``await LearnerService(cfg).run(duration_s)``; :meth:`stop` ends it cleanly (a final
    checkpoint is written). ``trainer_factory``/``policy_builder`` replace the defaults
    (the config's algorithm and ``build_policy``)."""

    def __init__(self, config: LearnerConfig, *, trainer_factory: TrainerFactory | None = None,
                 policy_builder: PolicyBuilder | None = None,
                 backoff: Backoff | None = None) -> None:
        self.config = config
        self.run_dir = Path(config.run_dir)
        self.ckpt_dir = self.run_dir / CHECKPOINTS
        self.trainer_factory = trainer_factory or default_trainer
        self.policy_builder = policy_builder or _default_builder
        self.backoff = backoff
        self.trainer: Trainer | None = None
        self.demo_steps = 0  # demonstration steps kept for the anchor (config.demos)
        self.stats = LearnerStats(window=config.success_window)
        self.received = 0  # valid, new training trajectories (learnable or not)
        # the same, by farm, since this process started (published as received/<farm>):
        # with many farms it shows which ones are delivering
        self.received_by_farm: Counter[str] = Counter()
        # held-out evaluation episodes: scored per policy version, never handed to the
        # trainer nor journaled for replay (their counts are eval/received, eval/rounds)
        self.eval = EvalAggregator()
        self.episodes = 0  # learnable ones handed to the trainer
        self.unlearnable: Counter[str] = Counter()
        self.refused: Counter[str] = Counter()  # by the lag bound / the trainer
        self.updates = 0  # in this process
        self._accepted_here = 0  # episodes accepted in this process (the replay-ratio cap)
        self.published_version = -1
        self.restored_from: Path | None = None
        self.restored: dict[str, Any] = {}  # state right after restore (before new data)
        self.replayed_from_journal = 0
        self.checkpoints = 0
        # checkpoint writes that failed (disk full, I/O error): survived, logged, counted;
        # nothing is lost (the journal keeps everything since the last good checkpoint)
        self.checkpoint_errors = 0
        self.last_checkpoint_error: str | None = None
        self.last_update: dict[str, float] = {}
        self.subscriber: TrajectorySubscriber | None = None
        self.link: MqttLink | None = None
        self.publisher: WeightPublisher | None = None
        self.adapters: AdapterLoader | None = None  # with serve_url
        self.serve_errors = 0
        self.ready = asyncio.Event()  # restored, subscribed and first version published
        self._replay: int | None = None
        self._trainer_seq = itertools.count(1)  # advanced in the trainer thread only
        self._merged_seq = 0  # of the newest result whose replay size _replay shows
        # every trajectory id taken in, with its age: checkpointed, and the subscriber's
        # dedupe (which refuses what is older than the ids it still remembers)
        self._ids = SeenIds(capacity=100_000)
        self._inbox: deque[EpisodeRecord] = deque()
        self._new_data = asyncio.Event()
        self._stop = asyncio.Event()
        self._stopping = False  # the train loop finishes its step and exits
        self._exec = ThreadPoolExecutor(1, thread_name_prefix="learner-train")
        self._journal = Journal(self.run_dir / "journal", fsync=config.journal_fsync)
        self._scalars = ScalarLog(self.run_dir / "scalars.jsonl",
                                  self.run_dir / "tensorboard" if config.tensorboard else None)
        if self._scalars.tensorboard_error:
            log.warning("no TensorBoard event files: %s", self._scalars.tensorboard_error)
        self._ckpt_lock = asyncio.Lock()
        self._publish_lock = asyncio.Lock()
        self._ckpt_seq = 0
        self._journal_from: dict[Path, int] = {}
        self._pending_blob: tuple[int, bytes, str, dict[str, Any]] | None = None
        self._blob_ready = asyncio.Event()
        self._published_blobs: list[PublishedBlob] = []
        self._train_task: asyncio.Task[None] | None = None
        self._snapshot_version = -1
        self._workers: WorkerGroup | None = None  # --nproc > 1: the data-parallel ranks

    # -- helpers ----------------------------------------------------------------------------
    async def _on_trainer(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._exec, fn, *args)

    @property
    def version(self) -> int:
        return self.trainer.version if self.trainer is not None else 0

    def _remember(self, tid: str, ended_at: float | None = None) -> None:
        if tid not in self._ids:  # the subscriber may have marked it already
            self._ids.add(tid, ended_at)

    def stop(self) -> None:
        """Ask :meth:`run` to finish (safe from a signal handler)."""
        self._stop.set()

    # -- restore ------------------------------------------------------------------------------
    def _load_demos(self) -> int:
        """Hand the train split of the configured demonstration datasets to the trainer
        (the anchor); returns how many steps it keeps (0 without datasets)."""
        if not self.config.demos:
            return 0
        from distrl_sdk.learn.demos import read_demos
        from distrl_sdk.learn.sft import sft_examples

        add = getattr(self.trainer, "add_demonstrations", None)
        policy = getattr(self.trainer, "policy", None)
        if add is None or policy is None:
            raise ConfigError(f"the {self.config.algorithm} trainer keeps no demonstrations")
        steps: list[StepRecord] = []
        for d in self.config.demos:
            got, _ = sft_examples(policy, read_demos(d, frames=policy.kind == "vlm",
                                                     split="train"))
            steps += got
        kept = int(add(steps))
        log.info("demonstration anchor: %d steps from %d dataset(s)", kept,
                 len(self.config.demos))
        return kept

    def _checkpoints(self) -> list[Path]:
        if not self.ckpt_dir.is_dir():
            return []
        return sorted((p for p in self.ckpt_dir.iterdir()
                       if p.name.startswith(CKPT_PREFIX) and (p / "learner.json").is_file()),
                      key=lambda p: p.name)

    def _restore(self) -> dict[str, Any]:
        """(executor) Load the newest readable checkpoint, then replay the journal."""
        from distrl_sdk.learn.state import load_trainer_state

        torch_threads = self.config.torch_threads
        if torch_threads:
            import torch

            torch.set_num_threads(torch_threads)
        meta: dict[str, Any] = {}
        for ckpt in reversed(self._checkpoints()):
            try:
                meta = json.loads((ckpt / "learner.json").read_text())
                pol = json.loads((ckpt / "policy" / "policy.json").read_text())
                policy = self.policy_builder(pol["kind"], pol["config"])
                trainer = self.trainer_factory(policy, self.config)
                load_trainer_state(trainer, ckpt / "trainer")
                ids = (ckpt / "seen_ids.txt").read_text()
            except Exception as exc:  # a damaged checkpoint: fall back to the one before
                log.warning("checkpoint %s unusable (%s); trying an older one", ckpt.name, exc)
                meta = {}
                continue
            differs = {k for k, v in self.config.policy_config.items()
                       if pol["config"].get(k) != v}
            if pol["kind"] != self.config.policy_kind or differs:
                log.warning("resuming a %s policy with the checkpoint's config %s (the "
                            "configured one is ignored)", pol["kind"], pol["config"])
            self.trainer = trainer
            self._ids.load_text(ids)
            self.restored_from = ckpt
            self._ckpt_seq = int(ckpt.name.split("-")[1])
            break
        if self.trainer is None:
            if self.config.init_policy is not None:
                from distrl_sdk.policies import load_policy

                policy, _ = load_policy(self.config.init_policy)
            else:
                policy = self.policy_builder(self.config.policy_kind,
                                             self.config.policy_config)
            self.trainer = self.trainer_factory(policy, self.config)
        self.demo_steps = self._load_demos()
        self.received = int(meta.get("received", 0))
        self.episodes = int(meta.get("episodes", 0))
        self.unlearnable.update(meta.get("unlearnable", {}))
        self.refused.update(meta.get("refused", {}))
        self._published_blobs = [PublishedBlob(**b) for b in meta.get("published", [])]
        self.eval.load(meta.get("eval"))
        for ckpt in self._checkpoints():
            with contextlib.suppress(Exception):
                self._journal_from[ckpt] = int(
                    json.loads((ckpt / "learner.json").read_text())["journal_from"])
        first = int(meta.get("journal_from", 0))
        eps: list[EpisodeRecord] = []
        for tid, ep, why in self._journal.read_from(first):
            if tid in self._ids:
                continue
            self._remember(tid)
            self.received += 1
            if ep is None:
                self.unlearnable[why or "unknown"] += 1
            else:
                eps.append(ep)
        self.replayed_from_journal = len(eps)
        res = self._ingest(eps)
        self.refused.update(res.refused)
        self.episodes += res.accepted
        self._replay = replay_size(self.trainer)
        # never announce a version number twice with different weights: versions above
        # the checkpoint's were announced by a lineage the crash lost (a fresh trainer may
        # not even rebuild the same v0), so continue above the highest announced one
        hwm = self._read_hwm()
        v = self.trainer.version
        if hwm is not None and (hwm > v or (self.restored_from is None and hwm >= v)):
            self.trainer.version = hwm + 1
        self.restored = {"version": self.trainer.version, "replay_size": self._replay,
                         "seen_ids": len(self._ids), "journal_episodes": len(eps)}
        return meta

    def audit(self) -> dict[str, Any]:
        """What this run dir holds, without connecting: the newest checkpoint plus the
        journal, as a restart would load them. For reconciling with farms' ledgers
        (bench/chaos.py): ``seen_ids`` (every trajectory id taken in, learned or not),
        ``episodes`` (replay), ``refused`` and ``version``. It releases the service's
        files and worker: a service audited cannot :meth:`run` afterwards."""
        self._restore()
        self._release()
        assert self.trainer is not None
        replay = getattr(self.trainer, "replay", None)
        episodes = [e.episode for e in replay.entries()] if replay is not None else []
        return {"seen_ids": list(self._ids), "episodes": episodes,
                "refused": dict(self.refused), "version": self.trainer.version}

    def _hwm_path(self) -> Path:
        return self.run_dir / "published_version"

    def _read_hwm(self) -> int | None:
        try:
            return int(self._hwm_path().read_text().strip())
        except (OSError, ValueError):
            return None

    def _write_hwm(self, version: int) -> None:
        tmp = self._hwm_path().with_suffix(".tmp")
        with open(tmp, "w") as f:
            f.write(str(version))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self._hwm_path())

    # -- trainer work (executor) ---------------------------------------------------------------
    def _ingest(self, eps: list[EpisodeRecord]) -> _StepResult:
        t = self.trainer
        assert t is not None
        res = _StepResult()
        for ep in eps:
            lag = t.version - ep.policy_version
            if self.config.max_lag is not None and lag > self.config.max_lag:
                res.refused["stale"] += 1
            elif t.add_episode(ep):
                res.accepted += 1
            else:
                res.refused["refused_by_trainer"] += 1
        return res

    def _stamp(self, res: _StepResult) -> None:
        """(executor) The trainer's version and replay size now, in the thread's order."""
        t = self.trainer
        assert t is not None
        res.version, res.replay, res.seq = t.version, replay_size(t), next(self._trainer_seq)

    def _snapshot_blob(self) -> tuple[int, bytes, str, dict[str, Any]]:
        t = self.trainer
        assert t is not None
        return (t.version, serialize_weights(t.policy.weights()), t.policy.kind,
                t.policy.config_dict())

    def _train_step(self, eps: list[EpisodeRecord], publish_after: int,
                    may_update: bool = True) -> _StepResult:
        t = self.trainer
        assert t is not None
        res = self._ingest(eps)
        if may_update and t.ready():
            res.metrics = t.update()
            if t.version >= publish_after:
                res.blob = self._snapshot_blob()
        self._stamp(res)
        return res

    def _write_checkpoint(self, eps: list[EpisodeRecord], ids: str,
                          meta: dict[str, Any]) -> tuple[Path | Exception, _StepResult]:
        """(executor) Ingest ``eps`` (always: they are the trainer's now), then write the
        checkpoint; a write that fails returns its exception next to the result, so the
        caller merges what was ingested either way."""
        res = self._ingest(eps)
        try:
            return self._save_checkpoint(ids, meta, res), res
        except Exception as exc:  # e.g. OSError ENOSPC, torch's RuntimeError on a short write
            for tmp in self.ckpt_dir.glob(".tmp-*") if self.ckpt_dir.is_dir() else ():
                shutil.rmtree(tmp, ignore_errors=True)  # a partial one frees its space
            return exc, res

    def _save_checkpoint(self, ids: str, meta: dict[str, Any], res: _StepResult
                         ) -> Path:
        from distrl_sdk.learn.state import save_trainer
        from distrl_sdk.policies import save_policy

        t = self.trainer
        assert t is not None
        self.ckpt_dir.mkdir(parents=True, exist_ok=True)
        self._ckpt_seq += 1
        name = f"{CKPT_PREFIX}{self._ckpt_seq:06d}"
        tmp = self.ckpt_dir / f".tmp-{name}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        save_policy(t.policy, tmp / "policy", version=t.version)
        # replay lives in an append-only store shared by the checkpoints: each one writes
        # only the episodes that arrived since the last (not all of replay every minute)
        save_trainer(t, tmp / "trainer", replay_store=self.ckpt_dir / "replay-store")
        (tmp / "seen_ids.txt").write_text(ids)  # ids with ages and the dedupe watermark
        meta = {**meta, "version": t.version,
                "episodes": meta["episodes"] + res.accepted,
                "refused": dict(Counter(meta["refused"]) + res.refused),
                "replay_size": replay_size(t), "created_at": time.time()}
        with open(tmp / "learner.json", "w") as f:  # written last: marks it complete
            json.dump(meta, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        final = self.ckpt_dir / name
        os.replace(tmp, final)
        self._stamp(res)
        return final

    # -- event-loop side ---------------------------------------------------------------------
    def _on_trajectory(self, decoded: DecodedTrajectory) -> Coroutine[Any, Any, None] | None:
        """Subscriber handler (synchronous: the subscriber marks the id seen right after,
        with no await in between, which the checkpoint's consistency relies on). Returns
        the journal's durability wait: the subscriber acks when it is done."""
        msg = decoded.msg
        if msg.eval is not None:  # checked first: an eval episode never reaches the trainer
            self._remember(msg.id, msg.ended_at)
            scalars = self.eval.add(msg)
            if scalars is not None:  # a round completed: one line per metric, at its version
                self._scalars.write({k: v for k, v in scalars.items()
                                     if k not in ("eval/received", "eval/rounds")},
                                    step=self.eval.latest or 0)
            return None
        reason = _unlearnable(msg)
        ep: EpisodeRecord | None = None
        if reason is None:
            try:
                ep = EpisodeRecord.from_wire(decoded)
            except Exception as exc:  # a shape from_wire cannot take
                log.debug("episode %s: %s", msg.id, exc)
            if ep is None:
                reason = "bad_episode"
        line = self._journal.append(msg.id, ep, reason)
        self._remember(msg.id, msg.ended_at)
        self.received += 1
        self.received_by_farm[msg.farm_id] += 1
        if ep is None:
            self.unlearnable[reason or "unknown"] += 1
        else:
            self.stats.episode(ep.success, ep.reward, self.version - ep.policy_version)
            self._inbox.append(ep)
            self._new_data.set()
        return self._journal.durable(line)  # the subscriber acks once this is done

    def _take_inbox(self) -> list[EpisodeRecord]:
        eps = list(self._inbox)
        self._inbox.clear()
        return eps

    def _merge(self, res: _StepResult) -> None:
        self.refused.update(res.refused)
        self.episodes += res.accepted
        self._accepted_here += res.accepted
        if res.replay is not None and res.seq > self._merged_seq:  # never an older size
            self._replay, self._merged_seq = res.replay, res.seq
        if res.metrics is not None:
            self.updates += 1
            self.stats.update()
            self.last_update = dict(res.metrics)
            self._scalars.write({f"train/{k}": v for k, v in res.metrics.items()},
                                step=res.version)
        if res.blob is not None:
            self._snapshot_version = res.blob[0]
            self._pending_blob = res.blob
            self._blob_ready.set()

    async def _train_loop(self) -> None:
        while not self._stopping:
            self._new_data.clear()
            eps = self._take_inbox()
            # every publish_every versions (counted from the last snapshot taken, so a slow
            # broker does not make every update serialise weights again)
            last = max(self.published_version, self._snapshot_version)
            cap = self.config.max_updates_per_episode
            may_update = cap is None or self.updates < cap * self._accepted_here
            res = await self._on_trainer(self._train_step, eps,
                                         last + self.config.publish_every, may_update)
            self._merge(res)
            if res.metrics is None:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.config.idle_s * 20):
                        await self._new_data.wait()
            else:
                await asyncio.sleep(0)  # let the subscriber and metrics run

    async def _publish_loop(self) -> None:
        assert self.subscriber is not None
        # the first pointer also tells farms the learner is subscribed (nothing they send
        # from then on can miss the persistent session)
        await self.subscriber.connected.wait()
        while True:
            await self._blob_ready.wait()
            self._blob_ready.clear()
            blob, self._pending_blob = self._pending_blob, None
            if blob is not None:
                # shielded: a stop waits for a publish under way instead of cutting it
                await asyncio.shield(self._publish(blob))
            # subscribed and the current version announced: only now is the service ready
            # (a hostile or early publisher before this could miss the persistent session)
            self.ready.set()

    async def _publish(self, blob: tuple[int, bytes, str, dict[str, Any]]) -> None:
        async with self._publish_lock:
            if blob[0] > self.published_version:
                await self._publish_now(blob)

    async def _publish_now(self, blob: tuple[int, bytes, str, dict[str, Any]]) -> None:
        assert self.publisher is not None
        version, data, kind, cfg = blob
        if self.adapters is not None:  # the server first: farms act on it once they hear
            from farm.serve.lora import LoadError

            try:
                weights = await asyncio.to_thread(deserialize_weights, data)
                await self.adapters.load(version, weights, cfg)
            except LoadError as exc:
                self.serve_errors += 1
                log.warning("policy v%d not published: %s", version, exc)
                return  # the next snapshot tries again
        await asyncio.to_thread(self._write_hwm, version)
        await self.publisher.publish(data, version, kind=kind, config=cfg)
        self.published_version = version
        self._scalars.write({"policy/published_version": version, "policy/bytes": len(data)},
                            step=version)
        log.info("published policy v%d (%d B)", version, len(data))

    def metrics(self) -> dict[str, float]:
        """Scalars of the moment (window stats, last update, counters)."""
        out = self.stats.snapshot()
        out.update({f"train/{k}": float(v) for k, v in self.last_update.items()})
        out.update(version=float(self.version), published_version=float(self.published_version),
                   updates=float(self.updates), received=float(self.received),
                   episodes=float(self.episodes), checkpoints=float(self.checkpoints),
                   checkpoint_errors=float(self.checkpoint_errors))
        if self.adapters is not None:
            out["serve/loaded"] = float(self.adapters.loads)
            out["serve/errors"] = float(self.serve_errors)
        if self._replay is not None:
            out["replay_size"] = float(self._replay)
        sub = self.subscriber
        if sub is not None:
            out["duplicates"] = float(sub.duplicates)
            out["rejected_total"] = float(sum(v for k, v in sub.rejects.items()
                                              if k != "duplicate"))
            out.update({f"rejected/{k}": float(v) for k, v in sub.rejects.items()})
        out.update({f"unlearnable/{k}": float(v) for k, v in self.unlearnable.items()})
        out.update({f"received/{k}": float(v) for k, v in self.received_by_farm.items()})
        out.update({f"refused/{k}": float(v) for k, v in self.refused.items()})
        out.update(self.eval.scalars())
        return out

    async def _emit_metrics(self) -> dict[str, float]:
        scalars = self.metrics()
        # eval/* go to the scalar log once per completed round, at the evaluated version
        self._scalars.write({k: v for k, v in scalars.items() if not k.startswith("eval/")},
                            step=self.version)
        if self.link is not None and self.link.connected.is_set():
            body = Metrics(source="learner", step=self.version, scalars=scalars)
            with contextlib.suppress(Exception):
                await self.link.publish(topics.learner_metrics(), encode_envelope(body),
                                        retain=True, timeout=2.0)
        return scalars

    async def _metrics_loop(self, on_metrics: Callable[[dict[str, float]], None] | None
                            ) -> None:
        while not self._stopping:
            await asyncio.sleep(self.config.metrics_every_s)
            scalars = await self._emit_metrics()
            if on_metrics is not None:
                on_metrics(scalars)

    async def _checkpoint_loop(self) -> None:
        while not self._stopping:
            await asyncio.sleep(self.config.checkpoint_every_s)
            # shielded: a stop waits for a checkpoint under way instead of losing it
            with contextlib.suppress(CheckpointError):  # logged and counted; retried next
                await asyncio.shield(self.checkpoint())

    async def checkpoint(self) -> Path:
        """Write a checkpoint now (see the module docstring); returns its directory.

        A checkpoint that cannot be written (disk full, I/O error) is logged with why,
        counted (``checkpoint_errors``) and raised as :class:`CheckpointError`; the learner
        carries on and the next checkpoint retries. Nothing is lost meanwhile: journal
        segments are only dropped once a newer checkpoint holds them."""
        async with self._ckpt_lock:
            try:
                return await self._checkpoint_locked()
            except Exception as exc:
                self.checkpoint_errors += 1
                why = f"{type(exc).__name__}: {exc}"
                self.last_checkpoint_error = why
                log.error("checkpoint failed (%s); the learner carries on, the journal "
                          "keeps every episode since the last good checkpoint, and the "
                          "next checkpoint retries (%d failed so far)", why,
                          self.checkpoint_errors)
                raise CheckpointError(why) from exc

    async def _checkpoint_locked(self) -> Path:
        """(under ``_ckpt_lock``) The checkpoint itself; raises what failed."""
        # one synchronous step: everything journaled so far goes into this checkpoint
        journal_from = self._journal.rotate()
        eps = self._take_inbox()
        ids = self._ids.dump()
        pub = self.publisher.published if self.publisher is not None else \
            self._published_blobs
        meta = {"format": 1, "journal_from": journal_from, "received": self.received,
                "episodes": self.episodes, "unlearnable": dict(self.unlearnable),
                "refused": dict(self.refused), "published_version": self.published_version,
                "eval": self.eval.state(),
                "published": [vars(b) for b in pub]}
        outcome, res = await self._on_trainer(self._write_checkpoint, eps, ids, meta)
        self._merge(res)
        if isinstance(outcome, Exception):
            raise outcome
        path = outcome
        self.checkpoints += 1
        self._journal_from[path] = journal_from
        kept = self._checkpoints()
        for old in kept[: -self.config.keep_checkpoints]:
            shutil.rmtree(old, ignore_errors=True)
            self._journal_from.pop(old, None)
        keep_from = min((v for k, v in self._journal_from.items() if k.exists()),
                        default=journal_from)
        self._journal.drop_before(keep_from)
        from distrl_sdk.learn.state import gc_replay_store

        await self._on_trainer(gc_replay_store, self.ckpt_dir / "replay-store",
                               [c / "trainer" for c in self._checkpoints()])
        for tmp in self.ckpt_dir.glob(".tmp-*"):
            shutil.rmtree(tmp, ignore_errors=True)
        return path

    # -- run ------------------------------------------------------------------------------------
    async def run(self, duration_s: float | None = None, *,
                  on_metrics: Callable[[dict[str, float]], None] | None = None
                  ) -> dict[str, Any]:
        """Run until :meth:`stop`, ``duration_s`` or cancellation; returns :meth:`summary`.
        Every exit path stops ingesting first, then writes a final checkpoint."""
        cfg = self.config
        self.run_dir.mkdir(parents=True, exist_ok=True)
        try:
            await self._on_trainer(self._restore)
        except BaseException:
            self._release()
            raise
        assert self.trainer is not None
        if cfg.nproc > 1:
            from farm.learner.parallel import start_workers

            try:
                self._workers = await self._on_trainer(start_workers, self.trainer, cfg)
            except BaseException:
                self._release()
                raise
        set_horizon = getattr(self.trainer, "set_horizon", None)
        if duration_s is not None and set_horizon is not None \
                and getattr(self.trainer, "horizon_seconds", None) is None:
            set_horizon(seconds=duration_s)  # IS β reaches 1 when the planned run ends
        log.info("learner at v%d, replay %s (%s)", self.trainer.version, self._replay,
                 f"resumed from {self.restored_from.name}" if self.restored_from else "fresh")
        self.link = MqttLink(cfg.broker_url, client_id=f"{cfg.client_id}-pub")
        from farm.keys import learner_signing_key

        signer = learner_signing_key(cfg.signing_key)
        self.publisher = WeightPublisher(self.link, keep=cfg.keep_versions, signer=signer)
        self.publisher.published = list(self._published_blobs)
        if cfg.serve_url is not None:
            from farm.serve.lora import AdapterLoader, LoadError

            if self.trainer.policy.kind != "vlm":
                self._release()
                raise ConfigError(f"serve_url: only vlm policies are served remotely (this "
                                  f"learner trains a {self.trainer.policy.kind} policy)")
            self.adapters = AdapterLoader(cfg.serve_url, self.run_dir / "adapters",
                                          keep=cfg.serve_keep, api_key=cfg.serve_api_key)
            try:
                await self.adapters.check()
            except LoadError as exc:
                self._release()
                raise ConfigError(str(exc)) from None
        if cfg.trackers and not self._scalars.trackers:
            from farm.learner.settings import masked_learner
            from farm.learner.trackers import open_trackers

            try:
                self._scalars.trackers = await asyncio.to_thread(
                    open_trackers, list(cfg.trackers), self.run_dir, masked_learner(cfg))
            except ConfigError:
                self._release()
                raise
        seen = self._ids  # one memory of ids, the subscriber's and the checkpoint's
        self.subscriber = TrajectorySubscriber(
            cfg.broker_url, farm_id=cfg.farm_id, client_id=cfg.client_id, clean_session=False,
            handler=self._on_trajectory, seen=seen,
            reassembler=Reassembler(max_message_bytes=cfg.max_trajectory_bytes),
            backoff=self.backoff, signer=signer,
            trusted_farms=TrustedKeys.load(cfg.farm_keys, cfg.farm_key_for)
            if cfg.farm_keys or cfg.farm_key_for else None)
        tasks: list[asyncio.Task[Any]] = []
        try:
            await self.link.start()
            # announce the current policy first (once connected): farms can play it at once
            self._pending_blob = await self._on_trainer(self._snapshot_blob)
            self._blob_ready.set()
            await self.subscriber.start()
            self._train_task = asyncio.create_task(self._train_loop())
            tasks = [self._train_task] + [asyncio.create_task(c) for c in (
                self._publish_loop(), self._checkpoint_loop(), self._metrics_loop(on_metrics))]
            stop = asyncio.create_task(self._stop.wait())
            try:
                await asyncio.wait([stop, *tasks], timeout=duration_s,
                                   return_when=asyncio.FIRST_COMPLETED)
            finally:
                stop.cancel()
            for t in tasks:  # a loop that died is a bug: surface it
                if t.done() and not t.cancelled() and t.exception() is not None:
                    raise t.exception()  # type: ignore[misc]
        finally:
            await self._shutdown(tasks)
        return self.summary()

    async def _shutdown(self, tasks: list[asyncio.Task[Any]]) -> None:
        if self.subscriber is not None:
            await self.subscriber.stop()  # no more acks: what is unacked stays at the farms
        self._stopping = True  # the train loop ends after its step (its result is kept)
        self._new_data.set()
        if self._train_task is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(self._train_task)
        await _cancel_all(tasks)
        try:
            if self.trainer is not None:
                # the newest weights go out first, so the checkpoint records them published
                if self.link is not None and self.link.connected.is_set() and \
                        self.trainer.version > self.published_version:
                    with contextlib.suppress(Exception):
                        async with asyncio.timeout(10):
                            await self._publish(await self._on_trainer(self._snapshot_blob))
                with contextlib.suppress(CheckpointError):  # logged; the journal has it all
                    await self.checkpoint()
                with contextlib.suppress(Exception):
                    await self._emit_metrics()
        finally:
            if self.link is not None:
                await self.link.stop()
            self._release()

    def _release(self) -> None:
        """Close the journal and the scalar log, stop the data-parallel workers (from the
        trainer thread, which leads them) and end that thread."""
        self._journal.close()
        self._scalars.close()
        if self._workers is not None:
            self._exec.submit(self._workers.stop)
            self._workers = None
        self._exec.shutdown(wait=True)

    def summary(self) -> dict[str, Any]:
        sub = self.subscriber
        return {
            "version": self.version, "published_version": self.published_version,
            "updates": self.updates, "received": self.received, "episodes": self.episodes,
            "replay_size": self._replay, "checkpoints": self.checkpoints,
            "checkpoint_errors": self.checkpoint_errors,
            "last_checkpoint_error": self.last_checkpoint_error,
            "resumed_from": str(self.restored_from) if self.restored_from else None,
            "replayed_from_journal": self.replayed_from_journal,
            "duplicates": sub.duplicates if sub else 0,
            "rejected": {k: v for k, v in (sub.rejects if sub else {}).items()
                         if k != "duplicate"},
            "unlearnable": dict(self.unlearnable), "refused": dict(self.refused),
            "eval": self.eval.summary(),
            "metrics": {k: v for k, v in self.stats.snapshot().items()},
            "run_dir": str(self.run_dir),
        }
