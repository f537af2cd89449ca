"""The core stays UI-free: checked by importing it alone, and by import-linter's contract.

`sqlite_utils` itself imports `click` (through its plugin hookspecs), so `click` may be present
after importing the third-party libraries core is built on; what core must not do is load any
UI package beyond that, and `textual`, `rich` and `tui` must never be loaded at all.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = ("textual", "rich", "click", "tui", "web", "starlette", "uvicorn", "jinja2")
NEVER_IN_CORE = ("textual", "rich", "tui", "web", "starlette", "uvicorn", "jinja2")

PROBE = """
import importlib, json, pkgutil, sys
forbidden = json.loads(sys.argv[1])
def matching(modules):
    return sorted(
        m for m in modules if any(m == bad or m.startswith(bad + ".") for bad in forbidden)
    )
import git, sqlite_utils  # the third-party base core stands on
baseline = set(sys.modules)
import core
names = ["core"] + [
    info.name for info in pkgutil.walk_packages(core.__path__, prefix="core.")
]
for name in names:
    importlib.import_module(name)
print(json.dumps({
    "imported": names,
    "loaded_by_core": matching(set(sys.modules) - baseline),
    "loaded_at_all": matching(sys.modules),
}))
"""


def test_core_imports_no_ui_package() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(FORBIDDEN)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    expected = {
        "core." + ".".join(path.relative_to(ROOT / "core").with_suffix("").parts)
        for path in (ROOT / "core").rglob("*.py")
        if path.name != "__init__.py"
    }
    assert expected <= set(report["imported"])
    assert "core.engine" in report["imported"]
    assert report["loaded_by_core"] == []
    never = [m for m in report["loaded_at_all"] if m.split(".")[0] in NEVER_IN_CORE]
    assert never == []


WEB_PROBE = """
import json, sys
import web.app
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules} & {"textual", "rich", "tui"})))
"""


def test_the_web_inbox_loads_no_terminal_package() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", WEB_PROBE], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []


def test_import_linter_contracts_hold() -> None:
    venv_tool = Path(sys.executable).parent / "lint-imports"
    tool = str(venv_tool) if venv_tool.exists() else shutil.which("lint-imports")
    if tool is None:
        pytest.skip("import-linter (lint-imports) is not installed")
    proc = subprocess.run(
        [tool, "--no-cache"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "core is UI-free KEPT" in proc.stdout
    assert "layers point down KEPT" in proc.stdout
    assert "the web inbox is terminal-free KEPT" in proc.stdout


# --- the module graph, private names and sizes, read from the source ------------------------
#
# These read every .py file of core/, tui/ and web/ with `ast` (nothing is imported), so an import
# inside a function or under `if TYPE_CHECKING:` counts as much as one at the top of a module.

PACKAGES = ("core", "tui", "web")
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80

# Modules allowed past MAX_MODULE_LINES: data tables only, each with why it is one module.
LONG_MODULES: dict[str, str] = {}

# Functions allowed past MAX_FUNCTION_LINES ("path:qualified.name"), each with a reason.
LONG_FUNCTIONS: dict[str, str] = {}

# Underscore names that are public API: namedtuple's methods and fields.
PUBLIC_UNDERSCORE_NAMES = frozenset({"_replace", "_asdict", "_fields", "_make", "_field_defaults"})


def module_files() -> dict[str, Path]:
    """Every module of core/ and tui/ by dotted name (a package by its own name)."""
    modules: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join(parts)] = path
    return modules


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


class ModuleImports:
    """What one module imports: the project modules it depends on and the names it binds."""

    def __init__(self, name: str, path: Path, known: set[str]) -> None:
        self.name = name
        self.path = path
        self.known = known
        self.package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        self.tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        self.edges: set[str] = set()
        self.private_imports: list[str] = []
        self.module_names: dict[str, str] = {}  # a local name -> the project module it names
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                self._add_import(node)
            elif isinstance(node, ast.ImportFrom):
                self._add_import_from(node)
        self.edges.discard(name)

    def _owner(self, dotted: str) -> str | None:
        """The longest project module that `dotted` is or lies inside, if any."""
        parts = dotted.split(".")
        for end in range(len(parts), 0, -1):
            candidate = ".".join(parts[:end])
            if candidate in self.known:
                return candidate
        return None

    def _add_import(self, node: ast.Import) -> None:
        for alias in node.names:
            owner = self._owner(alias.name)
            if owner is None:
                continue
            self.edges.add(owner)
            if alias.asname:
                self.module_names[alias.asname] = owner
            else:  # `import core.store.db` binds `core`; attribute chains are resolved later
                self.module_names.setdefault(alias.name.split(".")[0], alias.name.split(".")[0])

    def _add_import_from(self, node: ast.ImportFrom) -> None:
        if node.level:
            anchor = self.package.split(".")
            anchor = anchor[: len(anchor) - (node.level - 1)]
            base = ".".join([*anchor, node.module] if node.module else anchor)
        else:
            base = node.module or ""
        owner = self._owner(base)
        if owner is None:
            return
        for alias in node.names:
            submodule = f"{base}.{alias.name}"
            if submodule in self.known:  # `from pkg import mod`: an edge to the module itself
                self.edges.add(submodule)
                self.module_names[alias.asname or alias.name] = submodule
                continue
            self.edges.add(owner)
            if _is_private(alias.name):
                self.private_imports.append(
                    f"{self.path.relative_to(ROOT)}:{node.lineno} imports {alias.name} from {base}"
                )

    def private_attribute_uses(self) -> list[str]:
        """`module._name` where `module` is a project module this one imported."""
        found = []
        for node in ast.walk(self.tree):
            if not isinstance(node, ast.Attribute) or not _is_private(node.attr):
                continue
            if node.attr in PUBLIC_UNDERSCORE_NAMES:
                continue
            target = self._module_of(node.value)
            if target is not None and target != self.name:
                found.append(
                    f"{self.path.relative_to(ROOT)}:{node.lineno} uses {target}.{node.attr}"
                )
        return found

    def _module_of(self, node: ast.expr) -> str | None:
        """The project module an expression names (`store`, `core.store.db`), if it names one."""
        if isinstance(node, ast.Name):
            return self.module_names.get(node.id)
        if isinstance(node, ast.Attribute):
            parent = self._module_of(node.value)
            if parent is not None and f"{parent}.{node.attr}" in self.known:
                return f"{parent}.{node.attr}"
        return None


def import_graph() -> dict[str, ModuleImports]:
    files = module_files()
    known = set(files)
    return {name: ModuleImports(name, path, known) for name, path in files.items()}


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of more than one module (each one a cycle)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph.get(node, ())):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def one_cycle(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """A shortest path from the component's first module back to itself, inside the component."""
    members = set(component)
    start = component[0]
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for successor in sorted(graph[node] & members):
            if successor == start:
                return [*paths[node], start]
            if successor not in paths:
                paths[successor] = [*paths[node], successor]
                queue.append(successor)
    raise AssertionError(f"no cycle through {start}")


