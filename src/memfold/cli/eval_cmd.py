"""``memfold eval locomo|madial|longmemeval`` and ``memfold bench``: measurements printed as tables or JSON.

Heavy imports happen inside the commands so that ``memfold --help`` stays fast."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from .common import Json, err, out, print_json, runtime
from .eval_qa_cmd import (
    Agentic,
    Baseline,
    JudgeModel,
    JudgeUrl,
    KeyEnv,
    LlmTimeout,
    LlmUrl,
    MaxSteps,
    ModelName,
    QaFlag,
    qa_options,
    run_qa_cli,
)

eval_app = typer.Typer(no_args_is_help=True, help="Measure retrieval quality on public benchmarks (no LLM needed); "
                       "answer accuracy with --qa and an OpenAI-compatible endpoint.")


class BarProgress:
    """The harness's progress sink as a rich progress bar on stderr."""

    def __init__(self, console: Console):
        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                            console=console, transient=True)
        self.task: Any = None

    def __enter__(self) -> "BarProgress":
        self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.stop()

    def start(self, description: str, total: int) -> None:
        if self.task is not None:
            self.bar.remove_task(self.task)
        self.task = self.bar.add_task(description, total=total)

    def advance(self, n: int = 1) -> None:
        self.bar.advance(self.task, n)


def _fmt(metric: str, v: float) -> str:
    return f"{v:.1f}" if metric == "tokens" else f"{v:.3f}"


def render_eval(report: dict[str, Any], console: Console) -> None:
    ks = list(report["recall"])
    head = (f"{report['dataset']}: {report['n_questions']} questions, {report['memories']} memories, "
            f"embedder {report['embedder']}, {report['seconds']} s")
    t = Table(title=head, title_justify="left")
    t.add_column("ranking")
    t.add_column("metric")
    for k in ks:
        t.add_column(f"@{k}", justify="right")
    rankings = [("memfold (hybrid)", report)] + [(f"{m} only", r) for m, r in (report.get("baselines") or {}).items()]
    for name, r in rankings:
        for metric in ("recall", "hit", "tokens"):
            t.add_row(name, metric, *(_fmt(metric, r[metric][k]) for k in ks))
    console.print(t)
    names = report.get("category_names") or {}
    cats = report.get("by_category") or {}
    if len(cats) > 1:
        c = Table(title="memfold recall by category" + (" (overall = categories 1-4; 5 apart)" if names else ""),
                  title_justify="left")
        c.add_column("category")
        c.add_column("n", justify="right")
        for k in ks:
            c.add_column(f"R@{k}", justify="right")
        for cat, r in cats.items():
            c.add_row(f"{cat} {names.get(cat, '')}".strip(), str(r["n_questions"]), *(f"{r['recall'][k]:.3f}" for k in ks))
        console.print(c)
    if "per_question" in report:  # MADial's --per-question: the dialogues with gold missing at the largest k
        _print_missed(report, ks[-1], console, "dialogues", lambda q, k: (
            f"{q['id']}: {', '.join(q['missing'][k])} of {len(q['gold'])} gold memories missing "
            f"(R@{k} {q['recall'][k]:.2f}); last line {q['last_line']}"))


def _print_missed(report: dict[str, Any], k: Any, console: Console, noun: str,
                  line: Callable[[dict[str, Any], Any], str]) -> None:
    """``--per-question``: the entries of ``report["per_question"]`` with gold missing at ``k``, one line each."""
    missed = [q for q in report["per_question"] if q["missing"][k]]
    console.print(f"missed at k = {k} (memfold): {len(missed)} of {len(report['per_question'])} {noun}")
    for q in missed:
        console.print("  " + line(q, k), highlight=False, markup=False)


def _run(root: Optional[str], kind: str, path: Path, k: Optional[str], as_json: bool, baselines: bool,
         no_extract: bool, vector_cache: Optional[Path] = None, questions: bool = False) -> None:
    from ..eval.harness import DEFAULT_KS, parse_ks
    from ..eval.locomo import run_locomo
    from ..eval.madial import MADIAL_KS, run_madial

    ks: tuple[int, ...] = parse_ks(k) if k else (DEFAULT_KS if kind == "locomo" else MADIAL_KS)
    with BarProgress(err) as bar:
        if kind == "locomo":
            report = run_locomo(path, ks, baselines=baselines, root=root, infer=not no_extract, progress=bar,
                                vector_cache=vector_cache)
        else:
            report = run_madial(path, ks, baselines=baselines, root=root, infer=not no_extract, progress=bar,
                                vector_cache=vector_cache, questions=questions)
    if as_json:
        print_json(report)
    else:
        render_eval(report, out)


