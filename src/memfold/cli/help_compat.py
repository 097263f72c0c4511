"""Help pages without a type for flags.

Up to the releases that depended on Click, typer's rich help left the type column of a flag
empty (Click names a flag's type ``BOOLEAN`` and typer skipped it). Since typer vendors Click
(0.26 and later) every parameter's type is shown as ``<annotation>``, flags included, so every
``--json``, ``--note`` and ``--help`` read ``<bool>`` as if it took a value. A flag takes no
value: its type is left out again. Older typer releases have no ``display_type_rich`` and are
left as they are."""

from __future__ import annotations

from typing import Any


def hide_flag_types() -> None:
    try:
        from typer.core import TyperOption
    except ImportError:  # typer without its own core (Click-based releases)
        return
    original = getattr(TyperOption, "display_type_rich", None)
    if original is None or getattr(original, "_memfold_flags_hidden", False):
        return

    def display_type_rich(self: Any, ctx: Any) -> Any:
        if getattr(self, "is_flag", False) and not getattr(self, "count", False):
            return None  # a flag takes no value: no type to show
        return original(self, ctx)

    display_type_rich._memfold_flags_hidden = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]
