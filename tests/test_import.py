from __future__ import annotations

import subprocess
import sys


def test_import_is_light():
    code = (
        "import sys, uncertank, uncertank.metrics, uncertank.plugins;"
        "uncertank.list_plugins();"
        "heavy = [m for m in ('torch', 'transformers', 'pymc', 'pytensor', 'matplotlib', 'sklearn')"
        " if m in sys.modules];"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"import uncertank pulled in: {out.stdout.strip()}"


def test_public_names_exist():
    import uncertank

    missing = [n for n in uncertank.__all__ if not hasattr(uncertank, n)]
    assert missing == []
