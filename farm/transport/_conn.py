"""Connection helpers shared by the publisher and the subscriber."""

from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = ["Backoff"]


@dataclass
class Backoff:
    """Exponential backoff with full jitter: ``initial·2ⁿ`` capped at ``maximum``."""

    initial: float = 0.1
    maximum: float = 10.0
    _n: int = 0

    def reset(self) -> None:
        self._n = 0

    def next(self) -> float:
        cap = min(self.maximum, self.initial * (2 ** min(self._n, 30)))
        self._n += 1
        return random.uniform(cap / 2, cap)
