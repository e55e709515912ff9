"""Rate-limited logging of refused messages.

Anyone who can reach the broker can send garbage, so a WARNING per refused message lets
a fuzzer flood the log (2,311 lines in one fuzz run). :class:`RejectLog` counts every
refusal, logs the first of each reason at WARNING with its detail, and then at most one
summary line per ``every_s`` (how many more, by reason, and the running totals); a
:meth:`flush` at shutdown writes what is still pending."""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable

__all__ = ["RejectLog"]


class RejectLog:
    """``RejectLog(log, "command", counter=self.rejects).reject(reason, detail)``.

    ``counter`` (shared with the owner's public counters) gets every refusal;
    ``quiet`` reasons are only counted (e.g. duplicates, which redelivery makes normal)."""

    def __init__(self, logger: logging.Logger, what: str, *, counter: Counter[str] | None = None,
                 every_s: float = 60.0, quiet: Iterable[str] = (),
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.log, self.what, self.every_s, self.clock = logger, what, every_s, clock
        self.counts: Counter[str] = counter if counter is not None else Counter()
        self.quiet = frozenset(quiet)
        self.pending: Counter[str] = Counter()  # refused since the last line about them
        self._warned: set[str] = set()
        self._last = clock()
        self.lines = 0  # log lines written (tests, and a bound on what a flood costs)

    def reject(self, reason: str, detail: str = "") -> None:
        self.counts[reason] += 1
        if reason in self.quiet:
            return
        if reason not in self._warned:
            self._warned.add(reason)
            self.lines += 1
            self.log.warning("%s refused (%s): %s; more of these are counted and summarised "
                             "at most every %g s", self.what, reason, detail[:200], self.every_s)
            return
        self.pending[reason] += 1
        if self.clock() - self._last >= self.every_s:
            self.flush()

    def flush(self) -> None:
        """Log the pending summary now (if any)."""
        now = self.clock()
        if self.pending:
            more = ", ".join(f"{k} {v}" for k, v in sorted(self.pending.items()))
            total = ", ".join(f"{k} {v}" for k, v in sorted(self.counts.items()))
            self.lines += 1
            self.log.warning("%s: %d more refused in the last %.0f s (%s); totals: %s",
                             self.what, sum(self.pending.values()), now - self._last, more,
                             total)
            self.pending.clear()
        self._last = now
