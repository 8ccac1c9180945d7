"""The two halves of an environment, opened together: the runtime that runs attempts and
the builder that makes their images (``evalrepro.runtimes``, ``evalrepro.build``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evalrepro.build import open_builder
from evalrepro.build.base import Builder
from evalrepro.runtimes import open_runtime
from evalrepro.runtimes.base import Runtime


@dataclass
class Backend:
    runtime: Runtime
    builder: Builder

    @classmethod
    def open(cls, config: object, cache_dir: Path, *, concurrency: int = 1) -> Backend:
        """The environment config's runtime and builder; ``concurrency``: independent
        image layers built at once."""
        runtime = open_runtime(config, cache_dir)
        return cls(runtime=runtime, builder=open_builder(config, runtime, cache_dir, concurrency))

    def check(self) -> None:
        self.runtime.check()
        self.builder.check()

    def describe(self) -> dict[str, str]:
        return {**self.runtime.describe(), "builder": self.builder.kind}

    def close(self) -> None:
        self.runtime.close()
