"""kubeberth's benchmarks: upstream scheduler_perf workloads run through the real Scheduler loop.

`python -m benchmarks.run --help` (or `make bench ARGS=...`).
"""
