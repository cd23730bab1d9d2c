"""NodeAffinity: nodeSelector and required node affinity (PreFilter result from
matchFields, Filter), preferred terms (PreScore/Score, normalised), addedAffinity args."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from kubeberth.config import ConfigError
from kubeberth.framework import Code, CycleState, PreFilterResult, Status
from kubeberth.model import NodeInfo
from kubeberth.plugins.node_affinity import NodeAffinity, NodeAffinityArgs
from tests.builders import make_node, make_pod
from tests.doubles import handle

from ._core_helpers import run_filter, run_score

ERR_POD = Status.unresolvable("node(s) didn't match Pod's node affinity/selector")
ERR_ENFORCED = Status.unresolvable("node(s) didn't match scheduler-enforced node affinity")
ERR_CONFLICT = Status.unresolvable("pod affinity terms conflict")


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": op}
    if values:
        out["values"] = list(values)
    return out


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


def term(*exprs: dict[str, Any], fields: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if exprs:
        out["matchExpressions"] = list(exprs)
    if fields is not None:
        out["matchFields"] = fields
    return out


def name_in(*names: str) -> dict[str, Any]:
    return expr("metadata.name", "In", *names)


def plugin(added: dict[str, Any] | None = None) -> NodeAffinity:
    args = NodeAffinityArgs.model_validate({"addedAffinity": added} if added is not None else {})
    return NodeAffinity(args, handle())


SKIP = Status.skip()

# (id, pod spec extras, node labels, node name, addedAffinity, want Filter status)
FILTER_CASES: list[tuple[str, dict[str, Any], dict[str, str], str, dict[str, Any] | None, Status | None]] = [
    ("missing labels", {"nodeSelector": {"foo": "bar"}}, {}, "node1", None, ERR_POD),
    ("same labels", {"nodeSelector": {"foo": "bar"}}, {"foo": "bar"}, "node1", None, None),
    ("node labels are superset", {"nodeSelector": {"foo": "bar"}}, {"foo": "bar", "baz": "blah"}, "node1", None, None),
    ("node labels are subset", {"nodeSelector": {"foo": "bar", "baz": "blah"}}, {"foo": "bar"}, "node1", None,
     ERR_POD),
    ("matchExpressions using In operator that matches the existing node",
     {"affinity": required(term(expr("foo", "In", "bar", "value2")))}, {"foo": "bar"}, "node1", None, None),
    ("matchExpressions using Gt operator that matches the existing node",
     {"affinity": required(term(expr("kernel-version", "Gt", "0204")))}, {"kernel-version": "0206"}, "node1",
     None, None),
    ("matchExpressions using Lt operator that does not match",
     {"affinity": required(term(expr("kernel-version", "Lt", "0204")))}, {"kernel-version": "0206"}, "node1",
     None, ERR_POD),
    ("matchExpressions using NotIn operator that matches the existing node",
     {"affinity": required(term(expr("mem-type", "NotIn", "DDR", "DDR2")))}, {"mem-type": "DDR3"}, "node1",
     None, None),
    ("matchExpressions using Exists operator that matches the existing node",
     {"affinity": required(term(expr("GPU", "Exists")))}, {"GPU": "NVIDIA-GRID-K1"}, "node1", None, None),
    ("affinity that doesn't match the node's labels won't schedule onto the node",
     {"affinity": required(term(expr("foo", "In", "value1", "value2")))}, {"foo": "bar"}, "node1", None,
     ERR_POD),
    ("empty MatchExpressions is not a valid value and matches no node",
     {"affinity": required({"matchExpressions": []})}, {"foo": "bar"}, "node1", None, ERR_POD),
    ("an empty []NodeSelectorTerm matches no node",
     {"affinity": required()}, {"foo": "bar"}, "node1", None, ERR_POD),
    ("no affinity schedules onto any node", {}, {"foo": "bar"}, "node1", None, None),
    ("affinity but nil NodeSelector schedules onto a node", {"affinity": {"nodeAffinity": {}}}, {"foo": "bar"},
     "node1", None, None),
    ("multiple matchExpressions ANDed that match the existing node",
     {"affinity": required(term(expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER")))},
     {"GPU": "NVIDIA-GRID-K1"}, "node1", None, None),
    ("multiple matchExpressions ANDed that don't match the existing node",
     {"affinity": required(term(expr("GPU", "Exists"), expr("GPU", "In", "AMD", "INTER")))},
     {"GPU": "NVIDIA-GRID-K1"}, "node1", None, ERR_POD),
    ("multiple NodeSelectorTerms ORed, one matches the node",
     {"affinity": required(term(expr("foo", "In", "bar", "value2")), term(expr("diffkey", "In", "wrong", "value2")))},
     {"foo": "bar"}, "node1", None, None),
    ("affinity and nodeSelector both satisfied",
     {"affinity": required(term(expr("foo", "Exists"))), "nodeSelector": {"foo": "bar"}}, {"foo": "bar"},
     "node1", None, None),
    ("affinity matches but nodeSelector is not satisfied",
     {"affinity": required(term(expr("foo", "Exists"))), "nodeSelector": {"foo": "bar"}}, {"foo": "barrrrrr"},
     "node1", None, ERR_POD),
    ("an invalid value in an affinity term won't schedule onto the node",
     {"affinity": required(term(expr("foo", "NotIn", "invalid value: ___@#$%^")))}, {"foo": "bar"}, "node1",
     None, ERR_POD),
    ("matchFields using In operator that matches the existing node",
     {"affinity": required(term(fields=[name_in("node1")]))}, {"foo": "bar"}, "node1", None, None),
    ("matchFields using In operator that does not match the existing node",
     {"affinity": required(term(fields=[name_in("node1")]))}, {"foo": "bar"}, "node2", None, ERR_POD),
    ("two terms: matchFields does not match, but matchExpressions matches",
     {"affinity": required(term(fields=[name_in("node1")]), term(expr("foo", "In", "bar")))}, {"foo": "bar"},
     "node2", None, None),
    ("one term: matchFields does not match, but matchExpressions matches",
     {"affinity": required(term(expr("foo", "In", "bar"), fields=[name_in("node1")]))}, {"foo": "bar"},
     "node2", None, ERR_POD),
    ("one term: both matchFields and matchExpressions match",
     {"affinity": required(term(expr("foo", "In", "bar"), fields=[name_in("node1")]))}, {"foo": "bar"},
     "node1", None, None),
    ("two terms: both matchFields and matchExpressions do not match",
     {"affinity": required(term(fields=[name_in("node1")]), term(expr("foo", "In", "not-match-to-bar")))},
     {"foo": "bar"}, "node2", None, ERR_POD),
    ("matchFields NotIn this node",
     {"affinity": required(term(fields=[expr("metadata.name", "NotIn", "node1")]))}, {}, "node1", None, ERR_POD),
    ("addedAffinity: node matches", {}, {"zone": "foo"}, "node1",
     {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term(expr("zone", "In", "foo"))]}},
     None),
    ("addedAffinity: node doesn't match", {}, {"zone": "bar"}, "node1",
     {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term(expr("zone", "In", "foo"))]}},
     ERR_ENFORCED),
    ("addedAffinity matches, but the pod's affinity doesn't",
     {"affinity": required(term(expr("foo", "In", "bar")))}, {"zone": "foo", "foo": "baz"}, "node1",
     {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term(expr("zone", "In", "foo"))]}},
     ERR_POD),
    ("addedAffinity and the pod's affinity both fail: the enforced reason wins",
     {"affinity": required(term(expr("foo", "In", "bar")))}, {"zone": "bar"}, "node1",
     {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term(expr("zone", "In", "foo"))]}},
     ERR_ENFORCED),
    ("addedAffinity with only preferred terms does not filter", {}, {"zone": "bar"}, "node1",
     {"preferredDuringSchedulingIgnoredDuringExecution": [
         {"weight": 1, "preference": term(expr("zone", "In", "foo"))}]},
     None),
]


@pytest.mark.parametrize(("spec", "labels", "node_name", "added", "want"), [c[1:] for c in FILTER_CASES],
                         ids=[c[0] for c in FILTER_CASES])
@pytest.mark.parametrize("pre_filter", [True, False], ids=["prefilter", "no-prefilter"])
def test_filter(spec: dict[str, Any], labels: dict[str, str], node_name: str, added: dict[str, Any] | None,
                want: Status | None, pre_filter: bool) -> None:
    pod = make_pod("p", **spec)
    ni = NodeInfo(make_node(node_name, labels=labels))
    state = CycleState()
    pl = plugin(added)
    if pre_filter:
        _, s = pl.pre_filter(state, pod, [ni])
        if s is not None and s.is_skip():
            # Nothing to check: the framework skips Filter, and Filter would pass anyway.
            assert want is None
    assert pl.filter(state, pod, ni) == want


# (id, pod spec extras, addedAffinity, want PreFilterResult node names (None: all), want status)
PRE_FILTER_CASES: list[tuple[str, dict[str, Any], dict[str, Any] | None, set[str] | None, Status | None]] = [
    ("no affinity, no selector: skip", {}, None, None, SKIP),
    ("affinity without required terms: skip", {"affinity": {"nodeAffinity": {}}}, None, None, SKIP),
    ("only a nodeSelector", {"nodeSelector": {"a": "b"}}, None, None, None),
    ("only addedAffinity", {}, {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [term(expr("zone", "Exists"))]}}, None, None),
    ("matchFields In restricts the nodes", {"affinity": required(term(fields=[name_in("node1")]))}, None,
     {"node1"}, None),
    ("matchFields In with several values", {"affinity": required(term(fields=[name_in("node1", "node2")]))},
     None, {"node1", "node2"}, None),
    ("ANDed matchFields of one term intersect",
     {"affinity": required(term(fields=[name_in("node1", "node2"), name_in("node2", "node3")]))}, None,
     {"node2"}, None),
    ("ORed terms: union of the names",
     {"affinity": required(term(fields=[name_in("node1")]), term(fields=[name_in("node2")]))}, None,
     {"node1", "node2"}, None),
    ("a term without matchFields lets every node through",
     {"affinity": required(term(fields=[name_in("node1")]), term(expr("foo", "In", "bar")))}, None, None, None),
    ("matchFields NotIn does not restrict",
     {"affinity": required(term(fields=[expr("metadata.name", "NotIn", "node1")]))}, None, None, None),
    ("conflicting matchFields in every term",
     {"affinity": required(term(fields=[name_in("node1"), name_in("node2")]))}, None, None, ERR_CONFLICT),
    ("one conflicting term and one restricting term",
     {"affinity": required(term(fields=[name_in("node1"), name_in("node2")]), term(fields=[name_in("node3")]))},
     None, {"node3"}, None),
    ("required with no terms", {"affinity": required()}, None, None, None),
]


@pytest.mark.parametrize(("spec", "added", "want_names", "want_status"), [c[1:] for c in PRE_FILTER_CASES],
                         ids=[c[0] for c in PRE_FILTER_CASES])
def test_pre_filter(spec: dict[str, Any], added: dict[str, Any] | None, want_names: set[str] | None,
                    want_status: Status | None) -> None:
    result, status = plugin(added).pre_filter(CycleState(), make_pod("p", **spec), [])
    assert status == want_status
    if want_names is None:
        assert result is None or result.all_nodes()
    else:
        assert isinstance(result, PreFilterResult) and result.node_names == want_names


def preferred(*weighted: tuple[int, dict[str, Any]]) -> dict[str, Any]:
    return {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": w, "preference": t} for w, t in weighted]}}


LABEL1 = {"foo": "bar"}
LABEL2 = {"key": "value"}
LABEL3 = {"az": "az1"}
LABEL4 = {"abc": "az11", "def": "az22"}
LABEL5 = {"foo": "bar", "key": "value", "az": "az1"}

AFFINITY1 = preferred((2, term(expr("foo", "In", "bar"))))
AFFINITY2 = preferred(
    (2, term(expr("foo", "In", "bar"))),
    (4, term(expr("key", "In", "value"))),
    (5, term(expr("foo", "In", "bar"), expr("key", "In", "value"), expr("az", "In", "az1"))),
)
ADDED_PREFERRED = {"preferredDuringSchedulingIgnoredDuringExecution": [
    {"weight": 3, "preference": term(expr("key", "In", "value"))}]}

# (id, pod affinity, [(node, labels)], addedAffinity, want normalised scores)
SCORE_CASES: list[tuple[str, dict[str, Any] | None, list[tuple[str, dict[str, str]]], dict[str, Any] | None,
                        list[int]]] = [
    ("all nodes are the same priority as NodeAffinity is nil", None,
     [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL3)], None, [0, 0, 0]),
    ("no node matches the preferred terms, all zero", AFFINITY1,
     [("node1", LABEL4), ("node2", LABEL2), ("node3", LABEL3)], None, [0, 0, 0]),
    ("only node1 matches the preferred terms", AFFINITY1,
     [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL3)], None, [100, 0, 0]),
    ("all nodes match the preferred terms with different priorities", AFFINITY2,
     [("node1", LABEL1), ("node5", LABEL5), ("node2", LABEL2)], None, [18, 100, 36]),
    ("added affinity only", None,
     [("node1", LABEL1), ("node2", LABEL2), ("node5", LABEL5)], ADDED_PREFERRED, [0, 100, 100]),
    ("added affinity plus the pod's", AFFINITY1,
     [("node1", LABEL1), ("node2", LABEL2), ("node5", LABEL5)], ADDED_PREFERRED, [40, 60, 100]),
    ("a weight-0 term never counts", preferred((0, term(expr("foo", "Exists")))),
     [("node1", LABEL1), ("node2", LABEL2)], None, [0, 0]),
    ("matchFields in a preferred term", preferred((7, term(fields=[name_in("node2")]))),
     [("node1", LABEL1), ("node2", LABEL2)], None, [0, 100]),
]


@pytest.mark.parametrize(("affinity", "nodes", "added", "want"), [c[1:] for c in SCORE_CASES],
                         ids=[c[0] for c in SCORE_CASES])
@pytest.mark.parametrize("pre_score", [True, False], ids=["prescore", "no-prescore"])
def test_score(affinity: dict[str, Any] | None, nodes: list[tuple[str, dict[str, str]]],
               added: dict[str, Any] | None, want: list[int], pre_score: bool) -> None:
    pod = make_pod("p", **({"affinity": affinity} if affinity else {}))
    infos = [NodeInfo(make_node(n, labels=labels)) for n, labels in nodes]
    assert run_score(plugin(added), pod, infos, pre_score=pre_score) == want


def test_pre_score_skips_without_preferences() -> None:
    state = CycleState()
    infos = [NodeInfo(make_node("n1"))]
    s = plugin().pre_score(state, make_pod("p"), infos)
    assert s is not None and s.is_skip()
    assert plugin().pre_score(state, make_pod("p"), []) is None
    # An addedAffinity, even without preferred terms, means scoring runs.
    added = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term(expr("a", "Exists"))]}}
    assert plugin(added).pre_score(state, make_pod("p"), infos) is None


def test_raw_scores_before_normalize() -> None:
    infos = [NodeInfo(make_node("node1", labels=LABEL1)), NodeInfo(make_node("node5", labels=LABEL5))]
    assert run_score(plugin(ADDED_PREFERRED), make_pod("p", affinity=AFFINITY2), infos, normalize=False) == [2, 14]


def test_filter_and_score_without_node() -> None:
    from kubeberth.framework import PluginError

    pod = make_pod("p", nodeSelector={"a": "b"})
    got = run_filter(plugin(), pod, NodeInfo())
    assert got is not None and got.code == Code.ERROR
    with pytest.raises(PluginError):
        plugin().score(CycleState(), pod, NodeInfo())


@pytest.mark.parametrize(("args", "field"), [
    ({"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "Bogus"}]}]}}},
     "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution"),
    ({"addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "preference": {"matchFields": [expr("metadata.labels", "In", "x")]}}]}},
     "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution"),
    ({"addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 500, "preference": {}}]}},
     "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution"),
    ({"addedAffinity": {"requiredDuringSchedulingRequiredDuringExecution": {}}}, "addedAffinity"),
    ({"extra": 1}, "extra"),
], ids=["bad operator", "bad matchFields key", "weight out of range", "unknown affinity field", "unknown arg"])
def test_invalid_args(args: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as exc:
        NodeAffinityArgs.model_validate(args)
    assert ".".join(str(p) for p in exc.value.errors()[0]["loc"]).startswith(field)


def test_args_through_the_profile_name_the_field() -> None:
    profile = {
        "plugins": {"multiPoint": {"enabled": [{"name": "NodeAffinity"}], "disabled": [{"name": "*"}]},
                    "queueSort": {"enabled": [{"name": "PrioritySort"}]},
                    "bind": {"enabled": [{"name": "DefaultBinder"}]}},
        "pluginConfig": [{"name": "NodeAffinity", "args": {"addedAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [term(expr("a", "Gt", "1", "2"))]}}}}],
    }
    with pytest.raises(ConfigError) as exc:
        handle(profile=profile)
    assert exc.value.path.startswith("spec.pluginConfig[0].args.addedAffinity")
    profile["pluginConfig"][0]["args"] = {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}}
    fw = handle(profile=profile)
    pl = fw.plugin("NodeAffinity")
    assert isinstance(pl, NodeAffinity) and pl.added_node_selector is not None
