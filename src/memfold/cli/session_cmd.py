"""Conversation commands: ``memfold chat``, ``memfold context``, ``memfold summarize``,
``memfold sessions``. Registered on the main app by ``register(app)``."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Optional

import typer

from .common import Json, NoMemory, System, User, err, out, print_json, runtime

if TYPE_CHECKING:
    from ..engine.conversation.session import Session

NO_ENDPOINT = """\
memfold chat needs an OpenAI-compatible chat endpoint, and none is configured.

Give one on the command line:
    memfold chat --base-url https://api.openai.com/v1 --model gpt-4o-mini
    memfold chat --base-url http://localhost:11434/v1 --model qwen2.5      # Ollama
and put the API key in the environment (OPENAI_API_KEY, or the variable named by --api-key-env).

Or once in <root>/config.toml:
    [llm]
    provider = "openai"
    base_url = "https://api.deepseek.com/v1"
    model = "deepseek-chat"
    api_key_env = "DEEPSEEK_API_KEY"
(or the environment: MEMFOLD_LLM__PROVIDER=openai MEMFOLD_LLM__BASE_URL=... MEMFOLD_LLM__MODEL=...)
"""
CHAT_HELP = ("Type a message and press Enter. /summary shows the conversation summary, /exit ends the session "
             "(what it holds is saved to memory) and quits.")


def chat(ctx: typer.Context,
         session: str = typer.Option("chat", "--session", "-s", help="Session id (resumed when it exists)."),
         user: User = "default",
         agent: Optional[str] = typer.Option(None, "--agent", help="Agent id of a new session (owns the pin "
                                             "list; default 'default')."),
         base_url: Optional[str] = typer.Option(None, "--base-url", help="OpenAI-compatible endpoint, e.g. "
                                                "http://localhost:11434/v1 (default: llm.base_url in config.toml)."),
         model: Optional[str] = typer.Option(None, "--model", help="Model name (default: llm.model in config.toml)."),
         api_key_env: Optional[str] = typer.Option(None, "--api-key-env",
                                                   help="Environment variable holding the API key."),
         preset: Optional[str] = typer.Option(None, "--preset", help="Session preset: default or chatagent."),
         system: System = None, no_memory: NoMemory = False) -> None:
    """Chat with an LLM using memfold memory: every turn uses build_context and is saved in the session."""
    from ..errors import ConfigError, ProviderError
    from ..facade.admin import chat_endpoint
    from ..tools import MemoryAgent, MemoryTools
    from ..tools.agent import ToolChat

    m = runtime(ctx).memory()
    llm = chat_endpoint(m.settings.llm, base_url=base_url, model=model, api_key_env=api_key_env)
    if llm is None:
        raise ConfigError(NO_ENDPOINT.rstrip())
    m.start_maintenance()  # a conversation stays open: due maintenance runs in the background ([maintenance])
    s = m.session(session, user, agent, preset=preset, memory_enabled=not no_memory, chat_model=llm,
                  on_notice=lambda text: out.print(text, markup=False, highlight=False))
    if s.closed:  # ended before (/exit or session_ttl_minutes): the conversation goes on
        s.reopen()
        err.print(f"session {session!r} had ended; reopened", markup=False, highlight=False)
    tool_agent = MemoryAgent(llm, MemoryTools(m, user, s.agent_id, language=s.language)) \
        if isinstance(llm, ToolChat) else None
    use_tools = not no_memory and tool_agent is not None  # function calling when the endpoint has it
    interactive = sys.stdin.isatty()
    failures = 0
    if interactive:
        err.print(f"session {session!r} ({len(s.messages)} recent messages). {CHAT_HELP}")
    while True:
        if interactive:
            err.print("you> ", end="")
        line = sys.stdin.readline()
        if not line:
            break
        text = line.strip()
        if not text:
            continue
        if text in ("/exit", "/quit"):
            _end(s)
            break
        if text == "/summary":
            out.print(s.summary or "(no summary yet)", markup=False, highlight=False)
            continue
        if text == "/help":
            out.print(CHAT_HELP)
            continue
        s.memory_enabled = not no_memory and m.memory_enabled(user)  # `memfold memory off` meanwhile: honoured now
        try:
            answer, use_tools, saved = _answer(s, llm, tool_agent if use_tools else None, text, system)
        except ProviderError as exc:
            failures += 1
            err.print(f"error: {exc}", markup=False, highlight=False)
            s.add_message("user", text)  # the user's words are kept even when the model fails
            continue
        out.print(f"assistant> {answer}", markup=False, highlight=False)
        s.add_message("user", text, extracted=saved)  # the model stored what it holds: not extracted again
        s.add_message("assistant", answer, extracted=saved)
    if failures:
        raise ProviderError(f"{failures} message(s) got no answer from the model; they were saved in the session")


def _end(s: "Session") -> None:
    """/exit: end the session; its unfolded turns go to long-term extraction."""
    res = s.close()
    for r in res.added:
        out.print(f"remembered: {r.content}", markup=False, highlight=False)
    for w in res.warnings:
        err.print(f"warning: {w}", markup=False, highlight=False)
    err.print(f"session {s.session_id!r} ended", markup=False, highlight=False)


def _answer(s: Any, llm: Any, agent: Any, text: str, system: str | None) -> tuple[str, bool, bool]:
    """The model's answer to ``text``, whether to go on offering tools, and whether a memory tool
    stored something in this turn (then the session end does not extract it again). With ``agent`` the
    memory tools are offered and named in the instructions; an endpoint without function calling
    is asked again without them (and not offered tools again)."""
    from ..errors import ToolsRejected
    from ..tools import TOOLS

    if agent is not None and agent.tools.names:
        built = s.context(text, base_prompt=system, tools=agent.tools.summaries())
        try:
            turn = agent.run(built.messages)
        except ToolsRejected:
            err.print("note: the endpoint does not support tools; memories are saved from the conversation instead",
                      markup=False, highlight=False)
        else:
            for c in turn.calls:
                status = "ok" if c.result.get("ok") else f"error {c.result['error']['code']}: {c.result['error']['message']}"
                err.print(f"[{c.name}] {status}", markup=False, highlight=False)
            return turn.text, True, any(c.result.get("ok") and TOOLS[c.name].writes for c in turn.calls
                                        if c.name in TOOLS)
        agent = None
    built = s.context(text, base_prompt=system)
    return llm.complete(built.messages, temperature=0.7).text, agent is not None, False


def context(ctx: typer.Context, query: str = typer.Argument(..., help="The user message to build the context for."),
            session: Optional[str] = typer.Option(None, "--session", "-s", help="Include this session's "
                                                  "summary and recent messages."),
            user: User = "default",
            agent: Optional[str] = typer.Option(None, "--agent", help="Agent id whose pin list is injected "
                                                "(default: the session's, else 'default')."),
            system: System = None, no_memory: NoMemory = False, as_json: Json = False) -> None:
    """Print the messages build_context would send to the model (for debugging prompts)."""
    m = runtime(ctx).existing()
    if session is not None:
        built = m.session(session, user, agent, memory_enabled=not no_memory).context(query, base_prompt=system)
        messages, figures = built.messages, built
    else:
        messages, figures = m.build_context(query, user, agent_id=agent, base_prompt=system,
                                            memory_enabled=not no_memory), None
    if as_json:
        print_json(messages)
    else:
        for msg in messages:
            sys.stdout.write(f"----- {msg['role']} -----\n{msg['content']}\n")
    if figures is not None:
        err.print(f"{figures.tokens} tokens of a {figures.budget}-token budget; {figures.history_used} of "
                      f"{figures.history_available} recent messages; {figures.memory_chars} memory characters"
                      + (" (truncated)" if figures.truncated else ""), markup=False, highlight=False)


def summarize(ctx: typer.Context, session: str = typer.Option(..., "--session", "-s", help="Session id."),
              user: User = "default",
              agent: Optional[str] = typer.Option(None, "--agent", help="Agent id (default: the session's).")) -> None:
    """Fold a session's history into its summary now (all but the last session_summary_keep_count messages)."""
    from ..errors import NotFoundError

    m = runtime(ctx).existing()
    if session not in m.sessions(user):
        raise NotFoundError(f"no session {session!r} for user {user!r}")
    s = m.session(session, user, agent)
    upd = s.summarize()
    if upd.notice:
        out.print(upd.notice, markup=False, highlight=False)
    if upd.folded or upd.dropped:
        err.print(f"folded {upd.folded} messages ({upd.method}), dropped {upd.dropped}; "
                      f"{len(s.messages)} remain verbatim", markup=False, highlight=False)
    else:
        err.print(f"nothing to fold: {len(s.messages)} messages, keep count "
                      f"{s.policy.session_summary_keep_count}", markup=False, highlight=False)
    for e in upd.errors:
        err.print(f"warning: {e}", markup=False, highlight=False)
    sys.stdout.write((s.summary or "(no summary yet)") + "\n")


def sessions(ctx: typer.Context, user: User = "default", as_json: Json = False) -> None:
    """List the sessions of a namespace with their sizes."""
    m = runtime(ctx).existing()
    rows = [m.session(sid, user, None).info for sid in m.sessions(user)]
    if as_json:
        print_json(rows)
        return
    if not rows:
        out.print("no sessions")
    for r in rows:
        out.print(f"{r['session_id']}  agent={r['agent_id']}  messages={r['messages']}  "
                      f"summary={r['summary_chars']} chars  folds={r['folds']}  total={r['total_messages']}"
                      + (f"  ended={r['closed_at']}" if r.get("closed_at") else ""), markup=False, highlight=False)


def register(app: typer.Typer) -> None:
    app.command()(chat)
    app.command()(context)
    app.command()(summarize)
    app.command()(sessions)
