"""Replay: a workload over time on a virtual clock (issue 40)."""
