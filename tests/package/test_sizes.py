"""Product code stays small enough to read: no module over 500 lines, no class over 25 methods
counting the methods a class inherits from our own classes, as a reader meets them.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("shoe_controller", "drivers")
MAX_MODULE_LINES = 500
MAX_CLASS_METHODS = 25


@dataclass(frozen=True, slots=True)
class ClassShape:
    where: str
    own: frozenset[str]
    bases: tuple[str, ...]  # the bases' last names: ours are looked up among ClassShapes


def _product_files(root: Path) -> list[Path]:
    return sorted(path for package in PACKAGES for path in (root / package).rglob("*.py"))


def long_modules(root: Path) -> list[str]:
    """Each product module over the limit, with its length."""
    found = []
    for path in _product_files(root):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_MODULE_LINES:
            found.append(f"{path.relative_to(root)}: {lines} lines")
    return found


def _shapes(root: Path) -> dict[str, list[ClassShape]]:
    shapes: dict[str, list[ClassShape]] = {}
    for path in _product_files(root):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                own = frozenset(
                    item.name
                    for item in node.body
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
                )
                bases = tuple(ast.unparse(base).split(".")[-1] for base in node.bases)
                where = f"{path.relative_to(root)}:{node.name}"
                shapes.setdefault(node.name, []).append(ClassShape(where, own, bases))
    return shapes


def _methods(
    shape: ClassShape, shapes: dict[str, list[ClassShape]], seen: frozenset[str]
) -> set[str]:
    methods = set(shape.own)
    for base in shape.bases:
        if base in seen:
            continue
        for inherited in shapes.get(base, []):
            methods |= _methods(inherited, shapes, seen | {base})
    return methods


def big_classes(root: Path) -> list[str]:
    """Each product class with more methods than the limit, its own and those of our bases."""
    shapes = _shapes(root)
    found = []
    for name, defined in shapes.items():
        for shape in defined:
            count = len(_methods(shape, shapes, frozenset({name})))
            if count > MAX_CLASS_METHODS:
                found.append(f"{shape.where}: {count} methods")
    return sorted(found)


def test_no_product_module_is_over_500_lines() -> None:
    assert long_modules(ROOT) == []


def test_no_product_class_has_over_25_methods() -> None:
    assert big_classes(ROOT) == []


def test_the_counts_see_inherited_methods_and_long_files(tmp_path: Path) -> None:
    package = tmp_path / "shoe_controller"
    package.mkdir()
    base = "".join(f"    def b{i}(self): ...\n" for i in range(20))
    child = "".join(f"    def c{i}(self): ...\n" for i in range(6))
    (package / "parts.py").write_text(f"class Base:\n{base}\n\nclass Child(Base):\n{child}")
    (package / "long.py").write_text("x = 1\n" * 501)
    assert big_classes(tmp_path) == ["shoe_controller/parts.py:Child: 26 methods"]
    assert long_modules(tmp_path) == ["shoe_controller/long.py: 501 lines"]
