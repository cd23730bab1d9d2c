"""`kubeberth replay`: a workload replayed over time on a virtual clock, by simulate's scheduler.

- `workload.py`: what is replayed (`ReplayInput`, `Timed`), read from YAML with time
  annotations and ReplayScenario documents; the `WorkloadSummary` published before the first
  arrival.
- `openb.py`: the openb CSV adapter (Alibaba's GPU trace as the FGD paper's artifact ships it).
- `fit.py`: pods no node could ever hold (reported, not refused).
- `engine.py`: the discrete-event loop (`Replay`, `ReplayOptions`: the seam protocols use).
- `ledger.py`: each pod's record, the counts and sums, the time series.
- `output.py`: the ReplayResult, its JSON and CSV, `--out DIR`.
- `protocol.py`: the FGD paper's artifact protocol (`--protocol artifact`): its workload, GPU allocation bins.
- `report.py`: the HTML page (matplotlib plots), one run or several overlaid.
- `command.py`: the command line (cli.py's thin shell calls it).
"""

from .command import run_replay

__all__ = ["run_replay"]
