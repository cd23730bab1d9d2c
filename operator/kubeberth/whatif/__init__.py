"""What-if: the scheduler run on files. The real Scheduler (queue, cache, framework, preemption,
binding cycle) runs in-process over an in-memory cluster under a fake clock, on objects read from
YAML (`kubectl get -o yaml`, `kubeberth snapshot`), and says what became of each pod.

The shared parts, lowest first:

- `inputs.py`: reading the input files (multi-document YAML, `kind: List`), `Origins` (where each
  object was read, for the errors about one), `InputError`.
- `config_files.py`: the configuration: `--config` files and KubeSchedulerConfiguration documents
  among the inputs, files of SchedulingProfiles, the warning for kinds simulate does not read, and
  the check every profile passes first (one the operator would refuse is an error).
- `outcomes.py`: `PodOutcome`, what became of a pod (from the scheduler's records), and simulate's
  table and JSON.
- `volumes.py`: the PV controller and a provisioner, played once the volume binder has written.
- `cluster.py`: `InMemoryClient`, the cluster client the scheduler writes through, each write fed
  back as the watch event the API server would send.
- `engine.py`: a Scheduler over an InMemoryClient under a FakeClock (`new_scheduler`), the input
  fed as the API server's first lists (`load_objects`), the loop run until settled
  (`run_settled`); `run_simulation` is the three in a row. Every tool runs the scheduler through it.
- `pod_groups.py`: what became of each PodGroup (GenericWorkload), and its table.

The tools (the command line's verbs are `cli.py`'s thin shells over them):

- `simulate.py`: `kubeberth simulate` (its input with a `--config` file, the HTML report's data).
- `compare.py`: `kubeberth simulate --compare`, one cluster under two configurations (rendered by
  `report/compare.py`).
- `policy_tests.py`: `kubeberth test`, scheduling policy tests (also the conformance suite's runner).
- `snapshot.py`: `kubeberth snapshot`, a live cluster written as simulate's input.
- `convert_policy.py`: `kubeberth convert-policy`, an old Policy file as a SchedulingProfile.
- `replay/`: `kubeberth replay`, a workload over time on a virtual clock (arrivals, departures,
  nodes coming and going; the openb trace adapter; the FGD artifact's protocol; the HTML page).
- `sweep/`: `kubeberth sweep`, many replays as Dask tasks (resumable), one table and one page.
- `capacity/`: `kubeberth capacity`, how many more copies of a pod, workload or gang fit (copies
  scheduled one at a time over one scheduler, or counted per node where the filters allow it).
- `suggest/`: `simulate --suggest`, the verified changes that would place each unschedulable pod
  (and the operator's LiveSuggester, given to it by `kubeberth run`).

A new tool is a module or a subpackage here beside them, running
the scheduler through `engine.py`. `kubeberth.testing` is the public face of the engine for the
tests of plugins of one's own.
"""
