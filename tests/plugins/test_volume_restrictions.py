"""VolumeRestrictions: disk conflicts (GCE PD, AWS EBS, RBD, ISCSI) and ReadWriteOncePod claims,
after upstream's volume_restrictions_test.go."""

from __future__ import annotations

from typing import Any

import pytest

from kubeberth.framework import Code, CycleState, Status
from kubeberth.model import NodeInfo
from kubeberth.plugins.volume_restrictions import (
    ERR_REASON_DISK_CONFLICT,
    ERR_REASON_RWOP_CONFLICT,
    VolumeRestrictions,
)
from tests.builders import make_node, make_pod
from tests.doubles import handle, store_of

from ._volume_helpers import claim_volume, pvc, run_filter

CONFLICT = Status.unschedulable(ERR_REASON_DISK_CONFLICT)


def vols(*volumes: dict[str, Any], name: str = "p", node: str = "") -> Any:
    return make_pod(name, volumes=list(volumes), node=node)


def gce(pd: str, read_only: bool = False) -> dict[str, Any]:
    return {"name": f"gce-{pd}", "gcePersistentDisk": {"pdName": pd, "readOnly": read_only}}


def ebs(vid: str) -> dict[str, Any]:
    return {"name": f"ebs-{vid}", "awsElasticBlockStore": {"volumeID": vid}}


def rbd(monitors: list[str], image: str = "bar", pool: str | None = "foo", read_only: bool = False
        ) -> dict[str, Any]:
    src: dict[str, Any] = {"monitors": monitors, "image": image, "fsType": "ext4", "readOnly": read_only}
    if pool is not None:
        src["pool"] = pool
    return {"name": f"rbd-{image}", "rbd": src}


def iscsi(iqn: str, read_only: bool = False) -> dict[str, Any]:
    return {"name": "iscsi", "iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": iqn, "lun": 0,
                                       "fsType": "ext4", "readOnly": read_only}}


NO_RESTRICTION = {"name": "host", "hostPath": {"path": "/tmp"}}
IQN1 = "iqn.2016-12.server:storage.target01"
IQN2 = "iqn.2017-12.server:storage.target01"

DISK_CASES = [
    # (id, incoming volumes, volumes of the pod on the node, expected)
    ("nothing", [], None, None),
    ("one state", [], [gce("foo")], None),
    ("gce same state", [gce("foo")], [gce("foo")], CONFLICT),
    ("gce different state", [gce("bar")], [gce("foo")], None),
    ("gce both read-only", [gce("foo", True)], [gce("foo", True)], None),
    ("gce one read-only", [gce("foo", True)], [gce("foo")], CONFLICT),
    ("gce existing read-only", [gce("foo")], [gce("foo", True)], CONFLICT),
    ("same non-restricted volume", [NO_RESTRICTION], [NO_RESTRICTION], None),
    ("aws same state", [ebs("foo")], [ebs("foo")], CONFLICT),
    ("aws different state", [ebs("bar")], [ebs("foo")], None),
    ("aws no read-only exemption", [ebs("foo")], [ebs("foo")], CONFLICT),
    ("rbd same state", [rbd(["a", "b"])], [rbd(["a", "b"])], CONFLICT),
    ("rbd different monitors", [rbd(["c", "d"])], [rbd(["a", "b"])], None),
    ("rbd overlapping monitors", [rbd(["b", "c"])], [rbd(["a", "b"])], CONFLICT),
    ("rbd different image", [rbd(["a"], image="baz")], [rbd(["a"])], None),
    ("rbd different pool", [rbd(["a"], pool="other")], [rbd(["a"])], None),
    ("rbd default pool equals rbd", [rbd(["a"], pool=None)], [rbd(["a"], pool="rbd")], CONFLICT),
    ("rbd both read-only", [rbd(["a"], read_only=True)], [rbd(["a"], read_only=True)], None),
    ("iscsi same state", [iscsi(IQN1)], [iscsi(IQN1)], CONFLICT),
    ("iscsi different state", [iscsi(IQN2)], [iscsi(IQN1)], None),
    ("iscsi both read-only", [iscsi(IQN1, True)], [iscsi(IQN1, True)], None),
    ("different kinds never conflict", [gce("foo")], [ebs("foo")], None),
    ("second volume conflicts", [gce("x"), ebs("foo")], [ebs("foo")], CONFLICT),
]


@pytest.mark.parametrize(("incoming", "existing", "want"), [c[1:] for c in DISK_CASES],
                         ids=[c[0] for c in DISK_CASES])
def test_disk_conflicts(incoming: list[dict[str, Any]], existing: list[dict[str, Any]] | None,
                        want: Status | None) -> None:
    pods = [vols(*existing, name="old", node="n")] if existing is not None else []
    ni = NodeInfo(make_node("n"), pods)
    plugin = VolumeRestrictions(None, handle(objects=store_of(), node_infos=[ni]))
    got = run_filter(plugin, vols(*incoming), ni)
    assert got == want


def test_pre_filter_skips_pods_without_restricted_volumes() -> None:
    plugin = VolumeRestrictions(None, handle())
    _, status = plugin.pre_filter(CycleState(), vols(NO_RESTRICTION), [])
    assert status is not None and status.is_skip()


def test_pre_filter_does_not_skip_restricted_volumes() -> None:
    plugin = VolumeRestrictions(None, handle())
    _, status = plugin.pre_filter(CycleState(), vols(gce("foo")), [])
    assert status is None


