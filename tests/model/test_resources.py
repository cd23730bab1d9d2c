"""Effective pod requests (resource.PodRequests) and the Resource arithmetic."""

from __future__ import annotations

from typing import Any

import pytest

from kubeberth.model import ModelError, Resource, pod_requests
from kubeberth.model.resources import is_scalar_resource

MI = 1024 * 1024


def c(cpu: str | None = None, memory: str | None = None, *, limits: dict[str, Any] | None = None,
      sidecar: bool = False, **extra: str) -> dict[str, Any]:
    """A container with requests (and optional limits)."""
    reqs: dict[str, Any] = {k.replace("_", "-"): v for k, v in extra.items()}
    if cpu is not None:
        reqs["cpu"] = cpu
    if memory is not None:
        reqs["memory"] = memory
    res: dict[str, Any] = {}
    if reqs:
        res["requests"] = reqs
    if limits:
        res["limits"] = limits
    out: dict[str, Any] = {"name": "c", "resources": res}
    if sidecar:
        out["restartPolicy"] = "Always"
    return out


# (id, spec, want (milli_cpu, memory), want non-zero (milli_cpu, memory))
REQUEST_CASES = [
    ("no containers", {"containers": []}, (0, 0), (0, 0)),
    ("one container", {"containers": [c("1", "1Gi")]}, (1000, 1024 * MI), (1000, 1024 * MI)),
    ("containers add up", {"containers": [c("100m", "1Mi"), c("200m", "2Mi")]}, (300, 3 * MI), (300, 3 * MI)),
    ("init container is a max, not a sum",
     {"containers": [c("1", "1Gi")], "initContainers": [c("2", "512Mi"), c("1500m", "2Gi")]},
     (2000, 2048 * MI), (2000, 2048 * MI)),
    ("init containers below the sum do not count",
     {"containers": [c("2", "2Gi")], "initContainers": [c("1", "1Gi")]}, (2000, 2048 * MI), (2000, 2048 * MI)),
    ("sidecars add to the sum and to later init containers",
     {"initContainers": [c("1"), c("2", sidecar=True), c("3")], "containers": [c("1")]},
     # total = 1 + 2 (sidecar) = 3; the init after the sidecar needs 3 + 2 = 5.
     (5000, 0), (5000, 200 * MI * 2)),
    ("sidecar started after an init container does not add to it",
     {"initContainers": [c("3"), c("1", sidecar=True)], "containers": [c("1")]},
     (3000, 0), (3000, 200 * MI * 2)),
    ("two sidecars accumulate",
     {"initContainers": [c("1", sidecar=True), c("1", sidecar=True), c("1")], "containers": [c("1")]},
     (3000, 0), (3000, 200 * MI * 3)),
    ("overhead is added after the max",
     {"containers": [c("1", "1Gi")], "initContainers": [c("2")], "overhead": {"cpu": "250m", "memory": "120Mi"}},
     (2250, 1144 * MI), (2250, 1144 * MI)),
    ("missing requests default to limits",
     {"containers": [c(limits={"cpu": "2", "memory": "1Gi"})]}, (2000, 1024 * MI), (2000, 1024 * MI)),
    ("explicit request wins over limit",
     {"containers": [c("1", limits={"cpu": "2", "memory": "1Gi"})]}, (1000, 1024 * MI), (1000, 1024 * MI)),
    ("non-zero defaults for a container without requests", {"containers": [c()]}, (0, 0), (100, 200 * MI)),
    ("non-zero default only for the missing resource", {"containers": [c(memory="1Gi")]},
     (0, 1024 * MI), (100, 1024 * MI)),
    ("explicit zero stays zero", {"containers": [c("0", "0")]}, (0, 0), (0, 0)),
    ("non-zero defaults apply per container", {"containers": [c(), c("1")]}, (1000, 0), (1100, 400 * MI)),
    ("non-zero defaults apply to init containers", {"containers": [c("10m")], "initContainers": [c()]},
     (10, 0), (100, 200 * MI)),
    ("quantities are summed exactly, rounded once", {"containers": [c("0.5m"), c("0.5m")]}, (1, 0), (1, 400 * MI)),
    ("pod-level requests replace the containers' sum",
     {"containers": [c("1", "1Gi")], "resources": {"requests": {"cpu": "3", "memory": "2Gi"}}},
     (3000, 2048 * MI), (3000, 2048 * MI)),
    ("pod-level request for one resource only",
     {"containers": [c("1", "1Gi")], "resources": {"requests": {"cpu": "500m"}}},
     (500, 1024 * MI), (500, 1024 * MI)),
    ("pod-level limits default the pod-level requests when no container names them",
     {"containers": [c()], "resources": {"limits": {"cpu": "2", "memory": "1Gi"}}},
     (2000, 1024 * MI), (2000, 1024 * MI)),
    ("pod-level limits with container requests: the containers' sum",
     {"containers": [c("1")], "resources": {"limits": {"cpu": "4"}}},
     (1000, 0), (1000, 200 * MI)),
    ("pod-level requests plus overhead",
     {"containers": [c()], "resources": {"requests": {"cpu": "1"}}, "overhead": {"cpu": "100m"}},
     (1100, 0), (1100, 200 * MI)),
]


