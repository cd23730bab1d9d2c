"""`kubeberth test CASES...`: scheduling policy tests, in the format of the project's own
conformance cases (tests/conformance/cases/*.yaml).

A case is a YAML mapping: `name`, optional `description` and `seed`, `objects` (the cluster:
nodes, pods, SchedulingProfiles, ...), optional `profile` (a SchedulingProfile, a bare
SchedulingProfile spec, or a KubeSchedulerConfiguration) and `expect`, a list of what should
become of pods, and of PodGroups (`podGroup: NAMESPACE/NAME` with `status`, `scheduledPods`,
`messageContains`: pod_groups.py's view of the group). A file may hold several cases as YAML
documents; a directory stands for its *.yaml files.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import yaml

from .. import features
from ..config import KIND as PROFILE_KIND
from ..config import VERSION, ConfigError, parse_profile_object
from ..config.kube_config import KSC_KIND, ImportedConfig
from ..config.models import SHADOW
from ..config.profile import GROUP
from ..features import FeatureGateError, FeatureGates
from ..plugins import plugin_registry
from ..profile import check_buildable
from .config_files import CheckedProfile, SimInput, check_profile, config_document, prepare, profile_label
from .engine import run_simulation
from .inputs import InputError, Origins
from .outcomes import PodOutcome
from .pod_groups import GroupOutcome, group_outcomes

CASE_KEYS = {"name", "description", "seed", "objects", "profile", "expect", "featureGates"}
# expect keys -> what they check
EXPECT_KEYS = {"pod", "node", "nodeIn", "nodeNotIn", "unschedulable", "evicted", "ignored", "kept", "victims",
               "nominatedNode", "messageContains"}
# a PodGroup's expect keys (with GenericWorkload)
GROUP_EXPECT_KEYS = {"podGroup", "status", "scheduledPods", "messageContains"}
GROUP_STATUSES = ("Scheduled", "Unschedulable", "SchedulerError", "Waiting", "NotTried")


@dataclass
class Case:
    name: str
    source: str
    objects: list[dict[str, Any]]
    expect: list[dict[str, Any]]
    seed: int = 0
    description: str = ""
    # The case's `profile`, validated: its profiles replace those of `objects` serving the same
    # schedulerNames (as a --config file's do).
    profile: ImportedConfig | None = None
    origins: Origins = field(default_factory=Origins)  # "FILE (case N).objects[i]" of each object
    # `featureGates` (as --feature-gates takes them): the case runs under these, not the process's.
    gates: FeatureGates = field(default_factory=FeatureGates)


@dataclass
class CaseResult:
    case: Case
    problems: list[str] = field(default_factory=list)
    warnings: str = ""

    @property
    def passed(self) -> bool:
        return not self.problems


def _case_profile(profile: Any, where: str) -> ImportedConfig:
    """The case's `profile` (a SchedulingProfile, its bare spec or a KubeSchedulerConfiguration),
    validated as the operator validates a profile: InputError naming the field otherwise."""
    where = f"{where}.profile"
    if not isinstance(profile, Mapping):
        raise InputError(f"{where}: must be a SchedulingProfile, its spec or a KubeSchedulerConfiguration")
    kind = profile.get("kind")
    if kind == KSC_KIND:
        return config_document(dict(profile), where, io.StringIO())
    if kind is None:
        obj = {"apiVersion": f"{GROUP}/{VERSION}", "kind": PROFILE_KIND, "metadata": {"name": "case-profile"},
               "spec": dict(profile)}
        try:
            spec = parse_profile_object(obj)[1]
            check_buildable(spec, plugin_registry())
        except ConfigError as exc:  # the bare spec's fields, as the case file names them
            raise InputError(f"{where}{exc.path.removeprefix('spec')}: {exc.detail}") from None
        checked, field = CheckedProfile(obj, spec, where), f"{where}.mode"
    elif kind == PROFILE_KIND:
        checked, field = check_profile(dict(profile), where), f"{where}: {profile_label(profile)}: spec.mode"
    else:
        raise InputError(f"{where}: must be a SchedulingProfile, its spec or a KubeSchedulerConfiguration, "
                         f"not a {kind}")
    if checked.spec.mode == SHADOW:
        raise InputError(f"{field}: a Shadow profile schedules nothing, so the case would test the default "
                         "policy; set mode: Active to test its policy")
    return ImportedConfig(profiles=[checked.obj])


def parse_case(doc: Any, source: str, index: int = 0) -> Case:
    """A case from one YAML document; InputError naming the field when it is malformed."""
    where = f"{source}" + (f" (case {index + 1})" if index else "")
    if not isinstance(doc, Mapping):
        raise InputError(f"{where}: a case must be a mapping")
    unknown = sorted(set(doc) - CASE_KEYS)
    if unknown:
        raise InputError(f"{where}: unknown key {unknown[0]!r} (a case has {', '.join(sorted(CASE_KEYS))})")
    objects = doc.get("objects")
    if not isinstance(objects, list) or not all(isinstance(o, Mapping) and o.get("kind") for o in objects):
        raise InputError(f"{where}.objects: must be a list of Kubernetes objects, each with a kind")
    expect = doc.get("expect")
    if not isinstance(expect, list) or not expect:
        raise InputError(f"{where}.expect: must be a non-empty list")
    for i, exp in enumerate(expect):
        if isinstance(exp, Mapping) and "podGroup" in exp:
            _check_group_expect(exp, f"{where}.expect[{i}]")
            continue
        if not isinstance(exp, Mapping) or not isinstance(exp.get("pod"), str):
            raise InputError(f"{where}.expect[{i}]: needs pod: NAMESPACE/NAME (or podGroup: NAMESPACE/NAME)")
        bad = sorted(set(exp) - EXPECT_KEYS)
        if bad:
            raise InputError(f"{where}.expect[{i}]: unknown key {bad[0]!r} (one of {', '.join(sorted(EXPECT_KEYS))})")
        if len(exp) == 1:
            raise InputError(f"{where}.expect[{i}]: says nothing about {exp['pod']}")
    seed = doc.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise InputError(f"{where}.seed: must be a whole number")
    gates = _case_gates(doc.get("featureGates"), where)
    objs = [dict(o) for o in objects]
    origins = Origins()
    for i, obj in enumerate(objs):
        origins.note(obj, f"{where}.objects[{i}]")
    with features.override(gates):
        profile = _case_profile(doc["profile"], where) if doc.get("profile") is not None else None
    name = str(doc.get("name") or Path(source).stem)
    return Case(name=name, source=source, objects=objs, expect=[dict(e) for e in expect], seed=seed,
                description=str(doc.get("description") or ""), profile=profile, origins=origins, gates=gates)


def _check_group_expect(exp: Mapping[str, Any], where: str) -> None:
    if not isinstance(exp.get("podGroup"), str) or "/" not in exp["podGroup"]:
        raise InputError(f"{where}.podGroup: must be NAMESPACE/NAME")
    bad = sorted(set(exp) - GROUP_EXPECT_KEYS)
    if bad:
        raise InputError(f"{where}: unknown key {bad[0]!r} for a podGroup "
                         f"(one of {', '.join(sorted(GROUP_EXPECT_KEYS))})")
    if len(exp) == 1:
        raise InputError(f"{where}: says nothing about {exp['podGroup']}")
    if "status" in exp and exp["status"] not in GROUP_STATUSES:
        raise InputError(f"{where}.status: {exp['status']!r} is not one of {', '.join(GROUP_STATUSES)}")
    n = exp.get("scheduledPods")
    if "scheduledPods" in exp and (isinstance(n, bool) or not isinstance(n, int) or n < 0):
        raise InputError(f"{where}.scheduledPods: must be a whole number, 0 or more")
    texts = exp.get("messageContains")
    if "messageContains" in exp and (not isinstance(texts, list) or not all(isinstance(t, str) for t in texts)):
        raise InputError(f"{where}.messageContains: must be a list of strings")


def _case_gates(value: Any, where: str) -> FeatureGates:
    """A case's featureGates: "Name=bool,..." as the flag takes it, or a mapping of names to booleans."""
    if value is None:
        return FeatureGates()
    if isinstance(value, Mapping):
        if not all(isinstance(v, bool) for v in value.values()):
            raise InputError(f"{where}.featureGates: each gate must be true or false")
        value = ",".join(f"{k}={str(v).lower()}" for k, v in value.items())
    if not isinstance(value, str):
        raise InputError(f"{where}.featureGates: must be NAME=BOOL,... or a mapping of gate names to booleans")
    try:
        return FeatureGates.parse(value)
    except FeatureGateError as exc:
        raise InputError(f"{where}.featureGates: {exc}") from None


