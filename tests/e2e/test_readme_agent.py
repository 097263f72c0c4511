"""The "Use with an agent" guide's loop (docs/guides/agents.md), run as written with the OpenAI SDK against the scripted
OpenAI-compatible server: the model's tool call stores the memory, then it answers."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from memfold.tools.registry import TOOLS

from ..support.openai_server import Reply, ScriptedOpenAIServer, tool_call

GUIDE = (Path(__file__).resolve().parents[2] / "docs" / "guides" / "agents.md").read_text(encoding="utf-8")


def _snippet() -> str:
    section = GUIDE[GUIDE.index("# Use with an agent"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_readme_openai_loop_runs(tmp_path: Path, llm_server: ScriptedOpenAIServer):
    code = _snippet()
    assert len(code.strip().splitlines()) <= 25 and "memfold.tools" in code
    llm_server.script(Reply(tool_calls=[tool_call("memory_append", "{broken", "c0")]),
                      Reply(tool_calls=[tool_call("memory_append", {"content": "I like green tea"}, "c1")]),
                      Reply("Noted: you like green tea."))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMFOLD_", "OPENAI_"))}
    env.update(MEMFOLD_HOME=str(tmp_path / "ws"), OPENAI_BASE_URL=llm_server.base_url, OPENAI_API_KEY="test-key")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "Noted: you like green tea."
    assert "I like green tea" in (tmp_path / "ws" / "alice" / "MEMORY.md").read_text()
    reqs = llm_server.chat_requests()
    assert len(reqs) == 3 and all(len(r["body"]["tools"]) == len(TOOLS) for r in reqs)
    errors = [json.loads(m["content"]) for m in reqs[1]["body"]["messages"] if m["role"] == "tool"]
    assert errors[0]["error"]["code"] == "invalid_input"  # the broken call was answered, the loop went on
    assert "memory_append" in reqs[0]["body"]["messages"][0]["content"]  # the instructions name the tools
