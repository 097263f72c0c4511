"""How much memory a long-lived object holds: a walk over everything reachable from it (containers,
instances, numpy arrays), skipping shared read-only parts (modules, classes, functions, the model).
The soak tests use it to check that a ``Memory`` stays proportional to its data."""

from __future__ import annotations

import sqlite3
import sys
import threading
import types
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

_OPAQUE = (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType, types.MethodType,
           threading.Thread, sqlite3.Connection, sqlite3.Cursor, ThreadPoolExecutor)
_SCALARS = (int, float, bool, complex, type(None))


def deep_size(root: Any, skip: tuple[Any, ...] = ()) -> int:
    """Bytes reachable from ``root``: arrays by ``nbytes``, everything else by ``sys.getsizeof``."""
    seen = {id(s) for s in skip}
    stack = [root]
    total = 0
    while stack:
        o = stack.pop()
        if id(o) in seen or isinstance(o, _SCALARS) or isinstance(o, _OPAQUE):
            continue
        seen.add(id(o))
        if isinstance(o, np.ndarray):
            total += o.nbytes if o.base is None else 0  # a view costs nothing of its own
            if o.base is not None:
                stack.append(o.base)
            continue
        total += sys.getsizeof(o)
        if isinstance(o, (str, bytes, bytearray)):
            continue
        if isinstance(o, dict):
            stack.extend(o.keys())
            stack.extend(o.values())
        elif isinstance(o, (list, tuple, set, frozenset, deque)):
            stack.extend(o)
        else:
            d = getattr(o, "__dict__", None)
            if d is not None:
                stack.append(d)
            for cls in type(o).__mro__:
                for name in getattr(cls, "__slots__", ()):
                    if name not in ("__dict__", "__weakref__") and hasattr(o, name):
                        stack.append(getattr(o, name))
    return total
