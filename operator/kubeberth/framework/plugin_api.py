"""What the public plugin API adds to the framework's own types: its versions (the core's,
exported by `kubeberth.framework`, and the vectorised path's, by `kubeberth.framework.vector`)
and the kinds a plugin declares it reads (`ObjectKind`); the loader checks them."""

from __future__ import annotations

from dataclasses import dataclass

# The version of the public plugin surface (`kubeberth.framework.__all__`). The minor number
# grows when names are added; the major number when a name changes or goes (a name that leaves
# `__all__` but stays importable, as a deprecated alias, until the next major is a minor
# change: the vectorised path's names in 1.4). A plugin pins the versions it was written for with
# `requires_api = ">=1.0,<2"` (a PEP 440 specifier).
API_VERSION = "1.5"

# The version of the vectorised path's provisional surface (`kubeberth.framework.vector.__all__`),
# apart from the core's: the same rule (names added: minor; changed or gone: major), but its
# major number may move in any release, the core's API_VERSION staying as it is (the rule in
# full: kubeberth.framework.vector's docstring). A plugin pins it with `requires_vector_api`.
VECTOR_API_VERSION = "1.0"


@dataclass(frozen=True)
class ObjectKind:
    """A kind a plugin reads, e.g. its own CRD:
    `ObjectKind("scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup", namespaced=True)`.

    The operator lists and watches it (`/apis/<group>/<version>/<resource>`, or
    `/api/<version>/<resource>` for the core group "") into the handle's object store
    under its `group_kind` (`handle.objects.get(k.group_kind, "namespace/name")`,
    `handle.objects.list(k.group_kind, namespace)`); a change is a ClusterEvent whose resource is
    `group_kind`. simulate reads documents of this apiVersion and kind from its input, and
    `kubeberth snapshot` writes them."""

    group: str
    version: str
    resource: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def path(self) -> str:
        prefix = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        return f"{prefix}/{self.resource}"

    @property
    def group_kind(self) -> str:
        """`Kind.group` as Kubernetes' GroupKind prints it (`PodGroup.scheduling.x-k8s.io`; the
        kind alone in the core group): two groups' kinds of one name never meet in the store."""
        return f"{self.kind}.{self.group}" if self.group else self.kind

    def __str__(self) -> str:
        return f"{self.resource}.{self.group}" if self.group else self.resource
