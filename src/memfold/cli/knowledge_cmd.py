"""``memfold skill add|used|list`` (skills in learnings.md) and ``memfold relation add|remove|list``
(relations between memories). Registered on the main app by ``register(app)``."""

from __future__ import annotations

from typing import Optional

import typer

from .common import Json, User, out, print_json, runtime

skill_app = typer.Typer(no_args_is_help=True, help="Skills in learnings.md: save one with its steps, count its "
                        "successes, list them.")
relation_app = typer.Typer(no_args_is_help=True, help="Relations between memories (supports, contradicts, refines, "
                           "duplicates, summarizes): add, remove, list.")


def _times(n: int) -> str:
    return f"{n} success" if n == 1 else f"{n} successes"


@skill_app.command("add")
def skill_add(ctx: typer.Context, name: str = typer.Argument(..., help="What the skill does, in a few words."),
              user: User = "default",
              when: Optional[str] = typer.Option(None, "--when", help="The kind of task it is for."),
              step: Optional[list[str]] = typer.Option(None, "--step", help="One step, in order (repeat the option)."),
              tool: Optional[list[str]] = typer.Option(None, "--tool", help="A tool the steps use (repeat the option)."),
              outcome: Optional[str] = typer.Option(None, "--outcome", help="What it achieved."),
              as_json: Json = False) -> None:
    """Save a skill in learnings.md (a near-duplicate skill is updated instead of copied)."""
    res = runtime(ctx).memory().add_skill(name, user, when_to_use=when, steps=step or None, tools=tool or None,
                                          outcome=outcome)
    if as_json:
        print_json(res.to_dict())
        return
    for r in res.added:
        out.print(f"saved skill {r.id} in {r.file}", highlight=False)
    for r in res.merged:
        out.print(f"updated skill {r.id} in {r.file}", highlight=False)
    for s in (*res.skipped, *res.refused, *res.redacted, *res.warnings):
        out.print(f"note: {s}", highlight=False)


@skill_app.command("used")
def skill_used(ctx: typer.Context, memory_id: str = typer.Argument(..., help="The id of the skill."),
               user: User = "default", as_json: Json = False) -> None:
    """Record that a skill worked again: its success count goes up, today is its last success."""
    from ..text.skills import parse

    r = runtime(ctx).existing().skill_succeeded(memory_id, user)
    s = parse(r.content)
    if as_json:
        print_json({"id": r.id, **s.to_dict()})
        return
    out.print(f"skill {r.id} ({s.name}): {_times(s.successes)}, last {s.last_success}", highlight=False)


@skill_app.command("list")
def skill_list(ctx: typer.Context, user: User = "default", as_json: Json = False) -> None:
    """Every skill with its fields, most successful first."""
    got = runtime(ctx).existing().skills(user)
    if as_json:
        print_json(got)
        return
    if not got:
        out.print("no skills yet (memfold skill add NAME --step ... saves one)", highlight=False)
    for s in got:
        last = f", last {s['last_success']}" if s["last_success"] else ""
        out.print(f"{s['id']}  {s['name']} ({_times(s['successes'])}{last})", highlight=False)
        if s["when_to_use"]:
            out.print(f"    when: {s['when_to_use']}", highlight=False)
        for i, step in enumerate(s["steps"], 1):
            out.print(f"    {i}. {step}", highlight=False)
        if s["tools"]:
            out.print(f"    tools: {', '.join(s['tools'])}", highlight=False)
        if s["outcome"]:
            out.print(f"    outcome: {s['outcome']}", highlight=False)


@relation_app.command("add")
def relation_add(ctx: typer.Context, source_id: str = typer.Argument(..., help="The memory the relation is from."),
                 relation: str = typer.Argument(..., help="supports | contradicts | refines | duplicates | summarizes"),
                 target_id: str = typer.Argument(..., help="The memory it is about."),
                 user: User = "default",
                 strength: float = typer.Option(1.0, "--strength", help="How strong, 0 to 1."),
                 as_json: Json = False) -> None:
    """Record a relation between two memories of the namespace."""
    got = runtime(ctx).existing().relate(source_id, target_id, relation, user, strength=strength)
    if as_json:
        print_json(got)
        return
    out.print(f"{source_id} {got['relation']} {target_id} (strength {got['strength']:.2f})", highlight=False)


@relation_app.command("remove")
def relation_remove(ctx: typer.Context, source_id: str = typer.Argument(..., help="The memory the relation is from."),
                    target_id: str = typer.Argument(..., help="The memory it is about."),
                    user: User = "default",
                    relation: Optional[str] = typer.Option(None, "--type", help="Only this kind (default: every kind)."),
                    as_json: Json = False) -> None:
    """Delete the relations from one memory to another."""
    n = runtime(ctx).existing().unrelate(source_id, target_id, relation, user)
    if as_json:
        print_json({"removed": n})
        return
    out.print(f"removed {n} relation{'s' if n != 1 else ''}", highlight=False)


@relation_app.command("list")
def relation_list(ctx: typer.Context, memory_id: str = typer.Argument(..., help="The memory."),
                  user: User = "default", as_json: Json = False) -> None:
    """The relations of a memory, with the other memory's words."""
    from ..facade.relations import related

    mem = runtime(ctx).existing()
    mem.get(memory_id, user)  # a clear error for an id the namespace does not hold
    got = related(mem.index, user, memory_id, limit=1000)
    if as_json:
        print_json(got)
        return
    if not got:
        out.print(f"memory {memory_id} has no relations", highlight=False)
    for r in got:
        line = related_line(r)
        out.print(line, highlight=False)


def related_line(r: dict) -> str:  # type: ignore[type-arg]
    """One related memory as a line: ``supports → id: words`` (→ this memory is the source, ← the target)."""
    arrow = "→" if r["direction"] == "to" else "←"
    gone = "" if r["is_active"] else " (archived)"
    return f"{r['relation']} {arrow} {r['id']} ({r['strength']:.2f}){gone}: {' '.join(r['content'].split())}"


def register(app: typer.Typer) -> None:
    app.add_typer(skill_app, name="skill")
    app.add_typer(relation_app, name="relation")
