"""Port 10259 against the real API server, beside the real kube-scheduler v1.37.2.

kubeberth runs with the kubeberth ServiceAccount's token and the RBAC of `manifests/` (so the
TokenReviews, SubjectAccessReviews and the read of kube-system/extension-apiserver-authentication
are shown to be granted there). Every caller asks both kubeberth's and kube-scheduler's secure
port and must get the same answer: anonymous 403, a garbage token 401, a tenant's token 403, a
token bound to ClusterRole kubeberth-metrics-reader 200; the probes 200 without a token; client
certificates of --client-ca-file and a front proxy's (--requestheader-*) alike.
"""

from __future__ import annotations

import json
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trustme

from .conftest import Operators
from .control_plane import ControlPlane, ControlPlaneError, Process, free_port, kubectl

pytestmark = pytest.mark.cluster

NS = "team-a"


def ensure(plane: ControlPlane, *args: str) -> None:
    proc = kubectl(plane, *args, check=False)
    if proc.returncode != 0 and "AlreadyExists" not in proc.stderr:
        raise ControlPlaneError(f"kubectl {' '.join(args)}: {proc.stderr}")


@pytest.fixture(scope="module")
def tokens(control_plane: ControlPlane) -> dict[str, str | None]:
    """The callers: none, garbage, a tenant's ServiceAccount, a scraper's bound to kubeberth-metrics-reader."""
    ensure(control_plane, "create", "serviceaccount", "tenant", "-n", NS)
    ensure(control_plane, "create", "serviceaccount", "scraper", "-n", NS)
    ensure(control_plane, "create", "clusterrolebinding", "test-scraper-kubeberth-metrics",
           "--clusterrole=kubeberth-metrics-reader", f"--serviceaccount={NS}:scraper")

    def token(sa: str) -> str:
        return kubectl(control_plane, "create", "token", sa, "-n", NS, "--duration=1h").stdout.strip()

    return {"anonymous": None, "garbage": "not-a-token", "tenant": token("tenant"), "scraper": token("scraper")}


@pytest.fixture(scope="module")
def client_ca(control_plane: ControlPlane) -> tuple[trustme.CA, Path]:
    """A CA for client certificates (--client-ca-file of both schedulers); CN cert-scraper is bound to
    kubeberth-metrics-reader."""
    ca = trustme.CA()
    path = control_plane.dir / "scrape-client-ca.crt"
    ca.cert_pem.write_to_path(str(path))
    ensure(control_plane, "create", "clusterrolebinding", "test-cert-scraper-kubeberth-metrics",
           "--clusterrole=kubeberth-metrics-reader", "--user=cert-scraper")
    return ca, path


@pytest.fixture(scope="module")
def proxy_ca(control_plane: ControlPlane) -> tuple[trustme.CA, Path]:
    """A front proxy's CA (--requestheader-client-ca-file of both, allowed name front-proxy)."""
    ca = trustme.CA()
    path = control_plane.dir / "front-proxy-ca.crt"
    ca.cert_pem.write_to_path(str(path))
    return ca, path


def serving_flags(client_ca: tuple[trustme.CA, Path], proxy_ca: tuple[trustme.CA, Path]) -> list[str]:
    return [f"--client-ca-file={client_ca[1]}", f"--requestheader-client-ca-file={proxy_ca[1]}",
            "--requestheader-allowed-names=front-proxy"]


@pytest.fixture(scope="module")
def kube_scheduler(control_plane: ControlPlane, client_ca: tuple[trustme.CA, Path],
                   proxy_ca: tuple[trustme.CA, Path]) -> Iterator[str]:
    """The real kube-scheduler's secure port (its URL), as upstream deploys it: delegated authn/authz."""
    port = free_port()
    kubeconfig = control_plane.admin_kubeconfig
    argv = [str(control_plane.bin / "kube-scheduler"), f"--kubeconfig={kubeconfig}", "--leader-elect=false",
            f"--secure-port={port}", "--bind-address=127.0.0.1", f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}", *serving_flags(client_ca, proxy_ca), "-v=1"]
    proc = Process.start(f"kube-scheduler-{port}", argv, control_plane.dir)
    url = f"https://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while get(url, "/healthz")[0] != 200:
            if not proc.alive() or time.monotonic() > deadline:
                raise AssertionError(f"kube-scheduler did not serve:\n{proc.tail(40)}")
            time.sleep(0.2)
        yield url
    finally:
        proc.stop()


