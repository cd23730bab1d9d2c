"""The openb CSV adapter: Alibaba's GPU cluster trace (2023) as the FGD paper's artifact ships it,
turned into Nodes and Pods with the GPU-sharing conventions of the gpushare plugins.

- nodes `sn,cpu_milli,memory_mib,gpu,model`: a Node named `sn` with cpu `<cpu_milli>m`, memory
  `<memory_mib>Mi`, pods 1001 (what the artifact gives its nodes), `alibabacloud.com/gpu-count`
  `<gpu>` and `alibabacloud.com/gpu-milli` `<gpu * 1000>`, label `alibabacloud.com/gpu-card-model`
  `<model>` when it has GPUs.
- tasks `name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,qos,pod_phase,creation_time,
  deletion_time,scheduled_time]`: a Pod requesting cpu and memory (requests = limits) and, when it
  uses GPUs, `alibabacloud.com/gpu-milli` `<num_gpu * gpu_milli>` (gpu_milli is per GPU: 1000 for
  a task of whole GPUs); annotations `alibabacloud.com/gpu-milli` (per GPU), `gpu-count` and
  `gpu-card-model` (gpu_spec, only when it constrains). It arrives at creation_time and leaves at
  deletion_time when the trace gives them (0 and never otherwise).

A malformed row is reported as FILE:LINE:COLUMN and skipped; the others go on.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from ..inputs import InputError
from .workload import Timed

GPU_COUNT = "alibabacloud.com/gpu-count"
GPU_MILLI = "alibabacloud.com/gpu-milli"
GPU_MODEL = "alibabacloud.com/gpu-card-model"
MILLI_PER_GPU = 1000
NODE_PODS = "1001"

NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
TASK_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
TASK_OPTIONAL = ("gpu_spec", "qos", "pod_phase", "creation_time", "deletion_time", "scheduled_time")


class RowError(ValueError):
    """One malformed row: the message names the column; the reader adds file and line."""

    def __init__(self, column: int, message: str) -> None:
        super().__init__(message)
        self.column = column


@dataclass
class Rows:
    """The rows of a CSV file as dicts, each with its line number; `columns` as the header
    names them (1-based column numbers follow it)."""

    path: str
    columns: list[str]
    rows: list[tuple[int, list[str]]]


def read_rows(path: str | Path, required: tuple[str, ...], optional: tuple[str, ...], warn: TextIO) -> Rows:
    """The file's header checked (InputError when a required column is missing or the file
    cannot be read; an unknown column is reported and ignored) and its data rows."""
    p = str(path)
    try:
        with open(path, newline="") as f:
            lines = list(csv.reader(f))
    except OSError as exc:
        raise InputError(f"{p}: {exc.strerror}") from None
    except (csv.Error, UnicodeDecodeError) as exc:
        raise InputError(f"{p}: not a CSV file: {exc}") from None
    if not lines:
        raise InputError(f"{p}: empty file (want a header: {','.join(required)})")
    header = [h.strip() for h in lines[0]]
    missing = [c for c in required if c not in header]
    if missing:
        raise InputError(f"{p}:1: missing column {missing[0]!r} (want {','.join(required)}"
                         f"{''.join(f'[,{c}' for c in optional)}{']' * len(optional)})")
    for i, h in enumerate(header):
        if h not in required and h not in optional:
            warn.write(f"{p}:1:{i + 1}: unknown column {h!r} ignored\n")
    return Rows(p, header, [(n + 1, row) for n, row in enumerate(lines) if n > 0 and any(c.strip() for c in row)])


def _fields(rows: Rows, line: int, row: list[str]) -> dict[str, tuple[int, str]]:
    if len(row) > len(rows.columns):
        raise RowError(len(rows.columns) + 1, f"{len(row)} fields where the header has {len(rows.columns)}")
    return {name: (i + 1, row[i].strip() if i < len(row) else "") for i, name in enumerate(rows.columns)}


def _int(fields: dict[str, tuple[int, str]], name: str, *, low: int = 0, optional: bool = False) -> int | None:
    col, text = fields.get(name, (0, ""))
    if text == "":
        if optional:
            return None
        raise RowError(col, f"{name}: empty (want a whole number)")
    try:
        v = float(text)
    except ValueError:
        raise RowError(col, f"{name}: {text!r} is not a number") from None
    if not math.isfinite(v) or v != int(v):
        raise RowError(col, f"{name}: {text!r} is not a whole number")
    if v < low:
        raise RowError(col, f"{name}: {text} is below {low}")
    return int(v)


def iter_rows(rows: Rows, warn: TextIO) -> Iterator[tuple[int, dict[str, tuple[int, str]]]]:
    """Each row's fields (name -> (column, text)); a row with the wrong number of fields is
    reported and skipped."""
    for line, row in rows.rows:
        try:
            yield line, _fields(rows, line, row)
        except RowError as exc:
            warn.write(f"{rows.path}:{line}:{exc.column}: {exc}; row skipped\n")


def _name_cpu_memory(fields: dict[str, tuple[int, str]], column: str,
                     what: str) -> tuple[str, int | None, int | None]:
    """A node's or task's name (its `column`; RowError when empty), cpu_milli and memory_mib."""
    col, name = fields[column]
    if not name:
        raise RowError(col, f"{column}: empty (want the {what}'s name)")
    return name, _int(fields, "cpu_milli"), _int(fields, "memory_mib")


def node_object(fields: dict[str, tuple[int, str]]) -> dict[str, Any]:
    name, cpu, memory = _name_cpu_memory(fields, "sn", "node")
    gpus = _int(fields, "gpu") or 0
    model = fields["model"][1]
    resources = {"cpu": f"{cpu}m", "memory": f"{memory}Mi", "pods": NODE_PODS,
                 GPU_COUNT: str(gpus), GPU_MILLI: str(gpus * MILLI_PER_GPU)}
    labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}
    if gpus and model:
        labels[GPU_MODEL] = model
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "status": {"capacity": dict(resources), "allocatable": dict(resources)}}


def task_object(fields: dict[str, tuple[int, str]], warn: TextIO | None = None, where: str = "") -> Timed:
    """The task's Pod and its times. `warn`, `where` ("FILE:LINE"): for a gpu_milli above one GPU,
    capped to 1000 as the artifact caps it (reported, the row kept)."""
    name, cpu, memory = _name_cpu_memory(fields, "name", "task")
    num_gpu = _int(fields, "num_gpu") or 0
    if num_gpu > 0:
        given = _int(fields, "gpu_milli") or 0
        milli = min(given, MILLI_PER_GPU)  # per GPU (the artifact caps it)
        if given > milli and warn is not None:
            warn.write(f"{where}:{fields['gpu_milli'][0]}: gpu_milli: {given} is more than one GPU "
                       f"({MILLI_PER_GPU} per GPU); taken as {MILLI_PER_GPU}, as the artifact does\n")
    else:
        milli = _int(fields, "gpu_milli", optional=True) or 0
    requests = {"cpu": f"{cpu}m", "memory": f"{memory}Mi"}
    annotations: dict[str, str] = {}
    if num_gpu > 0:
        if milli > 0:
            requests[GPU_MILLI] = str(num_gpu * milli)
        annotations[GPU_MILLI] = str(milli)
        annotations[GPU_COUNT] = str(num_gpu)
        spec = "|".join(m for m in fields.get("gpu_spec", (0, ""))[1].split("|") if m)
        if spec:
            annotations[GPU_MODEL] = spec
    created = _int(fields, "creation_time", optional=True)
    deleted = _int(fields, "deletion_time", optional=True)
    if created is not None and deleted is not None and deleted < created:
        raise RowError(fields["deletion_time"][0],
                       f"deletion_time: {deleted} is before creation_time {created}")
    meta: dict[str, Any] = {"name": name, "namespace": "default", "uid": f"default/{name}"}
    if annotations:
        meta["annotations"] = annotations
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
           "spec": {"containers": [{"name": "main", "image": "task",
                                    "resources": {"requests": requests, "limits": dict(requests)}}]}}
    return Timed(pod, float(created or 0), float(deleted) if deleted is not None else None)


def read_openb(nodes_path: str | Path, tasks_path: str | Path, warn: TextIO) -> tuple[list[Timed], list[Timed], int]:
    """The nodes (there from the start) and tasks of an openb trace, in file order, and how
    many rows were skipped (each reported on `warn`). InputError for a file that cannot be read
    or lacks a required column."""
    skipped = 0
    nodes: list[Timed] = []
    tasks: list[Timed] = []
    seen: set[str] = set()
    models: set[str] = set()
    for path, required, optional, make in ((nodes_path, NODE_COLUMNS, (), "node"),
                                           (tasks_path, TASK_COLUMNS, TASK_OPTIONAL, "task")):
        rows = read_rows(path, required, optional, warn)
        good = 0
        for line, fields in iter_rows(rows, warn):
            try:
                t = Timed(node_object(fields)) if make == "node" else task_object(fields, warn, f"{rows.path}:{line}")
                name = f"{make} {t.obj['metadata']['name']}"
                if name in seen:
                    key = "sn" if make == "node" else "name"  # its column: the header may put it anywhere
                    raise RowError(fields[key][0], f"{key}: {name} appears twice")
                seen.add(name)
            except RowError as exc:
                warn.write(f"{rows.path}:{line}:{exc.column}: {exc}; row skipped\n")
                continue
            good += 1
            (nodes if make == "node" else tasks).append(t)
            if make == "task":
                _check_model(t, fields, models, f"{rows.path}:{line}", warn)
            elif labels := t.obj["metadata"]["labels"].get(GPU_MODEL):
                models.add(labels)
        skipped += len(rows.rows) - good
    return nodes, tasks, skipped


def _check_model(task: Timed, fields: dict[str, tuple[int, str]], models: set[str], where: str,
                 warn: TextIO) -> None:
    """Report a task whose gpu_spec names only GPU models no node has: it can never be placed
    (kept: it arrives, fails and counts as a failure, as in the artifact)."""
    spec = (task.obj["metadata"].get("annotations") or {}).get(GPU_MODEL)
    if spec and not set(spec.split("|")) & models:
        have = ", ".join(sorted(models)) or "none"
        warn.write(f"{where}:{fields['gpu_spec'][0]}: gpu_spec: no node has a GPU of model {spec} "
                   f"(the nodes' models: {have}); the task can never be placed\n")
