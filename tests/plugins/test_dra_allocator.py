"""The structured-parameters allocator on small clusters: which devices a claim gets on a node,
or why it gets none (upstream's allocator tests, by feature)."""

from __future__ import annotations

from typing import Any

import pytest

from kubeberth.plugins.dynamic_resources.allocator import AllocationError, Allocator
from kubeberth.plugins.dynamic_resources.devices import parse_slices
from tests.builders import make_node

DRIVER = "gpu.example.com"
CLASSES = {
    "gpu": {"metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}},
    "broken": {"metadata": {"name": "broken"}, "spec": {"selectors": [{"cel": {"expression": "device.driver =="}}]}},
}


def device(name: str, **kw: Any) -> dict[str, Any]:
    attrs = {k: ({"int": v} if isinstance(v, int) else {"string": v}) for k, v in kw.pop("attrs", {}).items()}
    return {"name": name, "attributes": attrs, **kw}


def rslice(name: str, devices: list[dict[str, Any]], node: str = "n1", pool: str = "p1", count: int = 1,
           **spec: Any) -> dict[str, Any]:
    placement = {"nodeName": node} if node else {}
    return {"metadata": {"name": name}, "spec": {"driver": DRIVER, **placement, "devices": devices,
                                                 "pool": {"name": pool, "generation": 1, "resourceSliceCount": count},
                                                 **spec}}


def claim(*requests: dict[str, Any], constraints: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = constraints
    return {"metadata": {"name": "c", "namespace": "ns"}, "spec": {"devices": devices}}


def exactly(name: str = "r", cls: str = "gpu", **kw: Any) -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": cls, **kw}}


def sel(expr: str) -> list[dict[str, Any]]:
    return [{"cel": {"expression": expr}}]


TWO = [rslice("s1", [device("d0", attrs={"model": "a100", "numa": 0}), device("d1", attrs={"model": "t4", "numa": 1})])]
TAINTED = [rslice("s1", [device("d0", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}])])]
HALF = [{"counterSet": "mem", "counters": {"gb": {"value": "40"}}}]
SHARED = [rslice("s1", [device(f"part{i}", consumesCounters=HALF) for i in range(3)],
                 sharedCounters=[{"name": "mem", "counters": {"gb": {"value": "80"}}}])]

