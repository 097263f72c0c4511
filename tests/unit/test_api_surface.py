"""The public API is declared once (``memfold.__all__``) and every public method of it says what it does."""

from __future__ import annotations

import inspect

import memfold
from memfold.engine.conversation.session import Session


def test_the_public_api_is_declared_once_and_importable():
    assert len(memfold.__all__) == len(set(memfold.__all__))
    for name in memfold.__all__:
        assert getattr(memfold, name) is not None, name
    public = {n for n in vars(memfold) if not n.startswith("_") and not inspect.ismodule(getattr(memfold, n))}
    assert public <= set(memfold.__all__), public - set(memfold.__all__)


def test_every_public_method_has_a_docstring():
    missing = []
    for cls in (memfold.Memory, Session):
        for name, member in vars(cls).items():
            if name.startswith("_"):
                continue
            fn = member.fget if isinstance(member, property) else member
            if callable(fn) and not (fn.__doc__ or "").strip():
                missing.append(f"{cls.__name__}.{name}")
    assert not missing, missing
