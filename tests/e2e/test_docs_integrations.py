"""Every example of docs/integrations.md, run as written in a process of its own: the adapters against
the real frameworks, the client against a live server, the agent against the scripted
OpenAI-compatible server."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from memfold import Memory
from memfold.server.app import create_app
from memfold.server.keys import KeyStore

from ..support.live_server import LiveServer
from ..support.openai_server import Reply, ScriptedOpenAIServer, tool_call

PAGE = (Path(__file__).resolve().parents[2] / "docs" / "integrations.md").read_text(encoding="utf-8")
BLOCKS = {m.group(1): m.group(2) for m in re.finditer(r"\n## ([^\n]+)\n.*?```python\n(.*?)```", PAGE, re.S)}


PYTHON = sys.executable  # replaced by the warm python (tests/support/warm_python.py): a new process, memfold imported


@pytest.fixture(autouse=True)
def _warm(warm_python) -> None:
    global PYTHON
    PYTHON = str(warm_python.command)


def _run(code: str, tmp_path: Path, **env_more: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMFOLD_", "OPENAI_"))}
    env.update(MEMFOLD_HOME=str(tmp_path / "ws"), **env_more)
    out = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def test_every_section_has_its_example():
    assert set(BLOCKS) == {"Filters and metadata", "Async applications: `AsyncMemory`",
                           "A program on another machine: `memfold.Client`", "LangGraph: a `BaseStore` kept in memfold",
                           "LangChain: a retriever and the memory tools", "LlamaIndex: a memory block and a retriever",
                           "OpenAI Agents SDK: function tools"}


def test_filters(tmp_path: Path):
    lines = _run(BLOCKS["Filters and metadata"], tmp_path).splitlines()
    assert lines[0] == "['Booked the train to Lyon for May 3']"
    assert lines[1] == "['我喜欢在周末去爬山']"
    assert lines[2] == "['Buy oolong tea', '我喜欢在周末去爬山']"


def test_async_memory(tmp_path: Path):
    assert _run(BLOCKS["Async applications: `AsyncMemory`"], tmp_path).splitlines() == [
        "Order 3 ships on Friday", "5"]


def test_client(tmp_path: Path):
    with Memory(root=tmp_path / "server") as mem, LiveServer(create_app(mem)) as srv:
        key = KeyStore(mem.index).create(["alice"], "write")[0]
        # the model loaded before the example's first call: the example's timeout is for a warm
        # server, and a loaded test machine may take longer than that to load it
        mem.embedder.embed(["a warm-up text"])
        lines = _run(BLOCKS["A program on another machine: `memfold.Client`"], tmp_path, MEMFOLD_URL=srv.url,
                     MEMFOLD_API_KEY=key).splitlines()
    assert lines[0] == "I prefer window seats on long flights"
    assert lines[1] == "['add', 'update']"
    assert lines[2].startswith("not found: no memory 'no-such-id'")


def test_langgraph(tmp_path: Path):
    pytest.importorskip("langgraph")
    out = _run(BLOCKS["LangGraph: a `BaseStore` kept in memfold"], tmp_path)
    assert "I moved to Lyon last spring" in out


def test_langchain(tmp_path: Path):
    pytest.importorskip("langchain_core")
    lines = _run(BLOCKS["LangChain: a retriever and the memory tools"], tmp_path).splitlines()
    assert lines[0].startswith("My sister drinks oolong tea every morning")
    assert lines[-2:] == ["True", "True"]


def test_llamaindex(tmp_path: Path):
    pytest.importorskip("llama_index.core")
    out = _run(BLOCKS["LlamaIndex: a memory block and a retriever"], tmp_path)
    assert "<memfold>" in out and "oolong" in out.split("<memfold>")[1]
    assert out.strip().endswith("['My favourite tea is oolong, never with sugar']")


def test_openai_agents(tmp_path: Path, llm_server: ScriptedOpenAIServer):
    pytest.importorskip("agents")
    llm_server.script(Reply(tool_calls=[tool_call("save_memory", {"content": "The user is allergic to peanuts",
                                                                  "memory_type": "fact"}, "c1")]),
                      "Noted: you are allergic to peanuts.")
    lines = _run(BLOCKS["OpenAI Agents SDK: function tools"], tmp_path, OPENAI_BASE_URL=llm_server.base_url,
                 OPENAI_API_KEY="test-key").splitlines()
    assert lines == ["Noted: you are allergic to peanuts.", "['The user is allergic to peanuts']"]
