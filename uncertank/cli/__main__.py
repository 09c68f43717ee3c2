"""``python -m uncertank.cli``: the ``uncertank`` command."""

from __future__ import annotations

from uncertank.cli import main

if __name__ == "__main__":  # pragma: no cover
    main()
