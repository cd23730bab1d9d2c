"""DynamicResources (DRA): the plugin (`plugin.py`) and the structured-parameters allocator it
uses (`allocator.py` over `pools.py`, `devices.py`, `requests.py`, CEL in `cel_env.py`)."""

from .plugin import NAME, DynamicResources

PLUGINS = [DynamicResources]

__all__ = ["NAME", "PLUGINS", "DynamicResources"]
