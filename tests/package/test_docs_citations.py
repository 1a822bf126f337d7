"""The docs are true to the code: every file, module and qualified name they cite exists.

Read: README.md, CONTRIBUTING.md, docs/*.md, and the docstrings and comments of
shoe_controller/, drivers/, the test kit, bench/ and tools/. Checked in them:

- file paths (`shoe_controller/store/journal.py`, the shorter `store/journal.py` the pages use,
  `framing.py`, `tests/scenarios/`): a tracked file or folder at that path from the top of the
  repository or from the citing file's folder, or one whose path ends with it;
- qualified names in backticks (`store.controller.Controller`, `supervisor.HANDLERS`,
  `Context.go`, `DeviceSession.stored()`): a module whose dotted name ends with the leading
  parts, then each further part a name defined in it (a class's members, its bases' and
  `self.` attributes included), or a class of the code and then its members;
- the module tables of docs/architecture.md: under a heading that names a folder
  (`## shoe_controller/table: ...`), each first-column name is a module or package of that
  folder, and every module of shoe_controller/ and drivers/ is in some table.

A rename that leaves a citation behind fails here, naming the file, line and citation.
"""

from __future__ import annotations

import ast
import io
import os
import re
import subprocess
import sys
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC_PAGES = ("README.md", "CONTRIBUTING.md", "docs/*.md")
# The specifications' copies cite the other project's files; they change only with it.
COPIES = ("docs/rules.md", "docs/spec-protocol.md", "docs/spec-push-api.md", "docs/spec-roads.md")
PAGE_NAMES = frozenset(
    {"README", "CONTRIBUTING", "DESIGN", "PROTOCOL", "PUSH_API", "RULES", "ROADS"}
)
# Where docstrings are read, each with the dotted name its modules are imported by.
CODE_ROOTS = {
    "shoe_controller": "shoe_controller",
    "drivers": "drivers",
    "tests/support/shoe_testkit": "shoe_testkit",
    "bench": "bench",
    "tools": "tools",
}
# Other libraries a page may name (`transitions.Machine`, `asyncio.to_thread`): a citation that
# starts with one is theirs, not ours.
LIBRARIES = frozenset(sys.stdlib_module_names) | {
    "aio_pika",
    "aiohttp",
    "click",
    "h11",
    "httpx",
    "hypothesis",
    "numpy",
    "np",
    "prometheus_client",
    "pytest",
    "rstream",
    "serial",
    "structlog",
    "transitions",
    "usb",
}
# A path with a folder in it is checked whatever its suffix; a bare file name only as a module
# (`framing.py`) or a page (`journal.md`): a bare `cuts.json` is a file the reader makes.
# What other software names, cited as theirs.
OTHERS = {
    "ash.py": "bellows' sans-I/O link, the style drivers/wire follows",
    "tcp_listen_options.sndbuf": "a RabbitMQ setting",
    "pkg.mod.xǁClassǁmethod__mutmut_7": "the form of mutmut's names for a mutant",
    "sbin/": "a RabbitMQ install's folder",
}
SUFFIXES = "py|md|toml|yaml|yml|json|jsonl|scenario|sqlite3|csv|png|svg|cfg|sh|txt|service|rules"
PATH = re.compile(
    rf"(?<![\w./$<-])((?:[\w-]+/)+[\w.-]+\.(?:{SUFFIXES})|[\w-]+\.(?:py|md)|(?:[\w.-]+/)+)"
    r"(?![\w/*<>-]|\.\w)"
)
FILE_SUFFIX = re.compile(rf"\.(?:{SUFFIXES}|db|lock|deb)$")
BACKTICKED = re.compile(r"`+([^`\n]+?)`+")
QUALIFIED = re.compile(r"([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?:\(.*\))?")
HEADING = re.compile(r"^(#+)\s+(.*)$")
HEADING_FOLDER = re.compile(
    r"^`?((?:shoe_controller|drivers|tests/support/shoe_testkit)(?:/[\w.]+)*)`?"
)


@dataclass
class Module:
    """One module: the names it defines (imports included) and its classes."""

    names: set[str] = field(default_factory=set)
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)


