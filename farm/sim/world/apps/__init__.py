"""Apps of the simulated phone. Importing this package registers the built-in ones."""

from farm.sim.world.apps import launcher, settings
from farm.sim.world.apps.base import REGISTRY, SYSTEM_PACKAGES, Activity, App, Host, register

__all__ = ["REGISTRY", "SYSTEM_PACKAGES", "Activity", "App", "Host", "launcher", "register",
           "settings"]