def render_longmemeval(report: dict[str, Any], console: Console) -> None:
    ks = list(report["recall_all"])
    head = (f"{report['dataset']}: {report['n_questions']} questions, {report['turns']:,} turns, "
            f"{report['memories']:,} memories, embedder {report['embedder']}, "
            f"ingest {report['ingest_seconds']} s, total {report['seconds']} s")
    t = Table(title=head, title_justify="left")
    for col in ("ranking", "question type", "n"):
        t.add_column(col, justify="right" if col == "n" else "left")
    for k in ks:
        t.add_column(f"all@{k}", justify="right")
    for k in ks:
        t.add_column(f"any@{k}", justify="right")
    rankings = [("memfold (hybrid)", report)] + [(f"{m} only", r) for m, r in (report.get("baselines") or {}).items()]
    for name, r in rankings:
        rows = [("overall", r)] + list((r.get("by_type") or {}).items())
        for qtype, b in rows:
            t.add_row(name, qtype, str(b["n_questions"]), *(f"{b['recall_all'][k]:.3f}" for k in ks),
                      *(f"{b['recall_any'][k]:.3f}" for k in ks))
    console.print(t)
    if "per_question" in report:
        _print_missed(report, ks[-1], console, "questions", lambda q, k: (
            f"{q['id']} ({q['type']}): {_lme_places(q, k)}; {q['question']}"))
        m = report["misses"][ks[-1]]
        w = m["whole_without"]
        console.print(f"of the {m['missed']} missed: {m['not_a_candidate']} with a gold turn that is not a candidate; "
                      f"whole without the non-gold entries above of their gold sessions: {w['same_session']}, "
                      f"of other sessions: {w['other']}, that ask (turns ending with '?'): {w['asks']}")


def _lme_places(q: dict[str, Any], k: str) -> str:
    """A missed question's gold turns with their places among the candidates, and what sits above them."""
    got = q.get("places", {}).get(k, {})
    place = got.get("place", {})
    text = ", ".join(f"{g} (place {place[g] if place.get(g) is not None else '-'})" for g in q["missing"][k])
    text += f" of {len(q['gold'])} gold turns missing"
    if "above" in got:
        a = got["above"]
        text += (f" (above them: gold sessions {a['same_session_turn']} turns + {a['same_session_extract']} extracts, "
                 f"others {a['other_turn']} + {a['other_extract']}, asking {a['asks']}; {got['to_free']} to free)")
    return text


_K_HELP = "Comma-separated cut-offs"
_BASE_HELP = "Also rank keyword-only (BM25) and vector-only over the same memories."
_NOX_HELP = "Store turns only (no rule-extracted memories)."
_VC_HELP = "A folder where vectors are kept across runs (keyed by embedder and text): a second run embeds nothing."


@eval_app.command("locomo")
def eval_locomo(ctx: typer.Context,
                path: Path = typer.Argument(..., help="A LoCoMo JSON file, e.g. ../shared/data/locomo/locomo_dev.json."),
                k: Optional[str] = typer.Option(None, "--k", help=f"{_K_HELP} (default 1,5,10,20,50)."),
                as_json: Json = False,
                baselines: bool = typer.Option(False, "--baselines", help=_BASE_HELP),
                no_extract: bool = typer.Option(False, "--no-extract", help=_NOX_HELP),
                vector_cache: Optional[Path] = typer.Option(None, "--vector-cache", help=_VC_HELP),
                limit: Optional[int] = typer.Option(None, "--limit", min=1,
                                                    help="With --qa: only the first N scored questions."),
                qa: QaFlag = False, llm: LlmUrl = None, model: ModelName = None, judge: JudgeUrl = None,
                judge_model: JudgeModel = None, api_key_env: KeyEnv = "OPENAI_API_KEY", agentic: Agentic = False,
                max_steps: MaxSteps = 4, baseline: Baseline = None, llm_timeout: LlmTimeout = 60.0,
                ) -> None:
    """LoCoMo evidence recall: ingest each conversation, ask every question, score the turn ids found.
    With --qa: answer accuracy of categories 1-4 (5, adversarial, left out)."""
    o = qa_options(qa, llm, model, judge, judge_model, api_key_env, agentic, max_steps, baseline, llm_timeout)
    if o.qa:
        return run_qa_cli("locomo", path, o, root=runtime(ctx).root, limit=limit, infer=not no_extract,
                          vector_cache=vector_cache, as_json=as_json)
    if limit is not None:
        raise typer.BadParameter("--limit needs --qa for LoCoMo (the retrieval protocol asks every question)")
    _run(runtime(ctx).root, "locomo", path, k, as_json, baselines, no_extract, vector_cache)


