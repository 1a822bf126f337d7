"""`python -m shoe_testkit.scenario FILE...`: run scenario files, or --update them."""

from __future__ import annotations

import sys
from pathlib import Path

from shoe_testkit.scenario.parse import parse_scenario
from shoe_testkit.scenario.run import run_scenario, update_text


def main(argv: list[str] | None = None) -> int:
    """Run scenario files (or rewrite their expectations with --update)."""
    args = sys.argv[1:] if argv is None else argv
    update = "--update" in args
    with_text = "--with-text" in args
    paths = [Path(arg) for arg in args if arg not in ("--update", "--with-text")]
    if not paths:
        print(
            "usage: python -m shoe_testkit.scenario [--update [--with-text]] FILE...",
            file=sys.stderr,
        )
        return 2
    failed = 0
    for path in paths:
        text = path.read_text(encoding="utf-8")
        if update:
            path.write_text(update_text(text, str(path), with_text=with_text), encoding="utf-8")
            print(f"updated {path}")
            continue
        problems = run_scenario(parse_scenario(text, str(path)))
        failed += bool(problems)
        print("\n".join(problems) if problems else f"ok {path}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
