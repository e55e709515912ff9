"""Apps of the simulated phone. Importing this package registers the built-in ones.

Registration order is install order (the launcher shows icons in that order).
"""

from farm.sim.world.apps import launcher, settings  # noqa: I001  (registration order)
from farm.sim.world.apps import browser, clock, contacts_provider, contacts, shop
from farm.sim.world.apps import dialer, telephony_provider
from farm.sim.world.apps.base import REGISTRY, SYSTEM_PACKAGES, Activity, App, Host, register

__all__ = ["REGISTRY", "SYSTEM_PACKAGES", "Activity", "App", "Host", "browser", "clock",
           "contacts", "contacts_provider", "dialer", "launcher", "register", "settings", "shop",
           "telephony_provider"]
