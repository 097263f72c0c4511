"""The ``--qa`` options of ``memfold eval locomo|longmemeval``: answer accuracy with a chat model
and an LLM judge (``eval/qa.py``), printed as a table or JSON."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.table import Table

from ..errors import InvalidInputError


@dataclass(frozen=True)
class QAOptions:
    qa: bool = False
    llm: Optional[str] = None
    model: Optional[str] = None
    judge: Optional[str] = None
    judge_model: Optional[str] = None
    api_key_env: str = "OPENAI_API_KEY"
    agentic: bool = False
    max_steps: int = 4
    baseline: Optional[str] = None
    timeout: float = 60.0

    def check(self) -> None:
        given = [name for name, v in (("--llm", self.llm), ("--model", self.model), ("--judge", self.judge),
                                      ("--judge-model", self.judge_model), ("--agentic", self.agentic),
                                      ("--baseline", self.baseline)) if v]
        if not self.qa:
            if given:
                raise InvalidInputError(f"{given[0]} needs --qa (answer accuracy)")
            return
        if not self.llm or not self.model:
            raise InvalidInputError("--qa needs --llm URL (an OpenAI-compatible endpoint, e.g. "
                                    "http://localhost:11434/v1) and --model NAME")


def qa_options(qa: bool, llm: Optional[str], model: Optional[str], judge: Optional[str], judge_model: Optional[str],
               api_key_env: str, agentic: bool, max_steps: int, baseline: Optional[str], timeout: float) -> QAOptions:
    opts = QAOptions(qa, llm, model, judge, judge_model, api_key_env, agentic, max_steps, baseline, timeout)
    opts.check()
    return opts


# the answer-accuracy options, declared once for every benchmark that has questions to answer
QaFlag = Annotated[bool, typer.Option("--qa", help="Answer accuracy: answer each question from memfold's context "
                                                   "with --model at --llm, graded by an LLM judge.")]
LlmUrl = Annotated[Optional[str], typer.Option("--llm", help="OpenAI-compatible endpoint that answers (with --qa), "
                                                             "e.g. http://localhost:11434/v1.")]
ModelName = Annotated[Optional[str], typer.Option("--model", help="Model that answers (with --qa).")]
JudgeUrl = Annotated[Optional[str], typer.Option("--judge", help="Endpoint of the judge (default: --llm).")]
JudgeModel = Annotated[Optional[str], typer.Option("--judge-model", help="Model of the judge (default: --model).")]
KeyEnv = Annotated[str, typer.Option("--api-key-env", help="Environment variable holding the endpoints' key.")]
Agentic = Annotated[bool, typer.Option("--agentic", help="The answering model may also call memory_search and "
                                                         "memory_read before answering.")]
MaxSteps = Annotated[int, typer.Option("--max-steps", min=1, max=20,
                                       help="Agentic: rounds of tool calls before the model must answer (1-20).")]
Baseline = Annotated[Optional[str], typer.Option("--baseline", help="Also answer with the whole conversation in the "
                                                                    "prompt: full-context.")]
LlmTimeout = Annotated[float, typer.Option("--llm-timeout", min=1.0, max=600.0, help="Seconds one LLM call may take.")]


def run_qa_cli(kind: str, path: Path, opts: QAOptions, *, root: Optional[str], limit: Optional[int], infer: bool,
               vector_cache: Optional[Path], as_json: bool) -> None:
    from ..eval.qa import endpoint_chat, run_qa
    from .common import err, out, print_json
    from .eval_cmd import BarProgress

    assert opts.llm and opts.model
    answerer = endpoint_chat(opts.llm, opts.model, opts.api_key_env, opts.timeout)
    grader = endpoint_chat(opts.judge or opts.llm, opts.judge_model or opts.model, opts.api_key_env, opts.timeout)
    try:
        with BarProgress(err) as bar:
            report = run_qa(kind, path, answerer, grader, limit=limit, agentic=opts.agentic, max_steps=opts.max_steps,
                            baselines=[opts.baseline] if opts.baseline else [], root=root, infer=infer,
                            vector_cache=vector_cache, progress=bar)
    finally:
        answerer.close()
        grader.close()
    if as_json:
        print_json(report)
    else:
        render_qa(report, out)


def render_qa(report: dict[str, Any], console: Console) -> None:
    head = (f"{report['dataset']}: answer accuracy of {report['answer_model']} ({report['mode']}), judged by "
            f"{report['judge_model']}, {report['n_questions']} questions, {report['seconds']} s")
    t = Table(title=head, title_justify="left")
    rankings = [("memfold", report)] + list((report.get("baselines") or {}).items())
    t.add_column("category")
    t.add_column("n", justify="right")
    for name, _ in rankings:
        t.add_column(f"{name} accuracy", justify="right")
    names = report.get("category_names") or {}
    t.add_row("overall", str(report["n_questions"]), *(f"{r['accuracy']:.3f}" for _, r in rankings))
    for cat, b in report["by_category"].items():
        t.add_row(f"{cat} {names.get(cat, '')}".strip(), str(b["n_questions"]),
                  *(f"{r['by_category'].get(cat, {}).get('accuracy', 0.0):.3f}" for _, r in rankings))
    t.add_row("context tokens (mean)", "", *(f"{r['context_tokens']['mean']:,.1f}" for _, r in rankings))
    t.add_row("seconds per answer (p50)", "", *(f"{r['answer_seconds']['p50']:.2f}" for _, r in rankings))
    t.add_row("  of which memfold's context (p50)", "", f"{report['context_seconds']['p50']:.3f}",
              *("-" for _ in rankings[1:]))
    t.add_row("answer errors / judge unclear", "", *(f"{r['answer_errors']} / {r['judge_unclear']}" for _, r in rankings))
    console.print(t)
    usage = report["llm_usage"]
    console.print(f"LLM calls: answer {usage['answer'].get('calls', 0)} "
                  f"({usage['answer'].get('total_tokens', 0):,} tokens), judge {usage['judge'].get('calls', 0)} "
                  f"({usage['judge'].get('total_tokens', 0):,} tokens)" +
                  (f"; tool calls per question {report['tool_calls']['mean']}" if "tool_calls" in report else ""),
                  highlight=False)
