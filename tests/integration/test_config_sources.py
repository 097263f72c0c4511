"""The settings sources (``memfold.config``, read by pydantic-settings): defaults → config.toml or
config.json → ``MEMFOLD_<SECTION>__<KEY>`` → arguments, later wins; a bad value or an unknown key
fails with a ``ConfigError`` naming the key and the source it came from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memfold import ConfigError, load_settings


def test_precedence_file_then_environment_then_arguments(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root.mkdir(parents=True)
    (root / "config.toml").write_text('language = "zh"\n[embedder]\nbatch_size = 8\ntimeout = 5\nmodel = "m1"\n'
                                      '[index]\nwrite_ahead = true\n[memory]\nretrieve_limit = 7\n', encoding="utf-8")
    s = load_settings(root)
    assert (s.language, s.embedder.batch_size, s.embedder.timeout, s.embedder.model) == ("zh", 8, 5.0, "m1")
    assert s.index.write_ahead is True and s.base_policy().retrieve_limit == 7
    monkeypatch.setenv("MEMFOLD_EMBEDDER__BATCH_SIZE", "16")
    monkeypatch.setenv("memfold_embedder__model", "m2")  # names are case-insensitive
    monkeypatch.setenv("MEMFOLD_INDEX__WRITE_AHEAD", "")  # an empty true/false variable is false
    monkeypatch.setenv("MEMFOLD_MEMORY__RETRIEVE_LIMIT", "9")
    s = load_settings(root)
    assert (s.embedder.batch_size, s.embedder.model, s.embedder.timeout) == (16, "m2", 5.0)
    assert s.index.write_ahead is False and s.base_policy().retrieve_limit == 9
    s = load_settings(root, language="en", embedder={"batch_size": 32}, memory={"retrieve_limit": 11})
    assert (s.language, s.embedder.batch_size, s.embedder.model) == ("en", 32, "m2")
    assert s.base_policy().retrieve_limit == 11


def test_a_bad_value_names_the_key_and_its_source(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root.mkdir(parents=True)
    toml = root / "config.toml"
    toml.write_text("[embedder]\nbatch_size = \"lots\"\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"setting 'batch_size' in {toml} \[embedder\] must be an int, got 'lots'"):
        load_settings(root)
    toml.write_text("[server]\nport = 8000\nprot = 1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"unknown setting 'prot' in {toml} \[server\]; known: host, port"):
        load_settings(root)
    toml.write_text("[sever]\nport = 1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"unknown section 'sever' in .*config.toml; known: cache, embedder"):
        load_settings(root)
    toml.write_text("[embedder\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="config.toml is not valid TOML"):
        load_settings(root)
    toml.unlink()
    (root / "config.json").write_text(json.dumps(["not", "an", "object"]), encoding="utf-8")
    with pytest.raises(ConfigError, match="config.json must hold a JSON object"):
        load_settings(root)
    (root / "config.json").write_text(json.dumps({"cache": {"ttl": "an hour"}}), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"setting 'ttl' in .*config.json \[cache\] must be a float, got 'an hour'"):
        load_settings(root)
    (root / "config.json").unlink()
    monkeypatch.setenv("MEMFOLD_SERVER__WORKERS", "two")
    with pytest.raises(ConfigError, match="'workers' in environment variable MEMFOLD_SERVER__WORKERS must be an int"):
        load_settings(root)
    monkeypatch.delenv("MEMFOLD_SERVER__WORKERS")
    with pytest.raises(ConfigError, match=r"setting 'background' in the arguments \[maintenance\] must be a bool"):
        load_settings(root, maintenance={"background": "sometimes"})
    with pytest.raises(ConfigError, match=r"unknown setting 'modle' in the arguments \[llm\]"):
        load_settings(root, llm={"modle": "x"})
    monkeypatch.setenv("MEMFOLD_EMBEDER__MODEL", "x")
    with pytest.raises(ConfigError, match="environment variable MEMFOLD_EMBEDER__MODEL: unknown section 'embeder'"):
        load_settings(root)