@pytest.mark.parametrize(("spec", "want", "want_non_zero"), [c[1:] for c in REQUEST_CASES],
                         ids=[c[0] for c in REQUEST_CASES])
def test_pod_requests(spec: dict[str, Any], want: tuple[int, int], want_non_zero: tuple[int, int]) -> None:
    r = pod_requests(spec)
    assert (r.milli_cpu, r.memory) == want
    nz = pod_requests(spec, non_zero=True)
    assert (nz.milli_cpu, nz.memory) == want_non_zero


def test_pod_requests_scalar_and_storage() -> None:
    spec = {
        "containers": [c("1", ephemeral_storage="1Gi", **{"example.com/gpu": "1", "hugepages-2Mi": "4Mi"})],
        "initContainers": [c(**{"example.com/gpu": "3"})],
    }
    r = pod_requests(spec)
    assert r.ephemeral_storage == 1024 * MI
    assert r.scalar == {"example.com/gpu": 3, "hugepages-2Mi": 4 * MI}


def test_pod_level_hugepages_override() -> None:
    spec = {"containers": [c(**{"hugepages-2Mi": "2Mi"})],
            "resources": {"requests": {"hugepages-2Mi": "8Mi", "example.com/foo": "3"}}}
    r = pod_requests(spec)
    # Only cpu, memory and hugepages are pod-level resources.
    assert r.scalar == {"hugepages-2Mi": 8 * MI}


@pytest.mark.parametrize(("name", "scalar"), [
    ("example.com/foo", True),
    ("nvidia.com/gpu", True),
    ("hugepages-1Gi", True),
    ("kubernetes.io/something", True),
    ("subdomain.kubernetes.io/something", True),
    ("attachable-volumes-aws-ebs", True),
    ("cpu", False),
    ("memory", False),
    ("ephemeral-storage", False),
    ("pods", False),
    ("foo", False),
    ("requests.example.com/foo", False),
])
def test_is_scalar_resource(name: str, scalar: bool) -> None:
    assert is_scalar_resource(name) is scalar


def test_untracked_resource_names_are_dropped() -> None:
    r = Resource.from_list({"cpu": "1", "foo": "3", "example.com/bar": "2", "pods": "110"})
    assert r.scalar == {"example.com/bar": 2}
    assert r.allowed_pod_number == 110


def test_invalid_quantity_names_the_field() -> None:
    with pytest.raises(ModelError, match=r"spec.containers\[1\].resources.requests"):
        pod_requests({"containers": [c("1"), c("lots")]})
    with pytest.raises(ModelError, match=r"spec\.overhead"):
        pod_requests({"containers": [], "overhead": {"cpu": "x"}})
    with pytest.raises(ModelError):
        pod_requests({"containers": [{"name": "c", "resources": {"requests": ["cpu"]}}]})


def test_resource_arithmetic() -> None:
    a = Resource(1000, 10, 5, 3, {"x.io/a": 2})
    b = Resource(500, 20, 1, 1, {"x.io/a": 1, "x.io/b": 4})
    s = a.clone()
    s.add(b)
    assert s == Resource(1500, 30, 6, 4, {"x.io/a": 3, "x.io/b": 4})
    s.sub(b)
    assert s == a
    m = a.clone()
    m.set_max(b)
    assert m == Resource(1000, 20, 5, 3, {"x.io/a": 2, "x.io/b": 4})
    assert Resource().is_zero() and not a.is_zero()
    assert Resource(scalar={"x.io/a": 0}) == Resource()
    assert [a.get(n) for n in ("cpu", "memory", "ephemeral-storage", "pods", "x.io/a", "x.io/z")] == [
        1000, 10, 5, 3, 2, 0]
    assert list(a.names()) == ["cpu", "memory", "ephemeral-storage", "pods", "x.io/a"]
    clone = a.clone()
    clone.scalar["x.io/a"] = 9
    assert a.scalar["x.io/a"] == 2
