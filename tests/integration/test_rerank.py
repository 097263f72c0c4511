"""The opt-in quality stage of searches ([rerank]) end to end: a real local /rerank server and the
scripted OpenAI-compatible server re-order the top candidates; a malformed answer, an index out of
range, a duplicate, an HTTP error or a timeout keeps the incoming order and is counted by reason;
the query rewrite splits a question into sub-queries whose hits are fused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY

from memfold import Memory
from memfold.config import load_settings
from memfold.errors import ConfigError

from ..support.openai_server import Reply, ScriptedOpenAIServer
from ..support.rerank_server import RerankReply, ScriptedRerankServer

FACTS = ["Alice works as a baker in Lyon.", "Alice likes green tea in the morning.",
         "Alice's brother Tom lives in Berlin.", "Alice plays the cello on Sundays.",
         "Alice adopted a grey cat named Miso last spring."]
QUERY = "What does Alice do on Sundays?"


def _memory(root: Path, embedder: Any, **rerank: Any) -> Memory:
    m = Memory(root=root, embedder=embedder, settings=load_settings(root, rerank=rerank), background=False)
    for f in FACTS:
        m.add(f, "u")
    return m


def _count(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def _texts(hits: Any) -> list[str]:
    return [h.record.content for h in hits]


@pytest.fixture
def reranker():
    srv = ScriptedRerankServer().start()
    yield srv
    srv.stop()


def test_endpoint_reorders_the_top_candidates(root: Path, embedder: Any, reranker: ScriptedRerankServer) -> None:
    with _memory(root, embedder, backend="endpoint", url=reranker.url, model="bge-reranker", candidates=5) as m:
        incoming = m.retriever.ranked_search(QUERY, "u", limit=5, record_access=False)
        assert len(incoming) >= 3
        n = len(incoming)
        reversed_body = {"results": [{"index": i, "relevance_score": float(i)} for i in range(n)]}
        reranker.script(RerankReply(body=reversed_body))
        ok = _count("memfold_rerank_calls_total", step="rerank", backend="endpoint", outcome="ok")
        hits = m.search(QUERY, "u", limit=2)
        assert _texts(hits) == _texts(incoming[::-1][:2])  # the endpoint's order, cut at the number asked
        assert hits[0].score >= hits[1].score  # scores stay decreasing
        sent = reranker.requests[-1]["body"]
        assert sent["query"] == QUERY and sent["model"] == "bge-reranker" and sent["top_n"] == n
        assert [d.split(") ", 1)[1] for d in sent["documents"]] == _texts(incoming)
        assert _count("memfold_rerank_calls_total", step="rerank", backend="endpoint", outcome="ok") == ok + 1
        # a search asking for more than the candidates: only the first ones are re-ordered, the rest follow
        m.retriever.stage.candidates = 2
        now = m.retriever.ranked_search(QUERY, "u", limit=5, record_access=False)  # accesses count in the ranking
        reranker.script(RerankReply(body={"results": [{"index": 1, "relevance_score": 1.0}]}))
        assert _texts(m.search(QUERY, "u", limit=5)) == _texts([now[1], now[0], *now[2:]])
        assert len(reranker.requests[-1]["body"]["documents"]) == 2
        m.retriever.stage.candidates = 5
        # the default scripted answer scores by shared words: the cello memory comes first
        assert m.search(QUERY, "u", limit=1)[0].record.content == "Alice plays the cello on Sundays."


@pytest.mark.parametrize("reply,reason", [
    (RerankReply(body=b"not json"), "malformed"),
    (RerankReply(body={"results": [{"index": 0}]}), "malformed"),
    (RerankReply(body={"results": [{"index": 0, "relevance_score": 1.0}, {"index": 99, "relevance_score": 0.5}]}),
     "out_of_range"),
    (RerankReply(body={"results": [{"index": 1, "relevance_score": 1.0}, {"index": 1, "relevance_score": 0.5}]}),
     "duplicate"),
    (RerankReply(status=503, body={"error": "busy"}), "http_error"),
    (RerankReply(delay=1.5), "timeout"),
])
def test_endpoint_failures_keep_the_incoming_order(root: Path, embedder: Any, reranker: ScriptedRerankServer,
                                                   reply: RerankReply, reason: str) -> None:
    with _memory(root, embedder, backend="endpoint", url=reranker.url, candidates=5, timeout_seconds=0.5) as m:
        incoming = m.retriever.ranked_search(QUERY, "u", limit=3, record_access=False)
        reranker.script(reply)
        before = _count("memfold_rerank_fallbacks_total", step="rerank", reason=reason)
        assert _texts(m.search(QUERY, "u", limit=3)) == _texts(incoming)
        assert _count("memfold_rerank_fallbacks_total", step="rerank", reason=reason) == before + 1


@pytest.mark.parametrize("answer,reason", [
    ("I think the third one.", "malformed"),
    ('{"ranking": []}', "malformed"),
    ('{"ranking": ["two"]}', "malformed"),
    ('{"ranking": [2, 99]}', "out_of_range"),
    ('{"ranking": [0]}', "out_of_range"),
    ('{"ranking": [2, 2, 1]}', "duplicate"),
    (Reply(delay=1.5, content='{"ranking": [2]}'), "timeout"),
    (Reply(status=500), "http_error"),
])
def test_llm_failures_keep_the_incoming_order(root: Path, embedder: Any, llm_server: ScriptedOpenAIServer,
                                              answer: Any, reason: str) -> None:
    with _memory(root, embedder, backend="llm", url=llm_server.base_url, model="m", candidates=5,
                 timeout_seconds=0.5) as m:
        incoming = m.retriever.ranked_search(QUERY, "u", limit=3, record_access=False)
        llm_server.script(answer)
        before = _count("memfold_rerank_fallbacks_total", step="rerank", reason=reason)
        assert _texts(m.search(QUERY, "u", limit=3)) == _texts(incoming)
        assert _count("memfold_rerank_fallbacks_total", step="rerank", reason=reason) == before + 1


def test_llm_listwise_order_and_tokens(root: Path, embedder: Any, llm_server: ScriptedOpenAIServer) -> None:
    with _memory(root, embedder, backend="llm", url=llm_server.base_url, model="m", candidates=5) as m:
        incoming = m.retriever.ranked_search(QUERY, "u", limit=5, record_access=False)
        n = len(incoming)
        assert n >= 3
        llm_server.script(Reply(content=f'```json\n{{"ranking": [{n}, 2]}}\n```',
                                usage={"prompt_tokens": 120, "completion_tokens": 9, "total_tokens": 129}))
        tokens = _count("memfold_rerank_tokens_total", step="rerank", kind="prompt")
        hits = m.search(QUERY, "u", limit=3)
        # the listed numbers first, the others after them in the incoming order
        assert _texts(hits) == [incoming[n - 1].record.content, incoming[1].record.content, incoming[0].record.content]
        assert _count("memfold_rerank_tokens_total", step="rerank", kind="prompt") == tokens + 120
        prompt = llm_server.chat_requests()[-1]["body"]["messages"][-1]["content"]
        assert prompt.startswith(f"Question: {QUERY}") and f"[{n}] (" in prompt
        assert all(h.record.content in prompt for h in incoming)


def test_rewrite_fuses_sub_queries(root: Path, embedder: Any, llm_server: ScriptedOpenAIServer) -> None:
    question = "Where does Alice work and what pet did she adopt?"
    with _memory(root, embedder, backend="llm", url=llm_server.base_url, model="m", candidates=3,
                 rewrite=True) as m:
        subs = ["Alice job workplace", "Alice adopted a pet cat"]
        llm_server.script('{"queries": ["Alice job workplace", "Alice adopted a pet cat"]}', '{"ranking": [1]}')
        hits = m.search(question, "u", limit=3)
        rewrite, rerank = llm_server.chat_requests()[-2:]
        assert "Today: " in rewrite["body"]["messages"][-1]["content"]
        listed = rerank["body"]["messages"][-1]["content"]
        for q in subs:  # every sub-query's best hit is among the candidates the re-ranker saw
            best = m.retriever.ranked_search(q, "u", limit=1, record_access=False)[0].record.content
            assert best in listed
        assert len(hits) == 3
        # a malformed rewrite: the question searched as it is, counted
        before = _count("memfold_rerank_fallbacks_total", step="rewrite", reason="malformed")
        incoming = m.retriever.ranked_search(question, "u", limit=3, record_access=False)
        llm_server.script('{"queries": "not a list"}', Reply(status=500))
        assert _texts(m.search(question, "u", limit=3)) == _texts(incoming)
        assert _count("memfold_rerank_fallbacks_total", step="rewrite", reason="malformed") == before + 1


def test_settings_are_checked(root: Path, embedder: Any) -> None:
    for bad, words in (({"backend": "cohere"}, "backend must be one of"),
                       ({"backend": "llm"}, "needs [rerank] url and model"),
                       ({"backend": "endpoint"}, "needs [rerank] url"),
                       ({"backend": "endpoint", "url": "http://x", "candidates": 500}, "between 2 and 100"),
                       ({"backend": "endpoint", "url": "http://x", "timeout_seconds": 0}, "timeout_seconds"),
                       ({"rewrite": True}, "needs a chat model")):
        with pytest.raises(ConfigError, match=words.replace("[", r"\[").replace("]", r"\]")):
            Memory(root=root, embedder=embedder, settings=load_settings(root, rerank=bad), background=False)
    with Memory(root=root, embedder=embedder, background=False) as m:
        assert m.retriever.stage is None  # off without settings: searches as ranked
