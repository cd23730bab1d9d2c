"""The secure port's options: kube-scheduler's secure-serving, authentication and authorization flags.

Kept free of heavy imports: `kubeberth run --help` and the config checks read it; the server itself
is `secure_serving.py`, its certificate `serving_certs.py`, the authenticator and authorizer
`delegated_auth.py`.
"""

from __future__ import annotations

import argparse
import ipaddress
import re
import socket
from dataclasses import dataclass, field

DEFAULT_ALWAYS_ALLOW_PATHS = ("/healthz", "/readyz", "/livez")
_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


class ServingOptionsError(ValueError):
    """A secure-serving option that cannot work, named."""


def go_duration(text: str) -> float:
    """A Go duration (`10s`, `1m30s`, `500ms`, `0`) in seconds; an argparse type."""
    s = text.strip()
    if s in ("0", "+0", "-0"):
        return 0.0
    pos, total = 0, 0.0
    while pos < len(s):
        m = _DURATION.match(s, pos)
        if m is None:
            raise argparse.ArgumentTypeError(f"not a duration: {text!r} (e.g. 10s, 1m30s, 500ms)")
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if not s:
        raise argparse.ArgumentTypeError("an empty duration")
    return total


def comma_list(text: str) -> tuple[str, ...]:
    """`a,b,c` -> ("a", "b", "c"); an argparse type (upstream's string slices)."""
    return tuple(p.strip() for p in text.split(",") if p.strip())


def is_loopback(host: str) -> bool:
    """Whether every address `host` names is a loopback one (127.0.0.0/8, ::1, localhost)."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(str(info[4][0]).split("%")[0]).is_loopback for info in infos)


@dataclass
class ServingOptions:
    """How port 10259 (--metrics-port) is served. The defaults are kube-scheduler's."""

    insecure: bool = False  # --metrics-insecure: plain HTTP, no authn/authz, loopback only
    tls_cert_file: str | None = None
    tls_private_key_file: str | None = None
    client_ca_file: str | None = None
    requestheader_client_ca_file: str | None = None
    requestheader_allowed_names: tuple[str, ...] = ()
    requestheader_username_headers: tuple[str, ...] = ("X-Remote-User",)
    requestheader_uid_headers: tuple[str, ...] = ()
    requestheader_group_headers: tuple[str, ...] = ("X-Remote-Group",)
    requestheader_extra_headers_prefix: tuple[str, ...] = ("X-Remote-Extra-",)
    authentication_skip_lookup: bool = False
    token_cache_ttl: float = 10.0
    authorized_cache_ttl: float = 10.0
    unauthorized_cache_ttl: float = 10.0
    always_allow_paths: tuple[str, ...] = DEFAULT_ALWAYS_ALLOW_PATHS
    always_allow_groups: tuple[str, ...] = field(default=("system:masters",))

    def check(self, host: str) -> None:
        """Raise ServingOptionsError for options that cannot work, before anything starts."""
        if self.insecure:
            if not is_loopback(host):
                raise ServingOptionsError(
                    f"--metrics-insecure serves /metrics over plain HTTP to anyone who can connect: it needs a "
                    f"loopback --metrics-host (e.g. 127.0.0.1), not {host!r}")
            return
        if bool(self.tls_cert_file) != bool(self.tls_private_key_file):
            raise ServingOptionsError("--tls-cert-file and --tls-private-key-file go together: give both or neither")
        if self.tls_cert_file and self.tls_private_key_file:
            from .serving_certs import read_keypair, server_ssl_context

            try:
                pair = read_keypair(self.tls_cert_file, self.tls_private_key_file)
                assert pair is not None
                server_ssl_context(pair)
            except ValueError as exc:
                raise ServingOptionsError(f"--tls-cert-file {self.tls_cert_file} / --tls-private-key-file "
                                          f"{self.tls_private_key_file}: {exc}") from None
        for flag, path in (("--client-ca-file", self.client_ca_file),
                           ("--requestheader-client-ca-file", self.requestheader_client_ca_file)):
            if path:
                from .delegated_auth import load_pem_file  # cryptography: only for a file to read

                try:
                    load_pem_file(path, flag)
                except ValueError as exc:
                    raise ServingOptionsError(str(exc)) from None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ServingOptions:
        return cls(
            insecure=bool(getattr(args, "metrics_insecure", False)),
            tls_cert_file=getattr(args, "tls_cert_file", None),
            tls_private_key_file=getattr(args, "tls_private_key_file", None),
            client_ca_file=getattr(args, "client_ca_file", None),
            requestheader_client_ca_file=getattr(args, "requestheader_client_ca_file", None),
            requestheader_allowed_names=getattr(args, "requestheader_allowed_names", ()),
            requestheader_username_headers=getattr(args, "requestheader_username_headers", ("X-Remote-User",)),
            requestheader_uid_headers=getattr(args, "requestheader_uid_headers", ()),
            requestheader_group_headers=getattr(args, "requestheader_group_headers", ("X-Remote-Group",)),
            requestheader_extra_headers_prefix=getattr(args, "requestheader_extra_headers_prefix",
                                                       ("X-Remote-Extra-",)),
            authentication_skip_lookup=bool(getattr(args, "authentication_skip_lookup", False)),
            token_cache_ttl=getattr(args, "authentication_token_webhook_cache_ttl", 10.0),
            authorized_cache_ttl=getattr(args, "authorization_webhook_cache_authorized_ttl", 10.0),
            unauthorized_cache_ttl=getattr(args, "authorization_webhook_cache_unauthorized_ttl", 10.0),
            always_allow_paths=getattr(args, "authorization_always_allow_paths", DEFAULT_ALWAYS_ALLOW_PATHS))


