"""The package's layout: no module of learndyn imports, at any depth, a module that imports it back."""

import ast
from pathlib import Path

LIB = Path(__file__).resolve().parents[1] / "lib"


def _runtime_imports(path: Path, package: str) -> set[str]:
    """The learndyn modules a file imports when it runs (inside functions too; `if TYPE_CHECKING:` blocks aside)."""
    tree = ast.parse(path.read_text())
    skip = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for n in ast.walk(node)}
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            if node.module:
                out.add(".".join([*base, node.module]))
            else:
                out |= {".".join([*base, a.name]) for a in node.names}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("learndyn"):
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("learndyn")}
    return out


def _graph() -> dict[str, set[str]]:
    graph = {}
    for path in (LIB / "learndyn").rglob("*.py"):
        name = ".".join(path.relative_to(LIB).with_suffix("").parts).removesuffix(".__init__")
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        graph[name] = _runtime_imports(path, package)
    # the package root imports its submodules lazily or as the entry point; a module's import of its own package
    # (learndyn, learndyn.checks) runs that package's __init__ first and is not a circle
    return {m: {d for d in deps if d in graph and d != m and not m.startswith(d + ".") and d != "learndyn"}
            for m, deps in graph.items() if m != "learndyn"}


def test_no_import_circles():
    graph = _graph()
    assert "learndyn.core" in graph and graph["learndyn.plotting"] == {"learndyn.core"}
    circles = []

    def visit(node: str, path: list[str]) -> None:
        for dep in sorted(graph[node]):
            if dep in path:
                circles.append(" -> ".join([*path[path.index(dep):], dep]))
            elif len(path) < len(graph):
                visit(dep, [*path, dep])

    for start in sorted(graph):
        visit(start, [start])
    assert not circles, "import circles: " + "; ".join(sorted(set(circles)))


MAX_MODULE_LINES = 620   # "modules of one sitting": about 600 lines (CONTRIBUTING.md)


def test_every_module_is_one_sitting():
    sizes = {p.name: len(p.read_text().splitlines()) for p in sorted((LIB / "learndyn").glob("*.py"))}
    long = {name: n for name, n in sizes.items() if n > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines (split as ssl/ssl_sim are): {long}"


def test_the_readme_quick_start_runs_and_prints_what_it_says(capsys):
    """The library section's five lines (README) run as written and print the number their comment gives."""
    import re

    readme = (LIB.parent / "README.md").read_text()
    section = readme[readme.index("## The library on its own"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    exec(compile(code, "README.md", "exec"), {})  # noqa: S102 (the README's own example)
    printed = float(capsys.readouterr().out.split()[-1])
    said = float(re.search(r"# ([0-9.]+):", code).group(1))
    assert abs(printed - said) <= 5e-5, (printed, said)