def get(base: str, path: str, token: str | None = None,
        cert: trustme.LeafCert | None = None, headers: dict[str, str] | None = None,
        ) -> tuple[int, str, dict[str, str]]:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # a self-signed certificate, as the kubelet's probes accept it
    if cert is not None:
        cert.configure_cert(ctx)
    hdrs = {**(headers or {}), **({"Authorization": f"Bearer {token}"} if token else {})}
    req = urllib.request.Request(base + path, headers=hdrs)
    try:
        with urllib.request.urlopen(req, timeout=10, context=ctx) as resp:
            return resp.status, resp.read().decode(), dict(resp.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(), dict(exc.headers)
    except OSError:
        return 0, "", {}


def status_body(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


CASES = [  # (caller, path, the answer both give)
    ("anonymous", "/metrics", 403),
    ("garbage", "/metrics", 401),
    ("tenant", "/metrics", 403),
    ("scraper", "/metrics", 200),
    ("anonymous", "/healthz", 200),
    ("anonymous", "/livez", 200),
    ("anonymous", "/readyz", 200),
    ("garbage", "/healthz", 401),
    ("tenant", "/configz", 403),
    ("cert-scraper", "/metrics", 200),  # a client certificate of --client-ca-file: user = its CommonName
    ("cert-stranger", "/metrics", 403),
    ("cert-empty-san", "/metrics", 401),  # an empty critical subjectAltName: Go's verifier refuses it
    ("proxy-for-scraper", "/metrics", 200),  # a front proxy's certificate: the user is X-Remote-User
    ("proxy-for-stranger", "/metrics", 403),
    ("proxy-not-allowed", "/metrics", 401),  # its CommonName is not in --requestheader-allowed-names
]


def test_the_secure_port_answers_as_kube_schedulers(operators: Operators, kube_scheduler: str,
                                                     tokens: dict[str, str | None],
                                                     client_ca: tuple[trustme.CA, Path],
                                                     proxy_ca: tuple[trustme.CA, Path]) -> None:
    op = operators.start(*serving_flags(client_ca, proxy_ca), secure=True)
    ours = f"https://127.0.0.1:{op.metrics_port}"
    # (with a name in the SAN: Go refuses the empty one trustme writes otherwise, see cert-empty-san)
    certs = {"cert-scraper": client_ca[0].issue_cert("scraper.test", common_name="cert-scraper"),
             "cert-stranger": client_ca[0].issue_cert("stranger.test", common_name="cert-stranger",
                                                      organization_name="team-a"),
             "cert-empty-san": client_ca[0].issue_cert(common_name="cert-scraper"),
             "proxy-for-scraper": proxy_ca[0].issue_cert("proxy.test", common_name="front-proxy"),
             "proxy-for-stranger": proxy_ca[0].issue_cert("proxy.test", common_name="front-proxy"),
             "proxy-not-allowed": proxy_ca[0].issue_cert("proxy.test", common_name="some-proxy")}
    proxied = {"proxy-for-scraper": {"X-Remote-User": "cert-scraper", "X-Remote-Group": "scrapers"},
               "proxy-for-stranger": {"X-Remote-User": "stranger"},
               "proxy-not-allowed": {"X-Remote-User": "cert-scraper"}}
    for caller, path, code in CASES:
        token, cert = tokens.get(caller), certs.get(caller)
        hdrs = proxied.get(caller)
        theirs_code, theirs_text, theirs_headers = get(kube_scheduler, path, token, cert, hdrs)
        our_code, our_text, our_headers = get(ours, path, token, cert, hdrs)
        what = f"{caller} GET {path}"
        assert theirs_code == code, f"{what}: kube-scheduler answered {theirs_code} {theirs_text}"
        assert our_code == code, f"{what}: kubeberth answered {our_code} {our_text}"
        if code in (401, 403):
            assert status_body(our_text) == status_body(theirs_text), what  # upstream's Status, word for word
            assert our_headers["Content-Type"] == theirs_headers["Content-Type"], what
        elif path == "/metrics":
            assert "# TYPE scheduler_schedule_attempts_total counter" in our_text
        else:
            assert our_text == theirs_text == "ok", what
        for header in ("Cache-Control", "X-Content-Type-Options"):
            assert our_headers.get(header) == theirs_headers.get(header), f"{what}: {header}"
    assert "extension-apiserver-authentication" not in op.log()  # the kube-system RoleBinding let it read


def test_plain_http_is_refused_and_insecure_needs_loopback(operators: Operators, sa_kubeconfig: Path) -> None:
    op = operators.start(secure=True)
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://127.0.0.1:{op.metrics_port}/metrics", timeout=5).read()
    bad = operators.start("--metrics-insecure", "--metrics-host=0.0.0.0", wait=False)
    bad.process.popen.wait(30)
    assert bad.process.popen.returncode == 2
    assert "needs a loopback --metrics-host" in bad.log()


def test_the_deployments_probes_and_a_bound_scraper_work(operators: Operators,
                                                         tokens: dict[str, str | None]) -> None:
    """kubeberth with the Deployment's own arguments (its port aside): the kubelet's probes as
    `manifests/deployment.yaml` declares them, and a scrape with a token bound to kubeberth-metrics-reader."""
    import yaml

    from .control_plane import ROOT

    [dep] = [d for d in yaml.safe_load_all((ROOT / "manifests" / "deployment.yaml").read_text())
             if d and d["kind"] == "Deployment"]
    [c] = dep["spec"]["template"]["spec"]["containers"]
    args = [a for a in c["args"][1:] if not a.startswith("--metrics-port")]
    # A Lease of its own: the suite's other tests find kubeberth's own Lease still to be created.
    op = operators.start(*args, "--leader-elect-resource-name=kubeberth-secure-port-test", secure=True)
    for kind in ("livenessProbe", "readinessProbe"):
        probe = c[kind]["httpGet"]
        code, text, _ = get(f"{probe['scheme'].lower()}://127.0.0.1:{op.metrics_port}", probe["path"])
        assert (code, text) == (200, "ok"), f"{kind} {probe['path']}: {code} {text}"
    code, text, _ = get(f"https://127.0.0.1:{op.metrics_port}", "/metrics", tokens["scraper"])
    assert code == 200 and "scheduler_pending_pods" in text
