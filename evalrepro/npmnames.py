"""npm's package names and exact versions, as the registry accepts them: shared by the
config (a spec's ``npm``) and the builder that resolves them (``evalrepro.build.npm``)."""

from __future__ import annotations

import re

#: An npm package name (scoped or not) as the registry accepts new ones, lower case.
NPM_NAME = r"(?:@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]*"
#: An exact semver version: ``10.2.0``, ``1.0.0-rc.1``, ``2.0.0+build.5``.
NPM_VERSION = (
    r"(?:0|[1-9]\d*)\.(?:0|[1-9]\d*)\.(?:0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?"
)
_NPM_SPECIFIER = re.compile(rf"^(?P<name>{NPM_NAME})@(?P<version>{NPM_VERSION})$")


def npm_specifier(text: str) -> tuple[str, str] | None:
    """``mocha@10.2.0`` -> ("mocha", "10.2.0"); None: not an exact registry specifier."""
    match = _NPM_SPECIFIER.match(text)
    return (match["name"], match["version"]) if match else None
