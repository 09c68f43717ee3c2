
"""Raw errors the fuzz harness finds in modules this part of the code does not own, left to their owners.

Each is run as an ``xfail(strict=True)``: when its module is fixed the case passes, the xfail fails, and the
entry is removed here. The reason is the first raw error the harness met: its type, where it was raised and
its message; the test's output shows the input.
"""

from __future__ import annotations

KNOWN_FAILURES: dict[str, str] = {}
