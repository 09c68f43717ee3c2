"""Import a script that is not in a package (docs/scripts, docs/hooks) as a module, for its tests."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

__all__ = ["load_script"]


def load_script(path: Path) -> ModuleType:
    """The module of the file ``path``, named and registered in ``sys.modules`` by its stem.

    Registered so that dataclasses and pickling can find it; a script that
    imports a sibling puts its own folder on ``sys.path`` itself.
    """
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module
