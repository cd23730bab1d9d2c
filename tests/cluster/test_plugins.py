"""Plugins of one's own through `kubeberth run` on a real API server: a plugin given with
--plugins serves a live SchedulingProfile; a plugin that reads a kind whose CRD is not installed
refuses its profile (naming the kind and the verb) while another profile keeps binding, then a
missing verb, then runs once the CRD and the RBAC rule are there; the kopf handlers of a plugin
module run in the operator, and nothing of kopf's bookkeeping lands on the pods."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from .conftest import Operators
from .kube import Kube, eventually, node, pod

pytestmark = pytest.mark.cluster

PLUGIN = '''
import kopf
from pydantic import BaseModel

from kubeberth.framework import MAX_NODE_SCORE, FilterPlugin, ObjectKind, ScorePlugin, Status

SEEN = {seen!r}


class PreferLabelArgs(BaseModel):
    label: str = "tier"
    value: str = "gold"


class PreferLabel(ScorePlugin):
    name = "PreferLabel"
    args_model = PreferLabelArgs

    def __init__(self, args, handle):
        self.args = args

    def score(self, state, pod, node_info):
        return MAX_NODE_SCORE if node_info.node.labels.get(self.args.label) == self.args.value else 0


class GateOpen(FilterPlugin):
    """Nodes a Gate named after them opens."""

    name = "GateOpen"
    GATE = ObjectKind("example.com", "v1", "gates", "Gate", namespaced=False)
    reads = (GATE,)

    def __init__(self, args, handle):
        self.handle = handle

    def filter(self, state, pod, node_info):
        gate = self.handle.objects.get(self.GATE.group_kind, node_info.node.name)
        return None if gate is not None and gate.get("spec", {{}}).get("open") else Status.unschedulable("gate closed")


@kopf.on.event("pods")
def pod_seen(body, **_):
    with open(SEEN, "a") as f:
        f.write(body["metadata"]["name"] + "\\n")
'''

GATE_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "gates.example.com"},
    "spec": {"group": "example.com", "scope": "Cluster",
             "names": {"plural": "gates", "singular": "gate", "kind": "Gate", "listKind": "GateList"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": {"type": "object",
                                                          "x-kubernetes-preserve-unknown-fields": True}}}]}}
ROLE = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "kubeberth-gates"},
        "rules": [{"apiGroups": ["example.com"], "resources": ["gates"], "verbs": ["list", "watch"]}]}
BINDING = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
           "metadata": {"name": "kubeberth-gates"},
           "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "kubeberth-gates"},
           "subjects": [{"kind": "ServiceAccount", "name": "kubeberth", "namespace": "kubeberth-system"}]}
RBAC = "/apis/rbac.authorization.k8s.io/v1"


def profile(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "kubeberth.io/v1alpha1", "kind": "SchedulingProfile", "metadata": {"name": name},
            "spec": spec}


async def accepted(kube: Kube, name: str) -> dict[str, Any] | None:
    status = (await kube.get("schedulingprofiles", name)).get("status") or {}
    conditions = status.get("conditions") or []
    return conditions[0] if conditions else None


async def bound_node(kube: Kube, name: str) -> str | None:
    return (await kube.get("pods", name, "default"))["spec"].get("nodeName")


async def test_plugins_of_ones_own_in_the_operator(kube: Kube, operators: Operators, tmp_path: Path,
                                                   sa_kubeconfig: Path) -> None:
    seen = tmp_path / "seen.txt"
    plugin = tmp_path / "myplugins.py"
    plugin.write_text(textwrap.dedent(PLUGIN.format(seen=str(seen))))
    await kube.create("nodes", node("silver-1", cpu="16", labels={"tier": "silver"}))
    await kube.create("nodes", node("gold-1", cpu="4", labels={"tier": "gold"}))
    try:
        op = operators.start("--no-default-profile", f"--plugins={plugin}")
        await kube.create("schedulingprofiles", profile("tiered", {
            "schedulerName": "tiered", "plugins": {"score": {"enabled": [{"name": "PreferLabel", "weight": 5}]}}}))
        await kube.create("schedulingprofiles", profile("gated", {
            "schedulerName": "gated", "plugins": {"filter": {"enabled": [{"name": "GateOpen"}]}}}))

        # Neither the RBAC rule nor the CRD: the API server answers 403 before it looks for the
        # resource. "gated" is refused naming the kind and the verb; "tiered" binds.
        refused = await eventually(lambda: accepted(kube, "gated"), what="gated judged")
        assert (refused["status"], refused["reason"]) == ("False", "PluginUnavailable")
        assert refused["message"] == (
            "plugin 'GateOpen' reads Gate: the ServiceAccount may not list gates.example.com (403; its ClusterRole "
            'needs a rule apiGroups: ["example.com"], resources: [gates], verbs: [list, watch])')
        assert (await eventually(lambda: accepted(kube, "tiered"), what="tiered judged"))["status"] == "True"
        await kube.create("pods", pod("web", scheduler="tiered"))
        assert await eventually(lambda: bound_node(kube, "web"), what="web bound") == "gold-1"

        # A misspelt args field (PreferLabelArgs is a plain BaseModel, which would drop it): refused,
        # naming the field, and the version in force keeps scheduling.
        await kube.patch("schedulingprofiles", "tiered", {"spec": {"pluginConfig": [
            {"name": "PreferLabel", "args": {"lable": "tier"}}]}})

        async def refused_args() -> dict[str, Any] | None:
            cond = await accepted(kube, "tiered")
            return cond if cond and cond["status"] == "False" else None

        cond = await eventually(refused_args, what="tiered refused")
        assert (cond["reason"], cond["message"]) == (
            "Invalid", "spec.pluginConfig[0].args.lable: Extra inputs are not permitted (the previous version stays "
                       "in force)")
        await kube.create("pods", pod("web-2", scheduler="tiered"))
        assert await eventually(lambda: bound_node(kube, "web-2"), what="web-2 bound") == "gold-1"

        # The rule the README gives, still no CRD: refused for the CRD.
        await kube.request("POST", f"{RBAC}/clusterroles", body=ROLE)
        await kube.request("POST", f"{RBAC}/clusterrolebindings", body=BINDING)

        async def message(part: str) -> str | None:
            cond = await accepted(kube, "gated")
            return cond["message"] if cond and part in cond["message"] else None

        assert await eventually(lambda: message("404"), timeout=90, what="refused for the CRD") == (
            "plugin 'GateOpen' reads Gate: the API server does not serve gates.example.com/v1 (404 on list: is its "
            "CustomResourceDefinition installed?)")

        # The CRD: the profile runs, and the plugin reads the Gate objects.
        await kube.create("customresourcedefinitions", GATE_CRD)

        async def now_accepted() -> bool:
            cond = await accepted(kube, "gated")
            return bool(cond and cond["status"] == "True")

        await eventually(now_accepted, timeout=90, what="gated accepted")
        await kube.create("pods", pod("gated-early", scheduler="gated"))
        await kube.request("POST", "/apis/example.com/v1/gates",
                           body={"apiVersion": "example.com/v1", "kind": "Gate", "metadata": {"name": "silver-1"},
                                 "spec": {"open": True}})
        await kube.create("pods", pod("gated-pod", scheduler="gated"))
        assert await eventually(lambda: bound_node(kube, "gated-pod"), timeout=60, what="bound") == "silver-1"
        # A pod that came before the gate opened binds once it is open.
        assert await eventually(lambda: bound_node(kube, "gated-early"), timeout=60, what="bound") == "silver-1"

        # `kubeberth snapshot --plugins` writes the Gate objects; simulate reads them back.
        out = tmp_path / "snapshot.yaml"
        done = subprocess.run([sys.executable, "-m", "kubeberth.cli", "snapshot", f"--kubeconfig={sa_kubeconfig}",
                               "-o", str(out), f"--plugins={plugin}"], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        objects = list(yaml.safe_load_all(out.read_text()))
        assert {"apiVersion": "example.com/v1", "kind": "Gate", "metadata": {"name": "silver-1"},
                "spec": {"open": True}} in [{**o, "metadata": {"name": o["metadata"]["name"]}} for o in objects
                                            if o["kind"] == "Gate"]

        # The module's kopf handler ran in the operator (its plugins are in force); no kopf bookkeeping
        # on the pods.
        await eventually(lambda: _read(seen, "gated-pod"), what="the plugin module's kopf handler saw the pods")
        for name in ("web", "gated-pod"):
            annotations = (await kube.get("pods", name, "default"))["metadata"].get("annotations") or {}
            assert annotations == {}, annotations
        assert "Starting the 1 kopf handler(s) of plugin(s) GateOpen, PreferLabel" in op.log()
        # (Installed plugin distributions, e.g. Coscheduling's from `make install`, bring theirs, which no
        # profile here enables: they do not run.)
        assert not re.search(r"Starting the \d+ kopf handler\(s\) of plugin\(s\) Coscheduling", op.log())
    finally:
        for path in (f"{RBAC}/clusterrolebindings/kubeberth-gates", f"{RBAC}/clusterroles/kubeberth-gates",
                     "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gates.example.com"):
            try:
                await kube.request("DELETE", path)
            except Exception:
                pass


async def _read(path: Path, name: str) -> bool:
    return path.exists() and name in path.read_text().split()


async def test_a_plugin_from_an_installed_distribution(kube: Kube, operators: Operators, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """An entry point in the group kubeberth.plugins: `kubeberth run` loads it without --plugins."""
    site = tmp_path / "site-packages"
    (site / "prefer_tier-1.2.dist-info").mkdir(parents=True)
    (site / "prefer_tier-1.2.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: prefer-tier\n"
                                                                 "Version: 1.2\n")
    (site / "prefer_tier-1.2.dist-info" / "entry_points.txt").write_text(
        "[kubeberth.plugins]\nPreferTier = prefer_tier:PreferTier\n")
    source = PLUGIN.format(seen=str(tmp_path / "seen.txt")).replace('name = "PreferLabel"', 'name = "PreferTier"')
    (site / "prefer_tier.py").write_text(textwrap.dedent(source.replace("class PreferLabel(", "class PreferTier(")))
    monkeypatch.setenv("PYTHONPATH", str(site))  # the operator process inherits it
    await kube.create("nodes", node("silver-1", cpu="16", labels={"tier": "silver"}))
    await kube.create("nodes", node("gold-1", cpu="4", labels={"tier": "gold"}))
    op = operators.start("--no-default-profile")
    await kube.create("schedulingprofiles", profile("tiered", {
        "schedulerName": "tiered", "plugins": {"score": {"enabled": [{"name": "PreferTier", "weight": 5}]}}}))
    cond = await eventually(lambda: accepted(kube, "tiered"), what="tiered judged")
    assert cond["status"] == "True", cond
    await kube.create("pods", pod("web", scheduler="tiered"))
    assert await eventually(lambda: bound_node(kube, "web"), what="web bound") == "gold-1"
    assert "plugin unavailable" not in op.log()
