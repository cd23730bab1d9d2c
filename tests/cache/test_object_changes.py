"""ObjectStore.changes: a reader follows a kind's puts and deletes (keys and new versions) from
its position on, and is told to rescan when it has no position, asks for a kind first, or fell
too far behind."""

from __future__ import annotations

from kubeberth.cache import objects as objects_module
from kubeberth.cache.objects import ObjectStore


def _obj(name: str, v: int) -> dict[str, object]:
    return {"metadata": {"name": name, "namespace": "ns"}, "v": v}


def test_changes_give_old_and_new_versions_since_a_position() -> None:
    store = ObjectStore()
    store.put("ResourceClaim", _obj("a", 1))  # before anyone follows the kind: not logged
    pos, delta = store.changes("ResourceClaim", None)
    assert (pos, delta) == (0, None)  # the first call starts following: rescan
    a2, b1 = _obj("a", 2), _obj("b", 1)
    store.put("ResourceClaim", a2)
    store.put("ResourceClaim", b1)
    store.put("ResourceSlice", _obj("s", 1))  # another kind
    store.delete("ResourceClaim", "ns/b")
    store.delete("ResourceClaim", "ns/missing")  # nothing deleted: nothing logged
    pos2, delta = store.changes("ResourceClaim", pos)
    assert delta is not None
    assert list(delta) == [("ns/a", a2), ("ns/b", b1), ("ns/b", None)]
    assert store.changes("ResourceClaim", pos2) == (pos2, [])
    assert store.changes("ResourceClaim", None)[1] is None
    assert store.changes("ResourceClaim", pos2 + 1)[1] is None  # a position it never gave


def test_a_reader_too_far_behind_is_told_to_rescan(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(objects_module, "LOG_MAX", 3)
    store = ObjectStore()
    pos, _ = store.changes("ResourceClaim", None)
    for v in range(3):
        store.put("ResourceClaim", _obj("a", v))
    assert store.changes("ResourceClaim", pos)[1] is not None
    store.put("ResourceClaim", _obj("a", 9))  # the log is dropped
    now, delta = store.changes("ResourceClaim", pos)
    assert delta is None and now == 4
    store.put("ResourceClaim", _obj("a", 10))
    assert store.changes("ResourceClaim", now)[1] == [("ns/a", _obj("a", 10))]
