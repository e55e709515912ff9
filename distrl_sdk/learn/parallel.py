"""Data-parallel A-RIDE updates on torch.distributed (gloo on CPU, NCCL on GPU).

One process, the **leader** (rank 0), owns everything that is not per-step arithmetic:
replay and its priorities, the critics, the trajectory filter, the entropy floor, the
demonstration anchor, checkpoints and publishing. The **workers** (ranks 1…N−1) hold
only the policy and its optimiser. An update's policy passes are the expensive part, and
they are sums over steps (see :mod:`distrl_sdk.learn.microbatch`):

1. the no-grad pass (log π for the ratios, features for the critics): the leader
   broadcasts the batch — as episode ids, with the steps only of episodes a worker has
   not been sent yet (workers keep the last ``EPISODE_CACHE`` episodes, featurised
   once, and the leader mirrors that cache exactly) — every rank evaluates its
   contiguous shard, the leader gathers the outputs in order;
2. the leader computes targets, advantages and each step's coefficients of log π and H
   exactly as one process would, and broadcasts them;
3. the gradient pass: every rank accumulates the gradient of its shard; the gradients
   are summed with one all-reduce (the leader's also holds the anchor's term); every
   rank clips and steps its own optimiser with the same summed gradient, so the
   parameters stay identical without ever being sent again.

The result equals a single process's update over the same batch (up to float rounding:
tests/learn/test_parallel.py). Token dropout draws from each rank's own generator, so
with ``actor_dropout`` the dropped tokens differ from a single process's (the gradient
is as valid, not bit-equal).

Workers run :meth:`DataParallel.serve` until the leader sends ``stop``; a worker whose
leader dies is ended by the kernel (``farm.learner.parallel`` sets a parent-death
signal), never left blocked in a collective.
"""

from __future__ import annotations

import datetime
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

    from distrl_sdk.learn.api import PolicyOutput, StepRecord, TrainablePolicy
    from distrl_sdk.learn.microbatch import MicroBatchResult

__all__ = ["EPISODE_CACHE", "DataParallel", "shard_bounds"]

#: episodes each worker keeps (an episode is replayed many times; its steps and their
#: featurised arrays travel once while it stays in this window)
EPISODE_CACHE = 4096


def shard_bounds(n: int, world: int, rank: int) -> slice:
    """Rank ``rank``'s contiguous share of ``[0, n)``: sizes differ by at most one, the
    first ``n % world`` ranks take the extra step."""
    base, extra = divmod(n, world)
    lo = rank * base + min(rank, extra)
    return slice(lo, lo + base + (1 if rank < extra else 0))


