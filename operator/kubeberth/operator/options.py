"""Everything `kubeberth run` can be told: its flags (`add_run_arguments`), their checks and the
`OperatorConfig` they make (`config_from_args`, with a --config KubeSchedulerConfiguration read by
`load_config_file`), as kube-scheduler's `cmd/kube-scheduler/app/options`. Kept free of heavy
imports: `kubeberth run --help` reads it. The command itself is `run.py`; the operator `app.py`.
"""

from __future__ import annotations

import argparse
import logging
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..argtypes import positive
from .api_client import DEFAULT_BIND_CONCURRENCY
from .serving_options import ServingOptions, ServingOptionsError, add_serving_arguments

if TYPE_CHECKING:
    from .leader import LeaseConfig


DEFAULT_METRICS_PORT = 10259


DEFAULT_DRY_RUN_PORT = 10260


DEFAULT_LEASE_NAME = "kubeberth"


DEFAULT_LEASE_NAMESPACE = "kubeberth-system"


SERVICE_ACCOUNT_NAMESPACE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"


def default_lease_namespace() -> str:
    """The pod's own namespace (POD_NAMESPACE, or the service account's), else kubeberth-system."""
    if os.environ.get("POD_NAMESPACE"):
        return os.environ["POD_NAMESPACE"]
    try:
        with open(SERVICE_ACCOUNT_NAMESPACE) as f:
            return f.read().strip() or DEFAULT_LEASE_NAMESPACE
    except OSError:
        return DEFAULT_LEASE_NAMESPACE


class ConnectionConfigError(Exception):
    """The kubeconfig or the in-cluster configuration cannot be used: what and where, in one line."""


@dataclass
class OperatorConfig:
    """Everything `kubeberth run` can be told. The defaults are the in-cluster ones."""

    kubeconfig: str | None = None
    context: str | None = None
    in_cluster: bool | None = None  # None: in-cluster if its environment is there, else kubeconfig
    server: str | None = None  # a fixed API server URL without credentials (tests, kubectl proxy)
    leader_elect: bool = False  # HA: replicas elect a leader through a Lease; all keep warm caches
    lease_name: str = DEFAULT_LEASE_NAME
    lease_namespace: str | None = None  # None: default_lease_namespace()
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    liveness: str | None = None  # e.g. http://0.0.0.0:8080/healthz
    metrics_port: int | None = DEFAULT_METRICS_PORT  # None or 0 disables the metrics server
    metrics_host: str = "0.0.0.0"
    serving: ServingOptions = field(default_factory=ServingOptions)  # HTTPS and delegated authn/authz
    request_timeout: float = 10.0
    bind_concurrency: int = DEFAULT_BIND_CONCURRENCY  # bindings in flight at once
    # The dry runs (docs/guides/dry-run.md): the port of the process serving them (HTTPS as the secure
    # port; None or 0: no dry runs), the age at which their copy of the cache is refreshed (seconds;
    # 0: no dry runs) and how many may wait.
    dry_run_port: int | None = DEFAULT_DRY_RUN_PORT
    dry_run_refresh: float = 2.0
    dry_run_max_queue: int = 32
    kueue_admission_check: bool = False  # answer Kueue's AdmissionChecks of controllerName kubeberth.io/dry-run
    percentage_of_nodes_to_score: int = 0  # scheduler-wide; 0: adaptive
    seed: int | None = None
    default_profile: bool = True  # serve default-scheduler with upstream's defaults absent a profile
    verbose: bool = False
    debug: bool = False
    log_format: str = "plain"
    # Profiles of a --config KubeSchedulerConfiguration (SchedulingProfile objects), in force from start-up
    # beside the SchedulingProfile resources.
    config_profiles: list[dict[str, Any]] = field(default_factory=list)
    # kopf settings by dotted path, e.g. {"networking.error_backoffs": [0.1, 0.5]} (tests).
    extra_settings: dict[str, Any] = field(default_factory=dict)

    def lease(self) -> LeaseConfig:
        from .leader import LeaseConfig

        return LeaseConfig(namespace=self.lease_namespace or default_lease_namespace(), name=self.lease_name,
                           lease_duration=self.lease_duration, renew_deadline=self.renew_deadline,
                           retry_period=self.retry_period)



