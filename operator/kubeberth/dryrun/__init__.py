"""Dry runs of the scheduler: would these pods be placed now, where, with which victims.

The service is served by the operator's dry-run front, a process of its own on --dry-run-port
(kubeberth.operator.dryrun_front, dryrun_endpoint); its wire types are `models`, the client
`client` (imported here: `from kubeberth.dryrun import DryRunClient`). `engine` runs the cycle
on a copy of the scheduler, `worker` keeps that copy (a fork of the operator), `service` answers
the operator's own callers (the Kueue admission check).
"""

from .client import DryRunClient, DryRunError, schedule_sync
from .models import DryRun, DryRunSpec, DryRunStatus, PodAnswer, Preemption, VictimRef, path_for

__all__ = ["DryRun", "DryRunClient", "DryRunError", "DryRunSpec", "DryRunStatus", "PodAnswer", "Preemption",
           "VictimRef", "path_for", "schedule_sync"]
