"""HTTP scheduler extenders: the client (aiohttp), the wire types, and their place in the cycle."""

from .build import build_extenders, close_extenders, is_extended_resource_name, validate_extenders
from .client import ExtenderError, HTTPExtender, make_ssl_context
from .cycle import (
    EXTENDER_SCORE_SCALE,
    bind_with_extenders,
    find_binder,
    ignored_resources,
    run_filter_extenders,
    run_prioritize_extenders,
)
from .wire import MAX_EXTENDER_PRIORITY, MIN_EXTENDER_PRIORITY, WireError

__all__ = [
    "EXTENDER_SCORE_SCALE", "MAX_EXTENDER_PRIORITY", "MIN_EXTENDER_PRIORITY", "ExtenderError", "HTTPExtender",
    "WireError", "bind_with_extenders", "build_extenders",
    "close_extenders", "find_binder", "ignored_resources", "is_extended_resource_name", "make_ssl_context",
    "run_filter_extenders", "run_prioritize_extenders", "validate_extenders",
]
