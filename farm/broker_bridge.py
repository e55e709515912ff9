"""A site broker bridged to a central one (mosquitto's own bridge): farms at a site
publish to their local broker, which forwards their topics to the central broker and
brings back what the farms read (acks, commands, policies). The bridge is a persistent
session on both sides, so a site keeps collecting through a WAN outage: its farms'
spools drain into the local broker, which queues for the bridge and delivers once the
link is back (store and forward).

The bridge logs in to the central broker with the site's farm account (``farm-ID``,
``distrl broker --farm ID`` there), so the central ACL still confines the site to its
own farm ids' topics."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from distrl_sdk.wire import topics
from distrl_sdk.wire.broker_url import parse_broker_url

__all__ = ["Bridge"]

P = topics.PREFIX


@dataclass(frozen=True)
class Bridge:
    """``url``: the central broker (``mqtt[s]://farm-ID@host:port``; ``?ca=`` for TLS);
    ``farms``: the farm ids that run at this site; ``password``: the account's."""

    url: str
    farms: Sequence[str] = ("farm",)
    password: str | None = None
    name: str = "distrl-site"
    # seconds before the first reconnect and the most between tries (mosquitto's
    # restart_timeout: a WAN link back is used within that)
    retry_s: tuple[int, int] = field(default=(1, 10))

    def __post_init__(self) -> None:
        parse_broker_url(self.url)  # ValueError: what is wrong with it
        for f in self.farms:
            topics.check_id(f, "farm id")
        if not self.farms:
            raise ValueError("a bridge carries at least one farm's topics")

    def config_lines(self) -> list[str]:
        """mosquitto.conf lines (they hold the password: the file must be private)."""
        a = parse_broker_url(self.url)
        lines = [f"connection {self.name}", f"address {a.hostname}:{a.port}",
                 "bridge_protocol_version mqttv311",
                 # persistent sessions both ways: what is published while the link is
                 # down is queued, not dropped
                 "cleansession false", f"local_clientid {self.name}-local",
                 f"remote_clientid {self.name}-{'-'.join(self.farms)}"[:128],
                 "try_private true", "notifications false",
                 f"restart_timeout {self.retry_s[0]} {self.retry_s[1]}"]
        if a.username is not None:
            lines.append(f"remote_username {a.username}")
            password = self.password if self.password is not None else a.password
            if password is not None:
                lines.append(f"remote_password {password}")
        if a.tls:
            lines.append(f"bridge_cafile {a.ca_file}" if a.ca_file else
                         "bridge_capath /etc/ssl/certs")
            if a.insecure:
                lines.append("bridge_insecure true")
        # exactly what a farm account publishes and reads (farm/broker_acl.py): a
        # subscription wider than the central ACL allows would be refused as a whole
        for f in self.farms:
            lines += [f"topic {P}/{f}/traj/+ out 1", f"topic {P}/{f}/status/+ out 1",
                      f"topic {P}/{f}/frame/+ out 0", f"topic {P}/{f}/metrics out 0",
                      f"topic {P}/{f}/cmd_result out 1",
                      f"topic {P}/{f}/ack in 1", f"topic {P}/{f}/cmd/+ in 1"]
        lines.append(f"topic {P}/policy/# in 1")
        return lines
