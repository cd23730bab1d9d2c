"""SchedulingProfile configuration: models, defaults, validation."""

from .defaults import DEFAULT_SCHEDULER_NAME, default_plugins, default_spec, merge_with_defaults
from .errors import ConfigError
from .models import (
    ExtenderConfig,
    PluginConfig,
    PluginRef,
    Plugins,
    PluginSet,
    SchedulingProfileSpec,
    parse_duration,
)
from .profile import GROUP, KIND, PLURAL, VERSION, parse_profile_object, parse_spec

__all__ = [
    "DEFAULT_SCHEDULER_NAME", "GROUP", "KIND", "PLURAL", "VERSION", "ConfigError", "ExtenderConfig",
    "PluginConfig", "PluginRef", "PluginSet", "Plugins", "SchedulingProfileSpec", "default_plugins",
    "default_spec", "merge_with_defaults", "parse_duration", "parse_profile_object", "parse_spec",
]
