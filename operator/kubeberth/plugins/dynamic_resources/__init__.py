"""DynamicResources (DRA): the plugin (`plugin.py`: PreEnqueue to Reserve; `binding.py`: PostFilter,
PreBind and the claims' writes; `state.py`: its CycleState) and the structured-parameters allocator
it uses (`allocator.py` over `pools.py`, `devices.py`, `requests.py`, CEL in `cel_env.py`)."""

from .plugin import DynamicResources
from .state import NAME

PLUGINS = [DynamicResources]

__all__ = ["NAME", "PLUGINS", "DynamicResources"]
