"""Answer accuracy (``memfold eval locomo|longmemeval FILE --qa``): each question is answered by a
chat model from the context memfold builds for it (``Memory.build_context``, what an agent gets),
or, with ``agentic``, by a model that may also call the ``memory_search`` and ``memory_read`` tools;
an LLM judge grades every answer against the gold one (CORRECT / WRONG). The ``full-context``
baseline answers from the whole conversation with the same model.

Scored questions follow the usual protocols: LoCoMo's categories 1–4 (category 5, adversarial, is
left out, as mem0's evaluation does); every LongMemEval question, its abstention questions (ids
ending in ``_abs``) graded on whether the answer declines to answer."""

from __future__ import annotations

import logging
import re
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ..errors import InvalidInputError, ProviderError
from ..facade.memory import Memory
from ..providers.chat import ChatModel, ChatResult, ToolReply
from ..text.tokens import count_many
from ..tools import MemoryAgent, MemoryTools
from ..tools.dispatch import error as tool_error
from .harness import Clock, NoProgress, Progress, eval_memory, namespace_for, require_empty
from .locomo import CATEGORY_NAMES, MAIN_CATEGORIES, load_locomo
from .longmemeval import load_longmemeval, parse_lme_date, session_messages

log = logging.getLogger("memfold")
FULL_CONTEXT = "full-context"
BASELINES = (FULL_CONTEXT,)
MAX_STEPS = 20  # bound of --max-steps
READ_TOOLS = ("memory_search", "memory_read")
ABSTENTION = "abstention"

ANSWER_INSTRUCTIONS = (
    "Answer the question from what you remember of the user's conversations. Answer in a few words "
    "(a name, a date, a number, a short phrase). When your memory does not hold the answer, say that "
    "you don't know.")
AGENTIC_INSTRUCTIONS = (
    "Search your memory with the tools before answering when the memories shown do not settle the "
    "question; you may search several times with different words.")
FULL_CONTEXT_SYSTEM = "Here is the full history of your conversations with the user:\n\n{history}"
JUDGE_SYSTEM = (
    "You check answers to questions about a person's conversation history. You are given the question, "
    "the reference answer and a candidate answer. Reply CORRECT when the candidate states the same fact "
    "as the reference: other wording, more detail or a shorter form do not matter, and a date or time "
    "written differently but meaning the same moment counts as the same. Reply WRONG when the candidate "
    "states something else, leaves out what the reference says, or says it does not know. Reply with "
    "the single word CORRECT or WRONG.")
JUDGE_ABSTENTION_SYSTEM = (
    "You check answers to a question that cannot be answered from a person's conversation history; the "
    "reference explains what is missing. Reply CORRECT when the candidate answer declines: it says it "
    "does not know, or that the history does not tell. Reply WRONG when it answers as if it knew. "
    "Reply with the single word CORRECT or WRONG.")
_VERDICT = re.compile(r"\b(INCORRECT|CORRECT|WRONG)\b")
_THINK = re.compile(r"<think>.*?</think>", re.S | re.I)


@dataclass(frozen=True)
class QAItem:
    id: str
    namespace: str
    question: str
    answer: str
    category: str
    abstention: bool = False
    now: datetime | None = None  # when the question is asked (LongMemEval's question_date)


@dataclass
class Counting:
    """A chat model whose calls and token usage are counted (one per role: answer, judge)."""

    chat: Any
    calls: int = 0
    usage: dict[str, int] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return str(getattr(self.chat, "name", "model"))

    def _add(self, usage: dict[str, int]) -> None:
        for k, v in usage.items():
            self.usage[k] = self.usage.get(k, 0) + int(v)

    def complete(self, messages: list[dict[str, Any]], *, json_schema: dict[str, Any] | None = None,
                 temperature: float = 0.3) -> ChatResult:
        self.calls += 1
        result: ChatResult = self.chat.complete(messages, json_schema=json_schema, temperature=temperature)
        self._add(result.usage)
        return result

    def complete_tools(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *,
                       temperature: float = 0.3) -> ToolReply:
        self.calls += 1
        reply: ToolReply = self.chat.complete_tools(messages, tools, temperature=temperature)
        self._add(reply.usage)
        return reply


