"""The Android world of a simulated phone: launcher, Settings, keyboard, system UI.

``World`` is what the shell drives (``farm.sim.spec.WorldAPI``); one view tree per
screen gives both the pixels (render.py) and the uiautomator dump (uixml.py).
"""

from farm.sim.world.settings_store import SettingsStore
from farm.sim.world.world import World

__all__ = ["SettingsStore", "World"]
