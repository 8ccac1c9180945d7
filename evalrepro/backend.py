"""The two halves of an environment, opened together: the runtime that runs trials and
the builder that makes their images (``runtimes``, ``builders``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evalrepro.builders import get_builder
from evalrepro.builders.base import Builder
from evalrepro.environment import EnvironmentConfig
from evalrepro.runtimes import get_runtime
from evalrepro.runtimes.base import Runtime


@dataclass
class Backend:
    runtime: Runtime
    builder: Builder

    @classmethod
    def open(cls, config: EnvironmentConfig, cache_dir: Path) -> Backend:
        runtime = get_runtime(config, cache_dir)
        return cls(runtime=runtime, builder=get_builder(config, runtime, cache_dir))

    def check(self) -> None:
        self.runtime.check()
        self.builder.check()

    def describe(self) -> dict[str, str]:
        return {**self.runtime.describe(), "builder": self.builder.kind}

    def close(self) -> None:
        self.runtime.close()
