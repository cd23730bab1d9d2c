"""Group preemption's re-run of the group's algorithm scores ImageLocality as kube-scheduler v1.37.2
does within the snapshot's mutation session: every image's spread is 0 there (StartMutations copies
the snapshot's NodeInfos again, and a copy's image summary counts a node set the snapshot's copies no
longer carry), so no node gains from having the pod's image. Found by the workload fuzzer (seed 7,
case 64, --group-preemption): upstream put the group on the better balanced node, kubeberth on the
node with the image."""

from __future__ import annotations

import io
from typing import Any

from kubeberth import features
from kubeberth.features import FeatureGates
from kubeberth.framework import CycleState
from kubeberth.plugins._mutation_session import preemption_rerun
from kubeberth.plugins.image_locality import ImageLocality
from kubeberth.whatif.engine import run_simulation
from tests.builders import make_node, make_pod, node_dict, node_info, pod_dict
from tests.doubles import handle

MB = 1024 * 1024
IMAGE = [{"names": ["big:1"], "sizeBytes": 800 * MB}]


def objects() -> list[dict[str, Any]]:
    profile = {"apiVersion": "kubeberth.io/v1alpha1", "kind": "SchedulingProfile", "metadata": {"name": "p"},
               "spec": {"schedulerName": "default-scheduler",
                        "plugins": {"score": {"disabled": [{"name": "NodeResourcesFit"}]}}}}
    classes = [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": n}, "value": v}
               for n, v in (("low", 10), ("high", 1000))]
    group = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
             "metadata": {"name": "g", "namespace": "default", "generation": 1},
             "spec": {"schedulingPolicy": {"gang": {"minCount": 1}}, "priorityClassName": "high", "priority": 1000}}
    member = pod_dict("g-0", cpu="1600m", memory="2Gi", priorityClassName="high", priority=1000,
                      containers=[{"name": "c", "image": "big:1",
                                   "resources": {"requests": {"cpu": "1600m", "memory": "2Gi"}}}])
    member["spec"]["schedulingGroup"] = {"podGroupName": "g"}
    return [profile, *classes,
            node_dict("n1", cpu="2", memory="16Gi", images=IMAGE), node_dict("n2", cpu="4", memory="16Gi"),
            pod_dict("low-1", cpu="2", node="n1", priorityClassName="low", priority=10),
            pod_dict("low-2", cpu="4", node="n2", priorityClassName="low", priority=10),
            group, member]


def test_the_rerun_places_the_group_as_if_no_node_had_its_image() -> None:
    with features.override(FeatureGates.parse("GenericWorkload=true")):
        outcomes, _ = run_simulation(objects(), warn=io.StringIO())
    got = {o.pod: (o.status, o.node) for o in outcomes}
    # n2 is better balanced for the pod (NodeResourcesBalancedAllocation); n1's image would win it n1
    assert got["default/g-0"] == ("Scheduled", "n2"), got
    assert got["default/low-2"][0] == "Evicted" and got["default/low-1"][0] == "Existing", got


def test_image_locality_scores_no_image_within_the_rerun_only() -> None:
    n1 = node_info(make_node("n1", images=IMAGE))
    n2 = node_info(make_node("n2"))
    pl = ImageLocality(None, handle([n1.node, n2.node]))
    pod = make_pod("p", containers=[{"name": "c", "image": "big:1"}])
    outside = pl.score(CycleState(), pod, n1)
    with preemption_rerun():
        inside = pl.score(CycleState(), pod, n1)
    assert outside > 0 and inside == 0 == pl.score(CycleState(), pod, n2)
