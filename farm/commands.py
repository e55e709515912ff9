"""Operator commands over MQTT: ``distrl/v1/<farm>/cmd/<device>`` → a ``CommandResult``.

The TUI (or any MQTT client) publishes a :class:`~distrl_sdk.wire.Command` envelope on
``cmd/<device>``; the farm answers on ``cmd_result`` with ``ok``/``detail``:

=========  ================================================================================
op         effect
=========  ================================================================================
pause      the device finishes its current episode, then takes no new lease (``paused``)
resume     undo ``pause``
reconnect  ``adb disconnect`` + ``adb connect`` for TCP targets, then a health probe
quarantine now: a running episode loses its lease and ends as aborted
release    lift a quarantine (the device is prepared again)
run_task   ``args={"task": name, "params"?: {...}}``: that task is the device's next episode
=========  ================================================================================

Nothing a client sends can stop the farm: every message is parsed by
:func:`~distrl_sdk.wire.parse_message` (never raises), and what is refused — bad JSON,
wrong schema, huge payload, unknown op or device, an expired command, a repeated id —
is logged with its reason and counted in :attr:`CommandListener.rejects`. Commands
that parse but cannot be carried out also get a ``CommandResult`` with ``ok=false``.

The listener owns its own MQTT connection (separate from the trajectory publisher's, so
a burst of commands never queues behind megabytes of trajectories) and reconnects with
backoff; the farm's live thumbnails (:meth:`CommandListener.publish`) ride on it too.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
import random
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import aiomqtt

from distrl_sdk.errors import DeviceError, TaskError
from distrl_sdk.task import Task
from distrl_sdk.wire import (
    Command,
    CommandResult,
    Message,
    Rejected,
    RejectReason,
    encode_envelope,
    parse_message,
    topics,
)
from distrl_sdk.wire.signing import SigningKey, TrustedKeys, Verdict, check_envelope
from farm.aio import cancel_and_wait
from farm.collect import TaskSampler
from farm.device.lifecycle import DeviceState, StateChanged
from farm.device.registry import DeviceRegistry
from farm.evaluate.round import EVAL_OWNER
from farm.transport import Backoff, parse_broker_url
from farm.transport.reject_log import RejectLog

__all__ = ["OPS", "CommandExecutor", "CommandListener", "DirectedSampler"]

log = logging.getLogger(__name__)
OPS = ("pause", "resume", "reconnect", "quarantine", "release", "run_task")


class DirectedSampler(TaskSampler):
    """A :class:`TaskSampler` that plays an operator's ``run_task`` next on its device.

    The collector samples right after it leases a device, with no await in between (in
    both modes, in lease order), so the sampler learns which device a sample is for from
    the registry's ``leased`` events: :meth:`on_change` queues the serial, :meth:`sample`
    takes it. A device with a queued task gets that task; all others sample as usual.
    """

    def __init__(self, tasks: list[type[Task]], *, seed: int = 0) -> None:
        super().__init__(tasks, seed=seed)
        self._leased: collections.deque[str] = collections.deque(maxlen=4096)
        self._next: dict[str, collections.deque[Task]] = {}
        self.directed = 0  # episodes that played a queued task

    def on_change(self, change: StateChanged) -> None:
        # evaluation workers lease from the same registry but never sample from here
        if change.state is DeviceState.BUSY and change.event == "leased" \
                and not change.reason.startswith(f"{EVAL_OWNER}/"):
            self._leased.append(change.serial)

    def queue(self, serial: str, task: Task) -> int:
        """Play ``task`` on ``serial`` next; returns its place in that device's queue."""
        q = self._next.setdefault(serial, collections.deque(maxlen=16))
        q.append(task)
        return len(q)

    def pending(self, serial: str) -> int:
        return len(self._next.get(serial, ()))

    def sample(self) -> Task:
        serial = self._leased.popleft() if self._leased else None
        q = self._next.get(serial) if serial is not None else None
        if q:
            self.directed += 1
            return q.popleft()
        return super().sample()


def _result(cmd: Command, ok: bool, detail: str, **result: Any) -> CommandResult:
    return CommandResult(command_id=cmd.id, device_id=cmd.device_id, ok=ok, detail=detail[:500],
                         result=result)