class ReadTools(MemoryTools):
    """The memory tools an answering model may use here: searching and reading, never writing."""

    @property
    def names(self) -> list[str]:
        return list(READ_TOOLS) if self.enabled else []

    def call(self, name: str, arguments: dict[str, Any] | str | None = None) -> dict[str, Any]:
        if name not in READ_TOOLS:
            return tool_error("unknown_tool", f"there is no tool {name!r} here; the tools are: {', '.join(READ_TOOLS)}")
        return super().call(name, arguments)


def endpoint_chat(url: str, model: str, api_key_env: str = "OPENAI_API_KEY", timeout: float = 60.0) -> Any:
    """A chat model at an OpenAI-compatible endpoint (``close()`` it when done)."""
    from ..config import LLMSettings
    from ..providers.openai_chat import OpenAIChatModel

    return OpenAIChatModel(LLMSettings(provider="openai", base_url=url, model=model, api_key_env=api_key_env,
                                       timeout=timeout, max_retries=2))


# ---- the questions ----------------------------------------------------------------------
Plan = list[tuple[str, list[list[dict[str, Any]]]]]  # namespace -> its sessions, in order


def history(sessions: Sequence[Sequence[dict[str, Any]]]) -> str:
    """A conversation as the full-context baseline reads it: each session under its date, one line a turn."""
    parts = []
    for msgs in sessions:
        when = next((m.get("timestamp") for m in msgs if m.get("timestamp")), None)
        lines = [f"{m.get('name') or m.get('role') or 'user'}: {m.get('content', '')}" for m in msgs]
        parts.append((f"## Session of {when}\n" if when else "## Session\n") + "\n".join(lines))
    return "\n\n".join(parts)


def locomo_items(path: str | Path, limit: int | None) -> tuple[list[QAItem], Plan]:
    """The first ``limit`` scored questions of a LoCoMo file (categories 1–4, with a gold answer) and
    the conversations they need."""
    from ..engine.write.conversations import locomo_sessions

    items: list[QAItem] = []
    plan: Plan = []
    for i, c in enumerate(load_locomo(path)):
        if limit is not None and len(items) >= limit:
            break
        ns = namespace_for(c.get("sample_id") or f"conv-{i}", "locomo")
        before = len(items)
        for n, q in enumerate(c["qa"]):
            cat = str(q.get("category", "?"))
            question, gold = str(q.get("question") or "").strip(), q.get("answer")
            if cat in MAIN_CATEGORIES and question and gold not in (None, "") and (limit is None or len(items) < limit):
                items.append(QAItem(f"{ns}/{n}", ns, question, str(gold), cat))
        if len(items) > before:
            plan.append((ns, locomo_sessions(c["conversation"])))
    return items, plan


def longmemeval_items(path: str | Path, limit: int | None) -> tuple[list[QAItem], Plan]:
    """The first ``limit`` questions of a LongMemEval file, each with its haystack sessions."""
    items: list[QAItem] = []
    plan: Plan = []
    for q in load_longmemeval(path)[: limit or None]:
        question = str(q.get("question") or "").strip()
        if not question:
            continue
        qid = str(q["question_id"])
        ns = namespace_for(qid, "lme")
        abstain = qid.endswith("_abs")
        items.append(QAItem(qid, ns, question, str(q.get("answer", "")), ABSTENTION if abstain else
                            str(q.get("question_type") or "?"), abstain,
                            parse_lme_date(str(q["question_date"])) if q.get("question_date") else None))
        plan.append((ns, [session_messages(str(s), str(d), t)[0] for s, d, t in
                          zip(q["haystack_session_ids"], q["haystack_dates"], q["haystack_sessions"])]))
    return items, plan


# ---- answering and judging ------------------------------------------------------------------
def _asked(item: QAItem) -> str:
    when = f" (asked on {item.now:%Y-%m-%d, %A})" if item.now else ""
    return f"{item.question}{when}\n\n{ANSWER_INSTRUCTIONS}"


def _tokens(messages: Sequence[dict[str, Any]]) -> int:
    return sum(count_many([str(m.get("content") or "") for m in messages]))


@dataclass
class Answer:
    text: str
    context_tokens: int
    seconds: float
    tool_calls: list[str] = field(default_factory=list)
    error: str = ""
    context_seconds: float = 0.0  # building memfold's context (the rest of ``seconds`` is the model's)