def add_serving_arguments(parser: argparse.ArgumentParser) -> None:
    sec = parser.add_argument_group(
        "secure serving (kube-scheduler's flags)",
        "The metrics port serves HTTPS; callers are authenticated by TokenReview or client certificate and "
        "authorized by SubjectAccessReview (get on /metrics); /healthz, /livez and /readyz need no token.")
    sec.add_argument("--metrics-insecure", action="store_true",
                     help="development only: serve the metrics port over plain HTTP without authentication or "
                          "authorization; needs a loopback --metrics-host (e.g. 127.0.0.1)")
    sec.add_argument("--tls-cert-file", metavar="PATH", default=None,
                     help="the serving certificate (PEM, with its chain); default: a self-signed one made at start")
    sec.add_argument("--tls-private-key-file", metavar="PATH", default=None,
                     help="the private key of --tls-cert-file (PEM)")
    sec.add_argument("--client-ca-file", metavar="PATH", default=None,
                     help="accept client certificates issued by these CAs (user: CommonName, groups: Organization); "
                          "default: client-ca-file of ConfigMap kube-system/extension-apiserver-authentication")
    sec.add_argument("--requestheader-client-ca-file", metavar="PATH", default=None,
                     help="trust the user headers of a front proxy whose client certificate these CAs issued; "
                          "default: that ConfigMap's requestheader-client-ca-file")
    sec.add_argument("--requestheader-allowed-names", metavar="NAMES", type=comma_list, default=(),
                     help="the front proxy's certificate CommonNames allowed (comma-separated; empty: any)")
    sec.add_argument("--requestheader-username-headers", metavar="HEADERS", type=comma_list,
                     default=("X-Remote-User",), help="headers holding the user name (default: X-Remote-User)")
    sec.add_argument("--requestheader-uid-headers", metavar="HEADERS", type=comma_list, default=(),
                     help="headers holding the user's UID (default: none)")
    sec.add_argument("--requestheader-group-headers", metavar="HEADERS", type=comma_list,
                     default=("X-Remote-Group",), help="headers holding the groups (default: X-Remote-Group)")
    sec.add_argument("--requestheader-extra-headers-prefix", metavar="PREFIXES", type=comma_list,
                     default=("X-Remote-Extra-",), help="prefixes of the extra headers (default: X-Remote-Extra-)")
    sec.add_argument("--authentication-skip-lookup", action="store_true",
                     help="do not read ConfigMap kube-system/extension-apiserver-authentication for missing CAs")
    sec.add_argument("--authentication-token-webhook-cache-ttl", metavar="DURATION", type=go_duration,
                     default=10.0, help="how long a TokenReview's answer is cached (default: 10s)")
    sec.add_argument("--authorization-webhook-cache-authorized-ttl", metavar="DURATION", type=go_duration,
                     default=10.0, help="how long an allowing SubjectAccessReview is cached (default: 10s)")
    sec.add_argument("--authorization-webhook-cache-unauthorized-ttl", metavar="DURATION", type=go_duration,
                     default=10.0, help="how long a refusing SubjectAccessReview is cached (default: 10s)")
    sec.add_argument("--authorization-always-allow-paths", metavar="PATHS", type=comma_list,
                     default=DEFAULT_ALWAYS_ALLOW_PATHS,
                     help="paths served without authorization (comma-separated; `/x/*` for a prefix; "
                          "default: /healthz,/readyz,/livez)")