CASES: list[tuple[str, list[dict[str, Any]], list[dict[str, Any]], set[tuple[str, str, str]], Any]] = [
    ("first device", TWO, [claim(exactly())], set(), [["r:d0"]]),
    ("count two", TWO, [claim(exactly(count=2))], set(), [["r:d0", "r:d1"]]),
    ("count three is too many", TWO, [claim(exactly(count=3))], set(), None),
    ("allocated devices are skipped", TWO, [claim(exactly())], {(DRIVER, "p1", "d0")}, [["r:d1"]]),
    ("all devices", TWO, [claim(exactly(allocationMode="All"))], set(), [["r:d0", "r:d1"]]),
    ("all fails while one is taken", TWO, [claim(exactly(allocationMode="All"))], {(DRIVER, "p1", "d0")}, None),
    ("claim selector", TWO, [claim(exactly(selectors=sel(f'device.attributes["{DRIVER}"].model == "t4"')))],
     set(), [["r:d1"]]),
    ("two claims get different devices", TWO, [claim(exactly()), claim(exactly())], set(), [["r:d0"], ["r:d1"]]),
    ("firstAvailable falls back", TWO, [claim({"name": "r", "firstAvailable": [
        {"name": "big", "deviceClassName": "gpu", "selectors": sel(f'device.attributes["{DRIVER}"].model == "h100"')},
        {"name": "any", "deviceClassName": "gpu"}]})], set(), [["r/any:d0"]]),
    ("matchAttribute", TWO, [claim(exactly("a"), exactly("b"), constraints=[{"matchAttribute": f"{DRIVER}/model"}])],
     set(), None),
    ("distinctAttribute", TWO,
     [claim(exactly("a"), exactly("b"), constraints=[{"distinctAttribute": f"{DRIVER}/numa"}])],
     set(), [["a:d0", "b:d1"]]),
    ("admin access ignores allocation", TWO, [claim(exactly(adminAccess=True))], {(DRIVER, "p1", "d0")}, [["r:d0"]]),
    ("taint blocks", TAINTED, [claim(exactly())], set(), None),
    ("toleration", TAINTED, [claim(exactly(tolerations=[{"key": "k", "operator": "Exists"}]))], set(), [["r:d0"]]),
    ("toleration of another value", TAINTED, [claim(exactly(tolerations=[{"key": "k", "value": "w"}]))], set(), None),
    ("shared counters: two partitions fit", SHARED, [claim(exactly(count=2))], set(), [["r:part0", "r:part1"]]),
    ("shared counters: not three", SHARED, [claim(exactly(count=3))], set(), None),
    ("shared counters: allocated partitions count", SHARED, [claim(exactly(count=2))], {(DRIVER, "p1", "part2")}, None),
    ("incomplete pool", [rslice("s1", [device("d0")], count=2)], [claim(exactly())], set(), None),
    ("other node's slice", [rslice("s1", [device("d0")], node="n2")], [claim(exactly())], set(), None),
    ("all nodes", [rslice("s1", [device("d0")], node="", allNodes=True)], [claim(exactly())], set(), [["r:d0"]]),
    ("newest generation wins", [rslice("s1", [device("old")]),
                                {**rslice("s2", [device("new")]), "spec": {**rslice("s2", [device("new")])["spec"],
                                 "pool": {"name": "p1", "generation": 2, "resourceSliceCount": 1}}}],
     [claim(exactly())], set(), [["r:new"]]),
    ("class compile error", TWO, [claim(exactly(cls="broken"))], set(),
     AllocationError("class broken: selector #0: CEL compile error")),
    ("claim runtime error", TWO, [claim(exactly(selectors=sel(f'device.attributes["{DRIVER}"].missing == 1')))], set(),
     AllocationError(f"claim ns/c: selector #0 on device {DRIVER}/p1/d0: CEL runtime error: no such key: missing")),
    ("unknown class", TWO, [claim(exactly(cls="nope"))], set(),
     AllocationError("claim ns/c, request r: could not retrieve device class nope")),
]


