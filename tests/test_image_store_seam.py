"""No module outside a runtime's own calls the runtime's tool.

Builders, archives, bundles and node image distribution reach images through the image
store interface (``evalrepro.runtimes.store.ImageStore``); each runtime module implements
it for its own program. This holds the seam on the source: an argv that starts with a
container tool (``["podman", ...]``, ``["docker", *args]``) or a call of a method named
after one (``runtime.podman(...)``) is allowed only in that tool's runtime modules.
"""

from __future__ import annotations

import ast
from pathlib import Path

import evalrepro

PACKAGE = Path(evalrepro.__file__).parent
#: The modules that may run each tool: the runtime's own.
OWNERS = {
    "podman": {
        "runtimes/podman.py",
        "runtimes/podman_store.py",
        "runtimes/podman_sandbox.py",
    },
    "docker": {"runtimes/docker.py"},
}


def tool_calls(source: str) -> list[tuple[int, str]]:
    """(line, tool) of each argv (a list) starting with a tool's name, and of each call
    of a method or function named after a tool."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.List) and node.elts:
            first = node.elts[0]
            if isinstance(first, ast.Constant) and first.value in OWNERS:
                found.append((node.lineno, first.value))
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in OWNERS:
                found.append((node.lineno, name))
    return sorted(found)


def test_only_a_runtimes_own_modules_call_its_tool() -> None:
    outside = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        for line, tool in tool_calls(path.read_text()):
            if name not in OWNERS[tool]:
                outside.append(f"{name}:{line} calls {tool}")
    assert outside == []


def test_the_check_sees_each_way_of_calling_a_tool() -> None:
    calls = tool_calls(
        "runtime.podman('tag', a, b)\n"
        "subprocess.run(['docker', 'load', '-i', path])\n"
        "run_tethered(['podman', *args], stdout=log, env=env)\n"
        "store.tag(a, b)\n"
        "kind = 'podman'\n"
        "runtimes = ('podman', 'docker')\n"
    )
    assert calls == [(1, "podman"), (2, "docker"), (3, "podman")]


def test_builders_and_archives_do_not_import_a_runtime_module() -> None:
    """They know the store interface, not podman's module (its private names included)."""
    importers = []
    for folder in ("build", "publish"):
        for path in sorted((PACKAGE / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                    ("evalrepro.runtimes.podman", "evalrepro.runtimes.docker")
                ):
                    importers.append(f"{path.relative_to(PACKAGE)} imports {node.module}")
    assert importers == []
