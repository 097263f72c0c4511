"""Examples shown at the end of every command's ``--help``, and the short page ``memfold`` prints alone.

One table for every command, so a new command is easy to spot without examples (a test checks
that each command has some). Each example is one line a user can paste; ``attach`` puts them in
the commands' epilogs before typer builds the click commands.
"""

from __future__ import annotations

from typing import Any

EXAMPLES: dict[str, tuple[str, ...]] = {
    "init": ("memfold init --lang zh --user alice", "memfold --root ~/mem init --user bob"),
    "add": ('memfold add "我喜欢喝无糖拿铁，大杯" --type preference --user alice',
            'echo "Project A is due on March 15" | memfold add - --user alice --json'),
    "search": ('memfold search "咖啡偏好是什么" --user alice',
               'memfold search "when is project A due" --user alice -k 3 --json',
               'memfold search "where do I live" --user alice --related'),
    "ingest": ("memfold ingest chat.json --user alice", "memfold ingest locomo10.json --no-extract --json"),
    "show": ("memfold show --user alice",),
    "get": ("memfold get k3v9q2m1x7pz --user alice",),
    "list": ("memfold list --user alice --type preference", "memfold list --user alice --archived --json"),
    "update": ('memfold update k3v9q2m1x7pz --content "Project A is due on April 30" --user alice',
               "memfold update k3v9q2m1x7pz --importance 0.9 --user alice"),
    "delete": ("memfold delete k3v9q2m1x7pz --user alice",),
    "forget": ('memfold forget "my old phone number" --user alice --dry-run',
               "memfold forget k3v9q2m1x7pz --user alice"),
    "history": ("memfold history k3v9q2m1x7pz --user alice --json",),
    "reindex": ("memfold reindex", "memfold reindex --user alice"),
    "stats": ("memfold stats --user alice", "memfold stats --metrics --json"),
    "doctor": ("memfold doctor", "memfold doctor --skip-embedder --json"),
    "migrate": ('memfold migrate --to postgres "postgresql://memfold@db.internal/memfold"',),
    "export": ("memfold export backup.jsonl", "memfold export --user alice > alice.jsonl"),
    "import": ("memfold import backup.jsonl",),
    "chat": ("memfold chat --base-url http://localhost:11434/v1 --model qwen2.5 --user alice",
             "memfold chat --session s1 --user alice --preset chatagent"),
    "context": ('memfold context "where am I travelling?" --user alice --json',),
    "summarize": ("memfold summarize --session s1 --user alice",),
    "sessions": ("memfold sessions --user alice --json",),
    "demo": ("memfold --root .memfold-demo demo",),
    "bench": ("memfold bench --n 10000 --queries 200", "memfold bench --n 100000 --backend postgres --json"),
    "serve": ("memfold --root ~/mem serve", "memfold serve --host 0.0.0.0 --port 8765 --workers 2"),
    "maintain": ("memfold maintain --dry-run", "memfold maintain --user alice --job tidy --json"),
    "mcp": ("memfold mcp --user alice", "memfold mcp --http --port 8765 --user alice"),
    "policy show": ("memfold policy show --user alice",),
    "policy set": ("memfold policy set retrieve_limit 15 --user alice",),
    "policy reset": ("memfold policy reset retrieve_limit --user alice", "memfold policy reset --user alice"),
    "policy snapshots": ("memfold policy snapshots --user alice",),
    "policy rollback": ("memfold policy rollback --user alice", "memfold policy rollback 20261125_101500 --user alice"),
    "eval locomo": ("memfold eval locomo data/locomo10.json --k 1,5,10",
                    "memfold eval locomo data/locomo10.json --qa --llm http://localhost:11434/v1 --model qwen2.5:14b "
                    "--limit 100",),
    "eval madial": ("memfold eval madial data/madial/zh --k 1,3,5,10",),
    "eval longmemeval": ("memfold eval longmemeval data/longmemeval_s.json.gz --limit 50 --vector-cache .vectors",
                         "memfold eval longmemeval data/longmemeval_s.json.gz --qa --llm http://localhost:11434/v1 "
                         "--model qwen2.5:14b --limit 50 --agentic --max-steps 4",),
    "memory on": ("memfold memory on --user alice",),
    "memory off": ("memfold memory off --user alice",),
    "memory status": ("memfold memory status --user alice --json",),
    "skill add": ('memfold skill add "Publish the docs site" --when "the user asks to publish the docs" '
                  '--step "mkdocs build --strict" --step "rsync -a site/ web:/var/www/docs" --tool mkdocs --tool rsync '
                  '--outcome "the new pages are online" --user alice',
                  'memfold skill add "发布文档网站" --step "运行 mkdocs build" --step "用 rsync 上传" --user alice'),
    "skill used": ("memfold skill used k3v9q2m1x7pz --user alice",),
    "skill list": ("memfold skill list --user alice", "memfold skill list --user alice --json"),
    "relation add": ("memfold relation add k3v9q2m1x7pz supports m4w8r2n6y1qa --user alice --strength 0.8",),
    "relation remove": ("memfold relation remove k3v9q2m1x7pz m4w8r2n6y1qa --type supports --user alice",),
    "relation list": ("memfold relation list k3v9q2m1x7pz --user alice --json",),
    "keys create": ("memfold keys create --user alice --name my-agent", "memfold keys create --user '*' --scope admin"),
    "keys list": ("memfold keys list --json",),
    "keys revoke": ("memfold keys revoke k1a2b3c4",),
}

# what ``memfold`` alone shows: the commands a new user needs first
COMMON: tuple[tuple[str, str], ...] = (
    ("memfold init --lang zh --user alice", "create the workspace and alice's MEMORY.md"),
    ('memfold add "I prefer oat milk" --user alice', "store a memory"),
    ('memfold search "what milk do I like" --user alice', "find memories, in any language"),
    ("memfold show --user alice", "print MEMORY.md"),
    ("memfold serve", "HTTP API and web page at http://127.0.0.1:8765/"),
)


def epilog(path: str) -> str:
    """The epilog of one command: its examples, one line each."""
    lines = EXAMPLES.get(path, ())
    return "\n".join(["Examples:", *(f"  $ {line}" for line in lines)]) if lines else ""


def overview() -> str:
    """The page ``memfold`` prints without a command."""
    width = max(len(cmd) for cmd, _ in COMMON)
    rows = "\n".join(f"  {cmd.ljust(width)}  {what}" for cmd, what in COMMON)
    return ("memfold: long-term memory for LLM agents (Markdown files + hybrid retrieval).\n\n"
            f"Common commands:\n{rows}\n\n"
            "Every command: memfold --help. One command's options and examples: memfold COMMAND --help.\n"
            "The workspace is --root, else $MEMFOLD_HOME, else ./.memfold.\n")


def _name(info: Any) -> str:
    if info.name:
        return str(info.name)
    return str(info.callback.__name__).strip("_").replace("_", "-")


def attach(app: Any, prefix: str = "") -> None:
    """Give every command of ``app`` (and of its sub-apps) its examples as epilog."""
    for info in app.registered_commands:
        path = f"{prefix}{_name(info)}"
        if not info.epilog:
            info.epilog = epilog(path) or None
    for group in app.registered_groups:
        name = group.name or group.typer_instance.info.name
        attach(group.typer_instance, f"{prefix}{name} ")
