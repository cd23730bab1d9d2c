"""`kubeberth run`: its options, and the real command against the emulated API server."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys

import pytest

from kubeberth.cli import build_parser
from kubeberth.operator.leader import LeaseConfig
from kubeberth.operator.options import DEFAULT_METRICS_PORT, add_run_arguments, config_from_args

from .conftest import free_port, wait_for
from .emulator import events_for, make_node, make_pod


def test_help_documents_every_option(capsys):
    parser = build_parser()
    try:
        parser.parse_args(["run", "--help"])
    except SystemExit as exc:
        assert exc.code == 0
    text = capsys.readouterr().out
    run_parser = add_run_arguments(argparse.ArgumentParser())
    for action in run_parser._actions:
        if action.help == argparse.SUPPRESS:  # kept for old command lines (--peering), not advertised
            continue
        for flag in action.option_strings:
            assert flag in text
        if action.option_strings and action.dest != "help":
            assert action.help, f"{action.option_strings} has no help"
    for option in ("--kubeconfig", "--in-cluster", "--leader-elect", "--leader-elect-resource-name",
                   "--leader-elect-lease-duration", "--liveness", "--metrics-port", "--verbose"):
        assert option in text


def test_defaults_and_options(monkeypatch):
    monkeypatch.delenv("POD_NAMESPACE", raising=False)
    parser = add_run_arguments(argparse.ArgumentParser())
    cfg = config_from_args(parser.parse_args([]))
    assert (cfg.leader_elect, cfg.liveness, cfg.default_profile) == (False, None, True)
    assert cfg.metrics_port == DEFAULT_METRICS_PORT
    assert cfg.lease() == LeaseConfig("kubeberth-system", "kubeberth", 15.0, 10.0, 2.0)  # kube-scheduler's timings
    cfg = config_from_args(parser.parse_args([
        "--kubeconfig", "/k", "--context", "c", "--leader-elect", "--leader-elect-resource-name", "sched",
        "--leader-elect-lease-duration", "30", "--liveness",
        "http://0.0.0.0:8080/healthz", "--metrics-port", "0", "--no-default-profile", "-v"]))
    assert (cfg.kubeconfig, cfg.context, cfg.leader_elect, cfg.lease_name) == ("/k", "c", True, "sched")
    assert cfg.metrics_port is None and cfg.default_profile is False and cfg.verbose
    monkeypatch.setenv("POD_NAMESPACE", "sched-ns")
    assert cfg.lease() == LeaseConfig("sched-ns", "sched", 30.0, 10.0, 2.0)
    old = config_from_args(parser.parse_args(["--peering", "mine"]))  # the flag of the kopf-peering days
    assert (old.leader_elect, old.lease_name) == (True, "mine")
    assert config_from_args(parser.parse_args([])).bind_concurrency == 256
    assert config_from_args(parser.parse_args(["--bind-concurrency", "8"])).bind_concurrency == 8
    assert config_from_args(parser.parse_args([])).percentage_of_nodes_to_score == 0
    assert config_from_args(parser.parse_args(["--percentage-of-nodes-to-score", "40"])
                            ).percentage_of_nodes_to_score == 40


@pytest.mark.parametrize("flag, value, message", [
    ("--bind-concurrency", "0", "must be at least 1, not 0"),
    ("--bind-concurrency", "many", "must be a whole number, not 'many'"),
    ("--percentage-of-nodes-to-score", "101", "must be from 0 to 100, not 101"),
    ("--percentage-of-nodes-to-score", "-5", "must be from 0 to 100, not -5"),
])
def test_numeric_options_are_checked(capsys, flag, value, message):
    parser = add_run_arguments(argparse.ArgumentParser())
    with pytest.raises(SystemExit):
        parser.parse_args([flag, value])
    assert f"argument {flag}: {message}" in capsys.readouterr().err


async def test_the_command_schedules_and_stops_on_sigterm(cluster):
    api = cluster.api
    api.create("nodes", make_node("n1"))
    api.create("pods", make_pod("p"))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "kubeberth.cli", "run", "--server", cluster.url,
        "--metrics-port", str(free_port()), "--metrics-host", "127.0.0.1", "--metrics-insecure", "--seed", "1",
        "--dry-run-port", str(free_port()),  # its process stops with the operator: the output's end comes
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    try:
        await wait_for(lambda: events_for(api, "p", "Scheduled"), timeout=30)
        assert api.get("pods", "p", "default")["spec"]["nodeName"] == "n1"
        proc.send_signal(signal.SIGTERM)
        out, _ = await asyncio.wait_for(proc.communicate(), 30)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, out.decode()


async def test_each_profile_message_is_logged_once(cluster):
    """The operator writes a profile's status, and the watch brings the object back (the relist
    too): its verdict is announced once, not again on each return."""
    api = cluster.api
    api.create("nodes", make_node("n1"))
    api.create("pods", make_pod("p"))
    for name, spec in (("mine", {"schedulerName": "mine"}),
                       ("bad", {"schedulerName": "bad", "plugins": {"score": {"enabled": [{"name": "Nope"}]}}})):
        api.create("schedulingprofiles", {"apiVersion": "kubeberth.io/v1alpha1", "kind": "SchedulingProfile",
                                          "metadata": {"name": name}, "spec": spec})
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "kubeberth.cli", "run", "--server", cluster.url,
        "--metrics-port", str(free_port()), "--metrics-host", "127.0.0.1", "--metrics-insecure", "--seed", "1",
        "--dry-run-port", "0",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    try:
        await wait_for(lambda: events_for(api, "p", "Scheduled"), timeout=30)
        # Both statuses written (and so watched back) before the operator stops.
        await wait_for(lambda: all((api.get("schedulingprofiles", n) or {}).get("status") for n in ("mine", "bad")),
                       timeout=30)
        proc.send_signal(signal.SIGTERM)
        out, _ = await asyncio.wait_for(proc.communicate(), 30)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    lines = out.decode().splitlines()
    assert sum("SchedulingProfile mine is in force for mine" in line for line in lines) == 1, lines
    assert sum("SchedulingProfile bad refused: spec.plugins.score.enabled[0].name: " in line for line in lines) == 1


@pytest.mark.parametrize(("kubeconfig", "env", "message"), [
    ("{tmp}/missing.yaml", {}, "--kubeconfig {tmp}/missing.yaml: no such file"),
    ("{tmp}/broken.yaml", {}, "--kubeconfig {tmp}/broken.yaml: Invalid kube-config file"),
    (None, {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"},
     "the in-cluster configuration: Service token file does not exist"),
], ids=["missing-file", "no-context", "in-cluster-without-token"])
def test_an_unusable_connection_configuration_is_one_line_and_exit_2(kubeconfig, env, message, tmp_path, capsys,
                                                                     monkeypatch):
    from kubeberth.operator.run import run_main

    (tmp_path / "broken.yaml").write_text("current-context: nowhere\n")
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("KUBECONFIG", raising=False)
    argv = ["run", "--metrics-port", "0"] + (["--kubeconfig", kubeconfig.format(tmp=tmp_path)] if kubeconfig else [])
    args = build_parser().parse_args(argv)
    assert run_main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"kubeberth run: {message.format(tmp=tmp_path)}")
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
