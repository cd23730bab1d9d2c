"""Pods whose binding cycle is in PreBind (upstream's podsInPreBindMap): preemption may cancel
such a pod instead of deleting it, as long as its PreBind has not finished."""

from __future__ import annotations

import asyncio
from typing import Any


class PodInPreBind:
    __slots__ = ("_task", "canceled", "cause", "finished")

    def __init__(self) -> None:
        self.finished = False
        self.canceled = False
        self.cause = ""
        self._task: asyncio.Future[Any] | None = None

    def running(self, task: asyncio.Future[Any]) -> None:
        """The PreBind plugins run in `task`: a cancellation cancels it."""
        self._task = task
        if self.canceled:
            task.cancel(self.cause)

    def cancel(self, message: str) -> bool:
        """Stop the binding: False once PreBind has finished (the pod is as good as bound)."""
        if self.finished:
            return False
        if not self.canceled:
            self.canceled, self.cause = True, message
            if self._task is not None:
                self._task.cancel(message)
        return True

    def mark_prebound(self) -> bool:
        """PreBind is over: from now on the pod cannot be cancelled. False if it already was."""
        if self.canceled:
            return False
        self.finished = True
        return True


class PodsInPreBind:
    """uid -> PodInPreBind, shared by the profiles of one scheduler."""

    def __init__(self) -> None:
        self._pods: dict[str, PodInPreBind] = {}

    def add(self, uid: str) -> PodInPreBind:
        entry = self._pods[uid] = PodInPreBind()
        return entry

    def get(self, uid: str) -> PodInPreBind | None:
        return self._pods.get(uid)

    def remove(self, uid: str) -> None:
        self._pods.pop(uid, None)

    def __len__(self) -> int:
        return len(self._pods)
