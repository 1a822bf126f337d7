"""The table PC's builds, cached outside the repository: each under the hash of its recipe.

`$SHOE_TABLEPC_CACHE`, else `~/.cache/shoe-controller/tablepc`, holds one folder per family
(an architecture's image, its build root) and recipe: any change to the recipe gives a new
key, and the family's older folders go once the new one is in. A build runs in a temporary
folder renamed into place, so a build cut short leaves no half of one; a lock per family
makes two runs at once build it once.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path


def cache_root() -> Path:
    configured = os.environ.get("SHOE_TABLEPC_CACHE")
    return (
        Path(configured) if configured else Path.home() / ".cache" / "shoe-controller" / "tablepc"
    )


def recipe_key(family: str, recipe: Path) -> str:
    return f"{family}-{hashlib.sha256(recipe.read_bytes()).hexdigest()[:16]}"


def cached(family: str, recipe: Path, build: Callable[[Path], None]) -> Path:
    """The folder of `family` built by today's `recipe`; `build(folder)` fills a new one
    first if the cache has none."""
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    key = recipe_key(family, recipe)
    ready = root / key
    with (root / f".{family}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (ready / "done").exists():
            work = Path(tempfile.mkdtemp(prefix=f"build-{family}-", dir=root))
            try:
                build(work)
                (work / "done").write_text(key + "\n")
                shutil.rmtree(ready, ignore_errors=True)
                work.rename(ready)
            except BaseException:
                shutil.rmtree(work, ignore_errors=True)
                raise
            for old in root.glob(f"{family}-*"):
                if old != ready:
                    shutil.rmtree(old, ignore_errors=True)
    return ready
