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
