"""The fake builder: one image record per instance, no image (the fake environment).

Its digest is a function of its inputs alone (the repo's history and the test spec), as
a real builder's is, so that the plan, the lockfile and resume behave as with real
images; the fake runtime's "store" holds the records it made.
"""

from __future__ import annotations

from typing import ClassVar

from evalrepro.build.base import Builder
from evalrepro.build.images import ImageChain, inputs_digest, layer_key
from evalrepro.config.environment import FakeEnvironment
from evalrepro.digest import sha256_json
from evalrepro.records.image import BuildFailure, ImageRecord, PinnedInput
from evalrepro.records.testspec import TestSpec
from evalrepro.runtimes.fake import FakeRuntime
from evalrepro.sources.checkout import LocalCheckout


class FakeBuilder(Builder):
    kind: ClassVar[str] = "fake"
    runtimes: ClassVar[tuple[str, ...]] = ("fake",)

    config: FakeEnvironment
    runtime: FakeRuntime

    def open(self) -> None:
        #: The instances whose image this builder prepared, in order.
        self.prepared: list[str] = []

    def prepare(
        self,
        specs: list[TestSpec],
        checkouts: dict[str, LocalCheckout],
        locked: list[ImageRecord] | None = None,
    ) -> dict[str, ImageChain | BuildFailure]:
        pinned = {record.key: record for record in locked or []}
        images: dict[str, ImageChain | BuildFailure] = {}
        for spec in specs:
            inputs = [
                PinnedInput(
                    kind="history", name=spec.repo, digest=checkouts[spec.instance_id].source_digest
                ),
                PinnedInput(kind="recipe", name="test spec", digest=spec.digest()),
            ]
            key = layer_key(self.kind, "instance", inputs, None)
            digest = sha256_json({"image of": key})
            if key in pinned and pinned[key].image_digest != digest:
                images[spec.instance_id] = BuildFailure(
                    builder=self.kind, layer="instance", key=key, reason="digest differs"
                )
                continue
            self.prepared.append(spec.instance_id)
            tag = f"fake/{spec.instance_id.lower()}:{key[7:19]}"
            self.runtime.store[tag] = digest
            record = ImageRecord(
                builder=self.kind,
                layer="instance",
                key=key,
                inputs_digest=inputs_digest(inputs),
                inputs=inputs,
                tag=tag,
                parent_key=None,
                image_digest=digest,
                built=True,
            )
            images[spec.instance_id] = ImageChain(layers=[record])
        return images