# ---- ReadWriteOncePod -------------------------------------------------------------------
RWOP1 = pvc("claim-with-rwop-1", access_modes=["ReadWriteOncePod"])
RWOP2 = pvc("claim-with-rwop-2", access_modes=["ReadWriteOncePod"])
RWO = pvc("claim-with-rwo", access_modes=["ReadWriteOnce"])


def claim_pod(name: str, *claims: str, node: str = "") -> Any:
    return make_pod(name, volumes=[claim_volume(c) for c in claims], node=node)


RWOP_CASES = [
    ("nothing", claim_pod("p"), [], None),
    ("failed to get PVC", claim_pod("p", "claim-with-rwop-1"), None,
     Status.unresolvable('persistentvolumeclaim "claim-with-rwop-1" not found')),
    ("no access mode conflict", claim_pod("p", "claim-with-rwo"), [claim_pod("o", "claim-with-rwo", node="n")],
     None),
    ("rwop claim unused", claim_pod("p", "claim-with-rwop-1"), [claim_pod("o", "claim-with-rwo", node="n")], None),
    ("access mode conflict, unschedulable", claim_pod("p", "claim-with-rwop-1"),
     [claim_pod("o", "claim-with-rwop-1", node="n")], Status.unschedulable(ERR_REASON_RWOP_CONFLICT)),
    ("two conflicts, unschedulable", claim_pod("p", "claim-with-rwop-1", "claim-with-rwop-2"),
     [claim_pod("o", "claim-with-rwop-1", "claim-with-rwop-2", node="n")],
     Status.unschedulable(ERR_REASON_RWOP_CONFLICT)),
]


@pytest.mark.parametrize(("pod", "existing", "want"), [c[1:] for c in RWOP_CASES], ids=[c[0] for c in RWOP_CASES])
def test_read_write_once_pod_conflicts(pod: Any, existing: list[Any] | None, want: Status | None) -> None:
    objects = store_of(RWOP1, RWOP2, RWO) if existing is not None else store_of()
    ni = NodeInfo(make_node("n"), existing or [])
    plugin = VolumeRestrictions(None, handle(objects=objects, node_infos=[ni]))
    assert run_filter(plugin, pod, ni) == want


def test_rwop_conflict_counts_pods_on_other_nodes() -> None:
    """The claim may be used by one pod in the whole cluster, not one per node."""
    elsewhere = NodeInfo(make_node("other"), [claim_pod("o", "claim-with-rwop-1", node="other")])
    here = NodeInfo(make_node("n"))
    plugin = VolumeRestrictions(None, handle(objects=store_of(RWOP1), node_infos=[here, elsewhere]))
    got = run_filter(plugin, claim_pod("p", "claim-with-rwop-1"), here)
    assert got == Status.unschedulable(ERR_REASON_RWOP_CONFLICT)
    assert got is not None and got.code == Code.UNSCHEDULABLE  # preemption may help


def test_add_and_remove_pod_update_rwop_state() -> None:
    user = claim_pod("o", "claim-with-rwop-1", node="n")
    ni = NodeInfo(make_node("n"), [user])
    plugin = VolumeRestrictions(None, handle(objects=store_of(RWOP1, RWO), node_infos=[ni]))
    pod = claim_pod("p", "claim-with-rwop-1")
    state = CycleState()
    plugin.pre_filter(state, pod, [ni])
    assert plugin.filter(state, pod, ni) == Status.unschedulable(ERR_REASON_RWOP_CONFLICT)
    # Preemption dry run: removing the user frees the claim, on a clone only.
    trial = state.clone()
    ext = plugin.pre_filter_extensions()
    assert ext is not None
    ext.remove_pod(trial, pod, user, ni)
    assert plugin.filter(trial, pod, ni) is None
    assert plugin.filter(state, pod, ni) == Status.unschedulable(ERR_REASON_RWOP_CONFLICT)
    ext.add_pod(trial, pod, user, ni)
    assert plugin.filter(trial, pod, ni) == Status.unschedulable(ERR_REASON_RWOP_CONFLICT)
    # Adding a pod with an unrelated claim changes nothing.
    ext.remove_pod(trial, pod, user, ni)
    ext.add_pod(trial, pod, claim_pod("x", "claim-with-rwo"), ni)
    assert plugin.filter(trial, pod, ni) is None


def test_two_users_both_must_go() -> None:
    a = claim_pod("a", "claim-with-rwop-1", node="n")
    b = claim_pod("b", "claim-with-rwop-1", node="n")
    ni = NodeInfo(make_node("n"), [a, b])
    plugin = VolumeRestrictions(None, handle(objects=store_of(RWOP1), node_infos=[ni]))
    pod = claim_pod("p", "claim-with-rwop-1")
    state = CycleState()
    plugin.pre_filter(state, pod, [ni])
    ext = plugin.pre_filter_extensions()
    assert ext is not None
    ext.remove_pod(state, pod, a, ni)
    assert plugin.filter(state, pod, ni) == Status.unschedulable(ERR_REASON_RWOP_CONFLICT)
    ext.remove_pod(state, pod, b, ni)
    assert plugin.filter(state, pod, ni) is None


def test_in_default_profile() -> None:
    fw = handle(profile={}, nodes=[make_node("n")])
    assert "VolumeRestrictions" in [p.name for p in fw.filter_plugins]
    assert "VolumeRestrictions" in [p.name for p in fw.pre_filter_plugins]
