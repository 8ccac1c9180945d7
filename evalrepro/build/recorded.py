"""The recorded "builder": nothing is known of the image another harness ran in.

Every instance's trials share one record, ``recorded:unknown``, and so do the trials of
two regrades: the logs are what each target's trials produced (their attempts' output,
recorded with their digests), not part of the environment, so regrades of two models'
logs of one dataset are comparable.
"""

from __future__ import annotations

from typing import ClassVar

from evalrepro.build.base import Builder
from evalrepro.build.images import ImageChain, inputs_digest, layer_key
from evalrepro.config.environment import RecordedEnvironment
from evalrepro.errors import UserError
from evalrepro.records.image import BuildFailure, ImageRecord
from evalrepro.records.testspec import TestSpec
from evalrepro.sources.checkout import LocalCheckout

#: What a recorded trial's key says of the image nobody here built.
RECORDED_IMAGE = "recorded:unknown"


class RecordedBuilder(Builder):
    kind: ClassVar[str] = "recorded"
    runtimes: ClassVar[tuple[str, ...]] = ("recorded",)
    needs_sources: ClassVar[bool] = False

    config: RecordedEnvironment

    def open(self) -> None:
        if self.config.logs is None:
            raise UserError("environment.logs: a recorded environment needs its logs folder")

    def prepare(
        self,
        specs: list[TestSpec],
        checkouts: dict[str, LocalCheckout],
        locked: list[ImageRecord] | None = None,
    ) -> dict[str, ImageChain | BuildFailure]:
        key = layer_key(self.kind, "log", [], None)
        record = ImageRecord(
            builder=self.kind,
            layer="log",
            key=key,
            inputs_digest=inputs_digest([]),
            inputs=[],
            tag=RECORDED_IMAGE,
            parent_key=None,
            image_digest=RECORDED_IMAGE,
        )
        return {spec.instance_id: ImageChain(layers=[record]) for spec in specs}

    def missing(self, records: list[ImageRecord]) -> list[ImageRecord]:
        return []
