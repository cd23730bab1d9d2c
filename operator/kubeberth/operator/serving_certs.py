"""The secure port's TLS material: the files of --tls-cert-file/--tls-private-key-file read, a
self-signed certificate made when none is given (as kube-scheduler makes one), the server's SSL
context. Loads cryptography only to make a certificate; `serving_options.py` checks given files
with it before anything starts, `secure_serving.py` serves with it."""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
import tempfile
import time
from collections.abc import Sequence


def self_signed_certificate(host: str = "localhost", ips: Sequence[str] = ("127.0.0.1",),
                            now: float | None = None) -> tuple[bytes, bytes]:
    """(certificate PEM, private key PEM): a CA-less self-signed serving certificate for `host` and `ips`,
    valid for a year, named `host@<unix time>` as kube-scheduler names the one it makes."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    start = datetime.datetime.fromtimestamp(now if now is not None else time.time(), datetime.UTC)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{host}@{int(start.timestamp())}")])
    sans: list[x509.GeneralName] = [x509.DNSName(host), *(x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips)]
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start - datetime.timedelta(hours=1))
            .not_valid_after(start + datetime.timedelta(days=365))
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_encipherment=True, key_cert_sign=True,
                                         content_commitment=False, data_encipherment=False, key_agreement=False,
                                         crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(key, hashes.SHA256()))
    return (cert.public_bytes(serialization.Encoding.PEM),
            key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()))


def read_keypair(cert_file: str | None, key_file: str | None) -> tuple[bytes, bytes] | None:
    """The PEM bytes of --tls-cert-file and --tls-private-key-file (None when neither is given);
    ValueError naming the file that cannot be read."""
    if not (cert_file or key_file):
        return None
    if not (cert_file and key_file):
        raise ValueError("--tls-cert-file and --tls-private-key-file go together: give both or neither")
    out = []
    for flag, path in (("--tls-cert-file", cert_file), ("--tls-private-key-file", key_file)):
        try:
            with open(path, "rb") as f:
                out.append(f.read())
        except OSError as exc:
            raise ValueError(f"{flag} {path}: {exc.strerror}") from None
    return out[0], out[1]


def server_ssl_context(keypair: tuple[bytes, bytes], *, client_trust_pem: bytes = b"") -> ssl.SSLContext:
    """The TLS server context: the certificate (PEM, with its chain) and key, TLS 1.2+, and client
    certificates requested (not required) when there is a CA to verify them against. ValueError
    when the pair does not load."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.set_alpn_protocols(["http/1.1"])
    cert_pem, key_pem = keypair
    with tempfile.TemporaryDirectory(prefix="kubeberth-tls-") as d:  # ssl loads a chain from files only
        cert_path, key_path = os.path.join(d, "tls.crt"), os.path.join(d, "tls.key")
        fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(key_pem)
        with open(cert_path, "wb") as f:
            f.write(cert_pem)
        try:
            ctx.load_cert_chain(cert_path, key_path)
        except ssl.SSLError as exc:
            raise ValueError(f"the serving certificate and key do not load: {exc}") from None
    if client_trust_pem:
        ctx.load_verify_locations(cadata=client_trust_pem.decode())
        ctx.verify_mode = ssl.CERT_OPTIONAL
    return ctx
