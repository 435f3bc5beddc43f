"""The documentation cannot rot: every public function and class of the public modules has a
numpydoc Examples section, and every docstring example runs with the output it shows."""

import doctest
import importlib
import importlib.util
import inspect
import re
import sys
from pathlib import Path

import numpy as np
import pytest

PUBLIC_MODULES = ("pyroi", "pyroi.ops", "pyroi.layers", "pyroi.onnx", "pyroi.ascend",
                  "pyroi.viz", "pyroi._errors", "pyroi._threads", "pyroi.cli")

# Examples that need an optional package: (docstring name prefix, module to import).
OPTIONAL = (("pyroi.viz.explain", "matplotlib"), ("pyroi.viz.save_explain", "matplotlib"),
            ("pyroi.onnx.run_node", "onnx"), ("pyroi.onnx.RoiAlign.from_node", "onnx"),
            ("pyroi.onnx.RoiAlign.to_node", "onnx"), ("pyroi.onnx.MaxRoiPool.from_node", "onnx"),
            ("pyroi.onnx.MaxRoiPool.to_node", "onnx"),
            ("pyroi.onnx._OnnxLayer.to_node", "onnx"), ("pyroi.onnx.rewrite_model", "onnx"))


def public_objects():
    """(qualified name, object) of every public function, class, method and property."""
    seen = set()
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if inspect.ismodule(obj) or not callable(obj) or id(obj) in seen:
                continue
            seen.add(id(obj))
            yield f"{obj.__module__}.{getattr(obj, '__qualname__', name)}", obj
            if inspect.isclass(obj):
                for klass in obj.__mro__:
                    if klass.__module__.startswith("pyroi"):
                        for attr, value in vars(klass).items():
                            if (attr == "__call__" or not attr.startswith("_")) and (
                                    callable(value) or isinstance(value, property)):
                                yield f"{obj.__module__}.{obj.__qualname__}.{attr}", value


@pytest.mark.parametrize("name, obj", list(public_objects()), ids=lambda v: v
                         if isinstance(v, str) else "")
def test_every_public_object_has_examples(name, obj):
    doc = inspect.getdoc(obj) or ""
    assert "Examples\n--------" in doc, f"{name} has no numpydoc Examples section"
    assert ">>> " in doc


def doctests():
    finder = doctest.DocTestFinder(exclude_empty=True)
    found = {}
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for test in finder.find(module):
            if test.examples:
                found.setdefault(test.name, test)
    return sorted(found.values(), key=lambda t: t.name)


@pytest.mark.parametrize("test", doctests(), ids=lambda t: t.name)
def test_docstring_examples(test):
    for prefix, requirement in OPTIONAL:
        if test.name.startswith(prefix):
            pytest.importorskip(requirement)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    with np.printoptions(legacy=False):
        runner.run(test, out=lambda text: failures.append(text))
    assert runner.failures == 0, "".join(failures)


failures = []


@pytest.fixture(autouse=True)
def _clear_failures():
    failures.clear()


