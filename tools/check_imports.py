"""The project's import structure, checked: no import cycles among its modules (imports inside
functions included, `if TYPE_CHECKING:` blocks excluded), no import that runs back up the
layers, and no private name (`_x`) imported from another module. Exit status 1 with one line per
problem.

The layers, bottom to top (a module may import its own layer and those below):

    preprocess.tess    the file format: numpy and the standard library only
    preprocess         the builder (numba, pymetis, trimesh)
    assets             the built-in meshes (made with the builder's mesh type)
    shaders            WGSL sources and their loader
    renderer           the runtime core (reads files through preprocess.tess only)
    renderer.oracles   test oracles: the reference renderer, the numpy culling twin
    renderer.bench     the benchmarks
    renderer.apps      the applications: command lines, viewer, loader, scene files

    python tools/check_imports.py          # prints the problems, or a one-line summary
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("preprocess", "assets", "shaders", "renderer")

# layer name -> (rank, the project modules it may import besides its own layer and lower ones)
LAYERS = ["preprocess.tess", "preprocess", "assets", "shaders", "renderer", "renderer.oracles",
          "renderer.bench", "renderer.apps"]
# what a layer may not import although it is lower: the core reads files through the format only
FORBIDDEN = {
    "renderer": ("preprocess", "assets"),  # except preprocess.tess (checked below)
    "shaders": ("preprocess", "assets", "renderer"),
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer(module: str) -> str:
    """The most specific layer containing `module`."""
    return max((name for name in LAYERS if module == name or module.startswith(name + ".")),
               key=len)


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """The project modules a file imports, anywhere in it but under `if TYPE_CHECKING:`."""
    tree = ast.parse(path.read_text(), str(path))
    me = module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            for a in node.names:
                found.add(a.name)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            found.add(base)
            for a in node.names:  # `from package import module`
                found.add(f"{base}.{a.name}")
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    out = set()
    for name in found:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        if name and name != me:
            out.add(name)
    return out


def graph() -> dict[str, set[str]]:
    files = [p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")]
    modules = {module_name(p) for p in files}
    return {module_name(p): imports_of(p, modules) for p in files}


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    sys.setrecursionlimit(10_000)

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(g.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            strong(v)
    return out


def _is_package_of(a: str, b: str) -> bool:
    """`a` is a package and `b` one of its submodules (a package may import what it holds)."""
    return b.startswith(a + ".")


def upward(g: dict[str, set[str]]) -> list[str]:
    """Imports of a module from a higher layer, or from a layer its own may not use."""
    rank = {name: i for i, name in enumerate(LAYERS)}
    out = []
    for mod, deps in sorted(g.items()):
        lm = layer(mod)
        for dep in sorted(deps):
            ld = layer(dep)
            if _is_package_of(mod, dep):
                continue
            if rank[ld] > rank[lm] and not ld.startswith(lm + "."):
                out.append(f"{mod} imports {dep}: {ld} is above {lm}")
            elif ld != lm and any(ld == f or ld.startswith(f + ".")
                                  for f in FORBIDDEN.get(lm, ())) and ld != "preprocess.tess":
                out.append(f"{mod} imports {dep}: {lm} reads files through preprocess.tess only")
    return out


def private_imports(sources: dict[str, str] | None = None) -> list[str]:
    """`from project.module import _name` in a project module (`sources`: module name -> its
    text; default every project file): a private name used across modules (it is the other
    module's own business; give it a public name)."""
    if sources is None:
        sources = {module_name(p): p.read_text() for pkg in PACKAGES
                   for p in (ROOT / pkg).rglob("*.py")}
    out = []
    for mod, text in sorted(sources.items()):
        for node in ast.walk(ast.parse(text, mod)):
            if not isinstance(node, ast.ImportFrom) or not (
                    node.level or (node.module or "").split(".")[0] in PACKAGES):
                continue
            source = "." * node.level + (node.module or "")
            for a in node.names:
                if a.name.startswith("_") and not a.name.startswith("__"):
                    out.append(f"{mod} imports the private {source}.{a.name}")
    return out


def main() -> int:
    g = graph()
    problems = ([f"import cycle: {' -> '.join(c)}" for c in cycles(g)] + upward(g)
                + private_imports())
    for p in problems:
        print(p)
    if not problems:
        edges = sum(len(v) for v in g.values())
        print(f"{len(g)} modules, {edges} imports: no cycle, nothing imported from above, no "
              f"private name imported from another module")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
