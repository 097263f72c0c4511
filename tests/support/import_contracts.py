"""An import-linter contract type that import-linter lacks: no module imports a private name (one
starting with a single underscore) of a module in another package. A private name is what a module
keeps to itself and its package; reaching for it from elsewhere ties two rooms together through a
door that was meant to be closed (``lint-imports`` runs it, configured in pyproject.toml)."""

from __future__ import annotations

import ast
import importlib.util
from dataclasses import dataclass

from grimp import ImportGraph
from importlinter.application import output
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck


@dataclass(frozen=True)
class PrivateImport:
    importer: str
    line: int
    imported: str
    name: str


def _package(module: str, is_package: bool) -> str:
    return module if is_package else module.rpartition(".")[0]


def private_imports(root: str, modules: set[str]) -> list[PrivateImport]:
    """Every ``from X import _name`` in ``modules`` where X lies outside the importer's package
    (a module of the same folder may share its private names; a subpackage's own may not)."""
    found = []
    for module in sorted(modules):
        spec = importlib.util.find_spec(module)
        if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
            continue
        is_package = spec.submodule_search_locations is not None
        own = _package(module, is_package)
        with open(spec.origin, encoding="utf-8") as f:
            tree = ast.parse(f.read(), spec.origin)
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                base = own.split(".")
                base = base[: len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if not source.startswith(root):
                continue
            for alias in node.names:
                name = alias.name
                if not name.startswith("_") or name.startswith("__"):
                    continue
                target = f"{source}.{name}"
                if target in modules:  # a private module imported from its package: judged by its own name
                    continue
                source_is_package = source in modules and importlib.util.find_spec(source) is not None and \
                    importlib.util.find_spec(source).submodule_search_locations is not None  # type: ignore[union-attr]
                if _package(source, source_is_package) != own:
                    found.append(PrivateImport(module, node.lineno, source, name))
    return found


class NoPrivateImportsContract(Contract):
    """Options: ``root`` (the package whose modules are checked, e.g. ``memfold``)."""

    type_name = "no_private_imports"
    root = fields.StringField()

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        root = str(self.root)  # type: ignore[attr-defined]
        found = private_imports(root, {m for m in graph.modules if m == root or m.startswith(root + ".")})
        return ContractCheck(kept=not found, metadata={"found": found})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for p in check.metadata["found"]:
            output.print_error(f"{p.importer}:{p.line} imports the private name {p.name} of {p.imported}")
            output.new_line()
