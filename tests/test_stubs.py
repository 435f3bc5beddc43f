"""The ``.pyi`` stubs ship with the installed package and match the runtime: every public
name is in its module's stub, with the same parameters (names, kinds, defaults)."""

import ast
import dataclasses
import importlib
import inspect
import os
import subprocess
import sys

import pytest

STUBBED = ("pyroi", "pyroi.ops", "pyroi.layers", "pyroi.onnx", "pyroi.ascend", "pyroi.viz",
           "pyroi.cli", "pyroi._errors", "pyroi._threads", "pyroi._results", "pyroi._core")
# Annotated in their source: their .py is what mypy reads, so they carry no .pyi beside it.
INLINE = ("pyroi._errors", "pyroi._threads", "pyroi._results", "pyroi.viz")


def stub_path(module):
    base = os.path.dirname(module.__file__)
    if module.__name__ == "pyroi":
        return os.path.join(base, "__init__.pyi")
    suffix = ".py" if module.__name__ in INLINE else ".pyi"
    return os.path.join(base, module.__name__.rsplit(".", 1)[1] + suffix)


def stub_tree(module_name):
    module = importlib.import_module(module_name)
    with open(stub_path(module), encoding="utf-8") as handle:
        return module, ast.parse(handle.read())


def public_names(module):
    if hasattr(module, "__all__"):
        return list(module.__all__)
    # pyroi._core has no __all__: its public functions and constants
    return [n for n, v in vars(module).items()
            if not n.startswith("_") and (callable(v) or isinstance(v, int))
            and getattr(v, "__module__", module.__name__) == module.__name__]


def stub_definitions(tree):
    """name -> ast node of every top-level def, class, annotated name and import alias."""
    found = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            found[node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            found[node.target.id] = node
        elif isinstance(node, ast.Assign):  # an inline-typed module's constants
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found[target.id] = node
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                found[alias.asname or alias.name] = node
    return found


_KINDS = {"posonlyargs": inspect.Parameter.POSITIONAL_ONLY,
          "args": inspect.Parameter.POSITIONAL_OR_KEYWORD,
          "kwonlyargs": inspect.Parameter.KEYWORD_ONLY}


def stub_parameters(node):
    """[(name, kind, default)] of a stub function; default is a literal value, ``...`` for a
    non-literal default, or inspect.Parameter.empty."""
    args = node.args
    result = []
    positional = args.posonlyargs + args.args
    defaults = [inspect.Parameter.empty] * (len(positional) - len(args.defaults)) + list(
        args.defaults)
    for arg, default in zip(positional, defaults):
        kind = _KINDS["posonlyargs" if arg in args.posonlyargs else "args"]
        result.append((arg.arg, kind, default))
    if args.vararg:
        result.append((args.vararg.arg, inspect.Parameter.VAR_POSITIONAL,
                       inspect.Parameter.empty))
    for arg, default in zip(args.kwonlyargs, args.kw_defaults):
        result.append((arg.arg, _KINDS["kwonlyargs"],
                       inspect.Parameter.empty if default is None else default))
    if args.kwarg:
        result.append((args.kwarg.arg, inspect.Parameter.VAR_KEYWORD, inspect.Parameter.empty))
    normalised = []
    for name, kind, default in result:
        if isinstance(default, ast.AST):
            try:
                default = ast.literal_eval(default)
            except ValueError:
                default = ...
        normalised.append((name, kind, default))
    return [p for p in normalised if p[0] != "self"]


def runtime_parameters(function):
    result = []
    for p in inspect.signature(function).parameters.values():
        if p.name == "self":
            continue
        default = p.default
        if default is not inspect.Parameter.empty and not isinstance(
                default, (int, float, str, bool, tuple, type(None))):
            default = ...
        result.append((p.name, p.kind, default))
    return result


def assert_same_signature(stub_node, function, label):
    expected = runtime_parameters(function)
    actual = stub_parameters(stub_node)
    assert actual == expected, f"{label}: stub {actual} != runtime {expected}"


def cases():
    for module_name in STUBBED:
        module = importlib.import_module(module_name)
        for name in public_names(module):
            yield module_name, name


@pytest.mark.parametrize("module_name", STUBBED)
def test_stub_is_installed_with_the_package(module_name):
    module = importlib.import_module(module_name)
    assert os.path.isfile(stub_path(module)), stub_path(module)
    assert os.path.isfile(os.path.join(os.path.dirname(module.__file__), "py.typed"))


@pytest.mark.parametrize("module_name", INLINE)
def test_inline_typed_module_is_fully_annotated(module_name):
    """A module without a stub annotates every parameter and return of its public functions
    (else mypy would see them as untyped), and no stale .pyi shadows its source."""
    module, tree = stub_tree(module_name)
    assert not os.path.exists(stub_path(module) + "i")
    functions = [node for node in tree.body if isinstance(node, ast.FunctionDef)
                 and not node.name.startswith("_")]
    for node in functions:
        arguments = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
        assert node.returns is not None, f"{module_name}.{node.name} has no return annotation"
        for arg in arguments:
            assert arg.annotation is not None, f"{module_name}.{node.name}({arg.arg}) is untyped"


@pytest.mark.parametrize("module_name", STUBBED)
def test_stub_all_matches(module_name):
    module, tree = stub_tree(module_name)
    declared = [node for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))
                and any(isinstance(t, ast.Name) and t.id == "__all__"
                        for t in getattr(node, "targets", [getattr(node, "target", None)]))]
    if hasattr(module, "__all__") and declared and isinstance(declared[0], ast.Assign):
        assert sorted(ast.literal_eval(declared[0].value)) == sorted(module.__all__)


