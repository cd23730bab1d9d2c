"""Write a simulate input from the openb trace: the 1,213 GPU nodes and about 10,000 pending
pods (the trace's tasks in a seeded shuffle, then draws with replacement), with the
WorkloadSummary FGD reads.

    python benchmarks/openb_cluster.py ../../../../shared/traces/alibaba-openb-2023 OUT.yaml [PODS] [SEED]
    time kubeberth simulate kubeberth_gpushare/profiles/FGD.yaml OUT.yaml -o json > /dev/null
"""

from __future__ import annotations

import csv
import random
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from gpushare_testing import node, pod, summary


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    trace, out = Path(argv[0]), Path(argv[1])
    total = int(argv[2]) if len(argv) > 2 else 10000
    rng = random.Random(int(argv[3]) if len(argv) > 3 else 42)
    with open(trace / "openb_node_list_gpu_node.csv") as f:
        nodes = [node(r["sn"], int(r["cpu_milli"]), int(r["gpu"]), r["model"], int(r["memory_mib"]))
                 for r in csv.DictReader(f)]
    with open(trace / "openb_pod_list_default.csv") as f:
        tasks = sorted(csv.DictReader(f), key=lambda r: r["name"])
    order = list(tasks)
    rng.shuffle(order)
    while len(order) < total:
        order.append(rng.choice(tasks))
    pods = []
    for i, r in enumerate(order[:total]):
        n = int(r["num_gpu"])
        pods.append(pod(f"task-{i:05d}", int(r["cpu_milli"]), int(r["gpu_milli"]) if n else 0, n,
                        r.get("gpu_spec") or "", memory_mib=int(r["memory_mib"])))
    with open(out, "w") as f:
        yaml.safe_dump_all([*nodes, *pods, summary(pods)], f, sort_keys=False)
    print(f"{out}: {len(nodes)} nodes, {len(pods)} pods", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
