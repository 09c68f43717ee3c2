"""Reading and writing a fitted comparison: one netCDF file with the posterior, the data and the settings.

A comparison is validated (:func:`~uncertank.bayes.diagnostics.validate_trace`)
when it is built, so only whole, finite traces reach :func:`to_netcdf`; the
file is written atomically, so an interrupted write leaves no partial file.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from uncertank._io import atomic_path
from uncertank.bayes._deps import require_arviz

if TYPE_CHECKING:
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
    import xarray as xr

    from uncertank.bayes.diagnostics import validate_trace

    validate_trace(cmp.idata)
    p = Path(path)
    data = cmp.data
    columns = {}
    for col in data.columns:
        values = data[col]
        numeric = col != "system" and (col != "topic" or str(values.dtype).startswith("int"))
        columns[col] = ("obs", values.to_numpy() if numeric else values.astype(str).to_numpy(dtype=object))
    ds = xr.Dataset(columns)
    ds.attrs["uncertank_settings"] = json.dumps({
        "family": cmp.family, "sampler": cmp.sampler, "timings": cmp.timings,
        "model_options": cmp.model_options, "seed": cmp.seed,
        "topic_dtype": str(data["topic"].dtype),
        "gate": None if cmp.gate is None else cmp.gate.to_dict(),
    })
    az = require_arviz()
    groups = {g: getattr(cmp.idata, g) for g in cmp.idata.groups()
              if g in ("posterior", "sample_stats", "observed_data")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        out = az.InferenceData(**groups, uncertank_data=ds)
    with atomic_path(p) as tmp:
        out.to_netcdf(str(tmp))
    return p


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
    import pandas as pd

    from uncertank.bayes.comparison import SystemComparison
    from uncertank.bayes.fit import Gate

    az = require_arviz()
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"path must be an existing netCDF file; got {str(p)!r}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = az.from_netcdf(str(p))
    if "uncertank_data" not in idata.groups():
        raise ValueError(f"{str(p)!r} was not written by SystemComparison.to_netcdf (no uncertank_data group)")
    ds = idata["uncertank_data"]
    settings = json.loads(ds.attrs["uncertank_settings"])
    data = pd.DataFrame({name: np.asarray(ds[name].values) for name in ds.data_vars})
    data["system"] = data["system"].astype(str)
    if settings.get("topic_dtype", "").startswith("int"):
        data["topic"] = data["topic"].astype(np.int64)
    else:
        data["topic"] = data["topic"].astype(str)
    gate = settings.get("gate")
    return SystemComparison(idata, data, family=settings["family"], sampler=settings["sampler"],
                            timings=settings["timings"], model_options=settings["model_options"],
                            seed=settings["seed"], gate=None if gate is None else Gate(**gate))
