"""pyroi's thread pool seen by threadpoolctl, as the NumPy ecosystem's native pools are.

threadpoolctl finds a library among the shared objects the process has loaded by its file
name, and asks a controller class for its thread count. pyroi's C core is linked into its
extension module (``pyroi/_core.*``); its controller reads and sets the default thread count
of pyroi's calls (:func:`pyroi.set_num_threads`), so that
``threadpoolctl.threadpool_limits(1)`` caps pyroi too and ``threadpool_info()`` lists it.

threadpoolctl is optional and costs ~40 ms to import, so pyroi does not import it: the
controller is registered when threadpoolctl is imported, before or after pyroi (an import
hook waits for it)."""

# May import: _threads, _core (and threadpoolctl, when something else imported it).

from __future__ import annotations

import importlib.abc
import sys

from pyroi import _threads

_registered = False


def _controller_class(threadpoolctl):
    class PyroiController(threadpoolctl.LibController):
        """pyroi's default thread count (the C core is stateless: each call takes its count)."""

        user_api = "pyroi"
        internal_api = "pyroi"
        # the extension module's file name; other packages' _core modules lack the symbol
        filename_prefixes = ("_core",)
        check_symbols = ("pyroi_version_string",)

        def get_num_threads(self):
            return _threads.get_num_threads()

        def set_num_threads(self, num_threads):
            # the automatic count again when a limit is lifted (threadpoolctl restores the
            # count it read): later changes of PYROI_NUM_THREADS or of the CPUs still apply
            _threads.set_num_threads(None)
            if num_threads != _threads.get_num_threads():
                _threads.set_num_threads(num_threads)

        def get_version(self):
            symbol = getattr(self.dynlib, "pyroi_version_string", None)
            if symbol is None:
                return None
            from pyroi import _core
            return _core.version_string()

    return PyroiController


def register() -> None:
    """Registers the controller with the imported threadpoolctl (once)."""
    global _registered
    if _registered:
        return
    threadpoolctl = sys.modules["threadpoolctl"]
    if not hasattr(threadpoolctl, "register"):  # threadpoolctl < 3.0: no custom controllers
        return
    threadpoolctl.register(_controller_class(threadpoolctl))
    _registered = True


class _WhenImported(importlib.abc.MetaPathFinder):
    """Registers the controller once threadpoolctl has been imported, then leaves."""

    def find_spec(self, name, path=None, target=None):
        if name != "threadpoolctl":
            return None
        sys.meta_path.remove(self)
        from importlib.util import find_spec
        spec = find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        load = spec.loader.exec_module

        def exec_module(module):
            load(module)
            register()

        spec.loader.exec_module = exec_module
        return spec


def install() -> None:
    """Called once at pyroi's import."""
    if "threadpoolctl" in sys.modules:
        register()
    else:
        sys.meta_path.insert(0, _WhenImported())
