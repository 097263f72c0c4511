"""Every input that costs memory in proportion to its length is bounded (README "Limits"): a clear
error naming the length and the bound, nothing stored; texts are cut for their vector only."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from memfold import Memory
from memfold.errors import ConfigError, InvalidInputError
from memfold.limits import MAX_CONTENT_CHARS, MAX_MESSAGE_CHARS, MAX_QUERY_CHARS
from memfold.providers.embedder import UseEmbedder

ZH = "我喜欢在成都的茶馆里喝茉莉花茶，听老人们摆龙门阵。"


def test_long_inputs_get_a_clear_error_and_store_nothing(mem: Memory, root):
    mem.add("I keep my bike in the garage", user_id="alice")
    before = (root / "alice" / "MEMORY.md").read_text(encoding="utf-8")
    with pytest.raises(InvalidInputError, match=r"the query is 10,001 characters long, over the limit of 10,000"):
        mem.search("x" * (MAX_QUERY_CHARS + 1), user_id="alice")
    with pytest.raises(InvalidInputError, match="the note is 1,000,000 characters long"):
        mem.add_note("a" * 1_000_000, user_id="alice")
    with pytest.raises(InvalidInputError, match="over the limit of 20,000"):
        mem.add("b" * (MAX_CONTENT_CHARS + 1), user_id="alice")
    rid = mem.get_all("alice")[0].id
    with pytest.raises(InvalidInputError, match="the new content is 20,001 characters long"):
        mem.update(rid, user_id="alice", content="c" * (MAX_CONTENT_CHARS + 1))
    s = mem.session("chat", user_id="alice")
    with pytest.raises(InvalidInputError, match="the message is 100,001 characters long"):
        s.add_message("user", "d" * (MAX_MESSAGE_CHARS + 1))
    assert s.messages == []
    assert (root / "alice" / "MEMORY.md").read_text(encoding="utf-8") == before
    assert [r.content for r in mem.get_all("alice")] == ["I keep my bike in the garage"]
    assert not list((root / "alice").glob("memory/*/*.md"))  # no daily note written


def test_a_long_message_still_gets_context_and_long_texts_are_kept_whole(mem: Memory):
    mem.add("My sister lives in Lisbon", user_id="bob")
    question = "where does my sister live? " + "background " * 5000  # 55k characters
    msgs = mem.build_context(question, user_id="bob")
    assert msgs[-1]["content"] == question
    long_text = (ZH * 800)[:MAX_CONTENT_CHARS]  # 20,000 Chinese characters: kept whole, embedded cut
    r = mem.add(long_text, user_id="bob", memory_type="note").added[0]
    assert mem.get(r.id, user_id="bob").content == long_text
    assert any(h.record.id == r.id for h in mem.search("茶馆 茉莉花茶", user_id="bob"))


def test_the_embedder_cuts_each_text_for_its_vector(embedder: UseEmbedder):
    long_text = ZH * 400  # 10,000 characters
    assert embedder.max_chars == 2000
    got = embedder.embed([long_text, "short"])
    want = embedder.embed([long_text[:2000], "short"])
    assert np.allclose(got, want, atol=1e-6)
    with pytest.raises(ConfigError, match=r"\[embedder\] max_chars must be at least 64"):
        UseEmbedder(max_chars=10)


def test_the_embedder_setting_is_read_from_the_config(tmp_path):
    (tmp_path / "config.toml").write_text("[embedder]\nmax_chars = 500\n", encoding="utf-8")
    m = Memory(root=tmp_path)
    try:
        assert m.embedder.max_chars == 500
    finally:
        m.close()


def test_memory_for_long_inputs_does_not_grow_with_their_length(tmp_path):
    """In a fresh process: a 20,000-character Chinese text and a 90,000-character message to retrieve for cost the
    same peak memory as a short text (the model's work is bounded by [embedder] max_chars)."""
    code = textwrap.dedent(f"""
        import resource, sys
        from memfold import Memory
        m = Memory(root=sys.argv[1])
        m.add("warm up the model", user_id="u")
        m.search("warm up", user_id="u")
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        text = ({ZH!r} * 800)[:20000]
        m.add(text, user_id="u", memory_type="note")
        m.retrieve("where? " + {ZH!r} * 3500, user_id="u")
        print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) // 1024)
    """)
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "ws")], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    grew_mb = int(out.stdout.split()[-1])
    assert grew_mb < 100, f"peak RSS grew by {grew_mb} MB for long inputs"  # uncut: about 330 MB
