"""Where the API server is and who kubeberth is to it: `--server`, in-cluster, or a kubeconfig.

Kept apart from `app.py` (which imports the whole scheduler) so that the initial lists can go out
before the rest of kubeberth is imported (`prefetch.py`).
"""

from __future__ import annotations

import os
from typing import Protocol

from kubernetes_asyncio import config as k8s_config
from kubernetes_asyncio.client import Configuration

from .credentials import SERVICE_ACCOUNT_TOKEN, Credentials, kubeconfig_user

__all__ = ["ConnectionOptions", "load_configuration", "load_credentials"]


class ConnectionOptions(Protocol):
    """The options of `kubeberth run` that say how to connect (`OperatorConfig` has them)."""

    @property
    def kubeconfig(self) -> str | None: ...
    @property
    def context(self) -> str | None: ...
    @property
    def in_cluster(self) -> bool | None: ...
    @property
    def server(self) -> str | None: ...


async def load_configuration(config: ConnectionOptions) -> Configuration:
    """The kubernetes-asyncio configuration: --server, in-cluster, or a kubeconfig."""
    cfg = Configuration()
    if config.server:
        cfg.host = config.server.rstrip("/")
        return cfg
    in_cluster = config.in_cluster
    if in_cluster is None:
        in_cluster = config.kubeconfig is None and "KUBERNETES_SERVICE_HOST" in os.environ
    if in_cluster:
        k8s_config.load_incluster_config(client_configuration=cfg)
    else:
        await k8s_config.load_kube_config(config_file=config.kubeconfig, context=config.context,
                                          client_configuration=cfg)
    return cfg


def load_credentials(config: ConnectionOptions, cfg: Configuration) -> Credentials:
    """Where the token of `cfg` comes from: the ServiceAccount's token file in-cluster, a kubeconfig
    user's tokenFile (both read again as client-go does), else what the configuration holds."""
    if config.server:
        return Credentials(cfg, description=f"no credentials (--server {cfg.host})")
    in_cluster = config.in_cluster
    if in_cluster is None:
        in_cluster = config.kubeconfig is None and "KUBERNETES_SERVICE_HOST" in os.environ
    if in_cluster:
        return Credentials(cfg, token_file=SERVICE_ACCOUNT_TOKEN,
                           description=f"the ServiceAccount token file {SERVICE_ACCOUNT_TOKEN}")
    user = kubeconfig_user(config.kubeconfig, config.context)
    if user is None:
        return Credentials(cfg)
    return Credentials(cfg, token_file=user.token_file, description=user.describe())
