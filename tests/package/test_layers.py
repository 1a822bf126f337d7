"""Layers: no module imports a layer above its own, and no import cycle exists.

One `ast` pass over every .py file of shoe_controller/ and drivers/ (tests excluded) collects
each import, the ones inside functions included: a lazy import is a dependency all the same.
The cycle check uses only the imports that run when a module is loaded.
"""

from __future__ import annotations

import ast
import graphlib
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import click
import pytest

from shoe_controller.cli.main import SUBCOMMANDS

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("shoe_controller", "drivers")

# Which layers each layer may import, its own included. From low to high: vocab < game < table
# < store < delivery < service < cli; "root" is shoe_controller/__init__.py (__version__ only).
# drivers see only vocab of shoe_controller; service (the daemon) is the one product layer that
# starts drivers; companion is the surveillance process beside the daemon (it reads the daemon's
# configuration and logs as the daemon does); kit is the integrators' kit (the reference table
# server, the demo's rig: processes it starts, never imported by the daemon); cli may use
# everything.
_BELOW_SERVICE = frozenset({"root", "vocab", "game", "table", "store", "delivery"})
ALLOWED: dict[str, frozenset[str]] = {
    "root": frozenset({"root"}),
    "vocab": frozenset({"root", "vocab"}),
    "game": frozenset({"root", "vocab", "game"}),
    "table": frozenset({"root", "vocab", "game", "table"}),
    "store": frozenset({"root", "vocab", "game", "table", "store"}),
    "delivery": frozenset({"root", "vocab", "game", "table", "store", "delivery"}),
    "service": _BELOW_SERVICE | {"service", "drivers"},
    "companion": _BELOW_SERVICE | {"service", "companion"},
    "kit": _BELOW_SERVICE | {"kit", "drivers"},
    "cli": _BELOW_SERVICE | {"service", "companion", "kit", "drivers", "cli"},
    "drivers": frozenset({"vocab", "drivers"}),
}
# Outside libraries a layer must not import: the pure layers hold no CLI and do no I/O.
_CLICK = frozenset({"click"})
_IO = frozenset(
    {"asyncio", "h11", "http", "httpx", "io", "logging", "os", "pathlib", "select", "selectors"}
    | {"serial", "shutil", "signal", "socket", "sqlite3", "ssl", "structlog", "subprocess"}
    | {"tempfile", "threading", "urllib", "usb"}
)
FORBIDDEN: dict[str, frozenset[str]] = {
    "vocab": _CLICK | _IO,
    "game": _CLICK | _IO,
    "table": _CLICK,
}


@dataclass(frozen=True, slots=True)
class Import:
    """One import statement's target, where it is, and whether it runs when the module loads."""

    path: Path
    line: int
    module: str  # the importing module
    target: str  # the imported module (or the package a name is taken from)
    at_load: bool
    type_only: bool  # under `if TYPE_CHECKING:`: a dependency a reader still follows


