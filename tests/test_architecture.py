"""The Python layer's import graph has no cycles, and each module keeps to the imports its
opening comment allows (docs/architecture.md, "Python layer"); the C core's folders include
only what lies below them, and no circle of symbol references ties its files together ("C
core").

Every import inside ``src/pyroi`` counts, including the ones inside functions: a lazy import
still ties two modules together, it only hides the knot until a call runs. ``import pyroi``
and ``from pyroi import name`` (a name that is not a module) depend on the package's
``__init__``.
"""

from __future__ import annotations

import ast
import concurrent.futures
import pathlib
import re
import shutil
import subprocess

import pytest

SOURCE = pathlib.Path(__file__).resolve().parent.parent / "src" / "pyroi"
PACKAGE = "pyroi"
# Python-level imports of a Cython module (its cimports are compile-time, not module edges).
_PYX_IMPORT = re.compile(r"^\s*(?:from\s+([\w.]+)\s+import\s+([\w\s,()]+)|import\s+([\w.]+))",
                         re.MULTILINE)


def _module_names(source: pathlib.Path) -> set[str]:
    return {path.stem for path in source.iterdir() if path.suffix in (".py", ".pyx")}


def _target(dotted: str, imported: str | None, modules: set[str]) -> str | None:
    """The module of the package that ``from dotted import imported`` (or ``import dotted``)
    depends on, or None when it is outside the package."""
    parts = dotted.split(".")
    if parts[0] != PACKAGE:
        return None
    if len(parts) > 1:
        return parts[1] if parts[1] in modules else None
    if imported is not None and imported in modules:
        return imported
    return "__init__"


def _imports_of(path: pathlib.Path, modules: set[str]) -> set[str]:
    text = path.read_text(encoding="utf-8")
    pairs: list[tuple[str, str | None]] = []
    if path.suffix == ".pyx":
        for match in _PYX_IMPORT.finditer(text):
            if match.group(1):
                names = re.findall(r"\w+", match.group(2).split(" as ")[0])
                pairs.extend((match.group(1), name) for name in names)
            else:
                pairs.append((match.group(3), None))
    else:
        for node in ast.walk(ast.parse(text, filename=str(path))):
            if isinstance(node, ast.Import):
                pairs.extend((alias.name, None) for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from . import x, from .x import y
                    base = PACKAGE + ("." + base if base else "")
                pairs.extend((base, alias.name) for alias in node.names)
    targets = {_target(dotted, name, modules) for dotted, name in pairs}
    return {t for t in targets if t is not None and t != path.stem}


def import_graph(source: pathlib.Path = SOURCE) -> dict[str, set[str]]:
    """Module name -> the package's modules it imports (anywhere in its text)."""
    modules = _module_names(source)
    return {path.stem: _imports_of(path, modules)
            for path in sorted(source.iterdir()) if path.suffix in (".py", ".pyx")}


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph.get(node, ())):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
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
    return sorted(components)


def test_the_graph_sees_the_package():
    graph = import_graph()
    assert {"__init__", "_core", "_validate", "_threads", "ops"} <= set(graph)
    assert "_validate" in graph["ops"]
    assert "_errors" in graph["_core"]  # read from the .pyx


def test_no_import_cycles():
    cycles = import_cycles(import_graph())
    assert cycles == [], f"import cycles in src/pyroi: {cycles}"


@pytest.mark.parametrize("edges, expected", [
    ({"a": {"b"}, "b": {"a"}}, [["a", "b"]]),
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
    ({"a": {"b"}, "b": set()}, []),
])
def test_cycle_finder(edges, expected):
    assert import_cycles(edges) == expected


def test_a_lazy_import_is_an_edge(tmp_path):
    (tmp_path / "one.py").write_text("def f():\n    from pyroi import two\n")
    (tmp_path / "two.py").write_text("from pyroi.one import f\n")
    (tmp_path / "__init__.py").write_text("from pyroi import one\n")
    assert import_cycles(import_graph(tmp_path)) == [["one", "two"]]


_MAY_IMPORT = re.compile(r"^(?:#\s*)?May import:[^\n]*(?:\n#[^\n]*)*", re.MULTILINE)


def _stated_imports(path: pathlib.Path, modules: set[str]) -> set[str] | None:
    """The modules named by the "May import:" line of the module's opening (a comment after
    the docstring, or a docstring paragraph), continued by the comment lines that follow it
    (``pyroi`` alone is the package's ``__init__``); None when there is no such line."""
    text = path.read_text(encoding="utf-8")
    opening = re.split(r"^(?:def|class|cdef|cpdef) ", text, maxsplit=1, flags=re.MULTILINE)[0]
    match = _MAY_IMPORT.search(opening)
    if match is None:
        return None
    stated = {word for word in re.findall(r"\w+", match.group(0)) if word in modules}
    if re.search(r"\bpyroi\b(?!\.)", match.group(0)):
        stated.add("__init__")
    return stated