def answer_from_memory(mem: Memory, item: QAItem, chat: Counting, *, agentic: bool = False,
                       max_steps: int = 4) -> Answer:
    """The model's answer from the context memfold builds for the question (plus tool calls when agentic)."""
    start = time.perf_counter()
    tools = ReadTools(mem, item.namespace) if agentic else None
    messages: list[dict[str, Any]] = list(mem.build_context(item.question, item.namespace,
                                                            tools=tools.summaries() if tools else None))
    context = _tokens(messages[:-1])
    built = time.perf_counter() - start
    messages[-1] = {"role": "user", "content": _asked(item) + (f" {AGENTIC_INSTRUCTIONS}" if agentic else "")}
    try:
        if tools is None:
            text = chat.complete(messages, temperature=0.0).text
            return Answer(text, context, time.perf_counter() - start, context_seconds=built)
        turn = MemoryAgent(chat, tools, max_rounds=max_steps, temperature=0.0).run(messages)
        read = _tokens([m for m in turn.messages if m.get("role") == "tool"])
        return Answer(turn.text, context + read, time.perf_counter() - start, [c.name for c in turn.calls],
                      context_seconds=built)
    except ProviderError as exc:
        return Answer("", context, time.perf_counter() - start, error=str(exc), context_seconds=built)


def answer_full_context(item: QAItem, whole: str, chat: Counting) -> Answer:
    """The same model's answer with the whole conversation in its prompt."""
    start = time.perf_counter()
    system = {"role": "system", "content": FULL_CONTEXT_SYSTEM.format(history=whole)}
    try:
        text = chat.complete([system, {"role": "user", "content": _asked(item)}], temperature=0.0).text
    except ProviderError as exc:
        return Answer("", _tokens([system]), time.perf_counter() - start, error=str(exc))
    return Answer(text, _tokens([system]), time.perf_counter() - start)


def verdict(text: str) -> bool | None:
    """The judge's verdict: True (CORRECT), False (WRONG or INCORRECT), None when it says neither or both."""
    found = {m.upper() for m in _VERDICT.findall(_THINK.sub("", text).upper())}
    if found == {"CORRECT"}:
        return True
    if found and "CORRECT" not in found:
        return False
    return None


def judge(item: QAItem, answer: str, chat: Counting) -> bool | None:
    system = JUDGE_ABSTENTION_SYSTEM if item.abstention else JUDGE_SYSTEM
    user = f"Question: {item.question}\nReference answer: {item.answer}\nCandidate answer: {answer}"
    try:
        return verdict(chat.complete([{"role": "system", "content": system}, {"role": "user", "content": user}],
                                     temperature=0.0).text)
    except ProviderError as exc:
        log.warning("judge call for question %s failed: %s", item.id, exc)
        return None


# ---- the run ------------------------------------------------------------------------------
def _dist(values: Sequence[float], digits: int = 2) -> dict[str, float]:
    if not values:
        return {"mean": 0.0, "p50": 0.0, "p95": 0.0, "max": 0.0}
    ordered = sorted(values)
    return {"mean": round(statistics.fmean(ordered), digits), "p50": round(ordered[len(ordered) // 2], digits),
            "p95": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], digits),
            "max": round(ordered[-1], digits)}


def summarise_qa(rows: Sequence[dict[str, Any]], order: Sequence[str] = ()) -> dict[str, Any]:
    """Accuracy overall and by category, tokens of context and seconds per question."""
    def acc(rs: Sequence[dict[str, Any]]) -> float:
        return round(sum(r["correct"] for r in rs) / len(rs), 4) if rs else 0.0

    cats = sorted({r["category"] for r in rows}, key=lambda c: (order.index(c) if c in order else len(order), c))
    return {"n_questions": len(rows), "accuracy": acc(rows),
            "by_category": {c: {"n_questions": len([r for r in rows if r["category"] == c]),
                                "accuracy": acc([r for r in rows if r["category"] == c])} for c in cats},
            "context_tokens": _dist([r["context_tokens"] for r in rows], 1),
            "answer_seconds": _dist([r["seconds"] for r in rows]),
            "context_seconds": _dist([r["context_seconds"] for r in rows], 3),
            "answer_errors": sum(bool(r["error"]) for r in rows),
            "judge_unclear": sum(r["verdict"] is None for r in rows)}