@eval_app.command("madial")
def eval_madial(ctx: typer.Context,
                path: Path = typer.Argument(..., help="A MADial-Bench language folder, e.g. ../shared/data/madial/zh."),
                k: Optional[str] = typer.Option(None, "--k", help=f"{_K_HELP} (default 1,3,5,10)."),
                as_json: Json = False,
                baselines: bool = typer.Option(False, "--baselines", help=_BASE_HELP),
                no_extract: bool = typer.Option(False, "--no-extract", help=_NOX_HELP),
                vector_cache: Optional[Path] = typer.Option(None, "--vector-cache", help=_VC_HELP),
                questions: bool = typer.Option(False, "--per-question",
                                               help="Also each dialogue's outcome: with --json a per_question "
                                                    "list (id, last line, gold memory ids, recall and the ids "
                                                    "missing at each k); in the table, the dialogues with gold "
                                                    "missing at the largest k.")) -> None:
    """MADial-Bench memory recall: each user's memories are the corpus, the dialogue so far is the query."""
    _run(runtime(ctx).root, "madial", path, k, as_json, baselines, no_extract, vector_cache, questions)


@eval_app.command("longmemeval")
def eval_longmemeval(ctx: typer.Context,
                     path: Path = typer.Argument(..., help="A LongMemEval JSON file (.json or .json.gz), e.g. "
                                                           "../shared/data/longmemeval/longmemeval_s_dev.json.gz."),
                     k: Optional[str] = typer.Option(None, "--k", help=f"{_K_HELP} (default 5,10,20)."),
                     as_json: Json = False,
                     baselines: bool = typer.Option(False, "--baselines", help=_BASE_HELP),
                     no_extract: bool = typer.Option(False, "--no-extract", help=_NOX_HELP),
                     vector_cache: Optional[Path] = typer.Option(None, "--vector-cache", help=_VC_HELP),
                     limit: Optional[int] = typer.Option(None, "--limit", min=1,
                                                         help="Only the first N questions."),
                     questions: bool = typer.Option(False, "--per-question",
                                                    help="Also each question's outcome: with --json a "
                                                         "per_question list (id, type, gold turns, the ones "
                                                         "missing at each k); in the table, the questions "
                                                         "missed at the largest k."),
                     qa: QaFlag = False, llm: LlmUrl = None, model: ModelName = None, judge: JudgeUrl = None,
                     judge_model: JudgeModel = None, api_key_env: KeyEnv = "OPENAI_API_KEY", agentic: Agentic = False,
                     max_steps: MaxSteps = 4, baseline: Baseline = None, llm_timeout: LlmTimeout = 60.0,
                     ) -> None:
    """LongMemEval turn-level recall: each question's sessions in their own namespace; recall_all / recall_any.
    With --qa: answer accuracy by question type, abstention questions apart."""
    o = qa_options(qa, llm, model, judge, judge_model, api_key_env, agentic, max_steps, baseline, llm_timeout)
    if o.qa:
        return run_qa_cli("longmemeval", path, o, root=runtime(ctx).root, limit=limit, infer=not no_extract,
                          vector_cache=vector_cache, as_json=as_json)
    from ..eval.harness import parse_ks
    from ..eval.longmemeval import LME_KS, run_longmemeval

    ks: tuple[int, ...] = parse_ks(k) if k else LME_KS
    with BarProgress(err) as bar:
        report = run_longmemeval(path, ks, baselines=baselines, root=runtime(ctx).root, infer=not no_extract,
                                 limit=limit, vector_cache=vector_cache, progress=bar, questions=questions)
    if as_json:
        print_json(report)
    else:
        render_longmemeval(report, out)


