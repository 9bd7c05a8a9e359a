"""The distribution installs one namespace, with every package of the tree listed."""

from __future__ import annotations

import tomllib
from pathlib import Path

import agentcore

REPO = Path(__file__).resolve().parents[2]


def _declared() -> tuple[set[str], dict[str, str]]:
    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    return set(setuptools["packages"]), setuptools["package-dir"]


def test_every_package_folder_is_listed_in_pyproject() -> None:
    packages, mapping = _declared()
    found = set()
    for name, folder in mapping.items():
        for init in (REPO / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(REPO / folder)
            found.add(".".join([name, *relative.parts]))
    assert found == packages, f"missing: {sorted(found - packages)}, stale: {sorted(packages - found)}"


def test_sub_packages_import_through_the_agentcore_namespace() -> None:
    import agentcore.accel
    import agentcore.evaluations
    import agentcore.memory
    import agentcore.policies

    for module in (agentcore.accel, agentcore.evaluations, agentcore.memory, agentcore.policies):
        assert module.__name__.startswith("agentcore.")


def test_public_api_is_typed_and_lazy() -> None:
    assert (REPO / "agentcore" / "py.typed").is_file()
    assert set(agentcore.__all__) <= set(dir(agentcore))
    for name in agentcore.__all__:
        assert getattr(agentcore, name) is not None


def test_errors_share_one_root() -> None:
    for name in ("ConfigError", "ModelError", "ModelNotFoundError", "ModelCorruptError"):
        assert issubclass(getattr(agentcore, name), agentcore.AgentCoreError)


def test_every_folder_with_package_data_is_a_listed_package() -> None:
    """setuptools warns about (and will stop shipping) data folders that are not packages: agentcore.demo.data."""
    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    patterns = setuptools["package-data"]["*"]
    packages, mapping = _declared()
    for name, folder in mapping.items():
        for data in {p.parent for pattern in patterns for p in (REPO / folder).rglob(pattern)}:
            if "__pycache__" in data.parts:
                continue
            dotted = ".".join([name, *data.relative_to(REPO / folder).parts])
            assert dotted in packages and (data / "__init__.py").is_file(), f"{data} holds package data"
