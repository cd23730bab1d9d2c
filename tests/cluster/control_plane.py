"""A real control plane on loopback: etcd and kube-apiserver built from Kubernetes' Go modules.

`ControlPlane` starts etcd and kube-apiserver (the binaries `make control-plane` builds into
`.cache/k8s/bin`, or `$KUBEBERTH_K8S_BIN`) on free 127.0.0.1 ports, with TLS from a CA of its
own, a static token file (an admin in `system:masters`), RBAC, service-account signing keys,
an audit log, and the admission set scheduler_perf runs with when no controllers run (no
`ServiceAccount`, no `TaintNodesByCondition`: no controller manager creates service accounts
or lifts node taints). There is no kubelet: nodes are plain objects with their status set
when created. Everything runs in its own process group under a temporary directory, and
`stop()` removes both, also after a failed test.

Used by the real-cluster tests (tests/cluster/) and by the end-to-end benchmark.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import trustme
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

ROOT = Path(__file__).resolve().parents[2]
BINARIES = ("etcd", "kube-apiserver", "kube-scheduler", "kubectl")
ADMIN_TOKEN = "kubeberth-admin-token"
# Audit every request's metadata: who called what, and the answer (403s, verbs used).
AUDIT_POLICY = {"apiVersion": "audit.k8s.io/v1", "kind": "Policy",
                "omitStages": ["RequestReceived"], "rules": [{"level": "Metadata"}]}


def bin_dir() -> Path:
    return Path(os.environ.get("KUBEBERTH_K8S_BIN", ROOT / ".cache" / "k8s" / "bin"))


def missing_binaries() -> list[str]:
    return [b for b in BINARIES if not os.access(bin_dir() / b, os.X_OK)]


def k8s_version() -> str:
    path = bin_dir() / "VERSION"
    return path.read_text().strip() if path.exists() else "unknown"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Process:
    """A child process in its own process group, its output in a log file."""

    name: str
    popen: subprocess.Popen[bytes]
    log_path: Path
    _log: IO[bytes] = field(repr=False)

    @classmethod
    def start(cls, name: str, argv: Sequence[str], log_dir: Path, env: dict[str, str] | None = None) -> Process:
        log_path = log_dir / f"{name}.log"
        log = open(log_path, "ab")  # closed in stop()
        popen = subprocess.Popen(list(argv), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                 start_new_session=True, env=env)
        return cls(name, popen, log_path, log)

    def alive(self) -> bool:
        return self.popen.poll() is None

    def signal(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.popen.pid, sig)

    def stop(self, timeout: float = 10.0) -> None:
        if self.alive():
            self.signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.signal(signal.SIGKILL)
                self.popen.wait(timeout)
        else:
            self.signal(signal.SIGKILL)  # whatever it left in its group
        self._log.close()

    def tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


class ControlPlaneError(RuntimeError):
    pass


class ControlPlane:
    """etcd + kube-apiserver on loopback. `start()`, then `url`, `kubeconfig(...)`, `stop()`."""

    def __init__(self, workdir: Path | None = None, *, apiserver_args: Sequence[str] = (),
                 feature_gates: str = "") -> None:
        """`feature_gates`: kube-apiserver's --feature-gates (e.g. "GenericWorkload=true"); with
        GenericWorkload on, scheduling.k8s.io/v1beta1 (PodGroups) is served too."""
        self._own_dir = workdir is None
        self.dir = Path(workdir or tempfile.mkdtemp(prefix="kubeberth-cp-"))
        self.bin = bin_dir()
        self.feature_gates = feature_gates
        gated = [f"--feature-gates={feature_gates}"] if feature_gates else []
        if "GenericWorkload=true" in feature_gates:
            gated.append("--runtime-config=scheduling.k8s.io/v1beta1=true")
        self.apiserver_args = [*gated, *apiserver_args]
        self.etcd: Process | None = None
        self.apiservers: list[Process] = []
        self.etcd_port = free_port()
        self.port = free_port()
        self.url = f"https://127.0.0.1:{self.port}"
        self.etcd_url = f"http://127.0.0.1:{self.etcd_port}"
        self.ca_path = self.dir / "ca.crt"
        self.audit_log = self.dir / "audit.log"
        self.admin_kubeconfig = self.dir / "admin.kubeconfig"
        self._ssl: ssl.SSLContext | None = None

    # --- lifecycle ---

    def start(self, timeout: float = 60.0) -> ControlPlane:
        missing = missing_binaries()
        if missing:
            raise ControlPlaneError(f"not built: {', '.join(missing)} (run `make control-plane`)")
        try:
            self._write_credentials()
            self._start_etcd(timeout)
            self.apiservers.append(self._start_apiserver(self.port, timeout, name="kube-apiserver"))
            self.write_kubeconfig(self.admin_kubeconfig, token=ADMIN_TOKEN)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        for p in self.apiservers:
            p.stop()
        self.apiservers.clear()
        if self.etcd is not None:
            self.etcd.stop()
            self.etcd = None
        if self._own_dir and not os.environ.get("KUBEBERTH_KEEP_CLUSTER"):
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> ControlPlane:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop_apiserver(self) -> None:
        main = [p for p in self.apiservers if p.name == "kube-apiserver"]
        for p in main:
            p.stop()
            self.apiservers.remove(p)

    def start_apiserver(self, timeout: float = 60.0) -> None:
        self.apiservers.append(self._start_apiserver(self.port, timeout, name="kube-apiserver"))

    @contextlib.contextmanager
    def second_apiserver(self, timeout: float = 60.0) -> Iterator[str]:
        """Another API server on the same etcd, yielding its URL; stopped on leaving."""
        port = free_port()
        proc = self._start_apiserver(port, timeout, name=f"kube-apiserver-{port}")
        self.apiservers.append(proc)
        try:
            yield f"https://127.0.0.1:{port}"
        finally:
            proc.stop()
            self.apiservers.remove(proc)

    def logs(self) -> str:
        parts = [f"--- {p.name} ---\n{p.tail()}" for p in [*( [self.etcd] if self.etcd else []), *self.apiservers]]
        return "\n".join(parts)

    # --- credentials and configuration ---

    def _write_credentials(self) -> None:
        ca = trustme.CA()
        ca.cert_pem.write_to_path(str(self.ca_path))
        serving = ca.issue_cert("127.0.0.1", "localhost", "kubernetes", "kubernetes.default")
        serving.cert_chain_pems[0].write_to_path(str(self.dir / "apiserver.crt"))
        serving.private_key_pem.write_to_path(str(self.dir / "apiserver.key"))
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        (self.dir / "sa.key").write_bytes(key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption()))
        (self.dir / "sa.pub").write_bytes(key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
        (self.dir / "tokens.csv").write_text(f'{ADMIN_TOKEN},admin,admin-uid,"system:masters"\n')
        (self.dir / "audit-policy.json").write_text(json.dumps(AUDIT_POLICY))

    def write_kubeconfig(self, path: Path, *, token: str, server: str | None = None, user: str = "user") -> Path:
        ca = base64.b64encode(self.ca_path.read_bytes()).decode()
        config = {
            "apiVersion": "v1", "kind": "Config", "current-context": "test",
            "clusters": [{"name": "test", "cluster": {"server": server or self.url,
                                                      "certificate-authority-data": ca}}],
            "users": [{"name": user, "user": {"token": token}}],
            "contexts": [{"name": "test", "context": {"cluster": "test", "user": user}}],
        }
        path.write_text(json.dumps(config, indent=1))
        return path

    def start_kube_scheduler(self, name: str = "kube-scheduler", *, profiles: list[dict[str, Any]] | None = None,
                             args: Sequence[str] = ("-v=2",)) -> Process:
        """Upstream kube-scheduler on this API server as admin, without leader election or secure
        port; its config and kubeconfig are written as `<name>.yaml` and `<name>.kubeconfig`."""
        kubeconfig = self.write_kubeconfig(self.dir / f"{name}.kubeconfig", token=ADMIN_TOKEN)
        config: dict[str, Any] = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                                  "clientConnection": {"kubeconfig": str(kubeconfig)},
                                  "leaderElection": {"leaderElect": False}}
        if profiles is not None:
            config["profiles"] = profiles
        path = self.dir / f"{name}.yaml"
        path.write_text(json.dumps(config))
        return Process.start(name, [str(self.bin / "kube-scheduler"), f"--config={path}", "--secure-port=0", *args],
                             self.dir)

    def ssl_context(self) -> ssl.SSLContext:
        if self._ssl is None:
            self._ssl = ssl.create_default_context(cafile=str(self.ca_path))
        return self._ssl

    # --- processes ---

    def _start_etcd(self, timeout: float) -> None:
        peer = free_port()
        argv = [str(self.bin / "etcd"), "--name", "kubeberth-test", "--data-dir", str(self.dir / "etcd"),
                "--listen-client-urls", self.etcd_url, "--advertise-client-urls", self.etcd_url,
                "--listen-peer-urls", f"http://127.0.0.1:{peer}",
                "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
                "--initial-cluster", f"kubeberth-test=http://127.0.0.1:{peer}",
                "--unsafe-no-fsync", "--quota-backend-bytes", str(8 * 1024**3), "--log-level", "warn"]
        self.etcd = Process.start("etcd", argv, self.dir)
        self._wait(lambda: self._http_ok(f"{self.etcd_url}/health"), timeout, self.etcd, "etcd /health")

    def _start_apiserver(self, port: int, timeout: float, *, name: str) -> Process:
        d = self.dir
        argv = [str(self.bin / "kube-apiserver"),
                "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", f"--secure-port={port}",
                f"--etcd-servers={self.etcd_url}",
                f"--tls-cert-file={d / 'apiserver.crt'}", f"--tls-private-key-file={d / 'apiserver.key'}",
                f"--client-ca-file={self.ca_path}", f"--cert-dir={d / 'certs'}",
                f"--token-auth-file={d / 'tokens.csv'}", "--authorization-mode=RBAC",
                f"--service-account-key-file={d / 'sa.pub'}",
                f"--service-account-signing-key-file={d / 'sa.key'}",
                "--service-account-issuer=https://kubernetes.default.svc",
                "--service-cluster-ip-range=10.0.0.0/24", "--endpoint-reconciler-type=none",
                "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition,StorageObjectInUseProtection",
                f"--audit-policy-file={d / 'audit-policy.json'}", f"--audit-log-path={self.audit_log}",
                "--audit-log-mode=batch", "--audit-log-batch-max-wait=1s", "--audit-log-maxbackup=0",
                "--profiling=false", "-v=1", *self.apiserver_args]
        proc = Process.start(name, argv, d)
        url = f"https://127.0.0.1:{port}/readyz"
        self._wait(lambda: self._http_ok(url, token=ADMIN_TOKEN), timeout, proc, "kube-apiserver /readyz")
        return proc

    def _http_ok(self, url: str, token: str | None = None) -> bool:
        req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
        context = self.ssl_context() if url.startswith("https") else None
        try:
            with urllib.request.urlopen(req, timeout=2, context=context) as resp:
                return bool(resp.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    @staticmethod
    def _wait(ready: Any, timeout: float, proc: Process, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not proc.alive():
                raise ControlPlaneError(f"{proc.name} exited ({proc.popen.returncode}):\n{proc.tail()}")
            if ready():
                return
            time.sleep(0.1)
        raise ControlPlaneError(f"{what} not ready after {timeout:.0f}s:\n{proc.tail()}")

    # --- etcd: revisions and compaction (the watch-expiry tests) ---

    def _etcd_call(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        req = urllib.request.Request(f"{self.etcd_url}{path}", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            return dict(json.loads(resp.read()))

    def etcd_revision(self) -> int:
        out = self._etcd_call("/v3/kv/range", {"key": base64.b64encode(b"/registry").decode(), "limit": 1})
        return int(out["header"]["revision"])

    def compact_etcd(self) -> int:
        """Compacts etcd at its current revision: every older resourceVersion is gone."""
        rev = self.etcd_revision()
        self._etcd_call("/v3/kv/compaction", {"revision": str(rev), "physical": True})
        return rev

    # --- audit ---

    def audit_events(self) -> list[dict[str, Any]]:
        """The audit log so far (Metadata level), flushed by the batch backend within about a second."""
        if not self.audit_log.exists():
            return []
        out = []
        for line in self.audit_log.read_text().splitlines():
            with contextlib.suppress(ValueError):
                out.append(json.loads(line))
        return out


def kubectl(plane: ControlPlane, *args: str, kubeconfig: Path | None = None, input: str | None = None,
            check: bool = True, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    """Runs the built kubectl against the control plane (as the admin unless told otherwise)."""
    argv = [str(plane.bin / "kubectl"), f"--kubeconfig={kubeconfig or plane.admin_kubeconfig}", *args]
    proc = subprocess.run(argv, input=input, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    if check and proc.returncode != 0:
        raise ControlPlaneError(f"kubectl {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}{proc.stdout}")
    return proc
