"""The package's import graph, read with ``ast``: every import of its own modules, those inside functions too."""

import ast
from dataclasses import dataclass, field
from pathlib import Path

PACKAGE = "helm_roboreward"


@dataclass
class ImportGraph:
    """Modules (dotted name -> file), imports between them, and which imports sit inside a function."""

    files: dict[str, Path] = field(default_factory=dict)
    edges: set[tuple[str, str]] = field(default_factory=set)
    deferred: list[tuple[str, str, int]] = field(default_factory=list)
    """(importer, imported, line) of each import statement inside a function."""

    def cycles(self) -> list[list[str]]:
        """Strongly connected groups of two or more modules (Tarjan)."""
        graph: dict[str, set[str]] = {module: set() for module in self.files}
        for importer, imported in self.edges:
            graph[importer].add(imported)
        index: dict[str, int] = {}
        low: dict[str, int] = {}
        stack: list[str] = []
        on_stack: set[str] = set()
        found: list[list[str]] = []

        def visit(node: str) -> None:
            index[node] = low[node] = len(index)
            stack.append(node)
            on_stack.add(node)
            for target in graph[node]:
                if target not in index:
                    visit(target)
                    low[node] = min(low[node], low[target])
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))

        for module in graph:
            if module not in index:
                visit(module)
        return found


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def read_graph(root: Path) -> ImportGraph:
    """The graph of ``root/helm_roboreward`` (``TYPE_CHECKING`` blocks count as well)."""
    graph = ImportGraph()
    for path in sorted((root / PACKAGE).rglob("*.py")):
        graph.files[module_name(root, path)] = path

    def resolve(name: str) -> str | None:
        while name:
            if name in graph.files:
                return name
            name = name.rpartition(".")[0]
        return None

    for module, path in graph.files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        functions = [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
        inside = {id(sub) for function in functions for sub in ast.walk(function)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                names = [f"{base}.{alias.name}" for alias in node.names] + [base]
            else:
                continue
            targets = {resolve(name) for name in names if name.startswith(PACKAGE)} - {None, module}
            if isinstance(node, ast.ImportFrom) and len(targets) > 1:  # `from pkg import module`: the module only
                targets.discard(resolve(names[-1]))
            for target in targets:
                assert target is not None
                graph.edges.add((module, target))
                if id(node) in inside:
                    graph.deferred.append((module, target, node.lineno))
    return graph
