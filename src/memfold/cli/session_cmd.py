"""Conversation commands: ``memfold chat``, ``memfold context``, ``memfold summarize``,
``memfold sessions``. Registered on the main app by ``register(app)``."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from typing import Any, Optional

import typer

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
CHAT_HELP = "Type a message and press Enter. /summary shows the conversation summary, /exit quits."


class _Cli:
    """The main module's ``State``, ``out`` and ``err``, handed over by ``register`` (importing
    ``.main`` here would load a second copy of it under ``python -m memfold.cli.main``)."""

    State: Any = None
    out: Any = None
    err: Any = None


def _cli() -> type[_Cli]:
    return _Cli


def _chat_model(m: Any, base_url: Optional[str], model: Optional[str], api_key_env: Optional[str]) -> Any:
    """The endpoint from the flags over [llm]; None when neither names one."""
    from ..providers.chat import make_chat_model

    llm = m.settings.llm
    if base_url or model or api_key_env:
        llm = replace(llm, provider="openai", base_url=base_url or llm.base_url, model=model or llm.model,
                      api_key_env=api_key_env or llm.api_key_env)
    if not llm.provider or not llm.base_url or not llm.model:
        return None
    return make_chat_model(llm)


def chat(session: str = typer.Option("chat", "--session", "-s", help="Session id (resumed when it exists)."),
         user: str = typer.Option("default", "--user", "-u", help="Namespace (user id)."),
         agent: Optional[str] = typer.Option(None, "--agent", help="Agent id of a new session (owns the pin "
                                             "list; default 'default')."),
         base_url: Optional[str] = typer.Option(None, "--base-url", help="OpenAI-compatible endpoint, e.g. "
                                                "http://localhost:11434/v1 (default [llm] base_url)."),
         model: Optional[str] = typer.Option(None, "--model", help="Model name (default [llm] model)."),
         api_key_env: Optional[str] = typer.Option(None, "--api-key-env",
                                                   help="Environment variable holding the API key."),
         preset: Optional[str] = typer.Option(None, "--preset", help="Session preset: default or chatagent."),
         system: Optional[str] = typer.Option(None, "--system", help="Base system prompt."),
         no_memory: bool = typer.Option(False, "--no-memory", help="Memory off: nothing read or injected.")) -> None:
    """Chat with an LLM using memfold memory: every turn uses build_context and is saved in the session."""
    from ..errors import ConfigError, ProviderError

    cli = _cli()
    m = cli.State.memory()
    llm = _chat_model(m, base_url, model, api_key_env)
    if llm is None:
        raise ConfigError(NO_ENDPOINT.rstrip())
    s = m.session(session, user, agent, preset=preset, memory_enabled=not no_memory, chat_model=llm,
                  on_notice=lambda text: cli.out.print(text, markup=False, highlight=False))
    interactive = sys.stdin.isatty()
    failures = 0
    if interactive:
        cli.err.print(f"session {session!r} ({len(s.messages)} recent messages). {CHAT_HELP}")
    while True:
        if interactive:
            cli.err.print("you> ", end="")
        line = sys.stdin.readline()
        if not line:
            break
        text = line.strip()
        if not text:
            continue
        if text in ("/exit", "/quit"):
            break
        if text == "/summary":
            cli.out.print(s.summary or "(no summary yet)", markup=False, highlight=False)
            continue
        if text == "/help":
            cli.out.print(CHAT_HELP)
            continue
        built = s.context(text, base_prompt=system)
        try:
            answer = llm.complete(built.messages, temperature=0.7).text
        except ProviderError as exc:
            failures += 1
            cli.err.print(f"error: {exc}", markup=False, highlight=False)
            s.add_message("user", text)  # the user's words are kept even when the model fails
            continue
        cli.out.print(f"assistant> {answer}", markup=False, highlight=False)
        s.add_message("user", text)
        s.add_message("assistant", answer)
    if failures:
        raise ProviderError(f"{failures} message(s) got no answer from the model; they were saved in the session")


def context(query: str = typer.Argument(..., help="The user message to build the context for."),
            session: Optional[str] = typer.Option(None, "--session", "-s", help="Include this session's "
                                                  "summary and recent messages."),
            user: str = typer.Option("default", "--user", "-u"),
            agent: Optional[str] = typer.Option(None, "--agent", help="Agent id whose pin list is injected "
                                                "(default: the session's, else 'default')."),
            system: Optional[str] = typer.Option(None, "--system", help="Base system prompt."),
            no_memory: bool = typer.Option(False, "--no-memory", help="Memory off: nothing read or injected."),
            as_json: bool = typer.Option(False, "--json", help="Print the messages as a JSON list.")) -> None:
    """Print the messages build_context would send to the model (for debugging prompts)."""
    cli = _cli()
    m = cli.State.memory()
    if session is not None:
        built = m.session(session, user, agent, memory_enabled=not no_memory).context(query, base_prompt=system)
        messages, figures = built.messages, built
    else:
        messages, figures = m.build_context(query, user, agent_id=agent, base_prompt=system,
                                            memory_enabled=not no_memory), None
    if as_json:
        sys.stdout.write(json.dumps(messages, ensure_ascii=False, indent=2) + "\n")
    else:
        for msg in messages:
            sys.stdout.write(f"----- {msg['role']} -----\n{msg['content']}\n")
    if figures is not None:
        cli.err.print(f"{figures.tokens} tokens of a {figures.budget}-token budget; {figures.history_used} of "
                      f"{figures.history_available} recent messages; {figures.memory_chars} memory characters"
                      + (" (truncated)" if figures.truncated else ""), markup=False, highlight=False)


def summarize(session: str = typer.Option(..., "--session", "-s", help="Session id."),
              user: str = typer.Option("default", "--user", "-u"),
              agent: Optional[str] = typer.Option(None, "--agent", help="Agent id (default: the session's).")) -> None:
    """Fold a session's history into its summary now (all but the last session_summary_keep_count messages)."""
    from ..errors import NotFoundError

    cli = _cli()
    m = cli.State.memory()
    if session not in m.sessions(user):
        raise NotFoundError(f"no session {session!r} for user {user!r}")
    s = m.session(session, user, agent)
    upd = s.summarize()
    if upd.notice:
        cli.out.print(upd.notice, markup=False, highlight=False)
    if upd.folded or upd.dropped:
        cli.err.print(f"folded {upd.folded} messages ({upd.method}), dropped {upd.dropped}; "
                      f"{len(s.messages)} remain verbatim", markup=False, highlight=False)
    else:
        cli.err.print(f"nothing to fold: {len(s.messages)} messages, keep count "
                      f"{s.policy.session_summary_keep_count}", markup=False, highlight=False)
    for e in upd.errors:
        cli.err.print(f"warning: {e}", markup=False, highlight=False)
    sys.stdout.write((s.summary or "(no summary yet)") + "\n")


def sessions(user: str = typer.Option("default", "--user", "-u"),
             as_json: bool = typer.Option(False, "--json", help="Print the sessions as JSON.")) -> None:
    """List the sessions of a namespace with their sizes."""
    cli = _cli()
    m = cli.State.memory()
    rows = [m.session(sid, user, None).info for sid in m.sessions(user)]
    if as_json:
        sys.stdout.write(json.dumps(rows, ensure_ascii=False, indent=2) + "\n")
        return
    if not rows:
        cli.out.print("no sessions")
    for r in rows:
        cli.out.print(f"{r['session_id']}  agent={r['agent_id']}  messages={r['messages']}  "
                      f"summary={r['summary_chars']} chars  folds={r['folds']}  total={r['total_messages']}",
                      markup=False, highlight=False)


def register(app: typer.Typer, state: Any, out: Any, err: Any) -> None:
    _Cli.State, _Cli.out, _Cli.err = state, out, err
    app.command()(chat)
    app.command()(context)
    app.command()(summarize)
    app.command()(sessions)
