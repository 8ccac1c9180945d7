"""Run by a fresh venv's Python (``python -I``) where evalrepro was installed from its wheel:
import every module, load every entry point, import the given third-party names, run
every command's ``--help``. Prints one JSON object of what failed (tests/test_clean_install.py
reads it). It imports nothing of tests/ (the venv has no test extra)."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.metadata
import io
import json
import pkgutil
import sys

#: Run by Alembic on the connection it opens, not importable on its own.
NOT_MODULES = {"evalrepro.__main__", "evalrepro.database.migrations.env"}


def main() -> None:
    import_names = sys.argv[1:]
    failures: dict[str, dict[str, str]] = {"modules": {}, "entry_points": {}, "imports": {}}
    import evalrepro

    for found in pkgutil.walk_packages(evalrepro.__path__, "evalrepro."):
        if found.name in NOT_MODULES:
            continue
        try:
            importlib.import_module(found.name)
        except Exception as error:
            failures["modules"][found.name] = f"{type(error).__name__}: {error}"
    points = importlib.metadata.entry_points()
    for group in sorted(points.groups):
        for point in points.select(group=group):
            if not (group.startswith("evalrepro.") or point.value.startswith("evalrepro")):
                continue
            try:
                point.load()
            except Exception as error:
                failures["entry_points"][f"{group}:{point.name}"] = (
                    f"{type(error).__name__}: {error}"
                )
    for name in import_names:
        try:
            importlib.import_module(name)
        except Exception as error:
            failures["imports"][name] = f"{type(error).__name__}: {error}"

    from evalrepro.cli import build_parser
    from evalrepro.cli import main as cli_main

    (commands,) = (
        action.choices
        for action in build_parser()._actions
        if isinstance(action, argparse._SubParsersAction)
    )
    helps: dict[str, str] = {}
    for command in commands:
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                cli_main([command, "--help"])
        except SystemExit as exit_:
            if exit_.code not in (0, None):
                helps[command] = f"exit {exit_.code}: {out.getvalue()[-500:]}"
        except Exception as error:
            helps[command] = f"{type(error).__name__}: {error}"
        else:
            helps[command] = "--help did not exit"
    failures["help"] = helps
    print(json.dumps({"failures": failures, "commands": sorted(commands)}))


if __name__ == "__main__":
    main()