@pytest.mark.parametrize(("slices", "claims", "allocated", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_allocate(slices: list[dict[str, Any]], claims: list[dict[str, Any]], allocated: set[tuple[str, str, str]],
                  want: Any) -> None:
    parsed, errors = parse_slices(slices)
    assert errors == []
    by_id = {d.id: d for s in parsed for d in s.devices if d.consumes_counters}
    allocator = Allocator(CLASSES.get, parsed, set(allocated), {i: by_id[i] for i in allocated if i in by_id})
    if isinstance(want, AllocationError):
        with pytest.raises(AllocationError) as err:
            allocator.allocate(make_node("n1"), claims)
        assert str(err.value).startswith(str(want))
        return
    result = allocator.allocate(make_node("n1"), claims)
    got = None if result is None else [
        [f"{r['request']}:{r['device']}" for r in a["devices"]["results"]] for a in result]
    assert got == want


def test_a_node_local_allocation_names_the_node() -> None:
    parsed, _ = parse_slices(TWO)
    result = Allocator(CLASSES.get, parsed, set(), {}).allocate(make_node("n1"), [claim(exactly())])
    assert result is not None
    assert result[0]["nodeSelector"] == {"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}


@pytest.mark.parametrize(("selector", "tolerations", "want"), [
    ({"driver": DRIVER, "device": "d0"}, [], ["r:d1"]),
    ({"pool": "p1"}, [], None),
    ({}, [], None),
    (None, [], ["r:d0"]),
    ({"device": "d0"}, [{"key": "rule", "operator": "Exists"}], ["r:d0"]),
], ids=["one device", "a pool", "empty selects all", "no selector selects none", "tolerated"])
def test_device_taint_rules(selector: dict[str, Any] | None, tolerations: list[dict[str, Any]],
                            want: list[str] | None) -> None:
    from kubeberth.plugins.dynamic_resources.taint_rules import apply_taint_rules

    spec: dict[str, Any] = {"taint": {"key": "rule", "value": "x", "effect": "NoExecute"}}
    if selector is not None:
        spec["deviceSelector"] = selector
    parsed, _ = parse_slices(TWO)
    tainted = apply_taint_rules(parsed, [{"metadata": {"name": "rule"}, "spec": spec}])
    claims = [claim(exactly(tolerations=tolerations))] if tolerations else [claim(exactly())]
    result = Allocator(CLASSES.get, tainted, set(), {}).allocate(make_node("n1"), claims)
    got = None if result is None else [f"{r['request']}:{r['device']}" for r in result[0]["devices"]["results"]]
    assert got == want
    assert all(not d.taints for s in parsed for d in s.devices)  # the shared parsed slices are left alone


SHARED_NIC = [rslice("s1", [device("nic", allowMultipleAllocations=True, capacity={
    "bandwidth": {"value": "10G", "requestPolicy": {"default": "1G", "validRange": {"min": "1G", "step": "1G"}}}})])]


def bandwidth(q: str) -> dict[str, Any]:
    return {"requests": {"bandwidth": q}}


@pytest.mark.parametrize(("claims", "used", "want"), [
    ([claim(exactly(capacity=bandwidth("4G"))), claim(exactly(capacity=bandwidth("6G")))], {}, [["4G"], ["6G"]]),
    ([claim(exactly(capacity=bandwidth("4G"))), claim(exactly(capacity=bandwidth("7G")))], {}, None),
    ([claim(exactly(capacity=bandwidth("2500M")))], {}, [["3G"]]),  # rounded up to the next step
    ([claim(exactly())], {}, [["1G"]]),  # the policy's default
    ([claim(exactly(capacity=bandwidth("5G")))], {"bandwidth": 6 * 10**12}, None),  # 6G already consumed
    ([claim(exactly(capacity=bandwidth("4G")))], {"bandwidth": 6 * 10**12}, [["4G"]]),
    ([claim(exactly(capacity={"requests": {"lanes": "1"}}))], {}, None),  # a capacity the device lacks
], ids=["two shares fit", "too much together", "step", "default", "consumed elsewhere", "the rest", "unknown"])
def test_consumable_capacity(claims: list[dict[str, Any]], used: dict[str, int], want: list[list[str]] | None) -> None:
    parsed, _ = parse_slices(SHARED_NIC)
    shared = {(DRIVER, "p1", "nic"): used} if used else {}
    result = Allocator(CLASSES.get, parsed, set(), {}, shared=shared).allocate(make_node("n1"), claims)
    if want is None:
        assert result is None
        return
    assert result is not None
    from kubeberth.plugins.dynamic_resources.capacity import milli

    got = [[milli(r["consumedCapacity"]["bandwidth"]) for r in a["devices"]["results"]] for a in result]
    assert got == [[milli(q) for q in shares] for shares in want]
    assert all(r["shareID"] for a in result for r in a["devices"]["results"])


def test_the_cel_library_is_imported_only_for_a_selector() -> None:
    """Its package imports a command-line interface too (~300 modules): a scheduler whose pods
    name no device selector must not carry them (they lengthen every full garbage collection)."""
    import subprocess
    import sys

    code = ("import sys, kubeberth.scheduler, kubeberth.plugins.dynamic_resources.allocator;"
            "assert 'cel' not in sys.modules, 'imported'")
    subprocess.run([sys.executable, "-c", code], check=True, env={"PYTHONPATH": ":".join(sys.path)})
