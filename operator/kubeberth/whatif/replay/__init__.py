"""Replay: a workload over time on a virtual clock (the engine, its inputs, its results and their report)."""