# ---- the documentation pages: docs/*.md and the README -----------------------------------

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md")) + [ROOT / "README.md"]
FENCE = re.compile(r"^```(?:python|pycon)[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)


def page_doctest(path):
    """One doctest of every ```python / ```pycon block with `>>>` examples on a page, run in
    order in one namespace (as a reader would type them). None when there are none."""
    blocks = [m.group(1) for m in FENCE.finditer(path.read_text(encoding="utf-8"))
              if ">>> " in m.group(1)]
    if not blocks:
        return None
    name = str(path.relative_to(ROOT))
    return doctest.DocTestParser().get_doctest("\n".join(blocks), {}, name, str(path), 0)


def missing_imports(test):
    """Top-level modules a page's examples import that are not installed (torch, onnx...)."""
    names = set()
    for example in test.examples:
        for match in re.finditer(r"^\s*(?:import|from)\s+(\w+)", example.source, re.M):
            names.add(match.group(1))
    return sorted(n for n in names if importlib.util.find_spec(n) is None)


@pytest.mark.parametrize("path", [p for p in PAGES if page_doctest(p) is not None],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_page_examples(path):
    """The `>>>` examples of every documentation page (and of the README) run and print
    what they show; a page whose examples need an optional package that is missing skips."""
    test = page_doctest(path)
    missing = missing_imports(test)
    if missing:
        pytest.skip(f"{test.name} needs {', '.join(missing)}")
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    with np.printoptions(legacy=False):
        runner.run(test, out=lambda text: failures.append(text))
    assert runner.failures == 0, "".join(failures)


def test_pages_with_examples_exist():
    """The runner above finds the examples (a regular expression that matched nothing
    would let every page pass)."""
    names = {str(p.relative_to(ROOT)) for p in PAGES if page_doctest(p) is not None}
    assert {"README.md", "docs/getting-started.md", "docs/semantics.md"} <= names


def load_c_header_extension():
    spec = importlib.util.spec_from_file_location("c_header", DOCS / "_ext" / "c_header.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("c_header", module)  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_c_api_reference_documents_every_declaration():
    """docs/c-api.md is generated from pyroi.h: every public function, type and macro of
    the header gets an entry, and each entry has words (its comment or its section's)."""
    header = (ROOT / "src" / "c" / "include" / "pyroi.h").read_text(encoding="utf-8")
    intro, sections = load_c_header_extension().parse_header(header)
    assert intro.startswith("pyroi.h - ")
    documented = {}
    for section in sections:
        for entry in section.entries:
            for name in entry.names:
                documented[name] = entry.comment or section.intro
    functions = set(re.findall(r"^PYROI_API\b[^;]*?\b(pyroi_\w+)\s*\(", header, re.M | re.S))
    types = set(re.findall(r"^\}\s*(pyroi_\w+)\s*;", header, re.M))  # fields commented inside
    macros = set(re.findall(r"^#define\s+(PYROI_(?:VERSION|MAX)_\w+)", header, re.M))
    assert len(functions) > 50 and len(types) > 5
    declared = functions | types | macros
    assert declared <= set(documented), sorted(declared - set(documented))
    explained = functions | {name for name in macros if name.startswith("PYROI_MAX_")}
    assert not [name for name in explained if not documented[name].strip()]


def test_readme_test_command_is_what_ci_runs_last():
    """CI's last step is the README's test command, after an install (not from src/)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci_lines = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line.strip()]
    assert ci_lines[-1] == "python -m pytest tests"
    assert "```bash\npython -m pytest tests\n```" in readme
    assert 'pip install ".[viz,onnx]"' in readme  # one quoted build, not one per extra


LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


@pytest.mark.parametrize("path", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(path):
    """Every relative link of the README and the docs pages names a file that exists."""
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    broken = [target for target in LINK.findall(text)
              if "://" not in target and not target.startswith("mailto:")
              and not (path.parent / target).exists()]
    assert not broken


def test_site_includes_every_page():
    """index.md lists its pages and then globs the rest, so a docs/*.md page added later
    (docs/torch.md, docs/onnx.md, ...) joins the site without a configuration change."""
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    toctree = index[index.index("```{toctree}"):]
    toctree = toctree[:toctree.index("```", 3)]
    assert ":glob:" in toctree and "\n*\n" in toctree
    listed = set(re.findall(r"^([\w-]+)$", toctree, re.M))
    assert listed <= {p.stem for p in DOCS.glob("*.md")}


# ---- citations of the semantics page ------------------------------------------------------

def semantics_sections():
    """The numbers of docs/semantics.md's sections ("## 3. ...", "### 3.2 ...")."""
    text = (DOCS / "semantics.md").read_text(encoding="utf-8")
    return set(re.findall(r"^#{2,3} (\d+(?:\.\d+)?)\.? ", text, re.M))


def test_code_cites_existing_semantics_sections():
    """Comments and docstrings in src/ and tests/ cite the project's own semantics page, by
    section numbers that exist there (and no document outside the repository)."""
    sections = semantics_sections()
    assert {"2", "3.2", "4.1", "5.1", "6.2", "7.1", "8.1", "9.1", "11.6"} <= sections
    cited, stale = [], []
    for folder in ("src", "tests"):
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix not in {".c", ".h", ".py", ".pyx", ".pxd", ".pyi"} or \
                    path == Path(__file__).resolve():
                continue
            lines = path.read_text(encoding="utf-8").splitlines()
            for number, line in enumerate(lines):
                where = f"{path.relative_to(ROOT)}:{number + 1}"
                if "SEMANTICS" in line:
                    stale.append(where)
                if "docs/semantics.md" in line:
                    numbers = re.findall(r"§(\d+(?:\.\d+)?)", line + " " + (
                        lines[number + 1] if number + 1 < len(lines) else ""))
                    cited.append(where)
                    assert numbers, f"{where} cites docs/semantics.md without a section"
                    assert set(numbers) <= sections, (where, set(numbers) - sections)
    assert not stale, stale
    assert len(cited) > 40
