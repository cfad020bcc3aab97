"""The package's layers, checked on every import statement (function-level and TYPE_CHECKING ones included).

Each top-level folder of ``gdpo_trl`` is a layer; a module may import its own layer and the ones below it, never one
above. The study tasks and the built-in models are plugins on top (reached through entry points), so nothing below
them imports them; and the import graph between modules has no cycle. What one module uses of another has a public
name: no ``_``-name crosses modules.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "gdpo_trl"
LAYOUT = PACKAGE.parent / "docs" / "layout.md"
# Lowest first: what each layer is for is in docs/layout.md ("Layers"), which test_layout_names_every_module checks.
LAYERS = [
    "core",
    "storage",
    "rewards",
    "data",
    "trainer",
    "eval",
    "recipe",
    "run",
    "results",
    "cli",
    "models",
    "tasks",
]


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """The gdpo_trl modules ``path`` imports, anywhere in the file."""
    found = set()
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("gdpo_trl")}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against this module's package
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}".rstrip(".")
            if base.startswith("gdpo_trl"):
                found.add(base)
    return found


def layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else None


def graph() -> dict[str, set[str]]:
    return {module_name(p): imports_of(p) for p in sorted(PACKAGE.rglob("*.py"))}


def test_every_module_is_in_a_layer():
    top_level = {module_name(p) for p in PACKAGE.glob("*.py")}
    assert top_level == {"gdpo_trl"}, f"modules outside the layer folders: {sorted(top_level - {'gdpo_trl'})}"
    assert {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"} == set(LAYERS)


def test_no_module_imports_a_layer_above_its_own():
    wrong = []
    for module, imported in graph().items():
        if layer(module) is None:
            continue
        for target in imported:
            if layer(target) is not None and LAYERS.index(layer(target)) > LAYERS.index(layer(module)):
                wrong.append(f"{module} -> {target}")
    assert not wrong, "imports from a layer above:\n" + "\n".join(sorted(wrong))


def test_only_the_plugins_import_the_plugins():
    plugins = {"tasks", "models"}
    users = sorted(
        m for m, imported in graph().items() if layer(m) not in plugins and any(layer(t) in plugins for t in imported)
    )
    assert not users, f"outside gdpo_trl/tasks and gdpo_trl/models: {users} import them (use gdpo_trl.core.plugins)"


def test_no_import_cycle():
    edges = graph()
    modules = set(edges)
    # An import of a package also runs its __init__; an import of "a.b" where a.b is a module counts as that module.
    deps = {m: {t for t in targets if t in modules and t != m} for m, targets in edges.items()}
    state: dict[str, int] = {}  # 1: on the path, 2: done
    cycles = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(deps[node]):
            if state.get(nxt) == 1:
                cycles.append(" -> ".join(path[path.index(nxt) :] + [nxt]))
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for module in sorted(modules):
        if module not in state:
            visit(module, [module])
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def layout_sections() -> dict[str, str]:
    """docs/layout.md's package tree: each layer folder's text (its line and the indented lines under it)."""
    text = LAYOUT.read_text()
    tree = text[text.index("```\ngdpo_trl/") : text.index("```\n", text.index("```\ngdpo_trl/") + 4)]
    sections: dict[str, str] = {}
    current = None
    for line in tree.splitlines():
        heading = re.match(r"^  (\w+)/", line)
        if heading:
            current = heading.group(1)
            sections[current] = ""
        if current:
            sections[current] += line + "\n"
    return sections


def test_layout_names_every_module():
    """docs/layout.md lists the layers in order and names every module of each in that layer's lines."""
    sections = layout_sections()
    assert list(sections) == LAYERS, f"docs/layout.md's layers {list(sections)} differ from {LAYERS}"
    missing = [
        str(path.relative_to(PACKAGE))
        for path in sorted(PACKAGE.glob("*/*.py"))
        if path.name != "__init__.py" and not re.search(rf"\b{re.escape(path.name)}\b", sections[path.parent.name])
    ]
    assert not missing, f"docs/layout.md does not name these modules under their layer: {missing}"
    gone = [
        f"{layer}/{name}"
        for layer, text in sections.items()
        for name in re.findall(r"(?<![\w/])([a-z_0-9]+\.py)\b", text)  # not an example path: path/to/rewards.py
        if not (PACKAGE / layer / name).is_file()
    ]
    assert not gone, f"docs/layout.md names modules that are not there (moved or folded?): {gone}"


def private_imports(path: Path, *, attributes: bool) -> list[str]:
    """``_``-names (not dunders) that ``path`` imports from a module of gdpo_trl, tests or scripts, and with
    ``attributes`` those it reads from such a module imported whole (``builtins._cached_build``)."""
    root, ours = PACKAGE.parent, ("gdpo_trl", "tests", "scripts")
    found, modules = [], set()
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith(ours)):
            folder = root.joinpath(*(node.module or "").split("."))
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(f"line {node.lineno}: from {node.module} import {alias.name}")
                elif (folder / f"{alias.name}.py").is_file() or (folder / alias.name).is_dir():
                    modules.add(alias.asname or alias.name)  # a module: from gdpo_trl.models import builtins
        elif isinstance(node, ast.Import):
            modules |= {alias.asname for alias in node.names if alias.asname and alias.name.startswith(ours)}
    for node in ast.walk(tree) if attributes else ():
        private = isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
        if private and isinstance(node.value, ast.Name) and node.value.id in modules:
            found.append(f"line {node.lineno}: {node.value.id}.{node.attr}")
    return found


def test_no_private_name_crosses_modules():
    """A name another module uses is public (or lives where it is used): the package and its scripts neither import
    nor read a ``_``-name of another module, and the tests import none (they may still look at one, or stand in for
    one with monkeypatch, to test a module's insides)."""
    root = PACKAGE.parent
    code = [*PACKAGE.rglob("*.py"), *(root / "scripts").rglob("*.py")]
    found = [
        f"{path.relative_to(root)}: {hit}" for path in sorted(code) for hit in private_imports(path, attributes=True)
    ]
    for path in sorted((root / "tests").rglob("*.py")):
        found += [f"{path.relative_to(root)}: {hit}" for hit in private_imports(path, attributes=False)]
    assert not found, "private names imported across modules:\n" + "\n".join(found)


def test_each_layer_has_its_tests_folder():
    """The tests mirror the package: a layer's tests are in tests/<layer>/."""
    tests = Path(__file__).resolve().parent
    missing = [name for name in LAYERS if not list((tests / name).glob("test_*.py"))]
    assert not missing, f"no tests/<layer>/test_*.py for the layers {missing}"
