"""Index contract: a named lease per namespace has one holder at a time, across handles (processes)
on both backends; releasing it, or the holder's end, frees it."""

from __future__ import annotations

from collections.abc import Callable

from memfold.index.base import Index


def test_one_holder_at_a_time_across_handles(make_index: Callable[..., Index]) -> None:
    a, b = make_index(), make_index()
    assert a.try_lease("alice", "maintenance", "host:1:a", 60)
    assert a.try_lease("alice", "maintenance", "host:1:a", 60)  # the holder may renew
    assert not b.try_lease("alice", "maintenance", "host:2:b", 60)
    assert b.try_lease("bob", "maintenance", "host:2:b", 60)  # another namespace is free
    assert b.try_lease("alice", "other-job", "host:2:b", 60)  # another name is free
    b.release_lease("alice", "maintenance", "host:2:b")  # not its lease: nothing happens
    assert not b.try_lease("alice", "maintenance", "host:2:b", 60)
    a.release_lease("alice", "maintenance", "host:1:a")
    assert b.try_lease("alice", "maintenance", "host:2:b", 60)
    assert not a.try_lease("alice", "maintenance", "host:1:a", 60)


def test_a_closed_holder_frees_its_lease_or_it_expires(make_index: Callable[..., Index], backend: str) -> None:
    a, b = make_index(), make_index()
    if backend == "postgres":  # the server frees an advisory lock when its session ends
        assert a.try_lease("alice", "maintenance", "host:1:a", 3600)
        a.close()
        assert b.try_lease("alice", "maintenance", "host:2:b", 3600)
    else:  # a lease row of another machine frees itself when it expires
        assert a.try_lease("alice", "maintenance", "elsewhere:1:a", -1)
        assert b.try_lease("alice", "maintenance", "host:2:b", 3600)
