"""build_extenders: a profile's extenders, and invalid configuration rejected with the field named."""

from __future__ import annotations

import base64
from typing import Any

import pytest
import trustme

from kubeberth.config import ConfigError, parse_spec
from kubeberth.config.models import ExtenderConfig
from kubeberth.extender import HTTPExtender, build_extenders, is_extended_resource_name

URL = "http://127.0.0.1:1/api"


def spec(*extenders: dict[str, Any]):
    return parse_spec({"extenders": list(extenders)})


def test_builds_in_order_with_capabilities() -> None:
    exts = build_extenders(spec(
        {"urlPrefix": URL + "/a", "filterVerb": "filter", "prioritizeVerb": "prio", "weight": 4,
         "httpTimeout": "250ms", "nodeCacheCapable": True, "ignorable": True},
        {"urlPrefix": URL + "/b", "preemptVerb": "preempt", "bindVerb": "bind"}))
    a, b = exts
    assert all(isinstance(e, HTTPExtender) for e in exts)
    assert (a.name, a.is_filter, a.is_prioritizer, a.supports_preemption, a.is_binder) == (
        URL + "/a", True, True, False, False)
    assert (a.weight, a.timeout, a.node_cache_capable, a.is_ignorable) == (4, 0.25, True, True)
    assert (b.is_filter, b.is_prioritizer, b.supports_preemption, b.is_binder, b.is_ignorable) == (
        False, False, True, True, False)
    assert b.timeout == 30.0  # upstream's default httpTimeout
    assert build_extenders(spec()) == []


def test_nothing_connects_at_build() -> None:
    ext = build_extenders(spec({"urlPrefix": "http://does-not-resolve.invalid/x", "filterVerb": "f"}))[0]
    assert ext._session is None


