"""A pysnmp MibBuilder that compiles each MIB module's source once per process.

pysnmp's MibBuilder compiles a module's Python source twice at every load
(to read it, then again through runpy), and each engine loads the same
modules anew. `MibBuilderOnce` takes a module's code from importlib's source
loader (the __pycache__ bytecode when current, which pip writes at install)
and keeps it for the process, keyed by path, size and mtime; a load runs
the kept code in the globals pysnmp gives it. What is not a .py file in a
directory source loads as pysnmp loads it.
"""

from __future__ import annotations

import os
import sys
import traceback
from importlib.machinery import BYTECODE_SUFFIXES, SourceFileLoader
from types import CodeType
from typing import Any

from pysnmp.smi import builder, error

__all__ = ["MibBuilderOnce", "module_code"]

_CODE: dict[tuple[str, int, int], CodeType] = {}


def module_code(path: str) -> CodeType:
    """The code of the MIB module source at `path`, compiled once per version of the file."""
    status = os.stat(path)
    key = (path, status.st_size, status.st_mtime_ns)
    code = _CODE.get(key)
    if code is None:
        name = os.path.splitext(os.path.basename(path))[0]
        compiled = SourceFileLoader(name, path).get_code(name)
        if compiled is None:  # the loader found no source after all
            raise error.MibNotFoundError(f"MIB module {path} has no source")
        code = _CODE[key] = compiled
    return code


class MibBuilderOnce(builder.MibBuilder):  # type: ignore[misc]  # pysnmp's builder is untyped
    """pysnmp's MibBuilder, loading .py module sources through `module_code`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # pysnmp keeps what it loaded in two private slots; a load must fill them as its own does.
        self._paths_seen: set[str] = getattr(self, "_MibBuilder__modPathsSeen")
        self._modules_seen: dict[str, str] = getattr(self, "_MibBuilder__modSeen")

    def load_module(self, modName: str, **userCtx: Any) -> MibBuilderOnce:
        for source in self.get_mib_sources():
            if not isinstance(source, builder.DirMibSource):
                continue
            path = source.full_path(modName, ".py")
            if os.path.isfile(path):
                return self._run(modName, path, userCtx)
            if any(os.path.isfile(source.full_path(modName, sfx)) for sfx in BYTECODE_SUFFIXES):
                break  # bytecode without source: pysnmp's own way
        super().load_module(modName, **userCtx)
        return self

    def _run(self, name: str, path: str, context: dict[str, Any]) -> MibBuilderOnce:
        if path in self._paths_seen:
            if name not in self._modules_seen:
                raise error.MibNotFoundError(f'MIB file "{name}.py" loaded under another name')
            return self
        self._paths_seen.add(path)
        # The names runpy.run_path would give the module, which pysnmp uses.
        module_globals = {"mibBuilder": self, "userCtx": context, "__name__": "<run_path>",
                          "__file__": path}
        try:
            exec(module_code(path), module_globals)  # noqa: S102  # a MIB module is Python code
        except Exception:
            self._paths_seen.discard(path)
            raise error.MibLoadError(
                f"MIB module '{path}' load error: {traceback.format_exception(*sys.exc_info())}")
        self._modules_seen[name] = path
        return self
