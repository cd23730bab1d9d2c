"""The hand-made scenario of the replay tests: one 4-CPU node, six pods, a preemption and a gang.

    t=0    a (1 CPU... 2 CPU, priority 500) arrives, bound; it leaves at 100
    t=10   b (2 CPU, priority 0, duration 50) arrives, bound: the node is full
    t=20   c (1 CPU, priority 500, never preempts) arrives: Insufficient cpu
    t=30   hi (2 CPU, priority 1000) arrives, preempts b (the lowest), bound; c, behind hi's
           nomination, still waits. hi leaves at 150.
    t=40   the gang g-0, g-1 (1 CPU each, PodGroup minCount 2) arrives: no room
    t=60   b's duration would end: b is gone already (an instant where nothing changes)
    t=100  a leaves: c (priority 500) goes first and takes 1 CPU; the gang needs 2, 1 is free
    t=150  hi leaves: the gang is bound whole
"""

from __future__ import annotations

NODE = """
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {kubernetes.io/hostname: n1}}
status:
  allocatable: {cpu: "4", memory: 8Gi, pods: "110"}
  capacity: {cpu: "4", memory: 8Gi, pods: "110"}
"""

CLASSES = """
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: mid}
value: 500
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: mid-never}
value: 500
preemptionPolicy: Never
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
"""


def pod(name: str, cpu: str, times: dict[str, float], priority_class: str = "") -> str:
    annotations = ", ".join(f'kubeberth.io/{k}: "{v:g}"' for k, v in times.items())
    pc = f"\n  priorityClassName: {priority_class}" if priority_class else ""
    return f"""
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default, annotations: {{{annotations}}}}}
spec:{pc}
  containers:
  - name: c
    image: pause
    resources: {{requests: {{cpu: "{cpu}"}}}}
"""


GANG = """
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: g, namespace: default}
spec:
  schedulingPolicy:
    gang: {minCount: 2}
---
apiVersion: kubeberth.io/v1alpha1
kind: ReplayScenario
metadata: {name: gang}
spec:
  items:
  - at: 40
    count: 2
    object:
      apiVersion: v1
      kind: Pod
      metadata: {name: g, namespace: default}
      spec:
        schedulingGroup: {podGroupName: g}
        containers:
        - name: c
          image: pause
          resources: {requests: {cpu: "1"}}
"""


def scenario_yaml() -> str:
    docs = [NODE, CLASSES,
            pod("a", "2", {"arrival-time": 0, "departure-time": 100}, "mid"),
            pod("b", "2", {"arrival-time": 10, "duration": 50}),
            pod("c", "1", {"arrival-time": 20}, "mid-never"),
            pod("hi", "2", {"arrival-time": 30, "departure-time": 150}, "high"),
            GANG]
    return "---".join(docs)
