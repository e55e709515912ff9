"""The evaluation tests' device registry: tests/sim_registry.py."""

from tests.sim_registry import FAST, STEADY, registry

__all__ = ["FAST", "STEADY", "registry"]