def load_cases(paths: Iterable[str | Path]) -> list[Case]:
    cases: list[Case] = []
    for p in paths:
        path = Path(p)
        files = sorted(path.glob("*.yaml")) + sorted(path.glob("*.yml")) if path.is_dir() else [path]
        if path.is_dir() and not files:
            raise InputError(f"{path}: no *.yaml case in this directory")
        for f in files:
            try:
                docs = [d for d in yaml.safe_load_all(f.read_text()) if d is not None]
            except OSError as exc:
                raise InputError(f"{f}: {exc.strerror}") from exc
            except yaml.YAMLError as exc:
                raise InputError(f"{f}: invalid YAML: {exc}") from exc
            if not docs:
                raise InputError(f"{f}: no case in this file")
            cases += [parse_case(d, str(f), i) for i, d in enumerate(docs)]
    return cases


def describe(o: PodOutcome) -> str:
    """An outcome in words, for the diff."""
    text = o.status + (f" on {o.node}" if o.node else "")
    if o.nominatedNode:
        text += f", nominated to {o.nominatedNode}"
    if o.victims:
        text += f", preempting {', '.join(sorted(o.victims))}"
    if o.message:
        text += f" ({o.message})"
    return text


def group_problems(exp: Mapping[str, Any], groups: Sequence[GroupOutcome]) -> list[str]:
    """What a podGroup expectation finds wrong with the group's outcome."""
    key = exp["podGroup"]
    got = next((g for g in groups if g.podGroup == key), None)
    if got is None:
        return [f"podGroup {key}: want it in the results, but no PodGroup or pod names it "
                "(is GenericWorkload on? featureGates: GenericWorkload=true)"]
    said = f"{got.status}, {got.scheduled} of {len(got.pods)} pods scheduled" + (f" ({got.message})" if got.message
                                                                                  else "")
    found = []
    if "status" in exp and got.status != exp["status"]:
        found.append(f"podGroup {key}: want {exp['status']}, got {said}")
    if "scheduledPods" in exp and got.scheduled != exp["scheduledPods"]:
        found.append(f"podGroup {key}: want {exp['scheduledPods']} pods scheduled, got {said}")
    for text in exp.get("messageContains") or []:
        if text not in got.message:
            found.append(f"podGroup {key}: want the message to contain {text!r}, got {got.message!r}")
    return found


