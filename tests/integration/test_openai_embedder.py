"""An OpenAI-compatible embeddings endpoint chosen by config (scripted server over real HTTP)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memfold import ConfigError, Memory, ProviderError
from memfold.errors import ProviderResponseError


def _vocab_embed(texts: list[str]) -> list[list[float]]:
    """A bag-of-letters embedding: deterministic, and similar texts get similar vectors."""
    out = []
    for t in texts:
        v = np.zeros(26)
        for ch in t.lower():
            if "a" <= ch <= "z":
                v[ord(ch) - 97] += 1
        out.append((v + 0.01).tolist())
    return out


def test_memory_uses_the_configured_endpoint(root: Path, llm_server, monkeypatch: pytest.MonkeyPatch):
    llm_server.embed_fn = _vocab_embed
    root.mkdir(parents=True)
    (root / "config.toml").write_text(
        f'[embedder]\nprovider = "openai"\nbase_url = "{llm_server.base_url}"\nmodel = "text-embed-x"\n'
        f'api_key_env = "MEMFOLD_TEST_EMBED_KEY"\n')
    monkeypatch.setenv("MEMFOLD_TEST_EMBED_KEY", "k-123")
    mem = Memory(root=root)
    assert mem.embedder.dim == 26 and mem.embedder.name == "openai:text-embed-x"
    mem.add("zebra zoo", "u")
    mem.add("apple banana", "u")
    assert mem.search("zebra", "u")[0].record.content == "zebra zoo"
    reqs = [r for r in llm_server.requests if r["path"].endswith("/embeddings")]
    assert reqs and all(r["body"]["model"] == "text-embed-x" for r in reqs)
    assert reqs[0]["headers"]["Authorization"] == "Bearer k-123"
    mem.close()


def test_endpoint_errors_are_clear(root: Path, llm_server):
    from memfold.config import EmbedderSettings
    from memfold.providers.openai_embeddings import OpenAIEmbedder

    with pytest.raises(ConfigError, match="base_url"):
        OpenAIEmbedder(EmbedderSettings(provider="openai"))
    llm_server.embed_fn = lambda texts: [[1.0, 2.0]] * (len(texts) + 1)
    with pytest.raises(ProviderResponseError, match="3 vectors for 2 texts"):
        OpenAIEmbedder(EmbedderSettings(provider="openai", base_url=llm_server.base_url, model="m", dim=2)).embed(
            ["a", "b"])
    with pytest.raises(ProviderError, match="unreachable"):
        OpenAIEmbedder(EmbedderSettings(provider="openai", base_url="http://127.0.0.1:9/v1", model="m", timeout=2))


def test_reindex_after_a_change_of_embedder_keeps_every_row(root: Path, llm_server, tmp_path: Path):
    """Switching the embedder: the next command names the problem, `memfold reindex` re-embeds every
    row (episodic turns and history too, which the Markdown files do not hold) and keeps the old file."""
    import json

    from ..conftest import run_cli

    conv = tmp_path / "conv.json"
    conv.write_text(json.dumps([{"role": "user", "content": "zebras live in the zoo", "turn_id": "t1"},
                                {"role": "user", "content": "apples and bananas for lunch", "turn_id": "t2"}]))
    for args in (("add", "My favourite animal is the zebra", "--user", "u"), ("ingest", str(conv), "--user", "u")):
        r = run_cli(root, *args)
        assert r.returncode == 0, r.stderr
    before = json.loads(run_cli(root, "stats", "--user", "u", "--json").stdout)
    first = json.loads(run_cli(root, "search", "favourite animal", "--user", "u", "--json").stdout)[0]
    llm_server.embed_fn = _vocab_embed
    (root / "config.toml").write_text(
        f'[embedder]\nprovider = "openai"\nbase_url = "{llm_server.base_url}"\nmodel = "text-embed-x"\n'
        f'api_key_env = "MEMFOLD_TEST_EMBED_KEY"\n')
    env = {"MEMFOLD_TEST_EMBED_KEY": "k"}
    r = run_cli(root, "search", "zebra", "--user", "u", env=env)
    assert r.returncode == 1 and "reindex" in r.stderr and "Traceback" not in r.stderr
    r = run_cli(root, "reindex", env=env)
    assert r.returncode == 0, r.stderr
    assert "re-embedded" in r.stdout and (root / "index.db.use-multilingual-v3.bak").is_file()
    after = json.loads(run_cli(root, "stats", "--user", "u", "--json", env=env).stdout)
    assert (after["total"], after["episodic"]) == (before["total"], before["episodic"])
    hits = json.loads(run_cli(root, "search", "zebras zoo", "--user", "u", "--json", env=env).stdout)
    assert any(h["content"] == "zebras live in the zoo" for h in hits)  # an episodic turn, kept
    hist = json.loads(run_cli(root, "history", first["id"], "--user", "u", "--json", env=env).stdout)
    assert hist and hist[0]["action"] == "add"
    assert any(r["path"].endswith("/embeddings") for r in llm_server.requests)