def test_every_module_says_what_it_may_import_and_keeps_to_it():
    modules = _module_names(SOURCE)
    graph = import_graph()
    for path in sorted(SOURCE.iterdir()):
        if path.suffix not in (".py", ".pyx"):
            continue
        stated = _stated_imports(path, modules)
        assert stated is not None, f"{path.name}: its opening says nothing of 'May import:'"
        if path.stem == "__init__":
            continue  # the package re-exports; nothing below imports it
        extra = graph[path.stem] - stated
        assert not extra, f"{path.name} imports {sorted(extra)} beyond its 'May import:' line"


# ---- the C core: a folder per family (docs/architecture.md, "C core") ---------------------

C_SOURCE = SOURCE.parent / "c"
_C_INCLUDE = re.compile(r'^\s*#\s*(?:include|define\s+PYROI_DTYPE_TEMPLATE)\s+"([^"]+)"',
                        re.MULTILINE)


def _c_files(root: pathlib.Path = C_SOURCE) -> list[pathlib.Path]:
    return sorted(p for p in root.rglob("*") if p.suffix in (".c", ".h"))


def test_the_c_core_top_holds_only_folders():
    loose = sorted(p.name for p in C_SOURCE.iterdir() if not p.is_dir())
    assert loose == [], f"files at the top of src/c (each belongs in a folder): {loose}"
    assert (C_SOURCE / "include" / "pyroi.h").is_file()
    assert [p.name for p in (C_SOURCE / "include").iterdir()] == ["pyroi.h"]


def test_c_file_names_are_unique_across_the_folders():
    """The bare build (`cc -c src/c/*/*.c`) writes every object into one directory."""
    names: dict[str, list[str]] = {}
    for path in _c_files():
        names.setdefault(path.name, []).append(str(path.relative_to(C_SOURCE)))
    clashes = {name: where for name, where in names.items() if len(where) > 1}
    assert clashes == {}


def test_c_includes_spell_their_path_from_src_c():
    """Every quoted include of a core file names its folder (`core/validate.h`), also beside
    the includer; the public header is `pyroi.h`."""
    for path in _c_files():
        for name in _C_INCLUDE.findall(path.read_text(encoding="utf-8")):
            if name == "pyroi.h":
                continue
            assert "/" in name and (C_SOURCE / name).is_file(), \
                f"{path.relative_to(C_SOURCE)}: #include \"{name}\" is not a path from src/c"


# Which folders a folder's files may include (docs/architecture.md, "C core"): core/ is below
# everything, layout/ above it, a family above both; a family uses another only where it runs
# it (multiscale/ runs RoIAlign per level).
_C_LOWER = {"core": set(), "layout": {"core"}}
_C_FAMILY_USES = {"multiscale": {"roi_align"}}


def test_c_folders_include_only_below_them():
    for path in _c_files():
        folder = path.relative_to(C_SOURCE).parts[0]
        if folder == "include":
            continue
        allowed = {folder} | _C_LOWER.get(folder, {"core", "layout"}) | \
            _C_FAMILY_USES.get(folder, set())
        for name in _C_INCLUDE.findall(path.read_text(encoding="utf-8")):
            if name != "pyroi.h":
                assert name.split("/")[0] in allowed, \
                    f"{path.relative_to(C_SOURCE)} includes {name} (allowed: {sorted(allowed)})"


def symbol_graph(objects: list[pathlib.Path]) -> dict[str, set[str]]:
    """Object file name -> the object files that define a global symbol it uses (nm -P)."""
    defined: dict[str, str] = {}
    used: dict[str, set[str]] = {}
    for obj in objects:
        listing = subprocess.run(["nm", "-P", str(obj)], capture_output=True, text=True,
                                 check=True).stdout
        used[obj.stem] = set()
        for line in listing.splitlines():
            fields = line.split()
            if len(fields) < 2:
                continue
            if fields[1] == "U":
                used[obj.stem].add(fields[0])
            elif fields[1] in "TDBRVWGS":  # defined here (text, data, bss, rodata, weak, ...)
                defined.setdefault(fields[0], obj.stem)
    return {name: {defined[s] for s in symbols if s in defined} - {name}
            for name, symbols in used.items()}


@pytest.mark.skipif(shutil.which("cc") is None or shutil.which("nm") is None,
                    reason="needs a C compiler (cc) and nm")
def test_no_circle_of_symbol_references_between_c_files(tmp_path):
    """No translation unit of the core both calls another and is called by it, through any
    chain (a circle, such as a float16 file calling every family while they call it back,
    would tie those files into one unit of change)."""
    sources = sorted(C_SOURCE.glob("*/*.c"))
    flags = ["-std=c99", "-O0", f"-I{C_SOURCE / 'include'}", f"-I{C_SOURCE}", "-c"]

    def compile_one(source: pathlib.Path) -> int:
        return subprocess.run(["cc", *flags, str(source), "-o",
                               str(tmp_path / (source.stem + ".o"))]).returncode

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        assert list(pool.map(compile_one, sources)) == [0] * len(sources)
    graph = symbol_graph(sorted(tmp_path.glob("*.o")))
    assert "roi_align" in graph["roi_align_f16"] and "half_chunks" in graph["roi_align_f16"]
    assert graph["half_chunks"] <= {"cpu", "half", "memory", "parallel", "validate"}
    assert import_cycles(graph) == [], "circles of symbol references between src/c files"
