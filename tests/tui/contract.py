"""What the TUI tests have exercised: every learner metric name (or family) and every
field of every wire message the TUI reads. ``test_recorded_feed.py`` feeds all of it to
every screen; ``test_contract.py`` fails when a producer emits something not listed
here, so a new metric or field cannot reach users untested (the `2`-key crash came from
names the fake feed never carried). Adding a name here means: it is now fed to every
screen by :func:`every_metric_scalars`."""

from __future__ import annotations

import fnmatch

#: learner metric names: exact names, or ``family/*`` for names a producer builds from
#: data (task names, trainer stats, reject reasons); one odd member of each family is fed
TESTED_METRICS: frozenset[str] = frozenset({
    # farm.learner.metrics.LearnerStats.snapshot
    "trajectories_per_min", "updates_per_s", "success_rate", "return_mean",
    "policy_lag_min", "policy_lag_avg", "policy_lag_max",
    # farm.learner.service.LearnerService.metrics
    "version", "published_version", "updates", "received", "episodes", "replay_size",
    "duplicates", "rejected_total", "checkpoints", "checkpoint_errors",
    "train/*", "rejected/*", "unlearnable/*", "refused/*", "received/*",
    # farm.evaluate (held-out evaluation, the headline once present)
    "eval/received", "eval/rounds", "eval/success_rate", "eval/ci_low", "eval/ci_high",
    "eval/episodes", "eval/policy_version", "eval/task/*",
})

#: wire schema → the fields the TUI tests set (a new field must be added here and so
#: to the full-status/full-frame feed of test_recorded_feed)
TESTED_FIELDS: dict[str, frozenset[str]] = {
    "DeviceStatus": frozenset({
        "device_id", "state", "detail", "policy_version", "episodes", "task", "instruction",
        "step", "episode_return", "last_action", "battery", "temperature_c", "kind",
        "adb_server", "episode", "steps", "last_episode", "tasks", "updated_at"}),
    "DeviceFrame": frozenset({
        "device_id", "width", "height", "screen_width", "screen_height", "step",
        "content_type", "actions", "elements", "captured_at"}),
    "Metrics": frozenset({"source", "step", "scalars"}),
    "PolicyPointer": frozenset({
        "version", "sha256", "size", "where", "kind", "config", "format", "published_at"}),
    "CommandResult": frozenset({"command_id", "device_id", "ok", "detail", "result"}),
}


def covered(name: str) -> bool:
    return any(name == p or (p.endswith("*") and fnmatch.fnmatchcase(name, p))
               for p in TESTED_METRICS)


def untested(names: set[str] | frozenset[str]) -> list[str]:
    return sorted(n for n in names if not covered(n))


def every_metric_scalars(i: int = 0) -> dict[str, float]:
    """One value per tested name; a family gets a member with characters ids reject."""
    out: dict[str, float] = {}
    for p in sorted(TESTED_METRICS):
        name = p[:-1] + "odd name [b]x[/b]/é.λ" if p.endswith("*") else p
        frac = name.endswith(("rate", "ci_low", "ci_high")) or "/task/" in name
        out[name] = (0.25 + 0.01 * i) if frac else float(10 + i)
    return out
