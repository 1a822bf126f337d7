"""Mutation testing of the pure and protocol modules: mutmut per module, a score per file.

Each module of tools/mutation.toml (link, journal, payouts, rules, roads) is copied into a
scratch tree of its own, mutated there by mutmut 3 and run against that module's own test
files only, so a score says what those tests catch and the work tree is never touched (other
sessions keep testing the real code meanwhile). Survivors that match an entry of the
`[[equivalent]]` list are counted apart; every other survivor is printed with its diff.

Not part of CI's default run: a module takes minutes. Run it at low priority, one worker:

    nice -n 10 .venv/bin/python tools/mutation.py [MODULE ...] [--workers 1]

`--keep` reuses the scratch trees of an earlier run: mutmut tests again only the functions
whose code changed, and `--retry` re-runs the survivors (after new tests were written).
Needs mutmut (`.venv/bin/pip install mutmut`). The exit status is 1 if any non-equivalent
mutant survived, so the script can gate a release by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = Path(__file__).with_name("mutation.toml")
SCRATCH = Path(tempfile.gettempdir()) / "shoe-controller-mutation"

# What the scratch tree needs to import the packages and run the tests.
COPIED = ("drivers", "shoe_controller", "tests", "config", "docs", "pyproject.toml")
SKIPPED = shutil.ignore_patterns("__pycache__", ".hypothesis", ".pytest_cache", "mutants")

# mutmut's exit codes of a mutant run (mutmut.stats.status_by_exit_code), as this script
# counts them: a timeout or a crash means the tests noticed the mutant.
KILLED = {1, 3, 36, 24, -24, 152, 255, -11, -9, 37}
SURVIVED = {0}
NO_TESTS = {5, 33}

# Written into the scratch tree as its root conftest.py: mutmut stops a mutant's run at its
# first failing test (-x) and passes the tests in no set order, so a mutant that a unit test
# kills would still often start a broker or a daemon first. The whole-system tests go last.
_CHEAP_FIRST = """
def pytest_collection_modifyitems(items):
    items.sort(key=lambda item: "system" in item.path.parts)
"""

# Prints the diff of each mutant named on the command line, as JSON, from mutmut's results.
_DIFFS = """
import json, sys
from mutmut.mutation.diff_apply import get_diff_for_mutant
print(json.dumps({name: get_diff_for_mutant(name) for name in sys.argv[1:]}))
"""


@dataclass(frozen=True)
class Equivalent:
    """A mutant judged equivalent: the function it changes, the line before and after."""

    module: str
    function: str
    original: str
    mutated: str
    reason: str

    def matches(self, function: str, diff: str) -> bool:
        removed, added = changed_lines(diff)
        return (
            function == self.function
            and _squash(self.original) in map(_squash, removed)
            and _squash(self.mutated) in map(_squash, added)
        )


@dataclass
class FileScore:
    """What became of one file's mutants."""

    path: str
    counts: Counter[str] = field(default_factory=Counter)
    survivors: list[tuple[str, str]] = field(default_factory=list)  # name, diff
    equivalents: list[tuple[str, Judged]] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def non_equivalent(self) -> int:
        return self.total - len(self.equivalents)

    def line(self) -> str:
        killed = self.counts["killed"]
        share = 100.0 * killed / self.non_equivalent if self.non_equivalent else 100.0
        return (
            f"  {self.path:36} {killed:4}/{self.non_equivalent:<4} killed ({share:5.1f} %),"
            f" {len(self.equivalents):3} equivalent, {len(self.survivors):3} left,"
            f" {self.total:4} mutants"
        )


SQL_WORDS = re.compile(
    r"\b(select|insert|update|delete|pragma|begin|commit|values|where|excluded|order by"
    r"|is null|limit \d+)\b",
    re.IGNORECASE,
)
SQL_LITERAL = re.compile(r"'[^']*'|:\w+")  # quoted literals and named parameters


def sql_letter_case(removed: list[str], added: list[str]) -> bool:
    """The mutant changes only the letter case of SQL (keywords, names, pragma values),
    never of a quoted SQL literal or a named parameter, which are taken as written."""
    if len(removed) != 1 or len(added) != 1:
        return False
    before, after = removed[0], added[0]
    return (
        before != after
        and before.lower() == after.lower()
        and SQL_WORDS.search(before) is not None
        and SQL_LITERAL.findall(before) == SQL_LITERAL.findall(after)
    )