@pytest.mark.parametrize("module_name, name", list(cases()))
def test_public_name_matches_runtime(module_name, name):
    module, tree = stub_tree(module_name)
    definitions = stub_definitions(tree)
    assert name in definitions, f"{name} is missing from {stub_path(module)}"
    node = definitions[name]
    value = getattr(module, name)
    if isinstance(node, ast.FunctionDef):
        assert callable(value) and not inspect.isclass(value)
        assert_same_signature(node, value, f"{module_name}.{name}")
    elif isinstance(node, ast.ClassDef):
        assert inspect.isclass(value)
        methods = {n.name: n for n in node.body if isinstance(n, ast.FunctionDef)}
        for klass in [node] + [stub_definitions(tree).get(getattr(b, "id", ""), None)
                               for b in node.bases]:
            if isinstance(klass, ast.ClassDef):
                for n in klass.body:
                    if isinstance(n, ast.FunctionDef):
                        methods.setdefault(n.name, n)
        if dataclasses.is_dataclass(value):  # the stub is a @dataclass with the same fields
            fields = [n.target.id for n in node.body if isinstance(n, ast.AnnAssign)]
            assert fields == [f.name for f in dataclasses.fields(value)]
            assert any(getattr(d, "id", getattr(d, "func", None)) == "dataclass"
                       or getattr(getattr(d, "func", None), "id", None) == "dataclass"
                       for d in node.decorator_list)
            return
        for method in ("__init__", "__call__", "backward"):
            if method in vars(value) or any(method in vars(k) for k in value.__mro__[1:-1]):
                if method == "__init__" and not any(
                        "__init__" in vars(k) for k in value.__mro__[:-1]
                        if k.__module__.startswith("pyroi")):
                    continue
                assert method in methods, f"{module_name}.{name}.{method} missing from stub"
                assert_same_signature(methods[method], getattr(value, method),
                                      f"{module_name}.{name}.{method}")


def test_stubtest(tmp_path):
    """mypy's stubtest agrees: the stubs type-check, and every name, signature and class of
    them matches the installed package (run from outside the source tree)."""
    pytest.importorskip("mypy.stubtest", reason="mypy is not installed")
    here = os.path.dirname(os.path.abspath(__file__))
    result = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "pyroi",
         "--allowlist", os.path.join(here, "stubtest_allowlist.txt"),
         "--mypy-config-file", os.path.join(here, "stubtest_mypy.ini")],
        cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
