"""The optional dependencies: import one, or raise ImportError naming the ``pip install`` line.

:func:`require` imports any optional module and names the uncertank extra
that installs it; :func:`require_pymc` and :func:`require_arviz` are the
Bayesian comparison's (``uncertank[bayes]``), :func:`require_torch` checks
the neural rankers' stack (``uncertank[torch]``) without importing it.
"""

from __future__ import annotations

import importlib
import importlib.util
import warnings
from types import ModuleType

__all__ = ["require", "require_arviz", "require_pymc", "require_torch"]

_BAYES = "the Bayesian comparison"

#: The modules of the ``torch`` extra that :mod:`uncertank.nn` imports.
_TORCH_MODULES = ("torch", "transformers", "accelerate", "safetensors", "tqdm")


def require(module: str, extra: str, *, what: str | None = None) -> ModuleType:
    """Import and return ``module``, or raise ImportError naming ``pip install "uncertank[extra]"``.

    Parameters
    ----------
    module : str
        The module to import, e.g. ``"bm25s"``.
    extra : str
        The uncertank extra that installs it, e.g. ``"retrieval"``.
    what : str, optional
        What needs it, for the message (``"BM25"``); the module name by default.

    Examples
    --------
    >>> require("json", "none").__name__
    'json'
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f"{what or module} needs the optional dependency {module}; "
            f'install it with pip install "uncertank[{extra}]" ({exc})'
        ) from exc


def require_pymc() -> ModuleType:
    """Import and return :mod:`pymc`, or raise ImportError naming the ``bayes`` extra."""
    return require("pymc", "bayes", what=_BAYES)


def require_arviz() -> ModuleType:
    """Import and return :mod:`arviz`, or raise ImportError naming the ``bayes`` extra."""
    with warnings.catch_warnings():
        # ArviZ 0.2x announces its coming refactor on import; it concerns no call made here.
        warnings.filterwarnings("ignore", category=FutureWarning, module="arviz")
        return require("arviz", "bayes", what=_BAYES)


def require_torch() -> None:
    """Raise ImportError naming the install line when the ``torch`` extra is missing (imports nothing)."""
    missing = [m for m in _TORCH_MODULES if importlib.util.find_spec(m) is None]
    if missing:
        raise ImportError(
            f"uncertank.nn needs {', '.join(missing)}, which is not installed; "
            'install it with: pip install "uncertank[torch]"'
        )