class DataParallel:
    """One rank of a data-parallel trainer (see the module docstring)."""

    def __init__(self, rank: int, world: int) -> None:
        self.rank, self.world = rank, world
        self._steps: Sequence[StepRecord] = ()  # the batch the leader sent (workers)
        self.updates = 0
        # episode id → its steps: on workers the cache itself, on the leader a mirror of
        # which ids the workers hold (same inserts, same evictions, in the same order)
        self._cache: OrderedDict[str, list[StepRecord] | None] = OrderedDict()
        self.sent_steps = 0  # steps the leader had to send (the rest were cached)

    @classmethod
    def join(cls, rank: int, world: int, init_method: str, *, backend: str | None = None,
             timeout_s: float = 120.0) -> DataParallel:
        """Join the process group (``init_method`` e.g. ``tcp://127.0.0.1:29500``). The
        backend: NCCL when CUDA is available, else gloo, unless given."""
        import torch
        import torch.distributed as dist

        if backend is None:
            backend = "nccl" if torch.cuda.is_available() else "gloo"
        if backend == "nccl":  # one GPU per rank; NCCL's collectives run on it
            torch.cuda.set_device(rank % torch.cuda.device_count())
        dist.init_process_group(backend, init_method=init_method, rank=rank,
                                world_size=world,
                                timeout=datetime.timedelta(seconds=timeout_s))
        return cls(rank, world)

    @property
    def is_leader(self) -> bool:
        return self.rank == 0

    def close(self) -> None:
        import torch.distributed as dist

        if dist.is_initialized():
            dist.destroy_process_group()

    # -- messages from the leader -------------------------------------------------
    def _bcast(self, obj: Any = None) -> Any:
        import torch.distributed as dist

        box = [obj]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    def stop(self) -> None:
        """Leader: tell the workers to leave :meth:`serve`."""
        self._bcast(("stop",))

    def sync(self, policy: TrainablePolicy, actor_opt: torch.optim.Optimizer) -> None:
        """Leader: send the policy's weights and its optimiser's state (at start and after
        a restore); workers load them in :meth:`serve`."""
        self._bcast(("sync", policy.weights(), actor_opt.state_dict()))

    # -- the two passes (every rank calls them in the same order) ----------------------
    def evaluate_detached(self, policy: TrainablePolicy, episodes: Sequence[Any],
                          micro_batch: int | None) -> PolicyOutput:
        """Leader: the no-grad pass over the steps of ``episodes`` (EpisodeRecords, in
        order), each rank evaluating its shard."""
        refs: list[tuple[str, list[StepRecord] | None]] = []
        for ep in episodes:
            known = ep.id in self._cache
            refs.append((ep.id, None if known else list(ep.steps)))
            self._remember(ep.id, None)
            if not known:
                self.sent_steps += len(ep.steps)
        self._bcast(("evaluate", refs, micro_batch))
        steps = [s for ep in episodes for s in ep.steps]
        return self._evaluate_shard(policy, steps, micro_batch)  # type: ignore[return-value]

    def _remember(self, key: str, steps: list[StepRecord] | None) -> None:
        """Insert or refresh ``key`` (most recent last); evict the oldest past the cap."""
        if key in self._cache:
            self._cache.move_to_end(key)
            if steps is not None:
                self._cache[key] = steps
        else:
            self._cache[key] = steps
            while len(self._cache) > EPISODE_CACHE:
                self._cache.popitem(last=False)

    def _resolve(self, policy: TrainablePolicy,
                 refs: list[tuple[str, list[StepRecord] | None]]) -> list[StepRecord]:
        """Worker: the batch's steps from ids and the steps sent with new ones."""
        prepare = getattr(policy, "prepare", None)
        steps: list[StepRecord] = []
        for key, sent in refs:
            if sent is not None:
                if prepare is not None:  # featurise once, as the leader's replay does
                    prepare(sent)
                self._remember(key, sent)
            else:
                self._remember(key, None)
            got = self._cache[key]
            if got is None:
                raise RuntimeError(f"data-parallel worker lost episode {key!r}")
            steps.extend(got)
        return steps

    def _evaluate_shard(self, policy: TrainablePolicy, steps: Sequence[StepRecord],
                        micro_batch: int | None) -> PolicyOutput | None:
        import torch
        import torch.distributed as dist

        from distrl_sdk.learn.api import PolicyOutput
        from distrl_sdk.learn.microbatch import evaluate_detached

        self._steps = steps
        mine = evaluate_detached(policy, steps[shard_bounds(len(steps), self.world,
                                                            self.rank)], micro_batch)
        part = (mine.log_prob.cpu(), mine.entropy.cpu(), mine.features.cpu())
        parts: list[Any] | None = [None] * self.world if self.is_leader else None
        dist.gather_object(part, parts, dst=0)
        if parts is None:
            return None
        return PolicyOutput(log_prob=torch.cat([p[0] for p in parts]),
                            entropy=torch.cat([p[1] for p in parts]),
                            features=torch.cat([p[2] for p in parts]))

    def accumulate(self, policy: TrainablePolicy, steps: Sequence[StepRecord],
                   logp_coef: torch.Tensor, entropy_coef: torch.Tensor,
                   micro_batch: int | None, dropout: bool) -> MicroBatchResult:
        """Leader: the gradient pass, each rank accumulating its shard's gradient
        (``steps`` must be the batch of the last :meth:`evaluate_detached`). Sum the
        gradients with :meth:`all_reduce_gradients` before stepping."""
        self._bcast(("accumulate", logp_coef.detach().cpu(), entropy_coef.detach().cpu(),
                     micro_batch, dropout))
        return self._accumulate_shard(policy, steps, logp_coef, entropy_coef, micro_batch,
                                      dropout)

    def _accumulate_shard(self, policy: TrainablePolicy, steps: Sequence[StepRecord],
                          logp_coef: torch.Tensor, entropy_coef: torch.Tensor,
                          micro_batch: int | None, dropout: bool) -> MicroBatchResult:
        import torch
        import torch.distributed as dist

        from distrl_sdk.learn.api import training_mode
        from distrl_sdk.learn.microbatch import accumulate_gradients

        sl = shard_bounds(len(steps), self.world, self.rank)
        with training_mode(policy, dropout):
            res = accumulate_gradients(policy, steps[sl], logp_coef[sl], entropy_coef[sl],
                                       micro_batch)
        device = _device(policy)
        total = torch.tensor([res.loss], dtype=torch.float64, device=device)  # whole batch
        dist.all_reduce(total, op=dist.ReduceOp.SUM)
        res.loss = float(total.item())
        return res

    def all_reduce_gradients(self, params: Sequence[torch.nn.Parameter], finite: bool
                             ) -> bool:
        """Sum every parameter's gradient over the ranks (a missing one counts as zero),
        in one flat all-reduce; returns whether every rank's gradient was finite (if
        not, every rank skips the step)."""
        import torch
        import torch.distributed as dist

        params = list(params)
        device = params[0].device if params else torch.device("cpu")
        flag = torch.tensor([1.0 if finite else 0.0], device=device)
        dist.all_reduce(flag, op=dist.ReduceOp.MIN)
        if flag.item() < 1.0:
            return False
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
        flat = torch.cat([g.reshape(-1) for g in grads])
        dist.all_reduce(flat, op=dist.ReduceOp.SUM)
        offset = 0
        for p in params:
            n = p.numel()
            p.grad = flat[offset:offset + n].view_as(p).clone()
            offset += n
        return True

    # -- workers --------------------------------------------------------------------
    def serve(self, trainer: Any) -> int:
        """Worker: follow the leader's updates on ``trainer`` (its policy, actor optimiser
        and guarded step are used; its replay and critics are not) until ``stop``.
        Returns the number of updates followed."""
        policy: TrainablePolicy = trainer.policy
        trainer.parallel = self  # its guarded step sums gradients with the group's
        while True:
            msg = self._bcast()
            op = msg[0]
            if op == "stop":
                return self.updates
            if op == "sync":
                policy.load_weights(msg[1])
                trainer.actor_opt.load_state_dict(msg[2])
            elif op == "evaluate":
                self._evaluate_shard(policy, self._resolve(policy, msg[1]), msg[2])
            elif op == "accumulate":
                trainer.actor_opt.zero_grad(set_to_none=True)
                res = self._accumulate_shard(policy, self._steps, msg[1], msg[2], msg[3],
                                             msg[4])
                trainer._step_accumulated(trainer.actor_opt, res.finite,
                                          policy.trainable_parameters(), reduce=True)
                self.updates += 1
            else:
                raise RuntimeError(f"unknown data-parallel message {op!r}")



def _device(policy: TrainablePolicy) -> torch.device:
    """Where the policy's parameters live (NCCL reduces tensors on the GPU only)."""
    import torch

    for p in policy.trainable_parameters():
        return p.device
    return torch.device("cpu")