@dataclass
class CodeIndex:
    """What the code defines: modules by dotted name, classes by name."""

    modules: dict[str, Module]
    classes: dict[str, list[ast.ClassDef]]
    _every: set[str] = field(default_factory=set)

    def members(self, name: str, seen: frozenset[str] = frozenset()) -> set[str]:
        """Every name a class of that name defines, its bases' (found in the code) included."""
        found: set[str] = set()
        for node in self.classes.get(name, []):
            found |= _class_names(node)
            for base in node.bases:
                base_name = (
                    base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")
                )
                if base_name and base_name not in seen:
                    found |= self.members(base_name, seen | {name})
        return found

    def resolves(self, dotted: str) -> bool:
        """Whether `dotted` names something in the code (or another library's module).

        Its leading parts a module, the rest defined in it; or a class, the rest its members;
        or an object named for its class (`table.apply`, `session.stored`) and the class's
        member; or a variable (`ctx.go`) whose next part some class of the code (or a list,
        dict, set or str) has; or another library's.
        """
        parts = dotted.split(".")
        for cut in range(len(parts), 0, -1):
            for module in self._ends_module(parts[:cut]):
                if self._walk_module(module, parts[cut:]):
                    return True
        if parts[0] in self.classes:
            return self._walk_class(parts[0], parts[1:])
        if parts[0] in LIBRARIES:
            return True
        if parts[0] in self.module_parts():
            # a module's name, unless it names an object of a class (`table.apply`: a Table)
            # or an object's attribute of that name (`reads.current_shoe`: `Journal.reads`)
            word = parts[0].replace("_", "")
            named = any(
                parts[1] in self.members(name)
                for name in self.classes
                if name.lower().endswith(word)
            )
            attribute = len(parts) == 2 and parts[0] in self.every_member()
            return named or (attribute and parts[1] in self.every_member())
        return parts[1] in self.every_member()

    def module_parts(self) -> set[str]:
        return {part for name in self.modules for part in name.split(".")}

    def every_member(self) -> set[str]:
        if not self._every:
            self._every = {m for name in self.classes for m in self.members(name)}
            self._every |= {m for kind in (list, dict, set, str) for m in dir(kind)}
        return self._every

    def _ends_module(self, parts: list[str]) -> list[str]:
        tail = ".".join(parts)
        return [name for name in self.modules if name == tail or name.endswith("." + tail)]

    def _walk_module(self, module: str, rest: list[str]) -> bool:
        if not rest:
            return True
        if f"{module}.{rest[0]}" in self.modules:
            return self._walk_module(f"{module}.{rest[0]}", rest[1:])
        if rest[0] not in self.modules[module].names:
            # `journal.sinks`: an attribute of the module's class, on the object a page names
            return any(rest[0] in self.members(name) for name in self.modules[module].classes)
        if rest[0] in self.modules[module].classes:
            return self._walk_class(rest[0], rest[1:])
        return True  # a function or a value: what it holds is not followed

    def _walk_class(self, name: str, rest: list[str]) -> bool:
        return not rest or rest[0] in self.members(name)


def _class_names(node: ast.ClassDef) -> set[str]:
    names: set[str] = set()
    for item in node.body:
        names |= _defined(item)
    for item in ast.walk(node):
        if (
            isinstance(item, ast.Attribute)
            and isinstance(item.ctx, ast.Store)
            and isinstance(item.value, ast.Name)
            and item.value.id in ("self", "cls")
        ):
            names.add(item.attr)
    return names