# Kinds of mutants judged equivalent by a rule rather than one by one ([[equivalent_rule]]).
RULES = {"sql-letter-case": sql_letter_case}


@dataclass(frozen=True)
class EquivalentRule:
    """A kind of equivalent mutant, recognised by one of RULES."""

    name: str
    reason: str

    def matches(self, function: str, diff: str) -> bool:
        del function  # a rule looks at the change only
        return RULES[self.name](*changed_lines(diff))


def changed_lines(diff: str) -> tuple[list[str], list[str]]:
    """The lines a unified diff removes and adds, without their +/- marks."""
    removed = [line[1:] for line in diff.splitlines() if line[:1] == "-" and line[:3] != "---"]
    added = [line[1:] for line in diff.splitlines() if line[:1] == "+" and line[:3] != "+++"]
    return removed, added


def _squash(text: str) -> str:
    return " ".join(text.split())


def function_of(mutant: str) -> str:
    """mutmut's mangled function name of a mutant: `pkg.mod.xǁClassǁmethod__mutmut_7` ->
    `xǁClassǁmethod`."""
    return mutant.rpartition("__mutmut_")[0].rpartition(".")[2]


Judged = Equivalent | EquivalentRule


def load_config() -> tuple[dict[str, object], dict[str, dict[str, list[str]]], list[Judged]]:
    data = tomllib.loads(CONFIG.read_text(encoding="utf-8"))
    equivalents: list[Judged] = [Equivalent(**entry) for entry in data.get("equivalent", [])]
    for entry in data.get("equivalent_rule", []):
        if entry["name"] not in RULES:
            raise SystemExit(f"{CONFIG.name}: no rule {entry['name']!r}; rules: {sorted(RULES)}")
        equivalents.append(EquivalentRule(**entry))
    return data["mutmut"], data["modules"], equivalents


def setup_cfg(root: Path, options: dict[str, object], module: dict[str, list[str]]) -> str:
    """mutmut's [mutmut] section for one module (setup.cfg: lists one item a line)."""
    values = dict(options)
    values["only_mutate"] = module["mutate"]
    # what the tests read besides tests/ (e.g. config/decks), and the test order's conftest
    values["also_copy"] = [*module.get("also_copy", []), "conftest.py"]
    values["pytest_add_cli_args_test_selection"] = [
        test for test in module["tests"] if (root / test).exists()
    ]
    lines = ["[mutmut]"]
    for key, value in values.items():
        if isinstance(value, list):
            lines.append(f"{key} =")
            lines.extend(f"    {item}" for item in value)
        else:
            lines.append(f"{key} = {str(value).lower() if isinstance(value, bool) else value}")
    return "\n".join(lines) + "\n"


def prepare(root: Path, work: Path, cfg: str, *, keep: bool) -> None:
    """The scratch tree: a copy of what the tests need and the module's mutmut section.

    With `keep`, files are copied over the earlier copy with their times, so mutmut sees
    which sources changed since its last run and keeps the results of the others.
    """
    if work.exists() and not keep:
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    for name in COPIED:
        source = root / name
        if source.is_dir():
            shutil.copytree(source, work / name, ignore=SKIPPED, dirs_exist_ok=True)
        elif source.exists():
            shutil.copy2(source, work / name)
    (work / "setup.cfg").write_text(cfg, encoding="utf-8")
    (work / "conftest.py").write_text(_CHEAP_FIRST.lstrip(), encoding="utf-8")


def mutmut(work: Path, *args: str) -> None:
    """One mutmut command in the scratch tree; its chatter goes to mutmut.log there."""
    command = [str(Path(sys.executable).with_name("mutmut")), *args]
    log = work / "mutmut.log"
    with log.open("a", encoding="utf-8") as out:
        completed = subprocess.run(command, cwd=work, check=False, stdout=out, stderr=out)
    if completed.returncode not in (0, 1):
        tail = log.read_text(encoding="utf-8", errors="replace")[-3000:]
        raise SystemExit(f"{tail}\nmutmut {args[0]} failed ({completed.returncode}), see {log}")


