"""The SchedulingProfile CRD as a real API server serves it: what kubectl refuses, prints and explains."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from .control_plane import ControlPlane, kubectl
from .kube import Kube

pytestmark = pytest.mark.cluster


def profile(name: str = "p", **spec: Any) -> str:
    return yaml.safe_dump({"apiVersion": "kubeberth.io/v1alpha1", "kind": "SchedulingProfile",
                           "metadata": {"name": name}, "spec": spec})


# (case, spec, what the refusal must name): the README's promise that kubectl refuses these.
REFUSED: list[tuple[str, dict[str, Any], list[str]]] = [
    ("unknown top-level field", {"schedulerName": "s", "percentOfNodesToScore": 5},
     ['unknown field "spec.percentOfNodesToScore"']),
    ("unknown field in a plugin set", {"plugins": {"score": {"enable": [{"name": "NodeResourcesFit"}]}}},
     ['unknown field "spec.plugins.score.enable"']),
    ("percentageOfNodesToScore above 100", {"percentageOfNodesToScore": 101},
     ["spec.percentageOfNodesToScore", "should be less than or equal to 100"]),
    ("negative percentageOfNodesToScore", {"percentageOfNodesToScore": -1},
     ["spec.percentageOfNodesToScore", "should be greater than or equal to 0"]),
    ("max backoff below the initial one", {"podInitialBackoffSeconds": 10, "podMaxBackoffSeconds": 5},
     ["podMaxBackoffSeconds must be >= podInitialBackoffSeconds"]),
    ("a backoff of zero", {"podInitialBackoffSeconds": 0}, ["spec.podInitialBackoffSeconds"]),
    ("duplicate pluginConfig names",
     {"pluginConfig": [{"name": "NodeResourcesFit", "args": {}}, {"name": "NodeResourcesFit", "args": {}}]},
     ["spec.pluginConfig[1]", "Duplicate value"]),
    ("a plugin weight of a string", {"plugins": {"score": {"enabled": [{"name": "X", "weight": "heavy"}]}}},
     ["spec.plugins.score.enabled[0].weight"]),
    ("an empty schedulerName", {"schedulerName": ""}, ["spec.schedulerName"]),
]


@pytest.mark.parametrize(("spec", "named"), [(s, n) for _, s, n in REFUSED], ids=[c for c, _, _ in REFUSED])
def test_kubectl_refuses_what_the_schema_can_check(control_plane: ControlPlane, spec: dict[str, Any],
                                                   named: list[str]) -> None:
    out = kubectl(control_plane, "apply", "-f", "-", input=profile("refused", **spec), check=False)
    assert out.returncode != 0, f"accepted: {out.stdout}"
    for part in named:
        assert part in out.stderr, out.stderr
    assert kubectl(control_plane, "get", "sprof", "refused", check=False).returncode != 0


async def test_defaults_are_applied_by_the_api_server(control_plane: ControlPlane, kube: Kube) -> None:
    kubectl(control_plane, "apply", "-f", "-", input=profile("bare"))
    spec = (await kube.get("schedulingprofiles", "bare"))["spec"]
    assert spec["schedulerName"] == "default-scheduler"
    assert (spec["podInitialBackoffSeconds"], spec["podMaxBackoffSeconds"]) == (1, 10)


async def test_printer_columns(control_plane: ControlPlane, kube: Kube) -> None:
    kubectl(control_plane, "apply", "-f", "-", input=profile("shown", schedulerName="kubeberth"))
    await kube.patch("schedulingprofiles", "shown", {"status": {"observedGeneration": 1, "conditions": [
        {"type": "Accepted", "status": "True", "reason": "Valid", "message": "",
         "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}, subresource="status")
    lines = kubectl(control_plane, "get", "sprof", "shown").stdout.splitlines()
    assert lines[0].split() == ["NAME", "SCHEDULER", "ACCEPTED", "AGE"]
    assert lines[1].split()[:3] == ["shown", "kubeberth", "True"]


async def test_status_is_a_subresource(control_plane: ControlPlane, kube: Kube) -> None:
    kubectl(control_plane, "apply", "-f", "-", input=profile("sub"))
    # Status written through the main resource is dropped, and spec through /status too.
    await kube.patch("schedulingprofiles", "sub", {"status": {"observedGeneration": 7}})
    assert "status" not in await kube.get("schedulingprofiles", "sub")
    await kube.patch("schedulingprofiles", "sub", {"spec": {"schedulerName": "x"}, "status": {
        "observedGeneration": 1}}, subresource="status")
    got = await kube.get("schedulingprofiles", "sub")
    assert got["spec"]["schedulerName"] == "default-scheduler" and got["status"]["observedGeneration"] == 1
    # A status write leaves the generation alone; a spec edit moves it.
    assert got["metadata"]["generation"] == 1
    await kube.patch("schedulingprofiles", "sub", {"spec": {"percentageOfNodesToScore": 50}})
    assert (await kube.get("schedulingprofiles", "sub"))["metadata"]["generation"] == 2


@pytest.mark.parametrize("field", ["spec", "spec.plugins", "spec.pluginConfig", "spec.extenders",
                                   "spec.percentageOfNodesToScore"])
def test_kubectl_explain_describes_the_fields(control_plane: ControlPlane, field: str) -> None:
    out = kubectl(control_plane, "explain", f"schedulingprofiles.{field}").stdout
    description = out.split("DESCRIPTION:", 1)[1].split("FIELDS:", 1)[0].strip()
    assert description and "<empty>" not in description, out


def test_short_name_and_category(control_plane: ControlPlane) -> None:
    kubectl(control_plane, "apply", "-f", "-", input=profile("listed"))
    names = json.loads(kubectl(control_plane, "get", "kubeberth", "-o", "json").stdout)["items"]
    assert [p["metadata"]["name"] for p in names if p["kind"] == "SchedulingProfile"].count("listed") == 1
    kubectl(control_plane, "delete", "sprof", "listed")


def test_the_manifests_samples_apply(control_plane: ControlPlane) -> None:
    out = kubectl(control_plane, "apply", "--dry-run=server", "-k", "manifests/samples/")
    assert "bin-packing" in out.stdout and "with-extender" in out.stdout


def test_a_workload_summary_is_served_and_readable_by_kubeberth(control_plane: ControlPlane) -> None:
    from kubeberth.whatif.replay.workload import workload_summary

    pods = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "namespace": "default",
                                                             "annotations": {"alibabacloud.com/gpu-milli": "500"}},
             "spec": {"containers": [{"name": "c", "resources": {"requests": {
                 "cpu": "1", "alibabacloud.com/gpu-milli": str(500 * (1 + i % 2))}}}]}} for i in range(3)]
    summary = workload_summary(pods)
    kubectl(control_plane, "apply", "-f", "-", input=yaml.safe_dump(summary))
    got = json.loads(kubectl(control_plane, "get", "wsum", "replay", "-o", "json").stdout)
    assert got["spec"] == summary["spec"]
    assert "3" in kubectl(control_plane, "get", "workloadsummaries").stdout.split()
    bad = {**summary, "metadata": {"name": "bad"}, "spec": {"total": -1, "shapes": []}}
    refused = kubectl(control_plane, "apply", "-f", "-", input=yaml.safe_dump(bad), check=False)
    assert refused.returncode != 0 and "spec.total" in refused.stderr
    from .conftest import installed_plugins

    sa = "system:serviceaccount:kubeberth-system:kubeberth"
    for verb in () if "kubeberth-gpushare" not in installed_plugins() else ("list", "watch"):
        can = kubectl(control_plane, "auth", "can-i", verb, "workloadsummaries.kubeberth.io", f"--as={sa}", check=False)
        assert can.stdout.strip() == "yes", (verb, can.stdout, can.stderr)
    kubectl(control_plane, "delete", "wsum", "replay")
