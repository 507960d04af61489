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
