"""The wire format: request keys as upstream's Go field names, responses decoded as Go decodes."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from kubeberth.extender import wire
from kubeberth.extender.wire import WireError
from kubeberth.framework.victims import Victims
from tests.builders import make_pod, pod_dict


@pytest.mark.parametrize(
    ("body", "want"),
    [
        pytest.param('{"NodeNames": ["a"], "FailedNodes": {"b": "no"}, "Error": ""}',
                     (None, ["a"], {"b": "no"}, None, ""), id="go-names"),
        pytest.param('{"nodenames": ["a"], "failednodes": {"b": "no"}, "failedandunresolvablenodes": {"c": "x"}}',
                     (None, ["a"], {"b": "no"}, {"c": "x"}, ""), id="lower-case"),
        pytest.param('{"nodeNames": ["a"], "failedNodes": {}, "error": "boom"}',
                     (None, ["a"], {}, None, "boom"), id="camel-case"),
        pytest.param('{"NODES": {"ITEMS": [{"METADATA": {"NAME": "n1"}}]}}',
                     (["n1"], None, None, None, ""), id="upper-case-nested"),
        pytest.param('{"Error": "a", "error": "b"}', (None, None, None, None, "b"), id="last-match-wins"),
        pytest.param('{"Error": "a", "error": null}', (None, None, None, None, "a"), id="null-scalar-is-no-op"),
        pytest.param('{"NodeNames": null, "Nodes": null}', (None, None, None, None, ""), id="nulls"),
        pytest.param('{"Unknown": 1, "NodeNames": []}', (None, [], None, None, ""), id="unknown-keys-ignored"),
        pytest.param('null', (None, None, None, None, ""), id="null-body"),
        pytest.param('{"NodeNames": ["a"]} trailing', (None, ["a"], None, None, ""), id="first-value-only"),
    ],
)
def test_decode_filter_result(body: str, want: tuple) -> None:
    r = wire.decode_filter_result(body.encode())
    nodes = None if r.Nodes is None else [wire.node_name_of(i) for i in r.Nodes.items or ()]
    assert (nodes, r.NodeNames, r.FailedNodes, r.FailedAndUnresolvableNodes, r.Error) == want


@pytest.mark.parametrize(
    ("decode", "body", "match"),
    [
        pytest.param(wire.decode_filter_result, "", "EOF", id="empty"),
        pytest.param(wire.decode_filter_result, "   ", "EOF", id="blank"),
        pytest.param(wire.decode_filter_result, "{not json", "invalid JSON", id="malformed"),
        pytest.param(wire.decode_filter_result, "[]", "ExtenderFilterResult", id="array-for-object"),
        pytest.param(wire.decode_filter_result, '{"Error": 5}', "Error", id="number-for-string"),
        pytest.param(wire.decode_filter_result, '{"NodeNames": "a"}', "NodeNames", id="string-for-list"),
        pytest.param(wire.decode_filter_result, '{"FailedNodes": {"a": 1}}', "FailedNodes", id="map-value-type"),
        pytest.param(wire.decode_host_priority_list, '{"Host": "a"}', "HostPriorityList", id="object-for-list"),
        pytest.param(wire.decode_host_priority_list, '[{"Host": "a", "Score": 1.5}]', "Score", id="float-score"),
        pytest.param(wire.decode_host_priority_list, '[{"Host": "a", "Score": "1"}]', "Score", id="string-score"),
        pytest.param(wire.decode_host_priority_list, '[{"Host": "a", "Score": true}]', "Score", id="bool-score"),
        pytest.param(wire.decode_host_priority_list, f'[{{"Host": "a", "Score": {2**63}}}]', "Score",
                     id="score-overflows-int64"),
        pytest.param(wire.decode_preemption_result, '{"NodeNameToMetaVictims": {"n": {"Pods": [{"UID": 1}]}}}',
                     "UID", id="uid-type"),
        pytest.param(wire.decode_binding_result, '{"Error": ["x"]}', "Error", id="binding-error-type"),
    ],
)
def test_decode_rejects_what_go_rejects(decode, body: str, match: str) -> None:
    with pytest.raises(WireError, match=match):
        decode(body.encode())


@pytest.mark.parametrize(
    ("body", "want"),
    [
        pytest.param('[{"Host": "a", "Score": 3}, {"Host": "b", "Score": 0}]', [("a", 3), ("b", 0)], id="go-names"),
        pytest.param('[{"host": "a", "score": 7}]', [("a", 7)], id="lower-case"),
        pytest.param('[{"HOST": "a", "SCORE": 7, "extra": 1}]', [("a", 7)], id="upper-case"),
        pytest.param("null", [], id="null-list"),
        pytest.param("[]", [], id="empty"),
        pytest.param('[null, {"Host": "a"}]', [("", 0), ("a", 0)], id="null-element-is-zero-value"),
        pytest.param('[{"Host": "a", "Score": -4}]', [("a", -4)], id="negative-kept"),
    ],
)
def test_decode_host_priority_list(body: str, want: list) -> None:
    assert [(hp.Host, hp.Score) for hp in wire.decode_host_priority_list(body.encode())] == want


def test_decode_preemption_and_binding_results_case_insensitively() -> None:
    r = wire.decode_preemption_result(
        b'{"nodenametometavictims": {"n1": {"pods": [{"uid": "u1"}, {"Uid": "u2"}], "numpdbviolations": 2},'
        b' "n2": null}}')
    assert r.NodeNameToMetaVictims is not None
    n1 = r.NodeNameToMetaVictims["n1"]
    assert n1 is not None
    assert [p.UID for p in n1.Pods or () if p] == ["u1", "u2"]
    assert n1.NumPDBViolations == 2
    assert r.NodeNameToMetaVictims["n2"] is None
    assert wire.decode_binding_result(b'{"error": "nope"}').Error == "nope"
    assert wire.decode_binding_result(b"{}").Error == ""


def test_map_keys_stay_case_sensitive() -> None:
    r = wire.decode_filter_result(b'{"FailedNodes": {"Node-A": "x", "node-a": "y"}}')
    assert r.FailedNodes == {"Node-A": "x", "node-a": "y"}


def test_extender_args_keys_are_go_field_names() -> None:
    pod = pod_dict("p")
    full = json.loads(wire.encode(wire.extender_args(pod, nodes=[{"metadata": {"name": "n1"}}])))
    assert full == {"Pod": pod, "Nodes": {"metadata": {}, "items": [{"metadata": {"name": "n1"}}]},
                    "NodeNames": None}
    names = json.loads(wire.encode(wire.extender_args(pod, node_names=["n1", "n2"])))
    assert names == {"Pod": pod, "Nodes": None, "NodeNames": ["n1", "n2"]}


def test_preemption_args_full_and_meta() -> None:
    victim = make_pod("v", uid="uid-v")
    preemptor = pod_dict("p")
    victims = {"n1": Victims([victim], 1)}
    full = json.loads(wire.encode(wire.preemption_args(preemptor, victims, meta=False)))
    assert full == {"Pod": preemptor, "NodeNameToMetaVictims": None,
                    "NodeNameToVictims": {"n1": {"Pods": [victim.raw], "NumPDBViolations": 1}}}
    meta = json.loads(wire.encode(wire.preemption_args(preemptor, victims, meta=True)))
    assert meta == {"Pod": preemptor, "NodeNameToVictims": None,
                    "NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": "uid-v"}], "NumPDBViolations": 1}}}


def test_binding_args() -> None:
    assert wire.binding_args("p", "ns", "u", "n1") == {"PodName": "p", "PodNamespace": "ns", "PodUID": "u",
                                                       "Node": "n1"}


def test_encode_objects_read_from_yaml() -> None:
    """YAML gives datetimes for unquoted timestamps; kopf gives Mapping views, not dicts."""
    from types import MappingProxyType

    body = {"metadata": MappingProxyType({"creationTimestamp": datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)})}
    assert json.loads(wire.encode(body)) == {"metadata": {"creationTimestamp": "2024-01-02T03:04:05Z"}}


def test_request_models_read_what_we_send() -> None:
    """The request types decode our own requests (for extenders written in Python)."""
    args = wire.ExtenderArgs.model_validate(json.loads(wire.encode(wire.extender_args({}, node_names=["a"]))))
    assert args.NodeNames == ["a"] and args.Nodes is None
    binding = wire.ExtenderBindingArgs.model_validate({"podname": "p", "PODNAMESPACE": "ns", "podUID": "u",
                                                       "node": "n"})
    assert (binding.PodName, binding.PodNamespace, binding.PodUID, binding.Node) == ("p", "ns", "u", "n")
