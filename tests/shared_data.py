"""Where the tests find the real data kept outside the repository (``../shared/data``: human trials, real
silhouettes). Checks only: nothing there is copied into the repository, and tests that need it skip when it
is absent."""
from __future__ import annotations

import os
from pathlib import Path


def shared_data() -> Path:
    """``$VANTAGE_SHARED_DATA``, else the nearest ``shared/data`` beside an ancestor of the repository (the
    repository may sit one or two folders below the folder that holds ``shared/``)."""
    if os.environ.get("VANTAGE_SHARED_DATA"):
        return Path(os.environ["VANTAGE_SHARED_DATA"])
    for parent in Path(__file__).resolve().parents[1:4]:
        if (parent.parent / "shared" / "data").is_dir():
            return parent.parent / "shared" / "data"
    return Path(__file__).resolve().parents[2] / "shared" / "data"
