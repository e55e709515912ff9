"""Experiment trackers the learner's scalars also go to, when installed and asked for.

``scalars.jsonl`` (and TensorBoard event files) are always written; with
``trackers = ["mlflow"]`` or ``["wandb"]`` (``distrl learner --track …``) every scalar
batch is logged there too, at the same step. Each tracker is configured the way its own
users configure it — MLflow by ``MLFLOW_TRACKING_URI`` (a tracking server, or a database
URI), W&B by ``WANDB_PROJECT``/``WANDB_ENTITY``/``WANDB_MODE`` (``offline`` needs no
account) — and a learner restarted on the same run dir continues the same tracker run
(its id is kept in ``RUN_DIR/trackers.json``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from distrl_sdk.errors import ConfigError

__all__ = ["TRACKERS", "Tracker", "open_trackers"]

log = logging.getLogger("distrl.learner")

TRACKERS = ("mlflow", "wandb")


class Tracker(Protocol):
    name: str

    def log(self, scalars: Mapping[str, float], step: int) -> None: ...

    def close(self) -> None: ...


def _ids_file(run_dir: Path) -> Path:
    return run_dir / "trackers.json"


def _saved_id(run_dir: Path, name: str) -> str | None:
    try:
        value = json.loads(_ids_file(run_dir).read_text()).get(name)
    except (OSError, ValueError, AttributeError):
        return None
    return str(value) if value else None


def _save_id(run_dir: Path, name: str, run_id: str) -> None:
    path = _ids_file(run_dir)
    try:
        ids = json.loads(path.read_text())
    except (OSError, ValueError):
        ids = {}
    ids[name] = run_id
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(ids, indent=2) + "\n")
    tmp.replace(path)


class MLflowTracker:
    """Through ``MlflowClient`` with the run's id: MLflow's fluent API keeps the active
    run per thread, and the learner starts trackers in a worker thread but logs from its
    event loop."""

    name = "mlflow"

    def __init__(self, run_dir: Path, params: Mapping[str, Any]) -> None:
        from mlflow.entities import Metric, Param
        from mlflow.tracking import MlflowClient

        self._metric = Metric
        self._client = client = MlflowClient()
        saved = _saved_id(run_dir, self.name)
        if saved:
            self.run_id: str = client.get_run(saved).info.run_id
            client.update_run(self.run_id, status="RUNNING")
        else:
            exp = client.get_experiment_by_name("distrl")
            exp_id = exp.experiment_id if exp is not None else client.create_experiment("distrl")
            self.run_id = client.create_run(exp_id, run_name=run_dir.resolve().name).info.run_id
            client.log_batch(self.run_id, params=[Param(k, str(v)[:500])
                                                  for k, v in params.items()])
            _save_id(run_dir, self.name, self.run_id)

    def log(self, scalars: Mapping[str, float], step: int) -> None:
        import time

        now = int(time.time() * 1000)
        self._client.log_batch(self.run_id, metrics=[self._metric(k, v, now, step)
                                                     for k, v in scalars.items()])

    def close(self) -> None:
        self._client.set_terminated(self.run_id)


class WandbTracker:
    name = "wandb"

    def __init__(self, run_dir: Path, params: Mapping[str, Any]) -> None:
        import os

        import wandb

        saved = _saved_id(run_dir, self.name)
        self._run = wandb.init(project=os.environ.get("WANDB_PROJECT", "distrl"),
                               dir=str(run_dir), id=saved, resume="allow" if saved else None,
                               name=run_dir.resolve().name, config=dict(params))
        self._run.define_metric("version")
        self._run.define_metric("*", step_metric="version")
        self.run_id: str = str(self._run.id)
        if not saved:
            _save_id(run_dir, self.name, self.run_id)

    def log(self, scalars: Mapping[str, float], step: int) -> None:
        # W&B's own step must only grow, but evaluation rounds report the (older)
        # version they froze: the version is a metric, and every chart's x axis
        self._run.log({**scalars, "version": step})

    def close(self) -> None:
        self._run.finish()


def open_trackers(names: list[str], run_dir: Path, params: Mapping[str, Any]) -> list[Tracker]:
    """Start each named tracker; ``ConfigError`` when one is not installed or refuses."""
    out: list[Tracker] = []
    for name in names:
        cls: type[MLflowTracker] | type[WandbTracker] = (
            MLflowTracker if name == "mlflow" else WandbTracker)
        try:
            out.append(cls(run_dir, params))
        except ImportError:
            for t in out:
                t.close()
            pkg = "mlflow" if name == "mlflow" else "wandb"
            raise ConfigError(f"tracker {name!r} asked for but not installed (pip install "
                              f"{pkg})") from None
        except Exception as exc:  # a bad tracking URI, no W&B login …: say what it said
            for t in out:
                t.close()
            raise ConfigError(f"tracker {name!r} could not start: {exc}") from None
    return out
