"""Collection: episode workers over the device registry, async (DistRL) or sync (DigiRL)."""

from farm.collect.collector import Collector, CollectorConfig, CollectorStats, Mode
from farm.collect.policy import (
    OracleProvider,
    PolicyChoice,
    PolicyProvider,
    RandomProvider,
    StaticProvider,
)
from farm.collect.sampler import EpisodeSampler, TaskSampler
from farm.collect.sink import EpisodeMeta, JsonlSink, MemorySink, TrajectorySink

__all__ = [
    "Collector",
    "CollectorConfig",
    "CollectorStats",
    "EpisodeMeta",
    "EpisodeSampler",
    "JsonlSink",
    "MemorySink",
    "Mode",
    "OracleProvider",
    "PolicyChoice",
    "PolicyProvider",
    "RandomProvider",
    "StaticProvider",
    "TaskSampler",
    "TrajectorySink",
]
