"""The documentation cannot rot: every public function and class of the public modules has a
numpydoc Examples section, and every docstring example runs with the output it shows."""

import doctest
import importlib
import inspect

import numpy as np
import pytest

PUBLIC_MODULES = ("pyroi", "pyroi.ops", "pyroi.layers", "pyroi.onnx", "pyroi.ascend",
                  "pyroi.viz", "pyroi._errors", "pyroi._threads", "pyroi.cli")

# Examples that need an optional package: (docstring name prefix, module to import).
OPTIONAL = (("pyroi.viz.explain", "matplotlib"), ("pyroi.viz.save_explain", "matplotlib"),
            ("pyroi.onnx.run_node", "onnx"))


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
