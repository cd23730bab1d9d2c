"""Leader election through a coordination.k8s.io Lease, as kube-scheduler does it.

client-go's LeaderElector with kube-scheduler's defaults: a 15 s lease, a 10 s renew deadline,
a try every 2 s. A candidate takes the Lease when it is free or when its holder has not renewed
it for a lease duration *as observed by this process* (the holder's clock is never trusted:
the expiry runs from the moment this process last saw the record change). Writes carry the
resourceVersion read, so two candidates cannot both win.

Fencing: `is_leader` holds only while the last successful renewal is younger than the renew
deadline, by this process's monotonic clock. A leader frozen (SIGSTOP, a long GC, a VM pause)
for longer than that is no leader when it wakes, before it has talked to anyone: it writes
nothing until a renewal succeeds, and a renewal fails when another replica holds the Lease,
which ends leadership for good (`lost` is set; the operator then exits, as kube-scheduler does).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kubernetes_asyncio.client.exceptions import ApiException

from .rest import RestClient

logger = logging.getLogger(__name__)


# How long after the observed lapse a standby tries: past it, by the monotonic clock it compares with.
LAPSE_MARGIN = 0.01


@dataclass(frozen=True)
class LeaseConfig:
    namespace: str = "kubeberth-system"
    name: str = "kubeberth"
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0


def micro_time(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(self, *, rest: RestClient, identity: str, config: LeaseConfig | None = None,
                 monotonic: Callable[[], float] = time.monotonic, wall: Callable[[], float] = time.time,
                 sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep) -> None:
        self.rest = rest
        self.identity = identity
        self.config = config or LeaseConfig()
        self.monotonic = monotonic
        self.wall = wall
        self.sleep = sleep
        self.elected = asyncio.Event()
        self.lost = asyncio.Event()
        self._renewed: float | None = None  # monotonic time of the last successful write as holder
        self._observed: dict[str, Any] | None = None  # the spec last read
        self._observed_at = 0.0
        self._observed_duration = self.config.lease_duration
        self.transitions = 0
        self.failure = ""  # why the last attempt did not renew (read when the Lease is lost)

    @property
    def path(self) -> str:
        c = self.config
        return f"/apis/coordination.k8s.io/v1/namespaces/{c.namespace}/leases/{c.name}"

    @property
    def renewed_at(self) -> float | None:
        """Monotonic time of the last successful write as holder (None: not holding)."""
        return self._renewed

    @property
    def is_leader(self) -> bool:
        return (not self.lost.is_set() and self._renewed is not None
                and self.monotonic() - self._renewed < self.config.renew_deadline)

    def _spec(self, previous: dict[str, Any] | None) -> dict[str, Any]:
        now = micro_time(self.wall())
        mine = previous is not None and previous.get("holderIdentity") == self.identity
        transitions = int((previous or {}).get("leaseTransitions") or 0)
        return {"holderIdentity": self.identity, "leaseDurationSeconds": int(self.config.lease_duration),
                "acquireTime": (previous or {}).get("acquireTime") if mine else now, "renewTime": now,
                "leaseTransitions": transitions if mine or previous is None else transitions + 1}

    async def try_acquire_or_renew(self) -> bool:
        """One attempt; True when this process holds the Lease afterwards."""
        c = self.config
        started = self.monotonic()
        try:
            lease = await self.rest.request("GET", self.path, timeout=c.renew_deadline)
        except ApiException as exc:
            if exc.status != 404:
                raise
            body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": c.name, "namespace": c.namespace}, "spec": self._spec(None)}
            try:
                await self.rest.request("POST", self.path.rsplit("/", 1)[0], body=body, timeout=c.renew_deadline)
            except ApiException as exc2:
                if exc2.status == 409:
                    self.failure = "another replica created it first"
                    return False
                raise
            self.transitions += 1
            logger.info("Leader election: %s acquired the Lease %s/%s (created it)", self.identity,
                        c.namespace, c.name)
            self._renewed = started
            return True
        spec = lease.get("spec") or {}
        if spec != self._observed:
            self._observed, self._observed_at = spec, started
        holder = spec.get("holderIdentity") or ""
        duration = self._observed_duration = float(spec.get("leaseDurationSeconds") or c.lease_duration)
        if holder and holder != self.identity and self._observed_at + duration > started:
            self.failure = f"another replica holds it ({holder})"
            return False  # held by another, and not expired as far as this process has seen
        if self.monotonic() - started > c.renew_deadline:
            self.failure = "this process was paused longer than the renew deadline"
            return False  # the read is too old to act on (this process was paused): read again
        lease["spec"] = self._spec(spec)
        try:
            updated = await self.rest.request("PUT", self.path, body=lease, timeout=c.renew_deadline)
        except ApiException as exc:
            if exc.status == 409:
                self.failure = "another replica wrote it after this one read it"
                return False  # someone wrote it after our read
            raise
        self._observed, self._observed_at = updated.get("spec") or {}, started
        if holder != self.identity:
            self.transitions += 1
            logger.info("Leader election: %s acquired the Lease %s/%s", self.identity, c.namespace, c.name)
        self._renewed = started
        return True

    async def _attempt(self) -> bool:
        try:
            if await asyncio.wait_for(self.try_acquire_or_renew(), self.config.renew_deadline):
                self.failure = ""
                return True
            return False
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.failure = self.describe_failure(exc)
            logger.warning("Leader election: could not read or write the Lease: %s", self.failure)
            return False

    def describe_failure(self, exc: BaseException) -> str:
        """Why a read or write of the Lease failed, in words that say whose fault it is."""
        if isinstance(exc, ApiException) and exc.status == 401:
            creds = getattr(self.rest, "credentials", None)
            whose = f"the API server {creds.server} rejected the credentials of {creds.description}" \
                if creds is not None else "the API server rejected the credentials"
            return f"{whose} (401 Unauthorized)"
        if isinstance(exc, ApiException) and exc.status == 403:
            return (f"the API server refused access to the Lease (403 Forbidden): the credentials lack RBAC "
                    f"permission on leases.coordination.k8s.io in namespace {self.config.namespace}")
        if isinstance(exc, ApiException):
            return f"the API server answered HTTP {exc.status} {exc.reason}".strip()
        if isinstance(exc, TimeoutError):
            return f"the API server did not answer within {self.config.renew_deadline:g}s"
        return f"the API server could not be reached ({type(exc).__name__}: {exc})" if str(exc) else \
            f"the API server could not be reached ({type(exc).__name__})"

    def lost_reason(self) -> str:
        """Why leadership ended: another replica, or the failure that kept this one from renewing."""
        if self.failure.startswith("another replica"):
            return self.failure
        return (f"could not renew it within the renew deadline ({self.config.renew_deadline:g}s): "
                f"{self.failure or 'no attempt succeeded'}")

    def lapses_in(self) -> float | None:
        """Seconds until the Lease another replica holds lapses as this process has seen it (None
        when no other holder was seen)."""
        spec = self._observed
        if not spec or not spec.get("holderIdentity") or spec.get("holderIdentity") == self.identity:
            return None
        return self._observed_at + self._observed_duration - self.monotonic()

    def next_try_in(self, draw: float) -> float:
        """A candidate's pause before its next try: client-go's retry period with its jitter factor
        1.2 (`draw` in [0, 1)), but no later than the moment the holder's Lease lapses as observed,
        so that a standby takes over a dead leader's Lease at once instead of up to a jittered retry
        period later."""
        delay = self.config.retry_period * (1 + draw * 1.2)
        lapses = self.lapses_in()
        if lapses is not None and 0 <= lapses < delay:
            return lapses + LAPSE_MARGIN
        return delay

    async def run(self) -> None:
        """Acquire (waiting as long as it takes), then renew until the renew deadline is missed."""
        c = self.config
        while not await self._attempt():
            await self.sleep(self.next_try_in(random.random()))
        self.elected.set()
        while True:
            await self.sleep(c.retry_period)
            if await self._attempt():
                continue
            if not self.is_leader:
                logger.error("Leader election: lost the Lease %s/%s: %s", c.namespace, c.name, self.lost_reason())
                self.lost.set()
                return

    async def release(self) -> None:
        """On a clean stop, hand the Lease over at once (kube-scheduler's ReleaseOnCancel)."""
        if not self.is_leader:
            return
        with contextlib.suppress(Exception):
            lease = await self.rest.request("GET", self.path, timeout=2.0)
            spec = lease.get("spec") or {}
            if spec.get("holderIdentity") != self.identity:
                return
            spec.update({"holderIdentity": None, "leaseDurationSeconds": 1, "renewTime": micro_time(self.wall())})
            await self.rest.request("PUT", self.path, body=lease, timeout=2.0)
        self._renewed = None
