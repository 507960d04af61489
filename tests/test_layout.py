"""Layout contracts: the package is UI-free and light to import; the README's two commands are CI's."""
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_retrieval_never_imports_streamlit_or_plotly():
    offenders = [str(p.relative_to(ROOT)) for p in (ROOT / "retrieval").rglob("*.py")
                 if re.search(r"^\s*(import|from)\s+(streamlit|plotly)\b", p.read_text(), re.M)]
    assert offenders == []


def test_importing_retrieval_loads_no_model_and_no_database():
    code = ("import sys, retrieval, retrieval.models, retrieval.facts, retrieval.cli, retrieval.eval.runner; "
            "print(sorted(m for m in ('torch', 'sentence_transformers', 'lancedb', 'streamlit', 'plotly', 'cohere') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr


def test_readme_starts_with_the_two_commands_ci_runs():
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"```bash\n(.*?)```", readme, re.S).group(1)
    assert [line.split("#")[0].strip() for line in block.strip().splitlines()] == ["make run", "make test"]
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make test" in ci and "CI=true" in ci


def _import_graph() -> dict[str, set[str]]:
    import ast

    mods = {}
    for p in (ROOT / "retrieval").rglob("*.py"):
        rel = p.relative_to(ROOT).with_suffix("")
        name = ".".join(rel.parts).removesuffix(".__init__")
        mods[name] = p
    graph = {m: set() for m in mods}
    for m, p in mods.items():
        pkg = m if p.name == "__init__.py" else m.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                for a in node.names:
                    for cand in (f"{base}.{a.name}", base):
                        if cand in mods and cand != m and mods[cand].name != "__init__.py":
                            graph[m].add(cand)
                            break
    return graph


def test_no_import_cycle_in_the_package():
    graph, state, cycles = _import_graph(), {}, []

    def visit(u, stack):
        state[u] = 1
        stack.append(u)
        for v in graph[u]:
            if state.get(v) == 1:
                cycles.append(" -> ".join(stack[stack.index(v):] + [v]))
            elif not state.get(v):
                visit(v, stack)
        stack.pop()
        state[u] = 2

    for m in graph:
        if not state.get(m):
            visit(m, [])
    assert cycles == []
    # the check itself can fail: a graph with a known cycle is found
    graph.update({"x.a": {"x.b"}, "x.b": {"x.a"}})
    state.clear()
    for m in ("x.a",):
        visit(m, [])
    assert cycles == ["x.a -> x.b -> x.a"]


def test_no_module_in_the_package_is_a_god_file():
    sizes = {str(p.relative_to(ROOT)): len(p.read_text().splitlines()) for p in (ROOT / "retrieval").rglob("*.py")}
    assert {p: n for p, n in sizes.items() if n > 360} == {}


def test_no_code_reads_an_underscored_attribute_of_a_record():
    """Diagnostics, records and explanations are public: nobody reaches into their internals."""
    pattern = re.compile(r"\b(diagnostics|diag|d|record|rec|result|res|ex|explanation|cache)\._[a-z]\w*")
    hits = [f"{p.relative_to(ROOT)}:{i}: {line.strip()}"
            for folder in ("retrieval", "ui", "pages", "scripts", "tests")
            for p in (ROOT / folder).rglob("*.py") if p.name != "test_layout.py"
            for i, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert hits == []