def percentage(text: str) -> int:
    """An argparse type: a whole number from 0 to 100."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"must be from 0 to 100, not {value}")
    return value


PERCENTAGE_HELP = ("the scheduler-wide percentageOfNodesToScore: the share of feasible nodes to find "
                   "before scoring; a profile's own value wins; 0: upstream's adaptive share (default: 0)")


def add_run_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    conn = parser.add_argument_group("cluster connection")
    conn.add_argument("--kubeconfig", metavar="PATH", default=None,
                      help="kubeconfig file to use (default: $KUBECONFIG or ~/.kube/config, or the "
                           "in-cluster service account when running in a pod)")
    conn.add_argument("--context", metavar="NAME", default=None, help="kubeconfig context to use")
    conn.add_argument("--in-cluster", dest="in_cluster", action="store_true", default=None,
                      help="use the pod's service account (the default inside a cluster)")
    conn.add_argument("--server", metavar="URL", default=None,
                      help="talk to this API server URL without credentials (e.g. `kubectl proxy`)")
    conn.add_argument("--request-timeout", metavar="SECONDS", type=float, default=10.0,
                      help="timeout of one API request; 5xx and timeouts are retried with backoff "
                           "(default: 10)")
    conn.add_argument("--bind-concurrency", metavar="N", type=positive, default=DEFAULT_BIND_CONCURRENCY,
                      help="bindings sent at once; more wait their turn, the scheduling loop never waits "
                           f"for them (default: {DEFAULT_BIND_CONCURRENCY})")
    ha = parser.add_argument_group("high availability (kube-scheduler's flags)")
    ha.add_argument("--leader-elect", action="store_true",
                    help="elect a leader through a coordination.k8s.io Lease: every replica lists, watches and "
                         "keeps its cache and queue current; only the leader schedules")
    ha.add_argument("--leader-elect-resource-name", dest="lease_name", metavar="NAME", default=DEFAULT_LEASE_NAME,
                    help=f"the Lease's name (default: {DEFAULT_LEASE_NAME})")
    ha.add_argument("--leader-elect-resource-namespace", dest="lease_namespace", metavar="NS", default=None,
                    help="the Lease's namespace (default: the pod's own namespace, else "
                         f"{DEFAULT_LEASE_NAMESPACE})")
    ha.add_argument("--leader-elect-lease-duration", dest="lease_duration", metavar="SECONDS", type=float,
                    default=15.0, help="how long a standby waits after the leader's last renewal (default: 15)")
    ha.add_argument("--leader-elect-renew-deadline", dest="renew_deadline", metavar="SECONDS", type=float,
                    default=10.0, help="how long the leader keeps trying to renew before it gives up (default: 10)")
    ha.add_argument("--leader-elect-retry-period", dest="retry_period", metavar="SECONDS", type=float,
                    default=2.0, help="the pause between attempts to acquire or renew (default: 2)")
    ha.add_argument("--peering", metavar="NAME", nargs="?", const=DEFAULT_LEASE_NAME, default=None,
                    help=argparse.SUPPRESS)  # before the Lease: same as --leader-elect with that Lease name
    obs = parser.add_argument_group("observability")
    obs.add_argument("--liveness", metavar="URL", default=None,
                     help="serve kopf's liveness probe at this URL, e.g. http://0.0.0.0:8080/healthz")
    obs.add_argument("--metrics-port", "--secure-port", dest="metrics_port", metavar="PORT", type=int,
                     default=DEFAULT_METRICS_PORT,
                     help=f"the secure port: HTTPS with /metrics (scheduler_*), /healthz, /livez, /readyz "
                          f"(default: {DEFAULT_METRICS_PORT}; 0 disables)")
    obs.add_argument("--metrics-host", "--bind-address", dest="metrics_host", metavar="ADDR", default="0.0.0.0",
                     help="address the secure port listens on (default: 0.0.0.0)")
    obs.add_argument("--dry-run-port", dest="dry_run_port", metavar="PORT", type=int, default=DEFAULT_DRY_RUN_PORT,
                     help=f"the dry runs' port, served by a process of their own on --metrics-host with the secure "
                          f"port's TLS and authentication (default: {DEFAULT_DRY_RUN_PORT}; 0 disables the dry runs)")
    obs.add_argument("--dry-run-refresh", dest="dry_run_refresh", metavar="SECONDS", type=float, default=2.0,
                     help="the dry runs are answered from a fork of the operator; one older than this is replaced "
                          "while dry runs come (default: 2; 0 disables the dry runs)")
    obs.add_argument("--dry-run-max-queue", dest="dry_run_max_queue", metavar="N", type=positive, default=32,
                     help="dry runs waiting at most; more are answered 429 (default: 32)")
    obs.add_argument("--kueue-admission-check", dest="kueue_admission_check", action="store_true",
                     help="answer Kueue's AdmissionChecks whose controllerName is kubeberth.io/dry-run by dry runs of "
                          "their workloads (docs/guides/kueue.md; needs Kueue's CRDs and RBAC)")
    obs.add_argument("--verbose", "-v", action="store_true", help="log more (kopf's verbose mode)")
    obs.add_argument("--debug", action="store_true", help="log everything, including API traffic")
    obs.add_argument("--log-format", choices=["plain", "full", "json"], default="plain",
                     help="log line format (default: plain)")
    add_serving_arguments(parser)
    sched = parser.add_argument_group("scheduling")
    sched.add_argument("--percentage-of-nodes-to-score", dest="percentage_of_nodes_to_score", metavar="PERCENT",
                       type=percentage, default=0, help=PERCENTAGE_HELP)
    sched.add_argument("--seed", type=int, default=None,
                       help="seed of the random tie-breaks between equally scored nodes (default: random)")
    sched.add_argument("--config", metavar="FILE", default=None,
                       help="a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) taken as is: each "
                            "profile serves its schedulerName from start-up, as a SchedulingProfile would; "
                            "its percentageOfNodesToScore applies unless the flag is given")
    sched.add_argument("--no-default-profile", dest="default_profile", action="store_false",
                       help="do not schedule pods of default-scheduler unless a SchedulingProfile names it "
                            "(use this when the cluster's own kube-scheduler runs beside kubeberth)")
    parser.epilog = (parser.epilog or "") + (
        "kubeberth always watches the whole cluster (a scheduler must see every pod on a node). "
        "It serves the schedulerNames of the SchedulingProfile resources (kubectl get sprof) and, "
        "unless --no-default-profile, default-scheduler with upstream's default plugins.")
    return parser


class BadConfigFile(ValueError):
    """--config names a file that is not a valid KubeSchedulerConfiguration."""


def load_config_file(path: str) -> tuple[list[dict[str, Any]], int | None]:
    """The profiles (SchedulingProfile objects) and the scheduler-wide percentageOfNodesToScore of a
    --config file; its warnings are logged. Raises BadConfigFile naming the problem."""
    import yaml

    from ..config import ConfigError
    from ..config.kube_config import import_config

    try:
        with open(path) as f:
            docs = [d for d in yaml.safe_load_all(f) if d is not None]
    except OSError as exc:
        raise BadConfigFile(f"{path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise BadConfigFile(f"{path}: invalid YAML: {exc}") from None
    if len(docs) != 1:
        raise BadConfigFile(f"{path}: want exactly one KubeSchedulerConfiguration document, found {len(docs)}")
    try:
        imported = import_config(docs[0], path)
    except ConfigError as exc:
        raise BadConfigFile(str(exc)) from None
    from ..plugins import plugin_registry
    from ..profile import check_config_profiles

    try:
        check_config_profiles(imported.profiles, plugin_registry())  # refuse at start-up what could not run
    except ConfigError as exc:
        raise BadConfigFile(f"{path}: {exc.path}: {exc.detail}") from None
    for line in imported.warnings:
        logging.getLogger(__name__).warning("%s: %s", path, line)
    return imported.profiles, imported.percentage_of_nodes_to_score


def config_from_args(args: argparse.Namespace) -> OperatorConfig:
    """Raises BadConfigFile for an invalid --config, ServingOptionsError for secure-serving options
    (or a --liveness URL) that cannot work."""
    metrics_port = getattr(args, "metrics_port", DEFAULT_METRICS_PORT)
    serving = ServingOptions.from_args(args)
    dry_run_port = getattr(args, "dry_run_port", DEFAULT_DRY_RUN_PORT)
    if metrics_port or dry_run_port:
        serving.check(getattr(args, "metrics_host", "0.0.0.0"))
    if args.liveness:
        from .liveness import parse_endpoint

        try:
            parse_endpoint(args.liveness)
        except ValueError as exc:
            raise ServingOptionsError(str(exc)) from None
    profiles: list[dict[str, Any]] = []
    percentage = args.percentage_of_nodes_to_score
    if getattr(args, "config", None):
        profiles, config_pct = load_config_file(args.config)
        if not percentage and config_pct is not None:
            percentage = config_pct
    return OperatorConfig(config_profiles=profiles,
        kubeconfig=args.kubeconfig, context=args.context, in_cluster=args.in_cluster, server=args.server,
        leader_elect=bool(args.leader_elect or args.peering), lease_name=args.peering or args.lease_name,
        lease_namespace=args.lease_namespace, lease_duration=args.lease_duration,
        renew_deadline=args.renew_deadline, retry_period=args.retry_period, liveness=args.liveness,
        metrics_port=metrics_port or None, metrics_host=args.metrics_host, serving=serving,
        request_timeout=args.request_timeout, bind_concurrency=args.bind_concurrency, seed=args.seed,
        percentage_of_nodes_to_score=percentage,
        dry_run_port=dry_run_port or None, dry_run_refresh=getattr(args, "dry_run_refresh", 2.0),
        dry_run_max_queue=getattr(args, "dry_run_max_queue", 32),
        kueue_admission_check=getattr(args, "kueue_admission_check", False),
        default_profile=args.default_profile,
        verbose=args.verbose, debug=args.debug, log_format=args.log_format)