class CommandExecutor:
    """Carries out one :class:`Command` on the registry; never raises for bad input."""

    def __init__(self, registry: DeviceRegistry, tasks: Iterable[type[Task]],
                 sampler: DirectedSampler | None, *, reconnect_timeout_s: float = 15.0,
                 seed: int = 0) -> None:
        self.registry = registry
        self.tasks = {t.name: t for t in tasks}
        self.sampler = sampler
        self.reconnect_timeout_s = reconnect_timeout_s
        self._rng = random.Random(seed)

    async def execute(self, cmd: Command) -> CommandResult:
        md = self.registry.devices.get(cmd.device_id)
        if md is None:
            return _result(cmd, False, f"unknown device {cmd.device_id!r}")
        who = f"by operator (command {cmd.id})"
        try:
            if cmd.op == "pause":
                busy = md.state is DeviceState.BUSY
                self.registry.pause(cmd.device_id, who)
                return _result(cmd, True, "pausing after the current episode" if busy
                               else f"paused ({md.state})")
            if cmd.op == "resume":
                was = md.paused
                self.registry.resume(cmd.device_id, who)
                return _result(cmd, True, f"resumed ({md.state})" if was else "was not paused")
            if cmd.op == "quarantine":
                if md.state is DeviceState.QUARANTINED:
                    return _result(cmd, True, "already quarantined")
                self.registry.quarantine(cmd.device_id, who)
                return _result(cmd, True, "quarantined")
            if cmd.op == "release":
                if md.state is not DeviceState.QUARANTINED:
                    return _result(cmd, False, f"not quarantined (it is {md.state})")
                self.registry.release(cmd.device_id)
                return _result(cmd, True, f"released ({md.state})")
            if cmd.op == "reconnect":
                return await self._reconnect(cmd)
            if cmd.op == "run_task":
                return self._run_task(cmd)
        except RuntimeError as exc:  # an illegal transition: report, do not crash
            return _result(cmd, False, str(exc))
        return _result(cmd, False, f"unknown op {cmd.op!r}")

    async def _reconnect(self, cmd: Command) -> CommandResult:
        try:
            h = await asyncio.wait_for(self.registry.reconnect(cmd.device_id),
                                       self.reconnect_timeout_s)
        except TimeoutError:
            return _result(cmd, False, f"no answer within {self.reconnect_timeout_s:g} s")
        except DeviceError as exc:
            return _result(cmd, False, f"still unreachable: {exc}")
        problems = ", ".join(h.problems())
        return _result(cmd, True, f"answered in {h.latency_s * 1000:.0f} ms"
                       + (f" ({problems})" if problems else ""),
                       battery=h.battery_level, temperature_c=h.temperature_c,
                       boot_completed=h.boot_completed)

    def _run_task(self, cmd: Command) -> CommandResult:
        if self.sampler is None:
            return _result(cmd, False, "this farm does not take run_task (no collector)")
        extra = set(cmd.args) - {"task", "params"}
        if extra:
            return _result(cmd, False, f"unknown args: {', '.join(sorted(extra))} "
                           "(run_task takes task and params)")
        name = cmd.args.get("task")
        if not isinstance(name, str) or name not in self.tasks:
            known = ", ".join(sorted(self.tasks)[:20])
            return _result(cmd, False, f"unknown task {name!r}; this farm runs: {known}")
        params = cmd.args.get("params")
        if params is not None and not isinstance(params, dict):
            return _result(cmd, False, "params must be an object")
        cls = self.tasks[name]
        try:
            task = cls(params) if params is not None else cls.sample(self._rng)
            instruction = task.instruction  # a template that does not fit: refuse now
        except (TaskError, TypeError, ValueError) as exc:
            return _result(cmd, False, f"bad params for {name}: {exc}")
        place = self.sampler.queue(cmd.device_id, task)
        return _result(cmd, True, f"{name} queued as episode {place} from now on "
                       f"{cmd.device_id}", instruction=instruction)


