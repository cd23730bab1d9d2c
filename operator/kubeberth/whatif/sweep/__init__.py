"""`kubeberth sweep`: many replays as one command on Dask distributed, gathered in one table and one page.

- `plan.py`: the runs (traces x profiles x seeds x options) from a sweep file or flags, and each
  run's stable name.
- `execute.py`: the runs as Dask tasks (a LocalCluster by default, or an existing cluster's
  scheduler), each result written atomically, finished runs skipped (resume), failures recorded.
- `table.py`: the per-run table, mean and std over seeds, a reference (the FGD artifact's CSV)
  beside it.
- `output.py`: table.csv, means.csv, table.json and report.html (replay/report.py's page).
- `command.py`: the verb's arguments and exit status (cli.py calls it).
"""
