"""A team's runs in one place, the artifacts' half: a content-addressed object store
(``objects``) and a run folder stored in it, file by file, under a manifest (``runs``)."""

from evalrepro.store.objects import ObjectStore, StoreError

__all__ = ["ObjectStore", "StoreError"]
