"""The test tree's layout: it mirrors the package, and its modules share code only through ``tests/helpers``.

- Every package folder of ``helm_roboreward`` (a folder with ``__init__.py``) has its test folder at the same
  relative path under ``tests/``, and every test folder is one of those, ``tests/official`` (the
  protocol-conformance tests of the official path), ``tests/integration`` (whole-pipeline tests of the extras) or
  ``tests/helpers`` (fakes, harnesses, shared builders); each holds an ``__init__.py`` so every test
  module has a unique dotted name.
- No module of the test tree imports a test module (``test_*``) or ``conftest``: what tests share lives in
  ``tests/helpers`` (or in fixtures of ``tests/conftest.py``). Imports are read with ``ast``, at any depth
  (inside functions too), absolute and relative.
- Only ``tests/helpers/fakes`` runs HTTP servers in process: one fake per provider API, no ad-hoc ones.
"""

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.fakes import server as fake_server
from tests.helpers.sample import REPO

PACKAGE = REPO / "helm_roboreward"
TESTS = REPO / "tests"
TOP_LEVEL = {"conftest.py", "__init__.py", "test_layout.py", "test_suite_layout.py"}
"""Modules directly under tests/: the shared fixtures and the tests of the package as a whole."""
NOT_MIRRORED = {
    "config": "HELM configuration files (YAML); tested through the registry in tests/models",
}
"""Package folders without a test folder of their own, and why."""
OWN_FOLDERS = {"helpers", "integration", "fixtures", "official"}
"""Test folders that mirror no package folder."""
SERVER_MODULES = ("http.server", "socketserver")


def package_folders() -> set[str]:
    return {str(init.parent.relative_to(PACKAGE)) for init in PACKAGE.rglob("__init__.py")} - {"."}


def folders_of_tests() -> set[str]:
    folders = {str(path.relative_to(TESTS)) for path in TESTS.rglob("*") if path.is_dir()}
    return {folder for folder in folders if "__pycache__" not in folder and not folder.startswith("fixtures")}


def modules_of_tests() -> list[Path]:
    return sorted(path for path in TESTS.rglob("*.py") if "fixtures" not in path.relative_to(TESTS).parts)


def dotted_name(path: Path) -> str:
    return ".".join(path.relative_to(REPO).with_suffix("").parts)


def imported_modules(path: Path, source: str | None = None) -> Iterator[tuple[int, str]]:
    """``(line, absolute module name)`` of every import in a module, names imported from a package included."""
    package = dotted_name(path).rsplit(".", 1)[0] if path.name != "__init__.py" else dotted_name(path.parent)
    text = path.read_text(encoding="utf-8") if source is None else source
    for node in ast.walk(ast.parse(text, filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            yield node.lineno, module
            for alias in node.names:  # ``from tests.x import test_y`` imports the module tests.x.test_y
                yield node.lineno, f"{module}.{alias.name}"


def is_test_module(name: str) -> bool:
    parts = name.split(".")
    return parts[0] == "tests" and any(part.startswith("test_") or part == "conftest" for part in parts[1:])


def test_every_package_folder_has_its_test_folder() -> None:
    missing = sorted(folder for folder in package_folders() - set(NOT_MIRRORED)
                     if not (TESTS / folder / "__init__.py").is_file())
    assert missing == [], f"package folders without tests/<folder>/__init__.py: {missing}"
    assert set(NOT_MIRRORED) <= package_folders(), "an exemption names a folder the package no longer has"


def test_every_test_folder_mirrors_a_package_folder() -> None:
    allowed = package_folders() | OWN_FOLDERS
    stray = sorted(folder for folder in folders_of_tests() if folder.split("/")[0] not in OWN_FOLDERS
                   and folder not in allowed)
    assert stray == [], f"test folders that mirror no package folder: {stray}"


def test_every_test_folder_is_a_package() -> None:
    missing = sorted(folder for folder in folders_of_tests() if not (TESTS / folder / "__init__.py").is_file())
    assert missing == [], f"test folders without __init__.py: {missing}"


def test_test_modules_live_in_their_folders() -> None:
    top = sorted(path.name for path in TESTS.glob("*.py") if path.name not in TOP_LEVEL)
    assert top == [], f"move these into the folder of what they test (or tests/integration): {top}"
    helpers = sorted(str(path.relative_to(TESTS)) for path in (TESTS / "helpers").rglob("test_*.py"))
    assert helpers == [], f"test modules among the helpers: {helpers}"


def test_no_module_imports_a_test_module() -> None:
    offenders = [f"{path.relative_to(REPO)}:{line} imports {name}" for path in modules_of_tests()
                 for line, name in imported_modules(path) if is_test_module(name)]
    assert offenders == [], "share code through tests/helpers or a fixture instead:\n" + "\n".join(offenders)


def test_only_the_fakes_serve_http() -> None:
    fakes = TESTS / "helpers" / "fakes"
    offenders = [f"{path.relative_to(REPO)}:{line} imports {name}" for path in modules_of_tests()
                 if fakes not in path.parents for line, name in imported_modules(path)
                 if name in SERVER_MODULES or name.startswith(tuple(f"{module}." for module in SERVER_MODULES))]
    assert offenders == [], "use (or extend) a fake in tests/helpers/fakes:\n" + "\n".join(offenders)


def test_every_provider_fake_is_served() -> None:
    provider_modules = sorted(path.stem for path in (TESTS / "helpers" / "fakes").glob("*.py")
                              if path.stem not in {"__init__", "exchange", "server", "hf_hub", "silent"})
    served = sorted(api.answer.__module__.rsplit(".", 1)[1] for api in fake_server.APIS)
    assert provider_modules == served == ["anthropic_messages", "gemini", "openai_chat", "openai_responses"]
    assert len({api.name for api in fake_server.APIS}) == len(fake_server.APIS)


@pytest.mark.parametrize("source, expected", [
    ("from tests.helpers.harness import cli", False),
    ("import tests.helpers.fakes.server", False),
    ("from tests.official.test_end_to_end import Suite", True),
    ("from tests.integration import test_end_to_end", True),
    ("import tests.conftest", True),
    ("from ..core.test_prompt import RUBRIC", True),
    ("from . import conftest", True),
    ("def later():\n    from tests.official.test_prompt import RUBRIC", True),
])
def test_the_import_scan_sees_test_imports(source: str, expected: bool) -> None:
    """The scan is not vacuous: it resolves relative imports, names imported from a package and nested imports."""
    module = TESTS / "integration" / "test_probe.py"
    names = [name for _, name in imported_modules(module, source)]
    assert any(is_test_module(name) for name in names) == expected, names