def render_bench(report: dict[str, Any], console: Console) -> None:
    t = Table(title=f"memfold bench: backend {report['backend']}, embedder {report['embedder']}, "
                    f"{report['cpu_count']} CPUs, {report['seconds']} s", title_justify="left")
    t.add_column("measure")
    for r in report["runs"]:
        t.add_column(f"n={r['n']:,}", justify="right")
    runs = report["runs"]

    def row(name: str, fn: Any) -> None:
        t.add_row(name, *(fn(r) for r in runs))

    row("stored memories", lambda r: f"{r['stored']:,}")
    row("ingest batch (memories/s)", lambda r: f"{r['ingest_batch_per_s']:,.0f}")
    row("ingest batch over the model alone (×)",
        lambda r: f"{r['ingest_over_model']:.2f}" if r.get("ingest_over_model") else "-")
    row("ingest one turn at a time (/s)", lambda r: f"{r['ingest_single_turn_per_s']:,.1f}")
    row("ingest one text into MEMORY.md (/s)", lambda r: f"{r['ingest_single_text_per_s']:,.1f}")
    for key, label in (("search_ms", "search"), ("search_no_embed_ms", "search, query vector cached"),
                       ("build_context_ms", "build_context")):
        for p in ("p50", "p95", "p99"):
            row(f"{label} {p} (ms)", lambda r, key=key, p=p: f"{r[key][p]:.2f}" if r.get(key) else "-")
    row("cold start: import+open+search (s)", lambda r: f"{r['cold_start']['seconds']:.2f}")
    row("peak RSS (MB)", lambda r: f"{r['peak_rss_mb']:,.0f}")
    row("index size on disk (MB)", lambda r: f"{r['index_bytes'] / 1e6:,.1f}")
    row("workspace size on disk (MB)", lambda r: f"{r['workspace_bytes'] / 1e6:,.1f}")
    console.print(t)


def render_maintain_bench(report: dict[str, Any]) -> None:
    t = Table(title=f"memfold bench --maintain: backend {report['backend']}, embedder {report['embedder']}, "
                    f"load {report['load_avg_before'][0]}", title_justify="left")
    t.add_column("measure")
    for r in report["runs"]:
        t.add_column(f"n={r['n']:,}", justify="right")
    runs = report["runs"]
    t.add_row("dry run (s)", *(f"{r['dry_run_seconds']:.2f}" for r in runs))
    for name in runs[0]["jobs"]:
        t.add_row(f"{name} (s)", *(f"{r['jobs'][name]['seconds']:.2f}" for r in runs))
        t.add_row("  archived / written", *(f"{r['jobs'][name]['archived']:,} / {r['jobs'][name]['created']:,}"
                                             for r in runs))
    t.add_row("all jobs (s)", *(f"{r['total_seconds']:.2f}" for r in runs))
    t.add_row("MEMORY.md characters before", *(f"{r['memory_md_chars_before']:,}" for r in runs))
    t.add_row("MEMORY.md characters after", *(f"{r['memory_md_chars_after']:,}" for r in runs))
    out.print(t)


def bench(ctx: typer.Context, n: str = typer.Option("10000,100000", "--n", help="Comma-separated numbers of memories."),
          as_json: Json = False,
          backend: str = typer.Option("sqlite", "--backend", help="Index backend: sqlite or postgres."),
          queries: int = typer.Option(200, "--queries", min=1, help="Search queries timed per size."),
          out_file: Path = typer.Option(Path("memfold-bench.json"), "--out", help="Where the JSON results are written."),
          maintain: bool = typer.Option(False, "--maintain", help="Time the maintenance jobs instead (memfold maintain).")
          ) -> None:
    """Synthetic scale test: ingest throughput, search latency, cold start, memory, index size."""
    import json

    from ..eval.bench import run_bench
    from ..eval.harness import parse_ks

    sizes = parse_ks(n, "--n")
    if maintain:
        from ..eval.bench_maintain import run_maintain_bench

        with BarProgress(err) as bar:
            report = run_maintain_bench(sizes, backend=backend, root=runtime(ctx).root, progress=bar)
        out_file.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        if as_json:
            print_json(report)
        else:
            render_maintain_bench(report)
        return
    with BarProgress(err) as bar:
        report = run_bench(sizes, backend=backend, root=runtime(ctx).root, n_queries=queries,
                           n_single=min(200, max(20, queries)), progress=bar)
    out_file.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    if as_json:
        print_json(report)
    else:
        render_bench(report, out)
        err.print(f"results written to {out_file}")


def register(app: typer.Typer) -> None:
    app.add_typer(eval_app, name="eval")
    app.command()(bench)