def problems(expect: Sequence[Mapping[str, Any]], outcomes: Sequence[PodOutcome],
             groups: Sequence[GroupOutcome] = ()) -> list[str]:
    """One line per expectation not met: what was wanted, what happened."""
    by_pod = {o.pod: o for o in outcomes}
    found = []
    for exp in expect:
        if "podGroup" in exp:
            found += group_problems(exp, groups)
            continue
        key = exp["pod"]
        got = by_pod.get(key)
        if got is None:
            found.append(f"{key}: want it in the results, but there is no such pod in the objects")
            continue
        said = describe(got)
        scheduled = got.status == "Scheduled"
        if "node" in exp and not (scheduled and got.node == exp["node"]):
            found.append(f"{key}: want Scheduled on {exp['node']}, got {said}")
        if "nodeIn" in exp and not (scheduled and got.node in exp["nodeIn"]):
            found.append(f"{key}: want Scheduled on one of {', '.join(exp['nodeIn'])}, got {said}")
        if "nodeNotIn" in exp and not (scheduled and got.node not in exp["nodeNotIn"]):
            found.append(f"{key}: want Scheduled outside {', '.join(exp['nodeNotIn'])}, got {said}")
        if exp.get("unschedulable") and not (got.status == "Unschedulable" and not got.node):
            found.append(f"{key}: want Unschedulable, got {said}")
        if exp.get("evicted") and got.status != "Evicted":
            found.append(f"{key}: want Evicted, got {said}")
        if exp.get("ignored") and got.status != "Ignored":
            found.append(f"{key}: want Ignored, got {said}")
        if exp.get("kept") and got.status not in ("Existing", "Scheduled"):
            found.append(f"{key}: want kept (Existing or Scheduled), got {said}")
        if "victims" in exp and sorted(got.victims) != sorted(exp["victims"] or []):
            found.append(f"{key}: want victims [{', '.join(sorted(exp['victims'] or []))}], "
                         f"got [{', '.join(sorted(got.victims))}]")
        if "nominatedNode" in exp and got.nominatedNode != exp["nominatedNode"]:
            found.append(f"{key}: want nominated to {exp['nominatedNode']}, got {got.nominatedNode or 'none'}")
        for text in exp.get("messageContains") or []:
            if text not in got.message:
                found.append(f"{key}: want the message to contain {text!r}, got {got.message!r}")
    return found


def prepare_case(case: Case, warn: TextIO) -> SimInput:
    """The case's objects with its profile in force; InputError for a profile the operator would
    refuse, wherever in the case it is."""
    with features.override(case.gates):
        return prepare(case.objects, warn, case.profile, source=case.source, origins=case.origins)


def run_case(case: Case) -> CaseResult:
    warn = io.StringIO()
    sim = prepare_case(case, warn)
    with features.override(case.gates):
        outcomes, sched = run_simulation(sim.objects, seed=case.seed, warn=warn,
                                         percentage_of_nodes_to_score=sim.percentage_of_nodes_to_score or 0,
                                         origins=case.origins)
    groups = group_outcomes(sched, outcomes)
    return CaseResult(case, problems(case.expect, outcomes, groups), warn.getvalue())


def report(results: Sequence[CaseResult], out: TextIO, *, verbose: bool = False) -> None:
    for r in results:
        if r.passed:
            if verbose:
                out.write(f"PASS {r.case.name}\n")
            continue
        out.write(f"FAIL {r.case.name} ({r.case.source})\n")
        if r.case.description:
            out.write(f"  {r.case.description.strip()}\n")
        for line in r.problems:
            out.write(f"  - {line}\n")
        for line in r.warnings.splitlines():
            out.write(f"  ! {line}\n")
    failed = sum(1 for r in results if not r.passed)
    out.write(f"{len(results)} case{'s' if len(results) != 1 else ''}: {len(results) - failed} passed, "
              f"{failed} failed\n")


def run_tests(paths: Sequence[str], out: TextIO, *, verbose: bool = False) -> int:
    """0: every case passed; 1: some failed; raises InputError for a malformed case (a profile the
    operator would refuse included), before any case runs."""
    cases = load_cases(paths)
    for case in cases:
        prepare_case(case, io.StringIO())
    results = [run_case(c) for c in cases]
    report(results, out, verbose=verbose)
    return 0 if all(r.passed for r in results) else 1