def results(work: Path) -> dict[str, dict[str, int | None]]:
    """Each mutated file's mutants and their exit codes, from mutmut's .meta files."""
    found = {}
    for meta in sorted((work / "mutants").rglob("*.py.meta")):
        source = meta.relative_to(work / "mutants").as_posix().removesuffix(".meta")
        found[source] = json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"]
    return found


def status(code: int | None) -> str:
    if code is None:
        return "not checked"
    if code in KILLED:
        return "killed"
    if code in NO_TESTS:
        return "no tests"
    if code in SURVIVED:
        return "survived"
    return f"exit {code}"


def diffs(work: Path, names: list[str]) -> dict[str, str]:
    if not names:
        return {}
    completed = subprocess.run(
        [sys.executable, "-c", _DIFFS, *names],
        cwd=work,
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(completed.stdout)


def score(name: str, work: Path, equivalents: list[Judged]) -> list[FileScore]:
    ours = [e for e in equivalents if isinstance(e, EquivalentRule) or e.module == name]
    scores = []
    for path, codes in results(work).items():
        file_score = FileScore(path)
        lost = [mutant for mutant, code in codes.items() if status(code) != "killed"]
        texts = diffs(work, lost)
        for mutant, code in codes.items():
            file_score.counts[status(code)] += 1
            if mutant not in texts:
                continue
            match = next((e for e in ours if e.matches(function_of(mutant), texts[mutant])), None)
            if match is not None:
                file_score.equivalents.append((mutant, match))
            else:
                file_score.survivors.append((mutant, texts[mutant]))
        scores.append(file_score)
    return scores


def run_module(
    name: str, module: dict[str, list[str]], args: argparse.Namespace
) -> list[FileScore]:
    options, _, equivalents = load_config()
    work = args.workdir / name
    prepare(args.root, work, setup_cfg(args.root, options, module), keep=args.keep)
    (work / "mutmut.log").unlink(missing_ok=True)
    max_children = ["--max-children", str(args.workers)]
    print(f"== {name}: mutating {', '.join(module['mutate'])} in {work}", flush=True)
    mutmut(work, "run", *max_children)
    if args.retry:
        again = [
            mutant
            for codes in results(work).values()
            for mutant, code in codes.items()
            if status(code) != "killed"
        ]
        if again:
            mutmut(work, "run", *max_children, *again)
    scores = score(name, work, equivalents)
    for file_score in scores:
        for mutant, diff in file_score.survivors:
            print(f"\n-- survivor {mutant}\n{diff}")
        if args.show_equivalent:
            for mutant, entry in file_score.equivalents:
                print(f"\n-- equivalent {mutant}: {entry.reason}")
    return scores


def main() -> int:
    _, modules, _ = load_config()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", help=f"of {', '.join(modules)} (default: all)")
    parser.add_argument("--workdir", type=Path, default=SCRATCH, help=f"default: {SCRATCH}")
    parser.add_argument(
        "--root", type=Path, default=ROOT, help="the tree to test (default: this checkout)"
    )
    parser.add_argument("--workers", type=int, default=1, help="mutants run at once")
    parser.add_argument("--keep", action="store_true", help="reuse the earlier scratch trees")
    parser.add_argument("--retry", action="store_true", help="run the survivors again")
    parser.add_argument("--show-equivalent", action="store_true", help="print them too")
    args = parser.parse_args()
    unknown = sorted(set(args.modules) - set(modules))
    if unknown:
        parser.error(f"no module {', '.join(unknown)} in {CONFIG.name}")
    if shutil.which("mutmut", path=os.path.dirname(sys.executable)) is None:
        raise SystemExit("mutmut is not installed: .venv/bin/pip install mutmut")
    summary: list[str] = []
    left = 0
    for name in args.modules or list(modules):
        scores = run_module(name, modules[name], args)
        summary += [f"{name}:", *(file_score.line() for file_score in scores)]
        left += sum(len(file_score.survivors) for file_score in scores)
    print("\n== mutation score per module (killed / non-equivalent mutants)")
    print("\n".join(summary))
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main())
