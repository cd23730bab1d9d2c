"""What `kubeberth run` imports before its first log line: the secure port's cryptography waits
until the port starts (after the initial lists went out), unless a file of its must be checked."""

from __future__ import annotations

import subprocess
import sys

import pytest

PROBE = """
import sys
from kubeberth import lazy_client
lazy_client.install()
from kubeberth.operator.options import add_run_arguments, config_from_args
import argparse
import kubeberth.operator.app
args = add_run_arguments(argparse.ArgumentParser()).parse_args(sys.argv[1:])
config_from_args(args)
print("cryptography" in sys.modules)
"""


@pytest.mark.parametrize("argv, imported", [
    ([], False),
    (["--metrics-port=0"], False),
    (["--client-ca-file=/nonexistent/ca.crt"], True),  # checked before anything starts: needs it
], ids=["default", "no-secure-port", "client-ca-file"])
def test_the_secure_ports_cryptography_is_not_imported_before_the_operator_starts(argv: list[str],
                                                                                  imported: bool) -> None:
    out = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=120)
    if imported:  # the file does not exist: refused, having imported what reads it
        assert "ServingOptionsError" in out.stderr or out.stdout.strip() == "True", out.stderr[-500:]
    else:
        assert out.returncode == 0, out.stderr[-2000:]
        assert out.stdout.strip() == "False"