def test_no_import_cycle_in_core_or_tui() -> None:
    graph = {name: imports.edges for name, imports in import_graph().items()}
    assert graph["core.engine"], "the graph found no imports: the parser is broken"
    cycles = [
        f"{' -> '.join(one_cycle(graph, component))} (all tangled: {', '.join(component)})"
        for component in strongly_connected(graph)
    ]
    assert cycles == [], "import cycles:\n" + "\n".join(cycles)


def test_strongly_connected_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert strongly_connected(graph) == [["a", "b", "c"]]
    assert one_cycle(graph, ["a", "b", "c"]) == ["a", "b", "c", "a"]
    assert strongly_connected({"a": {"b"}, "b": set()}) == []


def test_no_module_uses_another_modules_private_names() -> None:
    graph = import_graph()
    found = [
        line
        for imports in graph.values()
        for line in [*imports.private_imports, *imports.private_attribute_uses()]
    ]
    assert found == [], "private names used across modules:\n" + "\n".join(found)


def _function_lengths(tree: ast.Module) -> list[tuple[str, int, int]]:
    """(qualified name, first line, lines from `def` to the end) of every function and method."""
    found: list[tuple[str, int, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{child.name}"
                length = (child.end_lineno or child.lineno) - child.lineno + 1
                found.append((name, child.lineno, length))
                visit(child, f"{name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found


def test_no_module_or_function_is_too_long() -> None:
    long_modules, long_functions = {}, {}
    for path in module_files().values():
        where = str(path.relative_to(ROOT))
        text = path.read_text(encoding="utf-8")
        if len(text.splitlines()) > MAX_MODULE_LINES:
            long_modules[where] = len(text.splitlines())
        for name, line, length in _function_lengths(ast.parse(text)):
            if length > MAX_FUNCTION_LINES:
                long_functions[f"{where}:{name}"] = (line, length)
    too_long = [
        f"{where}: {lines} lines (limit {MAX_MODULE_LINES})"
        for where, lines in sorted(long_modules.items())
        if where not in LONG_MODULES
    ] + [
        f"{where} (line {line}): {length} lines (limit {MAX_FUNCTION_LINES})"
        for where, (line, length) in sorted(long_functions.items())
        if where not in LONG_FUNCTIONS
    ]
    assert too_long == [], "split these:\n" + "\n".join(too_long)
    stale = sorted(set(LONG_MODULES) - set(long_modules)) + sorted(
        set(LONG_FUNCTIONS) - set(long_functions)
    )
    assert stale == [], f"allow-list entries no longer needed: {stale}"
