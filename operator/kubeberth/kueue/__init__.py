"""kubeberth as a Kueue admission check (docs/guides/kueue.md), kopf-free.

Kueue (kubernetes-sigs/kueue) admits a Workload once its ClusterQueue has reserved quota AND every
AdmissionCheck of that queue reports `Ready`. An AdmissionCheck names the controller that decides
for it (`spec.controllerName`); ours is CONTROLLER_NAME. For a Workload waiting on our check, its
pod sets become pods as Kueue would create them at admission (`podsets`), the live scheduler dry
runs them together (kubeberth.dryrun), and the check's state follows (`decide`): `Ready` when they
all fit now, `Retry` with upstream's reason (and a suggestion when one is known) when not.
`controller` ties these to the API (its kopf handlers: kubeberth.operator.kueue_check).
"""

from .api import CONTROLLER_NAME, GROUP, VERSION

__all__ = ["CONTROLLER_NAME", "GROUP", "VERSION"]