def _module_name(root: Path, path: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


class _Collector(ast.NodeVisitor):
    """Every import of one file; those in functions or under `if TYPE_CHECKING:` run later."""

    def __init__(self, path: Path, module: str, is_package: bool, known: frozenset[str]) -> None:
        self._path, self._module, self._known = path, module, known
        self._package = module if is_package else module.rpartition(".")[0]
        self._deferred = 0
        self._type_checking = 0
        self.imports: list[Import] = []

    def _add(self, node: ast.stmt, target: str) -> None:
        self.imports.append(
            Import(
                self._path,
                node.lineno,
                self._module,
                target,
                at_load=not self._deferred,
                type_only=bool(self._type_checking),
            )
        )

    def _visit_deferred(self, node: ast.AST) -> None:
        self._deferred += 1
        self.generic_visit(node)
        self._deferred -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _visit_deferred  # noqa: N815

    def visit_If(self, node: ast.If) -> None:
        if not _is_type_checking(node.test):
            self.generic_visit(node)
            return
        self._deferred += 1
        self._type_checking += 1
        for child in node.body:
            self.visit(child)
        self._type_checking -= 1
        self._deferred -= 1
        for child in node.orelse:
            self.visit(child)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(node, alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = node.module or ""
        if node.level:
            package = self._package.split(".")[: len(self._package.split(".")) - node.level + 1]
            base = ".".join([*package, *([base] if base else [])])
        for alias in node.names:
            submodule = f"{base}.{alias.name}"
            self._add(node, submodule if submodule in self._known else base)


def collect_imports(root: Path) -> list[Import]:
    """Every import in the .py files of shoe_controller/ and drivers/ under `root`."""
    files = sorted(path for package in PACKAGES for path in (root / package).rglob("*.py"))
    known = frozenset(_module_name(root, path) for path in files)
    imports: list[Import] = []
    for path in files:
        collector = _Collector(path, _module_name(root, path), path.name == "__init__.py", known)
        collector.visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
        imports += collector.imports
    return imports


def layer_of(module: str) -> str | None:
    """The layer a module of ours belongs to; None for an outside library."""
    parts = module.split(".")
    if parts[0] == "drivers":
        return "drivers"
    if parts[0] != "shoe_controller":
        return None
    return "root" if len(parts) == 1 else parts[1]


def _broken_rule(item: Import) -> str | None:
    source, target = layer_of(item.module), layer_of(item.target)
    if source not in ALLOWED:
        return f"{item.module} is in no layer (add its package to ALLOWED)"
    if target is None:
        library = item.target.split(".")[0]
        if library in FORBIDDEN.get(source, frozenset()):
            return f"{source} imports no {library} (pure layer: no CLI, no I/O)"
        return None
    if target not in ALLOWED:
        return f"{item.target} is in no layer (add its package to ALLOWED)"
    if target not in ALLOWED[source]:
        return f"{source} may import only {', '.join(sorted(ALLOWED[source]))}; not {target}"
    return None


def find_violations(root: Path) -> list[str]:
    """One message per import that breaks a rule: file:line, the import, the rule."""
    return [
        f"{item.path.relative_to(root)}:{item.line}: {item.module} imports {item.target}: {rule}"
        for item in collect_imports(root)
        if (rule := _broken_rule(item)) is not None
    ]


def find_cycle(root: Path, *, type_only_too: bool = False) -> list[str] | None:
    """A cycle among the imports that run at load time (modules of ours only), or None;
    `type_only_too` counts the imports under `if TYPE_CHECKING:` as well."""
    imports = collect_imports(root)
    ours = {item.module for item in imports}
    graph: dict[str, set[str]] = {module: set() for module in ours}
    for item in imports:
        counted = item.at_load or (type_only_too and item.type_only)
        if counted and item.target in ours and item.target != item.module:
            graph[item.module].add(item.target)
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as error:
        # graphlib lists each module before the one importing it; reversed, each imports the next.
        return list(reversed(error.args[1]))
    return None


def test_no_module_imports_a_layer_it_may_not():
    violations = find_violations(ROOT)
    assert not violations, "layer rules broken:\n" + "\n".join(violations)


def test_no_import_cycle():
    cycle = find_cycle(ROOT)
    assert cycle is None, "import cycle (each imports the next): " + " -> ".join(cycle or [])


def test_no_import_cycle_even_through_type_only_imports():
    # A reader follows a type-only import as any other: a Protocol or a data type
    # in a leaf module breaks such a circle.
    cycle = find_cycle(ROOT, type_only_too=True)
    assert cycle is None, "import cycle (each imports the next): " + " -> ".join(cycle or [])


def _write(root: Path, files: dict[str, str]) -> None:
    for name, source in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")


_INITS = {
    "shoe_controller/__init__.py": "",
    "shoe_controller/game/__init__.py": "",
    "shoe_controller/service/__init__.py": "",
    "drivers/__init__.py": "",
}


def test_the_checker_catches_a_wrong_import(tmp_path):
    _write(
        tmp_path,
        _INITS
        | {
            "shoe_controller/service/daemon.py": "from shoe_controller.game import rules\n",
            "shoe_controller/game/rules.py": "import math\n",
            "shoe_controller/game/bad.py": (
                "import math\n\n\ndef later():\n"
                "    from shoe_controller.service.daemon import Daemon\n"
                "    import click\n"
            ),
            "drivers/wire.py": "from shoe_controller.game.rules import outcome\n",
        },
    )
    assert find_violations(tmp_path) == [
        "drivers/wire.py:1: drivers.wire imports shoe_controller.game.rules: "
        "drivers may import only drivers, vocab; not game",
        "shoe_controller/game/bad.py:5: shoe_controller.game.bad imports "
        "shoe_controller.service.daemon: game may import only game, root, vocab; not service",
        "shoe_controller/game/bad.py:6: shoe_controller.game.bad imports click: "
        "game imports no click (pure layer: no CLI, no I/O)",
    ]


def test_the_checker_catches_a_cycle_and_ignores_deferred_imports(tmp_path):
    _write(
        tmp_path,
        _INITS
        | {
            "shoe_controller/game/a.py": "from shoe_controller.game import b\n",
            "shoe_controller/game/b.py": "from . import c\n",
            "shoe_controller/game/c.py": "import shoe_controller.game.a\n",
        },
    )
    cycle = find_cycle(tmp_path)
    assert cycle is not None
    assert set(cycle) == {f"shoe_controller.game.{name}" for name in "abc"}
    _write(
        tmp_path,
        {
            "shoe_controller/game/c.py": (
                "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
                "    import shoe_controller.game.a\n\n\ndef later():\n"
                "    import shoe_controller.game.a\n"
            )
        },
    )
    assert find_cycle(tmp_path) is None
    assert find_cycle(tmp_path, type_only_too=True) is not None  # the TYPE_CHECKING one counts


# `shoe-controller` imports a subcommand only when it runs (shoe_controller/cli/main.py).
@pytest.mark.parametrize("name", sorted(SUBCOMMANDS))
def test_each_registry_summary_is_its_commands_first_paragraph(name):
    command = SUBCOMMANDS[name].load()
    assert isinstance(command, click.Command)
    assert command.name == name
    assert " ".join((command.help or "").partition("\n\n")[0].split()) == SUBCOMMANDS[name].summary


_HEAVY = ("numpy", "transitions", "httpx", "drivers.sim", "shoe_controller.kit.receiver")
_DAEMON = "shoe_controller.service.daemon"


def _modules_loaded(code: str) -> set[str]:
    script = f"import sys\n{code}\nsys.stderr.write('\\n'.join(sys.modules))\n"
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return set(result.stderr.split())


def _loaded(modules: set[str], prefix: str) -> bool:
    return any(module == prefix or module.startswith(f"{prefix}.") for module in modules)


def _run_main(*arguments: str) -> str:
    return (
        "from shoe_controller.cli.main import main\n"
        f"try:\n    main({list(arguments)!r})\nexcept SystemExit:\n    pass"
    )


def test_help_loads_no_subcommand():
    modules = _modules_loaded(_run_main("--help"))
    assert [prefix for prefix in (*_HEAVY, _DAEMON) if _loaded(modules, prefix)] == []


def test_odds_loads_numpy_but_not_the_daemon_or_simulators():
    modules = _modules_loaded(_run_main("odds", "--decks", "1"))
    assert _loaded(modules, "numpy")
    assert not _loaded(modules, _DAEMON)
    assert not _loaded(modules, "drivers.sim")


def test_the_daemon_loads_no_numpy_and_no_httpx():
    # httpx and what it imports cost the daemon ~5 MB of RSS: the table server's
    # sink speaks HTTP through delivery/http_client.py (h11) instead.
    modules = _modules_loaded(f"import shoe_controller.cli.run\nimport {_DAEMON}")
    assert [prefix for prefix in ("numpy", "httpx") if _loaded(modules, prefix)] == []
    assert _loaded(modules, "shoe_controller.delivery.push")  # the check looked


def test_shoectl_loads_no_daemon_journal_or_heavy_library():
    modules = _modules_loaded(
        "from shoe_controller.cli.shoectl import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass"
    )
    unwanted = (*_HEAVY, _DAEMON, "shoe_controller.store", "shoe_controller.table.procedures")
    assert [prefix for prefix in unwanted if _loaded(modules, prefix)] == []
    assert _loaded(modules, "shoe_controller.cli.shoectl.commands")  # the check looked


def test_shoectl_shuffle_states_the_watch_rule_without_numpy():
    # Its alarm rule comes from game/surveillance/shuffle_rates.py, as the watch's settings do.
    modules = _modules_loaded(
        "from shoe_controller.cli.shoectl import main\n"
        "try:\n    main(['shuffle', '--help'])\nexcept SystemExit:\n    pass"
    )
    assert _loaded(modules, "shoe_controller.cli.shoectl.shuffle")
    assert _loaded(modules, "shoe_controller.game.surveillance.shuffle_rates")
    assert not _loaded(modules, "numpy")
