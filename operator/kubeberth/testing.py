"""Testing plugins of one's own in-process: the scheduler `kubeberth simulate` runs, with your
plugins, on a cluster given as files or objects, and what became of each pod.

    from kubeberth.testing import run_cluster

    result = run_cluster("cluster.yaml", profile, plugins=[MyPlugin], seed=1)
    assert result.outcome("default/web-1").node == "node-2"

Nodes, pods, SchedulingProfiles (a profile enabling your plugin; without one, the default profile
serves default-scheduler), KubeSchedulerConfiguration documents and the other kinds the scheduler
reads are all given as objects; pods already on a node are running there, pending pods are
scheduled, in the order of their creationTimestamp. The run ends when nothing more can change (a
fake clock: backoffs pass at once).

To drive the scheduler yourself (add pods one by one, look at the queue between cycles), give a
`kubeberth.scheduler.Scheduler` an `InMemoryClient` as its cluster client.
"""

from __future__ import annotations

import io
import os
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import features
from .framework import Plugin
from .plugins import in_tree_registry
from .plugins._loading import check_plugin_class
from .scheduler import Scheduler
from .whatif.cluster import InMemoryClient
from .whatif.config_files import prepare
from .whatif.engine import run_simulation
from .whatif.inputs import InputError, Origins, iter_objects, load_files
from .whatif.outcomes import PodOutcome

__all__ = ["InMemoryClient", "InputError", "PodOutcome", "SimulationResult", "run_cluster"]

PLACED = ("Existing", "Scheduled")


@dataclass
class SimulationResult:
    """What `run_cluster` gave: one `PodOutcome` per pod of the input (in input order), the
    scheduler after the run (its cache, its queue, its records of each pod) and the warnings the
    input drew (nodes or PodGroups skipped, kinds not read), as `kubeberth simulate` prints them."""

    outcomes: list[PodOutcome]
    scheduler: Scheduler
    warnings: str = ""

    def outcome(self, pod: str) -> PodOutcome:
        """The outcome of `pod`: NAMESPACE/NAME, or NAME when one pod of the input has it.
        Raises KeyError for no pod, or for a NAME that more than one namespace has."""
        found = [o for o in self.outcomes if o.pod == pod or ("/" not in pod and o.pod.split("/", 1)[1] == pod)]
        if len(found) != 1:
            raise KeyError(f"{pod}: {'no such pod' if not found else 'in more than one namespace'} in the input")
        return found[0]

    @property
    def nodes(self) -> dict[str, str]:
        """NAMESPACE/NAME -> node of every pod on a node after the run (Existing or Scheduled)."""
        return {o.pod: o.node for o in self.outcomes if o.status in PLACED and o.node}


def run_cluster(*inputs: str | os.PathLike[str] | Mapping[str, Any], plugins: Sequence[type[Plugin]] = (),
                seed: int = 0, feature_gates: str | None = None, explain: Collection[str] | None = None,
                percentage_of_nodes_to_score: int = 0) -> SimulationResult:
    """Run the scheduler on `inputs` (YAML files, as `kubeberth simulate` reads them, or objects:
    dicts, a `kind: List` among them) with the in-tree plugins and `plugins` (the classes, as
    your package's `PLUGINS` lists them; the entry points' and `--plugins`' are left out, so that
    a test runs the plugins it names), and return what became of each pod.

    `seed`: random tie-breaks; `feature_gates`: as `--feature-gates` takes them
    ("GenericWorkload=true,..."), for this run only; `explain`: pods whose outcomes carry the
    explanation of their attempts (NAMESPACE/NAME or NAME; empty: every pod);
    `percentage_of_nodes_to_score`: the scheduler-wide value (0: adaptive).

    Raises InputError for an input `kubeberth simulate` refuses (a file that cannot be read, a
    profile the operator would refuse: an unknown plugin, invalid args), naming it; ValueError for
    a class that cannot be a plugin or whose name is taken, or for feature gates refused."""
    registry = in_tree_registry()
    for cls in plugins:
        why = check_plugin_class(cls)
        if why is not None:
            raise ValueError(f"{getattr(cls, '__name__', cls)!r}: {why}")
        registry.register(cls, origin=f"given to run_cluster by {cls.__module__}")
    origins = Origins()
    objects: list[dict[str, Any]] = []
    for i, source in enumerate(inputs):
        if isinstance(source, Mapping):
            objects += iter_objects([dict(source)], f"inputs[{i}]", origins)
        else:
            objects += load_files([Path(source)], origins)
    warn = io.StringIO()
    with features.override(features.FeatureGates.parse(feature_gates)):
        sim = prepare(objects, warn, origins=origins, registry=registry)
        outcomes, sched = run_simulation(sim.objects, seed=seed, warn=warn, explain=explain, origins=origins,
                                         percentage_of_nodes_to_score=(percentage_of_nodes_to_score
                                                                       or sim.percentage_of_nodes_to_score or 0),
                                         registry=registry)
    return SimulationResult(outcomes, sched, warn.getvalue())
