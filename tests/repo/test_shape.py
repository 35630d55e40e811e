"""The shape of the package (issue 18): no import circle between modules, modules small enough to
read in one sitting, functions short enough to hold in mind, imports inside functions only where
they keep start-up fast. The layers themselves are import-linter's contract (`lint-imports`)."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

PKG = Path(__file__).resolve().parents[2] / "topomap"
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80
#: Words that give an import inside a function its reason (start-up time; an optional, heavy library).
REASONS = ("start-up", "optional")


def _modules() -> dict[str, tuple[Path, ast.Module]]:
    out = {}
    for p in sorted(PKG.rglob("*.py")):
        parts = p.relative_to(PKG.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = (p, ast.parse(p.read_text()))
    return out


def _target(name: str, node: ast.ImportFrom | ast.Import, modules: dict[str, object]) -> list[str]:
    """The topomap modules an import statement loads (``from pkg import module`` counts as the module)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name in modules]
    base = node.module or ""
    if node.level:
        here = name.split(".") if (PKG / Path(*name.split(".")[1:]) / "__init__.py").exists() else name.split(".")[:-1]
        base = ".".join(here[: len(here) - node.level + 1] + ([node.module] if node.module else []))
    found = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in modules]
    return found or ([base] if base in modules else [])


def _imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Every import a module can run, at load or inside a function (not those for type checkers only)."""
    out: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        for st in ast.iter_child_nodes(node):
            if isinstance(st, (ast.Import, ast.ImportFrom)):
                out.append(st)
            elif isinstance(st, ast.If) and "TYPE_CHECKING" in ast.unparse(st.test):
                for other in st.orelse:
                    visit(other)
            else:
                visit(st)

    visit(tree)
    return out


def test_no_import_circle() -> None:
    modules = _modules()
    g = nx.DiGraph()
    for name, (_p, tree) in modules.items():
        g.add_node(name)
        for node in _imports(tree):
            for t in _target(name, node, modules):
                if t != name and not name.startswith(t + "."):  # a submodule importing its own package face
                    g.add_edge(name, t)
    circles = [sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 1]
    assert circles == [], f"import circles: {circles}"


def test_modules_and_functions_are_small() -> None:
    big, long = [], []
    for name, (p, tree) in _modules().items():
        lines = p.read_text().count("\n")
        if lines > MAX_MODULE_LINES:
            big.append(f"{name}: {lines} lines")
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long.append(f"{name}.{node.name}: {n} lines")
    assert big == [] and long == [], f"split by idea: {big + long}"


def test_imports_inside_functions_are_for_start_up_only() -> None:
    """An import inside a function keeps start-up fast (the CLI, optional heavy libraries) and says so;
    it never hides a circle. The CLI's lazy imports are its design (see topomap/cli/__init__.py)."""
    unexplained = []
    for name, (p, tree) in _modules().items():
        if name.startswith("topomap.cli"):
            continue
        lines = p.read_text().splitlines()
        module_says = any(w in (ast.get_docstring(tree) or "") for w in REASONS)
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if isinstance(node, (ast.Import, ast.ImportFrom)) and node is not fn:
                    before = " ".join(lines[fn.lineno - 1 : node.lineno])  # the function, down to the import
                    if not module_says and not any(w in before for w in REASONS):
                        unexplained.append(f"{p.relative_to(PKG.parent)}:{node.lineno} in {fn.name}")
    assert unexplained == [], f"imports inside functions with no start-up reason: {unexplained}"
