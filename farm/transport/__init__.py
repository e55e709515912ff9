"""Moving trajectories over MQTT: the farm's spooling :class:`Publisher`, the learner's
:class:`TrajectorySubscriber`, and broker URLs. Wire format: :mod:`distrl_sdk.wire`."""

from distrl_sdk.wire.broker_url import BrokerAddress, parse_broker_url
from farm.transport._conn import Backoff
from farm.transport.publisher import Publisher, PublisherStats
from farm.transport.spool import OnFull, Spool, SpoolEntry, SpoolFull
from farm.transport.subscriber import SeenIds, TrajectorySubscriber

__all__ = [
    "Backoff",
    "BrokerAddress",
    "OnFull",
    "Publisher",
    "PublisherStats",
    "SeenIds",
    "Spool",
    "SpoolEntry",
    "SpoolFull",
    "TrajectorySubscriber",
    "parse_broker_url",
]
