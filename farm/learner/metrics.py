"""Learner metrics: sliding-window statistics and TensorBoard-style scalar logs.

:class:`ScalarLog` is an append-only JSONL file of ``{tag, step, wall_time, value}``
records (what TensorBoard's scalar summaries hold), and with ``tensorboard_dir`` the same
scalars as TensorBoard event files (torch's ``SummaryWriter``, when the ``tensorboard``
package is installed: ``tensorboard --logdir RUN_DIR/tensorboard``);
:func:`read_scalars` reads it back (a torn last line from a crash is skipped) and
:func:`export_csv` writes ``tag,step,wall_time,value`` rows for spreadsheets/plots.
:class:`LearnerStats` keeps the windows the learner reports from: success rate, returns,
policy lag, trajectories/min and updates/s.
"""

from __future__ import annotations

import csv
import json
import logging
import math
import os
import time
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, TextIO

log = logging.getLogger("distrl.learner")

__all__ = ["LearnerStats", "ScalarLog", "export_csv", "read_scalars"]


class ScalarLog:
    """Append-only scalar log. Each :meth:`write` is one flushed batch of lines."""

    def __init__(self, path: str | os.PathLike[str],
                 tensorboard_dir: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._f: TextIO | None = None
        self.tensorboard: Any = None  # torch.utils.tensorboard.SummaryWriter, if it loads
        self.tensorboard_error: str | None = None  # why not, when asked for
        self.trackers: list[Any] = []  # farm.learner.trackers.Tracker: MLflow, W&B
        self.tracker_errors = 0
        if tensorboard_dir is not None:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError as exc:  # torch or the tensorboard package missing
                self.tensorboard_error = (f"{exc}; `pip install tensorboard` for event "
                                          "files (scalars.jsonl is written either way)")
            else:
                self.tensorboard = SummaryWriter(str(tensorboard_dir), flush_secs=10)

    def _file(self) -> TextIO:
        if self._f is None:
            self._f = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - kept open
        return self._f

    def write(self, scalars: Mapping[str, float], step: int,
              wall_time: float | None = None) -> int:
        """Append every finite scalar at ``step``; returns how many were written."""
        t = time.time() if wall_time is None else wall_time
        finite = {tag: float(v) for tag, v in scalars.items() if math.isfinite(float(v))}
        lines = [json.dumps({"tag": tag, "step": int(step), "wall_time": t, "value": v})
                 for tag, v in finite.items()]
        if lines:
            f = self._file()
            f.write("\n".join(lines) + "\n")
            f.flush()
            if self.tensorboard is not None:
                for tag, v in finite.items():
                    self.tensorboard.add_scalar(tag, v, int(step), walltime=t)
            for tracker in self.trackers:
                try:
                    tracker.log(finite, int(step))
                except Exception as exc:  # a tracker outage must not stop the learner
                    self.tracker_errors += 1
                    if self.tracker_errors == 1:
                        log.warning("tracker %s: %s (scalars.jsonl still has everything)",
                                    tracker.name, exc)
        return len(lines)

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None
        if self.tensorboard is not None:
            self.tensorboard.close()
            self.tensorboard = None
        trackers, self.trackers = self.trackers, []
        for tracker in trackers:
            try:
                tracker.close()
            except Exception as exc:
                log.warning("tracker %s did not close cleanly: %s", tracker.name, exc)

    def __enter__(self) -> ScalarLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_scalars(path: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """Records of a :class:`ScalarLog` file, in order; malformed lines are skipped."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict) and {"tag", "step", "wall_time", "value"} <= rec.keys():
                yield rec


def export_csv(src: str | os.PathLike[str], dst: str | os.PathLike[str],
               tags: Iterable[str] | None = None) -> int:
    """Write ``tag,step,wall_time,value`` rows (optionally only ``tags``); returns rows."""
    wanted = set(tags) if tags is not None else None
    n = 0
    with open(dst, "w", newline="", encoding="utf-8") as out:
        w = csv.writer(out)
        w.writerow(["tag", "step", "wall_time", "value"])
        for rec in read_scalars(src):
            if wanted is None or rec["tag"] in wanted:
                w.writerow([rec["tag"], rec["step"], rec["wall_time"], rec["value"]])
                n += 1
    return n


class LearnerStats:
    """Sliding windows over received episodes and updates (monotonic clock)."""

    def __init__(self, window: int = 100, rate_window_s: float = 60.0) -> None:
        self.rate_window_s = rate_window_s
        self.successes: deque[bool] = deque(maxlen=window)
        self.returns: deque[float] = deque(maxlen=window)
        self.lags: deque[int] = deque(maxlen=window)
        self._arrivals: deque[float] = deque()
        self._updates: deque[float] = deque()
        self.started = time.monotonic()

    def episode(self, success: bool, ret: float, lag: int, now: float | None = None) -> None:
        self.successes.append(success)
        self.returns.append(ret)
        self.lags.append(lag)
        self._arrivals.append(time.monotonic() if now is None else now)

    def update(self, now: float | None = None) -> None:
        self._updates.append(time.monotonic() if now is None else now)

    def _trim(self, q: deque[float], now: float) -> None:
        while q and now - q[0] > self.rate_window_s:
            q.popleft()

    def snapshot(self, now: float | None = None) -> dict[str, float]:
        """Window statistics; rates over ``min(rate_window_s, time since start)``."""
        now = time.monotonic() if now is None else now
        self._trim(self._arrivals, now)
        self._trim(self._updates, now)
        span = max(1e-6, min(self.rate_window_s, now - self.started))
        out: dict[str, float] = {
            "trajectories_per_min": len(self._arrivals) * 60.0 / span,
            "updates_per_s": len(self._updates) / span,
        }
        if self.successes:
            out["success_rate"] = sum(self.successes) / len(self.successes)
            out["return_mean"] = sum(self.returns) / len(self.returns)
        if self.lags:
            out["policy_lag_min"] = float(min(self.lags))
            out["policy_lag_avg"] = sum(self.lags) / len(self.lags)
            out["policy_lag_max"] = float(max(self.lags))
        return out
