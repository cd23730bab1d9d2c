"""Plugin results, with upstream's status codes."""

from __future__ import annotations

from enum import IntEnum


class Code(IntEnum):
    """A Status's code, upstream's framework.Code (`upstream_name` is its name there): SUCCESS,
    ERROR, UNSCHEDULABLE, UNSCHEDULABLE_AND_UNRESOLVABLE (no preemption can help on that node),
    WAIT (Permit holds the pod), SKIP (PreFilter / PreScore: the plugin has nothing to do for the
    pod; Bind: another bind plugin decides), PENDING (the pod waits for something outside the
    scheduler, and is retried only when an event says it came)."""

    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5
    PENDING = 6

    @property
    def upstream_name(self) -> str:
        return _NAMES[self]


_NAMES = {
    Code.SUCCESS: "Success",
    Code.ERROR: "Error",
    Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable",
    Code.WAIT: "Wait",
    Code.SKIP: "Skip",
    Code.PENDING: "Pending",
}


# The codes as module constants: `Code.X` is a lookup on the enum class (three times the cost of
# a global's), and these checks run once per plugin and node in every cycle.
_SUCCESS, _SKIP, _WAIT = Code.SUCCESS, Code.SKIP, Code.WAIT
_REJECTED = frozenset((Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING))


class Status:
    """A plugin's verdict. `None` stands for Success wherever a Status is returned.

    `reasons` are what upstream's Status carries: constant strings (`Insufficient cpu`,
    `node(s) had untolerated taint(s)`), counted node by node into the FailedScheduling message
    (`0/5 nodes are available: 3 Insufficient cpu, ...`). A value in a reason (`cost 2.00 exceeds
    1.0`) would split that count into one group per value; put it in `detail` instead: it is not
    part of the message, the events or equality, and `--explain` (and the in-cluster explanation)
    shows it beside the node it concerns (API 1.3)."""

    __slots__ = ("code", "detail", "plugin", "reasons")

    def __init__(self, code: Code = Code.SUCCESS, *reasons: str, plugin: str = "", detail: str = "") -> None:
        self.code = code
        # Most statuses (Skip, above all) have no reasons: no comprehension to run then.
        self.reasons: list[str] = [r for r in reasons if r] if reasons else []
        self.plugin = plugin
        self.detail = detail

    @classmethod
    def error(cls, message: str, plugin: str = "") -> Status:
        return cls(Code.ERROR, message, plugin=plugin)

    @classmethod
    def unschedulable(cls, *reasons: str, plugin: str = "", detail: str = "") -> Status:
        """Rejected here for now (upstream's Unschedulable): preemption may help."""
        return cls(Code.UNSCHEDULABLE, *reasons, plugin=plugin, detail=detail)

    @classmethod
    def unresolvable(cls, *reasons: str, plugin: str = "", detail: str = "") -> Status:
        """Rejected here whatever is evicted (upstream's UnschedulableAndUnresolvable)."""
        return cls(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, *reasons, plugin=plugin, detail=detail)

    @classmethod
    def skip(cls) -> Status:
        return cls(Code.SKIP)

    def is_success(self) -> bool:
        return self.code == _SUCCESS

    def is_skip(self) -> bool:
        return self.code == _SKIP

    def is_wait(self) -> bool:
        return self.code == _WAIT

    def is_rejected(self) -> bool:
        """Unschedulable, UnschedulableAndUnresolvable or Pending: the pod cannot go here now."""
        return self.code in _REJECTED

    def message(self) -> str:
        return ", ".join(self.reasons)

    def with_plugin(self, plugin: str) -> Status:
        if not self.plugin:
            self.plugin = plugin
        return self

    def __eq__(self, other: object) -> bool:
        if other is None:
            return self.code == Code.SUCCESS
        if not isinstance(other, Status):
            return NotImplemented
        return self.code == other.code and self.reasons == other.reasons

    def __hash__(self) -> int:
        return hash((self.code, tuple(self.reasons)))

    def __repr__(self) -> str:
        plugin = f" plugin={self.plugin}" if self.plugin else ""
        return f"Status({self.code.upstream_name}{plugin}: {self.message()!r})"


def filter_failure(plugin: str, status: Status) -> Status:
    """A Filter plugin's non-success status as the framework reports it: an error wrapped with
    the plugin's name (upstream's `running %q filter plugin`), a rejection marked as the plugin's."""
    if status.code == Code.ERROR:
        return Status.error(f'running "{plugin}" filter plugin: {status.message()}', plugin)
    return status.with_plugin(plugin)


def is_success(status: Status | None) -> bool:
    """Whether `status` is a success (None is one)."""
    return status is None or status.code == Code.SUCCESS


class PluginError(Exception):
    """Raised by a plugin's score (or other value-returning call) to report an Error status."""

    def __init__(self, message: str, plugin: str = "") -> None:
        super().__init__(message)
        self.plugin = plugin
