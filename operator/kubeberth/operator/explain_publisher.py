"""The operator's side of explanations: for a pod annotated `kubeberth.io/explain: "true"`, after
each scheduling attempt, the compact summary in the pod's annotation `kubeberth.io/explanation`
and the full explanation in a `SchedulingExplained` Event (report/summary.py says what and how
big). Nothing is computed or written for other pods (scheduler.explain_pods says which), and an
attempt that explains exactly what the previous one did for that pod writes nothing again.

What is written is scoped to the pod's namespace (report/scope.py): objects of other namespaces
are counted, never named, and nothing is said per node beyond the FailedScheduling message's
counts unless the Namespace carries the label `kubeberth.io/explain-detail: full` (a cluster
administrator's decision, as the labels of Pod Security Admission)."""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ..cache.objects import ObjectStore
from ..clock import Clock
from ..model import Pod
from ..report.scope import COUNTS, DETAILS, FULL, scoped
from ..report.suggestions import scoped as scoped_suggestions
from ..report.summary import EVENT_REASON, SUMMARY_ANNOTATION, digest, event_message, summary
from ..scheduler.explain import Explanation, wants_explanation
from .api_client import pod_path, rfc3339

if TYPE_CHECKING:
    from ..scheduler import Scheduler
    from .api_client import KubernetesClusterClient

logger = logging.getLogger(__name__)

# A pod's suggestions (None: it did not ask for them), as whatif/suggest/'s dicts.
Suggester = Callable[[Pod], Awaitable[list[dict[str, Any]] | None]]
# Makes the suggester of a scheduler (the command line gives whatif/suggest/live.py's LiveSuggester).
SuggesterFactory = Callable[["Scheduler", Clock], Suggester]

REMEMBERED_PODS = 4096
DETAIL_LABEL = "kubeberth.io/explain-detail"


def namespace_detail(objects: ObjectStore, namespace: str) -> tuple[str, str | None]:
    """How much an explanation may say in `namespace`, from its label DETAIL_LABEL: FULL, or COUNTS
    (no label, `counts`). Any other value: COUNTS, and the problem as the second item."""
    value = objects.namespace_labels(namespace).get(DETAIL_LABEL)
    if value is None or value == COUNTS:
        return COUNTS, None
    if value == FULL:
        return FULL, None
    return COUNTS, (f"namespace {namespace}: label {DETAIL_LABEL}={value!r} is not one of "
                    f"{', '.join(DETAILS)}; its explanations give counts only")


class ExplainPublisher:
    def __init__(self, client: KubernetesClusterClient) -> None:
        self.client = client
        self._last: OrderedDict[str, str] = OrderedDict()  # pod uid -> digest of what it was last told
        self._seq = 0
        self.published = 0
        self.objects = ObjectStore()  # the scheduler's, once installed: Namespaces and their labels
        self._warned: set[str] = set()
        # Suggestions for an unschedulable pod (whatif/suggest/live.py's LiveSuggester, or None: none):
        # None for a pod that did not ask; published under `suggestions`, scoped as the
        # explanation is (report/suggestions.py).
        self.suggester: Suggester | None = None

    def install(self, scheduler: Scheduler) -> None:
        scheduler.explain_pods = wants_explanation
        scheduler.on_explained = self.publish
        self.objects = scheduler.ctx.objects

    def forget_pod(self, uid: str) -> None:
        """The pod is deleted: what it was last told goes with it."""
        self._last.pop(uid, None)
        forget = getattr(self.suggester, "forget_pod", None)
        if forget is not None:
            forget(uid)

    def scoped(self, pod: Pod, x: Explanation, suggestions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """The explanation (and the suggestions, when given) as the pod's namespace may read it."""
        detail, problem = namespace_detail(self.objects, pod.namespace)
        if problem is not None and problem not in self._warned:
            self._warned.add(problem)
            logger.warning("%s", problem)
        namespaces = [(ns.get("metadata") or {}).get("name") or "" for ns in self.objects.list("Namespace")]
        data = scoped(x.to_dict(), pod.namespace, detail, namespaces)
        if suggestions is not None:
            data["suggestions"] = scoped_suggestions(suggestions, pod.namespace, detail, namespaces)
        return data

    async def publish(self, pod: Pod, x: Explanation) -> None:
        if not self.client.may_write():
            return
        found = None
        if self.suggester is not None and x.result == "Unschedulable":
            try:
                found = await self.suggester(pod)
            except Exception:  # a failed search never stops the explanation
                logger.exception("Could not compute the suggestions for %s", pod.key)
        data = self.scoped(pod, x, found)
        d = digest(data)
        if self._last.get(pod.uid) == d:
            return
        self._last[pod.uid] = d
        self._last.move_to_end(pod.uid)
        if len(self._last) > REMEMBERED_PODS:
            self._last.popitem(last=False)
        patch = {"metadata": {"annotations": {SUMMARY_ANNOTATION: summary(data)}}}
        api = self.client.api
        try:
            await api.call("PATCH", pod_path(pod.namespace, pod.name), what=f"explanation of {pod.key}", body=patch,
                           content_type="application/merge-patch+json")
        except Exception as exc:  # the pod may be gone; the Event still tells
            logger.info("Could not annotate %s with its explanation: %s", pod.key, exc)
        await api.call("POST", f"/api/v1/namespaces/{pod.namespace}/events", what=f"explanation event of {pod.key}",
                       body=self._event(pod, event_message(pod.key, data)))
        self.published += 1

    def _event(self, pod: Pod, message: str) -> dict[str, Any]:
        now = self.client.clock.now()
        self._seq += 1
        component = pod.scheduler_name
        ref = {"apiVersion": "v1", "kind": "Pod", "namespace": pod.namespace, "name": pod.name, "uid": pod.uid}
        ts = rfc3339(now)
        # A core/v1 Event without eventTime: its message is not held to the 1 KiB note limit of
        # events.k8s.io/v1, where the scheduling events go (event_recorder.py).
        return {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{pod.name}.explain.{int(now * 1e9) + self._seq:x}", "namespace": pod.namespace},
            "involvedObject": ref, "reason": EVENT_REASON, "message": message, "type": "Normal",
            "source": {"component": component}, "reportingComponent": component,
            "reportingInstance": self.client.events.reporting_instance(component), "action": "Scheduling",
            "firstTimestamp": ts, "lastTimestamp": ts, "count": 1,
        }