@pytest.mark.parametrize(
    ("extenders", "path", "message"),
    [
        pytest.param([{"urlPrefix": URL, "managedResources": [{"name": "foo"}]}],
                     "spec.extenders[0].managedResources[0].name", "invalid extended resource name",
                     id="not-namespaced"),
        pytest.param([{"urlPrefix": URL, "managedResources": [{"name": "kubernetes.io/foo"}]}],
                     "spec.extenders[0].managedResources[0].name", "invalid extended resource name",
                     id="kubernetes-io"),
        pytest.param([{"urlPrefix": URL, "managedResources": [{"name": "Example.com/foo"}]}],
                     "spec.extenders[0].managedResources[0].name", "subdomain", id="bad-prefix"),
        pytest.param([{"urlPrefix": URL, "managedResources": [{"name": "example.com/-foo"}]}],
                     "spec.extenders[0].managedResources[0].name", "name part", id="bad-name"),
        pytest.param([{"urlPrefix": URL, "managedResources": [{"name": "example.com/foo"}]},
                      {"urlPrefix": URL, "managedResources": [{"name": "example.com/bar"},
                                                              {"name": "example.com/foo"}]}],
                     "spec.extenders[1].managedResources[1].name", "duplicate extender managed resource name",
                     id="duplicate-across-extenders"),
        pytest.param([{"urlPrefix": "https://127.0.0.1:1", "tlsConfig": {"insecure": True, "caData": "x"}}],
                     "spec.extenders[0].tlsConfig.insecure", "insecure flag is not allowed", id="insecure-with-ca"),
        pytest.param([{"urlPrefix": "https://127.0.0.1:1", "tlsConfig": {"caData": "!!not base64!!"}}],
                     "spec.extenders[0].tlsConfig.caData", "base64", id="ca-data-not-base64"),
        pytest.param([{"urlPrefix": "https://127.0.0.1:1",
                       "tlsConfig": {"caData": base64.b64encode(b"hello").decode()}}],
                     "spec.extenders[0].tlsConfig.caData", "PEM", id="ca-data-not-pem"),
        pytest.param([{"urlPrefix": "https://127.0.0.1:1",
                       "tlsConfig": {"caData": "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"}}],
                     "spec.extenders[0].tlsConfig.caData", "invalid CA certificate", id="ca-data-garbage-pem"),
        pytest.param([{"urlPrefix": URL}, {"urlPrefix": "https://127.0.0.1:1",
                                           "tlsConfig": {"caFile": "/nonexistent/ca.crt"}}],
                     "spec.extenders[1].tlsConfig.caFile", "cannot read", id="ca-file-missing"),
        pytest.param([{"urlPrefix": "https://127.0.0.1:1", "tlsConfig": {"certFile": "/x.crt"}}],
                     "spec.extenders[0].tlsConfig.keyData", "specified together", id="cert-without-key"),
        pytest.param([{"urlPrefix": "https://127.0.0.1:1", "tlsConfig": {"keyData": "x"}}],
                     "spec.extenders[0].tlsConfig.certData", "specified together", id="key-without-cert"),
    ],
)
def test_invalid_config_names_the_field(extenders: list[dict[str, Any]], path: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        build_extenders(spec(*extenders))
    assert info.value.path == path
    assert message in info.value.detail


def test_client_key_mismatch_is_rejected() -> None:
    ca = trustme.CA()
    one, two = ca.issue_cert("a"), ca.issue_cert("b")
    tls = {"certData": one.cert_chain_pems[0].bytes().decode(), "keyData": two.private_key_pem.bytes().decode()}
    with pytest.raises(ConfigError) as info:
        build_extenders(spec({"urlPrefix": "https://127.0.0.1:1", "tlsConfig": tls}))
    assert info.value.path.startswith("spec.extenders[0].tlsConfig.")
    assert "client certificate or key" in info.value.detail


@pytest.mark.parametrize(
    ("extenders", "path"),
    [
        pytest.param([{"urlPrefix": URL, "prioritizeVerb": "p", "weight": 0}], "spec.extenders[0]", id="weight"),
        pytest.param([{"urlPrefix": "ftp://x"}], "spec.extenders[0].urlPrefix", id="url"),
        pytest.param([{"urlPrefix": URL, "httpTimeout": "soon"}], "spec.extenders[0].httpTimeout", id="timeout"),
        pytest.param([{"urlPrefix": URL, "bindVerb": "b"}, {"urlPrefix": URL, "bindVerb": "b"}], "spec",
                     id="two-binders"),
        pytest.param([{"urlPrefix": URL, "filterverb": "f"}], "spec.extenders[0].filterverb", id="unknown-field"),
    ],
)
def test_profile_parsing_rejects_invalid_extenders(extenders: list[dict[str, Any]], path: str) -> None:
    with pytest.raises(ConfigError) as info:
        spec(*extenders)
    assert info.value.path.startswith(path)


def test_validation_of_configs_built_in_code() -> None:
    """Configs made without the spec validator still get upstream's checks."""
    two = [ExtenderConfig.model_construct(urlPrefix=URL, bindVerb="b", managedResources=[], prioritizeVerb="",
                                          weight=1, tlsConfig=None, enableHTTPS=False, httpTimeout="1s",
                                          nodeCacheCapable=False, ignorable=False, filterVerb="", preemptVerb="")
           for _ in range(2)]
    with pytest.raises(ConfigError, match="only one extender can implement bind") as info:
        build_extenders(two)
    assert info.value.path == "spec.extenders"


@pytest.mark.parametrize(
    ("name", "want"),
    [("example.com/foo", True), ("nvidia.com/gpu", True), ("foo", False), ("cpu", False),
     ("kubernetes.io/foo", False), ("requests.example.com/foo", False), ("example.com/", False),
     ("/foo", False), ("a/b/c", False), ("example.com/" + "x" * 64, False)],
)
def test_is_extended_resource_name(name: str, want: bool) -> None:
    assert is_extended_resource_name(name) is want
