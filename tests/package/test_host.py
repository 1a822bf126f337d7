"""The suite and the machine it runs on: no test depends on the package's groups
(shoe-viewers, shoe-supervisors, shoe-surveillance, which a machine that had the package keeps
and `.ci/run` makes), and the groups a test makes are its own and gone after it
(docs/testing.md, "The host")."""

from __future__ import annotations

import ast
import grp
import tomllib
from pathlib import Path

import pytest
from shoe_testkit.config import Baseline
from shoe_testkit.control import LiveTable
from shoe_testkit.groups import (
    CONTROL,
    NO_SUPERVISORS,
    NO_SURVEILLANCE,
    NO_VIEWERS,
    RUN,
    can_make_groups,
    temporary_group,
    without_host_groups,
)
from shoe_testkit.rig import RigOptions, TableRig

from shoe_controller.service.config import from_mapping

TESTS = Path(__file__).resolve().parents[1]
GROUPS_MODULE = TESTS / "support" / "shoe_testkit" / "groups.py"
RIG_MODULE = TESTS / "support" / "shoe_testkit" / "rig.py"
ACCOUNT_PROGRAMS = {"groupadd", "groupdel", "groupmod", "gpasswd", "useradd", "userdel", "usermod"}
ABSENT = {"viewer_group": NO_VIEWERS, "supervisor_group": NO_SUPERVISORS}


def sources() -> list[tuple[Path, ast.Module]]:
    files = sorted(TESTS.rglob("*.py"))
    return [(path, ast.parse(path.read_text(), str(path))) for path in files]


def test_the_absent_groups_are_this_runs_and_exist_nowhere() -> None:
    for name in (NO_VIEWERS, NO_SUPERVISORS, NO_SURVEILLANCE):
        assert RUN in name
        with pytest.raises(KeyError):
            grp.getgrnam(name)
    with pytest.raises(TypeError):  # a test that breaks its copy breaks no other test's
        CONTROL["viewer_group"] = "shoe-viewers"  # type: ignore[index]


def test_every_daemon_the_kit_configures_names_no_group_of_the_hosts(tmp_path: Path) -> None:
    live = LiveTable(tmp_path)
    try:
        assert live.config.control.viewer_group == NO_VIEWERS
        assert live.config.control.supervisor_group == NO_SUPERVISORS
        assert live.config.surveillance.group == NO_SURVEILLANCE
    finally:
        live.close()
    (tmp_path / "rig").mkdir()
    rig = TableRig(tmp_path / "rig", RigOptions(control={"viewer_group": "theirs"}))
    written = tomllib.loads(rig.write_config().read_text())
    assert written["control"] == {
        "socket": str(rig.directory / "control.sock"),
        "viewer_group": "theirs",  # a test's own group is kept
        "supervisor_group": NO_SUPERVISORS,
    }
    assert written["surveillance"] == {"group": NO_SURVEILLANCE}
    again = tomllib.loads(rig.write_config(control={"supervisor_group": "mine"}).read_text())
    assert again["control"]["supervisor_group"] == "mine"
    assert again["control"]["viewer_group"] == "theirs"
    baseline = from_mapping(Baseline(tmp_path).mapping())
    assert (baseline.control.viewer_group, baseline.control.supervisor_group) == (
        NO_VIEWERS,
        NO_SUPERVISORS,
    )
    assert baseline.surveillance.group == NO_SURVEILLANCE
    assert without_host_groups({"control": {"viewer_group": "x"}}) == {
        "control": {**ABSENT, "viewer_group": "x"},
        "surveillance": {"group": NO_SURVEILLANCE},
    }


def a_failing_test(names: list[str]) -> None:
    with temporary_group() as (name, gid):
        names.append(name)
        assert name.startswith(f"shoe-t{RUN}-")
        assert grp.getgrnam(name).gr_gid == gid
        raise AssertionError("the test failed")


def test_a_tests_group_is_its_own_and_gone_after_it_also_when_the_test_fails() -> None:
    if not can_make_groups():
        pytest.skip("needs root and groupadd to make a group")
    names: list[str] = []
    with pytest.raises(AssertionError, match="the test failed"):
        a_failing_test(names)
    with pytest.raises(KeyError):
        grp.getgrnam(names[0])


def test_only_the_kits_groups_module_makes_or_changes_groups_and_users() -> None:
    found = [
        f"{path.relative_to(TESTS)}:{node.lineno}: {node.value}"
        for path, tree in sources()
        if path not in (GROUPS_MODULE, Path(__file__))
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in ACCOUNT_PROGRAMS
    ]
    assert found == []


def test_tests_take_the_rig_from_the_kit_which_gives_it_no_host_group() -> None:
    found = [
        f"{path.relative_to(TESTS)}:{node.lineno}: from {node.module}"
        for path, tree in sources()
        if path != RIG_MODULE
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        and (node.module or "").startswith("shoe_controller.kit.rig")
        and any(alias.name == "TableRig" for alias in node.names)
    ]
    assert found == []