class CommandListener:
    """Subscribes to ``cmd/+`` on its own connection; executes and answers commands.

    ``rejects`` counts refused messages by reason (``bad_json``, ``wrong_schema``,
    ``too_large``, ``bad_body``, ``unknown_op``, ``unknown_device``, ``expired``,
    ``device_mismatch``, ``duplicate``, ``overloaded`` …; with ``trusted`` operator keys
    also ``unsigned``, ``unknown_key``, ``bad_signature``: a command runs only when an
    operator key the farm trusts signed it); ``results`` counts answered commands by op
    and outcome. A signed command replayed later is still refused: by its id while this
    farm remembers it, by its ``expires_at`` after that.
    """

    def __init__(self, url: str, farm_id: str, execute: Callable[[Command], Any], *,
                 known_device: Callable[[str], bool] | None = None,
                 client_id: str | None = None, backoff: Backoff | None = None,
                 max_concurrent: int = 32, keepalive: int = 15,
                 trusted: TrustedKeys | None = None, signer: SigningKey | None = None
                 ) -> None:
        self.address = parse_broker_url(url)
        self.trusted = trusted  # None: any well-formed command (tests, one-process use)
        # signs every result, so an operator can tell the farm's answer from a forged one
        self.signer = signer
        self.farm_id = topics.check_id(farm_id, "farm id")
        self.result_topic = topics.cmd_result(farm_id)
        self.filter = f"{topics.PREFIX}/{farm_id}/cmd/+"
        self.client_id = client_id or f"distrl-farm-{farm_id}-cmd"
        self._execute = execute
        self._known_device = known_device
        self.backoff = backoff or Backoff()
        self.keepalive = keepalive
        self.max_concurrent = max_concurrent
        self.rejects: Counter[str] = Counter()
        # anyone on the broker can send garbage: first per reason at WARNING, then summaries
        self._reject_log = RejectLog(log, f"farm {farm_id}: command", counter=self.rejects)
        self.results: Counter[str] = Counter()
        self.connects = 0
        self.connected = asyncio.Event()
        self._seen: OrderedDict[str, CommandResult | None] = OrderedDict()
        self._running: set[asyncio.Task[None]] = set()
        self._client: aiomqtt.Client | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopping = False

    # -- lifecycle
    async def start(self) -> None:
        if self._task is None:
            self._stopping = False
            self._task = asyncio.create_task(self._run(), name=f"commands-{self.farm_id}")

    async def stop(self) -> None:
        self._stopping = True
        self._reject_log.flush()
        for t in list(self._running):
            t.cancel()
        await asyncio.gather(*self._running, return_exceptions=True)
        if self._task is not None:
            await cancel_and_wait(self._task)
            self._task = None

    async def __aenter__(self) -> CommandListener:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def publish(self, topic: str, payload: bytes, *, qos: int = 0,
                      retain: bool = False) -> bool:
        """Publish on this connection if it is up (thumbnails); False when not sent."""
        client = self._client
        if client is None or not self.connected.is_set():
            return False
        try:
            await client.publish(topic, payload, qos=qos, retain=retain)
        except aiomqtt.MqttError:
            return False
        return True

    # -- internals
    async def _run(self) -> None:
        while not self._stopping:
            client = aiomqtt.Client(**self.address.client_kwargs(), identifier=self.client_id,
                                    clean_session=True, keepalive=self.keepalive, timeout=10)
            try:
                async with client:
                    self._client = client
                    self.connects += 1
                    self.backoff.reset()
                    await client.subscribe(self.filter, qos=1)
                    self.connected.set()
                    async for m in client.messages:
                        self.handle(str(m.topic), m.payload)
            except aiomqtt.MqttError as exc:
                log.info("commands %s: connection lost: %s", self.farm_id, exc)
            finally:
                self.connected.clear()
                self._client = None
            if not self._stopping:
                await asyncio.sleep(self.backoff.next())

    def _reject(self, reason: str, detail: str) -> None:
        self._reject_log.reject(reason, detail)

    def handle(self, topic: str, payload: Any) -> None:
        """Validate one message and start its execution (synchronous: never blocks)."""
        parsed = parse_message(topic, payload)
        if isinstance(parsed, Rejected):
            reason = parsed.reason.value
            if parsed.reason is RejectReason.BAD_BODY:
                reason = self._classify_bad_body(payload, topic)
            self._reject(reason, f"{topic}: {parsed.detail}")
            return
        if not isinstance(parsed, Message) or not isinstance(parsed.body, Command):
            self._reject("wrong_schema", f"{topic}: not a command")
            return
        cmd = parsed.body
        if self.trusted is not None:
            verdict, detail = check_envelope(payload, self.trusted)
            if verdict is not Verdict.OK:
                self._reject(verdict.value, f"{topic}: {cmd.op} {cmd.device_id}: {detail}")
                self._answer_later(_result(cmd, False, f"refused: {verdict.value} ({detail})"))
                return
        if parsed.topic.item_id != cmd.device_id:
            self._reject("device_mismatch", f"{topic}: command for {cmd.device_id}")
            self._answer_later(_result(cmd, False, "device id differs from the topic's"))
            return
        if cmd.id in self._seen:  # a QoS 1 redelivery: answer again, do not run twice
            self._reject("duplicate", f"command {cmd.id}")
            prev = self._seen[cmd.id]
            if prev is not None:
                self._answer_later(prev)
            return
        if cmd.expires_at is not None and cmd.expires_at < time.time():
            self._reject("expired", f"command {cmd.id} ({cmd.op} {cmd.device_id}) expired "
                         f"{time.time() - cmd.expires_at:.1f} s ago")
            self._answer_later(_result(cmd, False, "expired before it arrived"))
            return
        if self._known_device is not None and not self._known_device(cmd.device_id):
            self._reject("unknown_device", f"command {cmd.id} for {cmd.device_id}")
            self._answer_later(_result(cmd, False, f"unknown device {cmd.device_id!r}"))
            return
        if len(self._running) >= self.max_concurrent:
            self._reject("overloaded", f"command {cmd.id}: {len(self._running)} running")
            self._answer_later(_result(cmd, False, "too many commands in flight; retry"))
            return
        self._remember(cmd.id, None)
        self._spawn(self._run_command(cmd))

    def _classify_bad_body(self, payload: Any, topic: str) -> str:
        """``bad_body`` from an op outside :data:`OPS` is counted as ``unknown_op`` (and
        answered, when the command is otherwise well formed)."""
        try:
            body = json.loads(payload)["body"]
        except Exception:
            return RejectReason.BAD_BODY.value
        if not isinstance(body, Mapping) or body.get("op") in OPS:
            return RejectReason.BAD_BODY.value
        with contextlib.suppress(ValueError):  # the rest is valid: answer it
            fixed = Command.model_validate({**body, "op": "pause"})
            if fixed.device_id == topic.rsplit("/", 1)[-1]:
                self._answer_later(CommandResult(
                    command_id=fixed.id, device_id=fixed.device_id, ok=False,
                    detail=f"unknown op {str(body.get('op'))[:40]!r} ({', '.join(OPS)})"))
        return "unknown_op"

    def _remember(self, cmd_id: str, result: CommandResult | None) -> None:
        self._seen[cmd_id] = result
        self._seen.move_to_end(cmd_id)
        while len(self._seen) > 4096:
            self._seen.popitem(last=False)

    def _spawn(self, coro: Any) -> None:
        t: asyncio.Task[None] = asyncio.get_running_loop().create_task(coro)
        self._running.add(t)
        t.add_done_callback(self._running.discard)

    def _answer_later(self, result: CommandResult) -> None:
        self._spawn(self._answer(result))

    async def _run_command(self, cmd: Command) -> None:
        try:
            result = await self._execute(cmd)
        except Exception as exc:  # a bug in an op must not take the listener down
            log.exception("command %s (%s) failed", cmd.id, cmd.op)
            result = _result(cmd, False, f"internal error: {type(exc).__name__}: {exc}")
        self.results[f"{cmd.op}:{'ok' if result.ok else 'refused'}"] += 1
        self._remember(cmd.id, result)
        log.info("command %s %s %s → %s: %s", cmd.id, cmd.op, cmd.device_id,
                 "ok" if result.ok else "refused", result.detail)
        await self._answer(result)

    async def _answer(self, result: CommandResult) -> None:
        data = encode_envelope(result, farm_id=self.farm_id, signer=self.signer)
        if not await self.publish(self.result_topic, data, qos=1):
            log.info("command result %s not sent (broker unreachable)", result.command_id)