def _row(item: QAItem, got: Answer, ok: bool | None) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": item.id, "category": item.category, "question": item.question, "gold": item.answer, "answer": got.text,
        "verdict": None if ok is None else ("CORRECT" if ok else "WRONG"), "correct": bool(ok),
        "context_tokens": got.context_tokens, "seconds": round(got.seconds, 3),
        "context_seconds": round(got.context_seconds, 4), "error": got.error}
    if got.tool_calls:
        row["tool_calls"] = got.tool_calls
    return row


def run_qa(kind: str, path: str | Path, answer_chat: ChatModel, judge_chat: ChatModel, *, limit: int | None = None,
           agentic: bool = False, max_steps: int = 4, baselines: Sequence[str] = (), root: str | Path | None = None,
           infer: bool = True, vector_cache: str | Path | None = None, progress: Progress | None = None,
           embedder: Any = None) -> dict[str, Any]:
    """Answer and grade the first ``limit`` questions of a LoCoMo or LongMemEval file; the report holds
    accuracy by category, tokens of context, seconds per answer, the LLM usage of each role and, per
    question, the answer and the verdict (``questions``)."""
    if kind not in ("locomo", "longmemeval"):
        raise InvalidInputError(f"answer accuracy is measured on locomo or longmemeval, not {kind!r}")
    unknown = [b for b in baselines if b not in BASELINES]
    if unknown:
        raise InvalidInputError(f"unknown baseline {unknown[0]!r}; the baselines are: {', '.join(BASELINES)}")
    if not 1 <= max_steps <= MAX_STEPS:
        raise InvalidInputError(f"--max-steps must be between 1 and {MAX_STEPS}, got {max_steps}")
    progress = progress or NoProgress()
    items, plan = locomo_items(path, limit) if kind == "locomo" else longmemeval_items(path, limit)
    if not items:
        raise InvalidInputError(f"{path} holds no question to answer")
    clock = Clock()
    answerer, grader = Counting(answer_chat), Counting(judge_chat)
    rows: list[dict[str, Any]] = []
    base_rows: dict[str, list[dict[str, Any]]] = {b: [] for b in baselines}
    with eval_memory(root, embedder=embedder, vector_cache=vector_cache) as mem:
        progress.start("ingesting turns", sum(len(s) for _, ss in plan for s in ss))
        for ns, sessions in plan:
            require_empty(mem, ns)
            for s in sessions:
                mem.add(s, ns, infer=infer)
                progress.advance(len(s))
        mem.flush_vectors()  # the vectors computed after the adds (the quality profile's second vectors)
        ingest_seconds = clock.seconds()
        histories = {ns: history(ss) for ns, ss in plan} if baselines else {}
        count_many(["load the token counter"])  # once per process (seconds), not in the first question's time
        progress.start("answering questions", len(items) * (1 + len(baselines)))
        for item in items:
            got = answer_from_memory(mem, item, answerer, agentic=agentic, max_steps=max_steps)
            rows.append(_row(item, got, judge(item, got.text, grader) if not got.error else False))
            progress.advance()
            for b in baselines:
                got = answer_full_context(item, histories[item.namespace], answerer)
                base_rows[b].append(_row(item, got, judge(item, got.text, grader) if not got.error else False))
                progress.advance()
    order = list(CATEGORY_NAMES) if kind == "locomo" else []
    report: dict[str, Any] = {"dataset": f"{kind}:{Path(path).name}", "mode": "agentic" if agentic else "context",
                              "answer_model": answerer.name, "judge_model": grader.name,
                              **summarise_qa(rows, order)}
    if kind == "locomo":
        report["category_names"] = {c: CATEGORY_NAMES[c] for c in MAIN_CATEGORIES}
    if agentic:
        report["max_steps"] = max_steps
        report["tool_calls"] = _dist([float(len(r.get("tool_calls", []))) for r in rows], 1)
    if baselines:
        report["baselines"] = {b: summarise_qa(r, order) for b, r in base_rows.items()}
    report["llm_usage"] = {"answer": {"calls": answerer.calls, **answerer.usage},
                           "judge": {"calls": grader.calls, **grader.usage}}
    report["questions"] = rows
    if baselines:
        report["baseline_questions"] = base_rows
    report.update(ingest_seconds=ingest_seconds, seconds=clock.seconds())
    return report
