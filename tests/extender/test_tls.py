"""HTTPS extenders with a CA made in the test (trustme): verification, serverName, client certs."""

from __future__ import annotations

import base64
import ssl
from pathlib import Path

import pytest
import trustme

from kubeberth.extender import ExtenderError
from tests.builders import make_node, make_pod, node_info

NODES = [node_info(make_node("n1")), node_info(make_node("n2"))]


def b64(text: bytes) -> str:
    return base64.b64encode(text).decode()


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


def server_context(ca: trustme.CA, *names: str, client_ca: trustme.CA | None = None) -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(*names).configure_cert(ctx)
    if client_ca is not None:
        client_ca.configure_trust(ctx)
        ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx


def echo(args):
    return {"NodeNames": args["NodeNames"]}


async def start(make_server, ctx: ssl.SSLContext):
    srv = await make_server(ssl_context=ctx)
    srv.handlers["filter"] = echo
    assert srv.url.startswith("https://127.0.0.1:")
    return srv


async def passes(ext) -> bool:
    feasible, _, _ = await ext.filter(make_pod("p"), NODES)
    return [ni.name for ni in feasible] == ["n1", "n2"]


@pytest.mark.parametrize("encoding", ["base64", "pem"])
async def test_ca_data(make_server, make_extender, ca: trustme.CA, encoding: str) -> None:
    srv = await start(make_server, server_context(ca, "127.0.0.1"))
    pem = ca.cert_pem.bytes()
    ca_data = b64(pem) if encoding == "base64" else pem.decode()
    ext = make_extender(srv.url, filterVerb="filter", nodeCacheCapable=True, enableHTTPS=True,
                        tlsConfig={"caData": ca_data})
    assert await passes(ext)


async def test_ca_file(make_server, make_extender, ca: trustme.CA, tmp_path: Path) -> None:
    srv = await start(make_server, server_context(ca, "127.0.0.1"))
    ca_file = tmp_path / "ca.crt"
    ca.cert_pem.write_to_path(str(ca_file))
    ext = make_extender(srv.url, filterVerb="filter", nodeCacheCapable=True, tlsConfig={"caFile": str(ca_file)})
    assert await passes(ext)


async def test_untrusted_server_is_refused(make_server, make_extender, ca: trustme.CA) -> None:
    srv = await start(make_server, server_context(ca, "127.0.0.1"))
    other = trustme.CA()
    ext = make_extender(srv.url, filterVerb="filter", nodeCacheCapable=True, enableHTTPS=True,
                        tlsConfig={"caData": b64(other.cert_pem.bytes())})
    with pytest.raises(ExtenderError, match=r"failed filter with extender at URL https://.*(?i:certificate)"):
        await ext.filter(make_pod("p"), NODES)
    # Without any TLS config the system roots apply, which do not know the test CA either.
    plain = make_extender(srv.url, filterVerb="filter", nodeCacheCapable=True)
    with pytest.raises(ExtenderError, match=r"(?i)certificate"):
        await plain.filter(make_pod("p"), NODES)


async def test_enable_https_without_ca_does_not_verify(make_server, make_extender, ca: trustme.CA) -> None:
    """As upstream's makeTransport: enableHTTPS with no CA means an insecure transport."""
    srv = await start(make_server, server_context(ca, "somewhere.else"))
    ext = make_extender(srv.url, filterVerb="filter", nodeCacheCapable=True, enableHTTPS=True)
    assert await passes(ext)
    insecure = make_extender(srv.url, filterVerb="filter", nodeCacheCapable=True, tlsConfig={"insecure": True})
    assert await passes(insecure)


async def test_server_name(make_server, make_extender, ca: trustme.CA) -> None:
    srv = await start(make_server, server_context(ca, "extender.example.com"))
    ca_data = b64(ca.cert_pem.bytes())
    wrong = make_extender(srv.url, filterVerb="filter", nodeCacheCapable=True, tlsConfig={"caData": ca_data})
    with pytest.raises(ExtenderError, match=r"(?i)certificate|hostname"):
        await wrong.filter(make_pod("p"), NODES)
    right = make_extender(srv.url, filterVerb="filter", nodeCacheCapable=True,
                          tlsConfig={"caData": ca_data, "serverName": "extender.example.com"})
    assert await passes(right)


@pytest.mark.parametrize("source", ["data", "files"])
async def test_client_certificate(make_server, make_extender, ca: trustme.CA, tmp_path: Path, source: str) -> None:
    client_ca = trustme.CA()
    srv = await start(make_server, server_context(ca, "127.0.0.1", client_ca=client_ca))
    ca_data = b64(ca.cert_pem.bytes())
    anonymous = make_extender(srv.url, filterVerb="filter", nodeCacheCapable=True, tlsConfig={"caData": ca_data})
    with pytest.raises(ExtenderError):
        await anonymous.filter(make_pod("p"), NODES)

    client = client_ca.issue_cert("kubeberth")
    cert = b"".join(blob.bytes() for blob in client.cert_chain_pems)
    key = client.private_key_pem.bytes()
    if source == "data":
        tls = {"caData": ca_data, "certData": b64(cert), "keyData": b64(key)}
    else:
        (tmp_path / "tls.crt").write_bytes(cert)
        (tmp_path / "tls.key").write_bytes(key)
        tls = {"caData": ca_data, "certFile": str(tmp_path / "tls.crt"), "keyFile": str(tmp_path / "tls.key")}
    ext = make_extender(srv.url, filterVerb="filter", nodeCacheCapable=True, tlsConfig=tls)
    assert await passes(ext)
