"""How the operator reaches the API server: its configuration (--server, in-cluster or a
kubeconfig), where the token comes from (`Credentials`), kopf's login with the same credentials,
and kopf's retries of an API error (`RetryForever`)."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import kopf
from kubernetes_asyncio import config as k8s_config
from kubernetes_asyncio.client import Configuration
from kubernetes_asyncio.client.exceptions import ApiException

from .credentials import SERVICE_ACCOUNT_TOKEN, Credentials, kubeconfig_user
from .options import ConnectionConfigError, OperatorConfig
from .reflector import Backoff
from .rest import RestClient

logger = logging.getLogger("kubeberth.operator.app")  # the operator's lines, under one name as before


LOGIN_SECONDS = 600.0  # kopf logs in again this often (the token is read again on the way)


class RetryForever:
    """kopf's `networking.error_backoffs`: 1, 2, 4 ... 30 s, then 30 s for ever. An iterable that is
    not Sized, so kopf retries an API error for as long as it lasts instead of ending the process."""

    def __init__(self, initial: float = 1.0, maximum: float = 30.0) -> None:
        self.initial = initial
        self.maximum = maximum

    def __iter__(self) -> Iterator[float]:
        delay = self.initial
        while True:
            yield delay
            delay = min(delay * 2, self.maximum)


async def load_configuration(config: OperatorConfig) -> Configuration:
    """The kubernetes-asyncio configuration: --server, in-cluster, or a kubeconfig.
    Raises ConnectionConfigError naming the file (or the in-cluster setting) that cannot be used."""
    if (config.kubeconfig and not config.server and not uses_in_cluster(config)
            and not os.path.isfile(config.kubeconfig)):
        raise ConnectionConfigError(f"--kubeconfig {config.kubeconfig}: no such file")
    try:
        return await _load_configuration(config)
    except (k8s_config.ConfigException, OSError, ValueError, TypeError, KeyError) as exc:
        raise ConnectionConfigError(_where(config) + ": " + (str(exc) or type(exc).__name__)) from None


def uses_in_cluster(config: OperatorConfig) -> bool:
    """--in-cluster, or neither --in-cluster nor --kubeconfig given inside a pod (as client-go)."""
    if config.in_cluster is not None:
        return config.in_cluster
    return config.kubeconfig is None and "KUBERNETES_SERVICE_HOST" in os.environ


def _where(config: OperatorConfig) -> str:
    if uses_in_cluster(config):
        return "the in-cluster configuration"
    if config.kubeconfig:
        return f"--kubeconfig {config.kubeconfig}"
    return "the kubeconfig ($KUBECONFIG or ~/.kube/config)"


async def _load_configuration(config: OperatorConfig) -> Configuration:
    cfg = Configuration()
    if config.server:
        cfg.host = config.server.rstrip("/")
        return cfg
    if uses_in_cluster(config):
        k8s_config.load_incluster_config(client_configuration=cfg)
    else:
        await k8s_config.load_kube_config(config_file=config.kubeconfig, context=config.context,
                                          client_configuration=cfg)
    return cfg


def load_credentials(config: OperatorConfig, cfg: Configuration) -> Credentials:
    """Where the token of `cfg` comes from: the ServiceAccount's token file in-cluster, a kubeconfig
    user's tokenFile (both read again as client-go does), else what the configuration holds."""
    if config.server:
        return Credentials(cfg, description=f"no credentials (--server {cfg.host})")
    if uses_in_cluster(config):
        return Credentials(cfg, token_file=SERVICE_ACCOUNT_TOKEN,
                           description=f"the ServiceAccount token file {SERVICE_ACCOUNT_TOKEN}")
    user = kubeconfig_user(config.kubeconfig, config.context)
    if user is None:
        return Credentials(cfg)
    return Credentials(cfg, token_file=user.token_file, description=user.describe())


async def login(cfg: Configuration, rest: RestClient, credentials: Credentials, *, request_timeout: float,
                sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep) -> kopf.ConnectionInfo:
    """kopf logs in with the same credentials as the scheduler's API client, once the API server
    accepts them. kopf ends the process when a login gives it nothing new after a 401, so this
    never gives up: while the server answers 401 it waits with backoff, reading the token again
    (`Credentials`); an unreachable server is no credentials problem (kopf's own requests retry).
    Each answer is a new ConnectionInfo (its expiration differs), which kopf never takes for the
    one it invalidated, even when the token is the same one the server refused for a while."""
    backoff = Backoff(initial=1.0, maximum=30.0)
    waited = False
    while True:
        try:
            await rest.request("GET", "/api", timeout=request_timeout)
            break
        except asyncio.CancelledError:
            raise
        except ApiException as exc:
            if exc.status != 401:
                break  # authenticated (a 403 is about permissions) or an outage
        except Exception:
            break
        if not waited:
            waited = True
            logger.warning("kopf's login waits until the API server %s accepts the credentials of %s",
                           credentials.server, credentials.description)
        await sleep(backoff.next())
    header = await credentials.authorization()
    parts = header.split(" ", 1) if header else []
    scheme, token = ((None, None) if not parts else (None, parts[0]) if len(parts) == 1 else (parts[0], parts[1]))
    return kopf.ConnectionInfo(
        server=str(cfg.host), ca_path=cfg.ssl_ca_cert, insecure=not cfg.verify_ssl,
        username=cfg.username or None, password=cfg.password or None, scheme=scheme, token=token,
        certificate_path=cfg.cert_file, private_key_path=cfg.key_file, proxy_url=cfg.proxy,
        default_namespace="default",
        expiration=datetime.now(UTC) + timedelta(seconds=LOGIN_SECONDS))
