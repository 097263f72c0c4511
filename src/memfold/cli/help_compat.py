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


def plain_usage_names() -> None:
    """Usage lines name a required argument ``TEXT``, as click always did, not ``{text}``.

    typer 0.26 and later print a required argument in braces and lower case
    (``memfold add [OPTIONS] {text}``), which reads like a set of choices or a template.
    An argument with its own metavar keeps it."""
    try:
        from typer.core import TyperArgument
    except ImportError:
        return
    original = getattr(TyperArgument, "_usage_display_name", None)
    if original is None or getattr(original, "_memfold_plain", False):
        return

    def _usage_display_name(self: Any) -> str:
        name = self.metavar if self.metavar is not None else str(self.name).upper()
        if not self.required:
            name = f"[{name}]"
        return name + ("..." if self.nargs != 1 else "")

    _usage_display_name._memfold_plain = True  # type: ignore[attr-defined]
    TyperArgument._usage_display_name = _usage_display_name  # type: ignore[method-assign]