def _defined(node: ast.stmt) -> set[str]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {node.name}
    if isinstance(node, ast.Assign):
        return {
            name.id
            for target in node.targets
            for name in ast.walk(target)
            if isinstance(name, ast.Name)
        }
    if isinstance(node, ast.AnnAssign | ast.AugAssign) and isinstance(node.target, ast.Name):
        return {node.target.id}
    if isinstance(node, ast.Import | ast.ImportFrom):
        return {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    if isinstance(node, ast.If | ast.Try):
        found: set[str] = set()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                found |= _defined(child)
            elif isinstance(child, ast.ExceptHandler):
                for item in child.body:
                    found |= _defined(item)
        return found
    return set()


def tracked_files() -> list[str]:
    """The repository's files as git tracks them (the working tree's, new ones included)."""
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [line for line in out.splitlines() if (ROOT / line).exists()]


def code_files() -> Iterator[tuple[Path, str]]:
    """Every .py file of the code roots, with its module's dotted name."""
    for folder, dotted in CODE_ROOTS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            yield path, ".".join([dotted, *parts])


def build_index() -> CodeIndex:
    modules: dict[str, Module] = {}
    classes: dict[str, list[ast.ClassDef]] = {}
    for path, dotted in code_files():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        module = Module()
        for node in tree.body:
            module.names |= _defined(node)
            if isinstance(node, ast.ClassDef):
                module.classes[node.name] = node
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                classes.setdefault(node.name, []).append(node)
        modules[dotted] = module
    return CodeIndex(modules, classes)


@dataclass(frozen=True)
class Text:
    """A text that cites code: its file, the line its first line is on, and the text."""

    path: Path
    line: int
    body: str


def doc_texts() -> Iterator[Text]:
    for pattern in DOC_PAGES:
        for path in sorted(ROOT.glob(pattern)):
            if path.relative_to(ROOT).as_posix() in COPIES:
                continue
            yield Text(path, 1, path.read_text(encoding="utf-8"))


def docstrings() -> Iterator[Text]:
    """Every docstring and comment of the code roots."""
    for path, _ in code_files():
        source = path.read_text(encoding="utf-8")
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT:
                yield Text(path, token.start[0], token.string)
        tree = ast.parse(source)
        for node in [tree, *ast.walk(tree)]:
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                doc = ast.get_docstring(node, clean=False)
                if doc:
                    yield Text(path, node.body[0].lineno, doc)


def _plain(line: str) -> str:
    """A line without its links' targets (checked as paths) and its URLs."""
    return re.sub(r"\w+://\S+", " ", line)


def path_exists(cited: str, citing: Path, files: list[str]) -> bool:
    """Whether `cited` is a tracked file or folder: from the top, from the citing file's
    folder, or as the end of a tracked path (`store/journal.py`)."""
    cited = cited.rstrip("/")
    here = citing.parent.relative_to(ROOT).as_posix()
    full = {cited, os.path.normpath(f"{here}/{cited}")}
    for name in files:
        if name in full or any(name.startswith(f + "/") for f in full):
            return True
        if name.endswith("/" + cited) or ("/" + cited + "/") in "/" + name:
            return True
    return False


def _placeholder(cited: str) -> bool:
    """`bench/NAME.py`, `31/`: a name in capitals or a number stands for one (not the pages')."""
    stems = [part.split(".")[0] for part in cited.strip("/").split("/")]
    return any(re.fullmatch(r"[A-Z0-9_]*", stem) and stem not in PAGE_NAMES for stem in stems)


def stale_citations(
    text: Text, index: CodeIndex, files: list[str], words: frozenset[str] = frozenset()
) -> Iterator[str]:
    """Each citation of `text` that names nothing, as `path:line: what`."""
    where = text.path.relative_to(ROOT)
    for offset, line in enumerate(text.body.splitlines()):
        number = text.line + offset
        for match in PATH.finditer(_plain(line)):
            cited = match.group(1)
            if _placeholder(cited) or cited in OTHERS:
                continue
            if not path_exists(cited, text.path, files):
                yield f"{where}:{number}: no file {cited}"
        for match in BACKTICKED.finditer(line):
            qualified = QUALIFIED.fullmatch(match.group(1).strip())
            if not qualified or FILE_SUFFIX.search(qualified.group(1)):
                continue
            name = qualified.group(1)
            if name not in OTHERS and not is_data(name, words) and not index.resolves(name):
                yield f"{where}:{number}: no code named {name}"


def data_words() -> frozenset[str]:
    """The words of the code's string literals: event types and log events (`round.result`,
    `delivery.retry`), JSON fields (`controller.journal_chain`), SQL columns."""
    words: set[str] = set()
    for top in ("shoe_controller", "drivers"):
        for path in (ROOT / top).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    words.update(re.findall(r"[a-z_][a-z0-9_]*", node.value))
    return frozenset(words)


def is_data(dotted: str, words: frozenset[str]) -> bool:
    """A dotted name of lower-case words the code writes as text is data, not code."""
    return all(part in words for part in dotted.split("."))


def architecture_tables(text: str) -> Iterator[tuple[int, str, str]]:
    """(line, folder, module) for each first-column name of a table under a folder heading."""
    folders: list[tuple[int, str]] = []
    for number, line in enumerate(text.splitlines(), 1):
        heading = HEADING.match(line)
        if heading:
            depth = len(heading.group(1))
            folders = [(d, f) for d, f in folders if d < depth]
            folder = HEADING_FOLDER.match(heading.group(2))
            if folder:
                folders.append((depth, folder.group(1)))
            continue
        if not folders or not line.startswith("| `"):
            continue
        folder = folders[-1][1]
        for cited in re.findall(r"`([^`]+)`", line.split("|")[1]):
            # `shoectl/event_log`, `road_view`: the names after the first are in its folder
            inner, _, name = cited.rpartition("/") if not cited.endswith("/") else ("", "", cited)
            if inner:
                folder = f"{folders[-1][1]}/{inner}"
            yield number, folder, name


def module_in(folder: str, name: str) -> Path | None:
    base = ROOT / folder
    if base.suffix == ".py":
        return base if name == base.stem else None
    for candidate in (base / name.rstrip("/"), base.parent / name.rstrip("/")):
        if candidate.with_suffix(".py").is_file() or (candidate / "__init__.py").is_file():
            return candidate
    return None


@pytest.fixture(scope="module")
def index() -> CodeIndex:
    return build_index()


@pytest.fixture(scope="module")
def files() -> list[str]:
    return tracked_files()


def test_docs_and_docstrings_cite_only_what_exists(index: CodeIndex, files: list[str]) -> None:
    words = data_words()
    stale = [
        problem
        for text in [*doc_texts(), *docstrings()]
        for problem in stale_citations(text, index, files, words)
    ]
    assert not stale, "citations of what is not there:\n" + "\n".join(stale)


def test_the_module_tables_name_modules_of_their_folder() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    wrong = [
        f"docs/architecture.md:{line}: {name} is no module of {folder}"
        for line, folder, name in architecture_tables(text)
        if module_in(folder, name) is None
    ]
    assert not wrong, "\n".join(wrong)


def test_every_module_is_in_a_table() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    listed = set()
    for _, folder, name in architecture_tables(text):
        found = module_in(folder, name)
        if found is not None:
            listed.add(found.relative_to(ROOT).with_suffix("").as_posix())
    missing = []
    for top in ("shoe_controller", "drivers"):
        for path in sorted((ROOT / top).rglob("*.py")):
            module = path.relative_to(ROOT).with_suffix("").as_posix()
            package = path.parent.relative_to(ROOT).as_posix()
            if path.name == "__init__.py":
                continue  # a package's own map: its folder's table stands for it
            if module not in listed and package not in listed:
                missing.append(module)
    assert not missing, "docs/architecture.md lists no row for: " + ", ".join(missing)


def test_who_imports_whom_in_table_is_the_code() -> None:
    """docs/architecture.md "Who imports whom": each module of table/ and the modules of
    table/ it imports (type-only and function-level imports included)."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("### Who imports whom", 1)[1].split("\n#", 1)[0]
    documented: dict[str, set[str]] = {}
    for row in re.findall(r"^\| (`.+?) \| (.+?) \|$", section, re.M):
        imported = set() if row[1].startswith("nothing") else set(row[1].split(", "))
        for name in re.findall(r"`(\w+)`", row[0]):
            documented[name] = imported
    folder = ROOT / "shoe_controller" / "table"
    modules = {path.stem for path in folder.glob("*.py")} - {"__init__"}
    actual: dict[str, set[str]] = {}
    for name in modules:
        found = set()
        for node in ast.walk(ast.parse((folder / f"{name}.py").read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                if node.module.startswith("shoe_controller.table."):
                    found.add(node.module.split(".")[2])
                elif node.module == "shoe_controller.table":
                    found |= {alias.name for alias in node.names if alias.name in modules}
        actual[name] = found - {name}
    assert documented == actual


# The checker on a sample: a module renamed in a scratch copy of the code is caught.


def test_a_renamed_module_is_caught(index: CodeIndex, files: list[str]) -> None:
    sample = Text(
        ROOT / "docs" / "sample.md",
        1,
        "`store.journal.Journal.record_many` in `shoe_controller/store/journal.py`,\n"
        "`supervisor.HANDLERS` in table/supervisor.py, `DeviceRunner._resynchronise`\n",
    )
    assert list(stale_citations(sample, index, files)) == [
        "docs/sample.md:2: no file table/supervisor.py",
        "docs/sample.md:2: no code named supervisor.HANDLERS",
        "docs/sample.md:2: no code named DeviceRunner._resynchronise",
    ]
    renamed = CodeIndex(
        {
            name.replace(".store.journal", ".store.ledger"): module
            for name, module in index.modules.items()
        },
        index.classes,
    )
    moved = [name.replace("store/journal.py", "store/ledger.py") for name in files]
    assert list(stale_citations(sample, renamed, moved)) == [
        "docs/sample.md:1: no file shoe_controller/store/journal.py",
        "docs/sample.md:1: no code named store.journal.Journal.record_many",
        "docs/sample.md:2: no file table/supervisor.py",
        "docs/sample.md:2: no code named supervisor.HANDLERS",
        "docs/sample.md:2: no code named DeviceRunner._resynchronise",
    ]


def test_a_table_row_of_a_module_that_left_is_caught() -> None:
    page = "## shoe_controller/table: x\n\n| module | job |\n|---|---|\n| `supervisor` | x |\n"
    rows = list(architecture_tables(page))
    assert rows == [(5, "shoe_controller/table", "supervisor")]
    assert module_in("shoe_controller/table", "supervisor") is None
    assert module_in("shoe_controller/table", "procedures") is not None
