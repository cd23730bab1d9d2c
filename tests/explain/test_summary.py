"""The operator's summary annotation and Event text stay within their bounds."""

from __future__ import annotations

import json
from typing import Any

from kubeberth.report.summary import digest, event_message, summary
from kubeberth.whatif.simulate import simulate
from tests.builders import node_dict, pod_dict


def big_explanation() -> dict[str, Any]:
    nodes = [node_dict(f"node-with-a-long-name-{i:04d}", cpu="1", labels={"zone": f"z{i}"}) for i in range(300)]
    pod = pod_dict("p", cpu="2", nodeSelector={"zone": "z1"})
    (out,) = [o for o in simulate([*nodes, pod], explain=[]) if o.pod == "default/p"]
    return dict(out.explanations[-1])


def test_summary_is_bounded_and_says_so() -> None:
    x = big_explanation()
    full = json.loads(summary(x, limit=1 << 20))
    assert "truncated" not in full
    assert full["filtered"] == [["node(s) didn't match Pod's node affinity/selector [NodeAffinity]", 299],
                                ["Insufficient cpu [NodeResourcesFit]", 1]]
    small = summary(x, limit=400)
    assert len(small.encode()) <= 400
    cut = json.loads(small)
    assert cut["truncated"] is True and cut["result"] == "Unschedulable"


def test_event_message_is_bounded() -> None:
    x = big_explanation()
    text = event_message("default/p", x)
    assert text.startswith("=== default/p: Unschedulable")
    short = event_message("default/p", x, limit=500)
    assert len(short) <= 500 and "more characters; simulate --explain shows all" in short


def test_digest_ignores_the_attempt_number() -> None:
    x = big_explanation()
    assert digest(x) == digest({**x, "attempt": 99})
    assert digest(x) != digest({**x, "nodes": {}})
