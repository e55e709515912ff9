"""One torch thread: the box is shared by many processes, and these models are tiny
(intra-op threads only add contention here)."""

from __future__ import annotations

import torch

torch.set_num_threads(1)
