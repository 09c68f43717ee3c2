"""Reading and writing a fitted comparison: one netCDF file with the posterior, the data and the settings.

The functions here are the methods :meth:`SystemComparison.to_netcdf
<uncertank.bayes.SystemComparison.to_netcdf>` and
:meth:`SystemComparison.from_netcdf
<uncertank.bayes.SystemComparison.from_netcdf>`, as free functions. A
comparison is validated (:func:`~uncertank.bayes.diagnostics.validate_trace`)
when it is built, so only whole, finite traces are written; the file is
written atomically, so an interrupted write leaves no partial file.
"""

from __future__ import annotations

import os
from pathlib import Path

from uncertank.bayes.comparison import SystemComparison

__all__ = ["from_netcdf", "to_netcdf"]


def to_netcdf(cmp: SystemComparison, path: str | os.PathLike[str]) -> Path:
    """Write the posterior, the data and the settings of ``cmp`` to one netCDF file, atomically.

    Parameters
    ----------
    cmp : SystemComparison
        The fit.
    path : str or os.PathLike
        Destination; its folder is created when missing.

    Returns
    -------
    pathlib.Path
        The path written. :func:`from_netcdf` reads it back.
    """
    return cmp.to_netcdf(path)


def from_netcdf(path: str | os.PathLike[str]) -> SystemComparison:
    """Read a comparison written by :func:`to_netcdf`.

    Parameters
    ----------
    path : str or os.PathLike
        The netCDF file.

    Returns
    -------
    SystemComparison
    """
    return SystemComparison.from_netcdf(path)
