"""The scheduling framework: extension points, status, cycle state, registry, runtime."""

from .context import SchedulerContext
from .cycle_state import CycleState
from .interfaces import (
    EXTENSION_POINTS,
    BindPlugin,
    FilterPlugin,
    PermitPlugin,
    Plugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterExtensions,
    PreFilterPlugin,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
)
from .registry import Alias, PluginSpec, Registry, RegistryError
from .runtime import Framework
from .status import Code, PluginError, Status, is_success
from .types import (
    MAX_NODE_SCORE,
    Diagnosis,
    FitError,
    NodePluginScores,
    NodeScore,
    NodeToStatus,
    PostFilterResult,
    PreFilterResult,
    QueuedPodInfo,
)

__all__ = [
    "EXTENSION_POINTS", "MAX_NODE_SCORE", "Alias", "BindPlugin", "Code", "CycleState", "Diagnosis",
    "FilterPlugin", "FitError", "Framework", "NodePluginScores", "NodeScore", "NodeToStatus", "PermitPlugin",
    "Plugin", "PluginError", "PluginSpec", "PostBindPlugin", "PostFilterPlugin", "PostFilterResult",
    "PreBindPlugin", "PreEnqueuePlugin", "PreFilterExtensions", "PreFilterPlugin", "PreFilterResult",
    "PreScorePlugin", "QueueSortPlugin", "QueuedPodInfo", "Registry", "RegistryError", "ReservePlugin",
    "SchedulerContext", "ScorePlugin", "Status", "is_success",
]
