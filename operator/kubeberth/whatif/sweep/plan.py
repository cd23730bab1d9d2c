"""What a sweep runs: the product traces x profiles x seeds x options, read from a sweep file (YAML)
or built from the command line's flags, each run named by its parameters.

A run's name is `<trace>-<policy>-s<seed>[-<options>]-<hash>`: readable, and unique by a hash of
every parameter that decides its result (the format, the bytes of every input file, the seed,
the protocol, tune, tie-break, the plugin sources and feature gates). An edited trace or profile
gives new names (its runs are redone); a moved directory does not.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

FORMATS = ("openb", "yaml")
SWEEP_KEYS = {"apiVersion", "kind", "traces", "profiles", "seeds", "options", "plugins", "featureGates",
              "reference"}
TRACE_KEYS = {"name", "format", "nodes", "files"}
OPTION_KEYS = {"protocol", "tune", "tieBreak"}
PROTOCOLS = ("artifact",)


class SweepError(ValueError):
    """A sweep file or flag that cannot be run (the message names the file and the field)."""


@dataclass(frozen=True)
class Trace:
    """One workload: its label (the tasks file's stem by default), format, files and nodes file."""

    name: str
    format: str
    files: tuple[str, ...]
    nodes: str | None = None


@dataclass(frozen=True)
class Options:
    """The replay's protocol options of a run."""

    protocol: str | None = None
    tune: float | None = None
    tie_break: str | None = None

    @property
    def label(self) -> str:
        parts = [self.protocol or "", f"tune{self.tune:g}" if self.tune is not None else "",
                 self.tie_break or ""]
        return "-".join(p for p in parts if p)


@dataclass(frozen=True)
class Run:
    """One replay of a sweep."""

    trace: Trace
    profile: str | None
    seed: int
    options: Options = field(default_factory=Options)

    @property
    def policy(self) -> str:
        """The profile's label: its file's stem (`FGD` for profiles/FGD.yaml), `default` without one."""
        return profile_label(self.profile)

    def replay_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of the replay package's `run_replay` for this run."""
        return {"files": list(self.trace.files), "format": self.trace.format, "nodes": self.trace.nodes,
                "profile": self.profile, "seed": self.seed, "protocol": self.options.protocol,
                "tune": self.options.tune, "tie_break": self.options.tie_break}


@dataclass(frozen=True)
class Sweep:
    """The runs (in the order of the product, which is the table's order) and what every worker
    needs besides each run's arguments."""

    runs: tuple[Run, ...]
    plugins: tuple[str, ...] = ()
    feature_gates: tuple[str, ...] = ()
    reference: str | None = None


def profile_label(profile: str | None) -> str:
    if not profile:
        return "default"
    name = Path(profile).name
    return re.sub(r"\.(ya?ml|json)$", "", name)


@cache
def file_digest(path: str) -> str:
    """sha256 of a file's bytes (read once per process)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._]+", "-", text).strip("-") or "x"


def run_name(run: Run, sweep: Sweep) -> str:
    """`<trace>-<policy>-s<seed>[-<options>]-<12 hex digits>` (see the module's docstring)."""
    key = {"format": run.trace.format, "files": [file_digest(f) for f in run.trace.files],
           "nodes": file_digest(run.trace.nodes) if run.trace.nodes else None,
           "profile": file_digest(run.profile) if run.profile else None, "seed": run.seed,
           "protocol": run.options.protocol, "tune": run.options.tune, "tieBreak": run.options.tie_break,
           "plugins": list(sweep.plugins), "featureGates": list(sweep.feature_gates)}
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:12]
    parts = [run.trace.name, run.policy, f"s{run.seed}", run.options.label, digest]
    return "-".join(_slug(p) for p in parts if p)


def parse_seeds(text: str, where: str = "--seeds") -> list[int]:
    """`42-51` (both ends), `1,2,7` or a mix (`1,5-7`)."""
    seeds: list[int] = []
    for part in str(text).split(","):
        part = part.strip()
        m = re.fullmatch(r"(-?\d+)(?:-(-?\d+))?", part)
        if not m:
            raise SweepError(f"{where}: {part!r} is not a seed or a range FROM-TO")
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        if hi < lo:
            raise SweepError(f"{where}: the range {part} is empty")
        seeds += range(lo, hi + 1)
    return seeds


def expand_profiles(entries: Iterable[str | None], where: str) -> list[str | None]:
    """Each entry a profile file, a directory (its *.yaml files by name) or None (the default profile)."""
    out: list[str | None] = []
    for entry in entries:
        if entry is None:
            out.append(None)
            continue
        path = Path(entry)
        if path.is_dir():
            found = sorted(str(p) for p in path.glob("*.yaml"))
            if not found:
                raise SweepError(f"{where}: {entry}: a directory without *.yaml profiles")
            out += found
        elif path.is_file():
            out.append(str(path))
        else:
            raise SweepError(f"{where}: {entry}: no such file or directory")
    return out


def _check_file(path: str, where: str) -> str:
    if not Path(path).is_file():
        raise SweepError(f"{where}: {path}: no such file")
    return path


def make_trace(files: Sequence[str], *, format: str | None = None, nodes: str | None = None,
               name: str | None = None, where: str = "--trace") -> Trace:
    """A trace, its files checked; format openb when a nodes file is given, else yaml."""
    fmt = format or ("openb" if nodes else "yaml")
    if fmt not in FORMATS:
        raise SweepError(f"{where}: format {fmt!r}: must be one of {', '.join(FORMATS)}")
    if fmt == "openb" and not nodes:
        raise SweepError(f"{where}: the openb format needs a nodes file")
    if not files:
        raise SweepError(f"{where}: no files")
    files = tuple(_check_file(f, where) for f in files)
    return Trace(name or profile_label(files[-1]).removesuffix(".csv"), fmt, files,
                 _check_file(nodes, where) if nodes else None)


def make_options(protocol: str | None, tune: float | None, tie_break: str | None, where: str) -> Options:
    if protocol is not None and protocol not in PROTOCOLS:
        raise SweepError(f"{where}: protocol {protocol!r}: must be one of {', '.join(PROTOCOLS)}")
    if tune is not None and (not isinstance(tune, (int, float)) or isinstance(tune, bool) or tune <= 0):
        raise SweepError(f"{where}: tune {tune!r}: must be a positive number")
    return Options(protocol, float(tune) if tune is not None else None, tie_break)


def product(traces: Sequence[Trace], profiles: Sequence[str | None], seeds: Sequence[int],
            options: Sequence[Options]) -> tuple[Run, ...]:
    """Every combination, traces outermost, then profiles, options and seeds."""
    return tuple(Run(t, p, s, o) for t in traces for p in profiles for o in options for s in seeds)


def check_unique(sweep: Sweep) -> Sweep:
    """Refuse two runs of one name (the same trace listed twice, say): one would overwrite the other;
    and feature gates the workers would refuse (better once here than once per run)."""
    from ...features import FeatureGateError, FeatureGates

    try:
        FeatureGates.parse(list(sweep.feature_gates))
    except FeatureGateError as exc:
        raise SweepError(f"featureGates: {exc}") from None
    traces: dict[str, Trace] = {}
    profiles: dict[str, str | None] = {}
    for r in sweep.runs:  # one label, one input: the table groups by label
        if traces.setdefault(r.trace.name, r.trace) != r.trace:
            raise SweepError(f"two traces are labelled {r.trace.name!r} (the table would mix them): "
                             "give each trace a name")
        if profiles.setdefault(r.policy, r.profile) != r.profile:
            raise SweepError(f"two profiles are labelled {r.policy!r} (the table would mix them): "
                             "rename one of the profile files")
    seen: dict[str, Run] = {}
    for run in sweep.runs:
        name = run_name(run, sweep)
        if name in seen:
            raise SweepError(f"two runs have the same parameters ({name}): list each trace, profile, seed and "
                             "option once")
        seen[name] = run
    return sweep


def _list(doc: Mapping[str, Any], key: str, where: str) -> list[Any] | None:
    value = doc.get(key)
    if value is None:
        return None
    if not isinstance(value, list):
        raise SweepError(f"{where}: {key}: must be a list")
    return value


def _resolve(base: Path, value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise SweepError(f"{where}: must be a path")
    p = Path(value).expanduser()
    return str(p if p.is_absolute() else base / p)


def _trace_from(doc: Any, base: Path, where: str) -> Trace:
    if isinstance(doc, str):
        doc = {"files": [doc]}
    if not isinstance(doc, dict):
        raise SweepError(f"{where}: must be a mapping (name, format, nodes, files) or a path")
    unknown = set(doc) - TRACE_KEYS
    if unknown:
        raise SweepError(f"{where}: unknown field(s) {', '.join(sorted(unknown))} "
                         f"(known: {', '.join(sorted(TRACE_KEYS))})")
    files = doc.get("files")
    if isinstance(files, str):
        files = [files]
    if not isinstance(files, list) or not files:
        raise SweepError(f"{where}.files: a list of one or more paths")
    nodes = _resolve(base, doc["nodes"], f"{where}.nodes") if doc.get("nodes") is not None else None
    return make_trace([_resolve(base, f, f"{where}.files[{i}]") for i, f in enumerate(files)],
                      format=doc.get("format"), nodes=nodes, name=doc.get("name"), where=where)


def sweep_from_document(doc: Any, base: Path, source: str) -> Sweep:
    """A Sweep from a parsed sweep file (paths relative to `base`); errors name `source` and the field."""
    if not isinstance(doc, dict):
        raise SweepError(f"{source}: a sweep file is a mapping (traces, profiles, seeds, options, ...)")
    unknown = set(doc) - SWEEP_KEYS
    if unknown:
        raise SweepError(f"{source}: unknown field(s) {', '.join(sorted(unknown))} "
                         f"(known: {', '.join(sorted(SWEEP_KEYS))})")
    if doc.get("kind") not in (None, "Sweep"):
        raise SweepError(f"{source}: kind {doc['kind']!r}: expected Sweep")
    traces = [_trace_from(t, base, f"{source}: traces[{i}]") for i, t in enumerate(_list(doc, "traces", source) or [])]
    if not traces:
        raise SweepError(f"{source}: traces: at least one trace")
    profile_entries = _list(doc, "profiles", source)
    profiles = expand_profiles([None if p is None else _resolve(base, p, f"{source}: profiles[{i}]")
                                for i, p in enumerate(profile_entries)] if profile_entries else [None],
                               f"{source}: profiles")
    seeds_doc = doc.get("seeds", [0])
    if isinstance(seeds_doc, (str, int)) and not isinstance(seeds_doc, bool):
        seeds = parse_seeds(str(seeds_doc), f"{source}: seeds")
    elif isinstance(seeds_doc, list) and all(isinstance(s, int) and not isinstance(s, bool) for s in seeds_doc):
        seeds = list(seeds_doc)
    else:
        raise SweepError(f"{source}: seeds: a list of integers or a range such as 42-51")
    options = []
    for i, o in enumerate(_list(doc, "options", source) or [{}]):
        where = f"{source}: options[{i}]"
        if not isinstance(o, dict) or set(o) - OPTION_KEYS:
            raise SweepError(f"{where}: a mapping of {', '.join(sorted(OPTION_KEYS))}")
        options.append(make_options(o.get("protocol"), o.get("tune"), o.get("tieBreak"), where))
    plugins = [str(p) for p in _list(doc, "plugins", source) or []]
    plugins = [str(base / p) if (base / p).exists() else p for p in plugins]
    gates = [str(g) for g in _list(doc, "featureGates", source) or []]
    reference = _resolve(base, doc["reference"], f"{source}: reference") if doc.get("reference") else None
    return check_unique(Sweep(product(traces, profiles, seeds, options), tuple(plugins), tuple(gates), reference))


def load_sweep(path: str) -> Sweep:
    """Read a sweep file (see docs/guides/sweep.md)."""
    import yaml

    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise SweepError(f"{path}: {exc.strerror or exc}") from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f": line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise SweepError(f"{path}{at}: not YAML ({getattr(exc, 'problem', None) or exc})") from None
    return sweep_from_document(doc, Path(path).resolve().parent, path)
