"""A content-addressed object store through fsspec: a local folder (``file://``, or a
plain path) or any S3-compatible store (``s3://bucket/prefix``, through s3fs).

Each object is stored once, under its sha256: ``<prefix>/sha256/<hex[:2]>/<hex>``. An
upload goes to a temporary key (``<prefix>/tmp/<session>/<random>``), is read back and
checked (size and sha256), and only then moved to its final key: an object under a final
key is always whole and right, so "is it stored?" is "does its key exist?". Every read
checks the sha256 again (a store can be edited, or rot).

A killed upload leaves its temporary objects behind. While a store uploads (``uploading``)
it renews a heartbeat object ``<prefix>/tmp/<session>.alive`` every ``HEARTBEAT_SECONDS``;
``remove_leftovers`` (each publish calls it first) removes the temporary objects of
sessions without a heartbeat renewed in ``STALE_SECONDS``, and only those themselves
older than that: a live upload, another machine's included, keeps its objects.

Credentials come from the URL's userinfo (``s3://KEY:SECRET@bucket/prefix``) or from the
environment (botocore's own chain: ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``, a
profile...); the endpoint of a store that is not AWS from ``AWS_ENDPOINT_URL`` or
``EVALREPRO_S3_ENDPOINT_URL``. ``url`` is the store's URL without them, and no message
this module raises holds a key or a secret: each is one :class:`StoreError` line.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from evalrepro import atomic
from evalrepro.errors import UserError

#: Bytes read or written at a time when streaming an object.
CHUNK = 1 << 20
_DIGEST = re.compile(r"sha256:([0-9a-f]{64})")
_USERINFO = re.compile(r"//[^@\s'\"]*@")
ENDPOINT_VARIABLES = ("AWS_ENDPOINT_URL", "EVALREPRO_S3_ENDPOINT_URL")
#: How often a live upload renews its heartbeat, and how old a heartbeat (and a temporary
#: object) must be before its upload counts as gone: far apart, so that neither a slow
#: renewal nor clocks a little apart make a live upload look dead.
HEARTBEAT_SECONDS = 30.0
STALE_SECONDS = 600.0


class StoreError(UserError):
    """The object store cannot be reached, refused, or holds something wrong: one line,
    never a credential in it."""


def digest_hex(digest: str) -> str:
    """The hex of a ``sha256:<hex>`` digest, or one line saying it is not one."""
    found = _DIGEST.fullmatch(digest) if isinstance(digest, str) else None
    if found is None:
        raise StoreError(f"not a sha256 digest: {str(digest)[:80]!r}")
    return found.group(1)


class ObjectStore:
    """One store: an fsspec filesystem and the root (folder, or bucket/prefix) in it."""

    url: str

    def __init__(self, fs: Any, root: str, url: str, secrets: tuple[str, ...] = ()) -> None:
        self.fs = fs
        self.root = root.rstrip("/")
        self.url = url
        # What never appears in a message (credentials given in the URL or environment).
        self._secrets = tuple(s for s in secrets if s)
        #: This store's uploads: their temporary objects go under tmp/<session>/.
        self._session = uuid.uuid4().hex

    def __repr__(self) -> str:
        return f"ObjectStore({self.url!r})"

    # --- opening ----------------------------------------------------------------------

    @classmethod
    def open(cls, url: str) -> ObjectStore:
        """The store at ``url``, checked to be reachable (one StoreError line if not)."""
        if not isinstance(url, str) or not url.strip():
            raise StoreError("object store: no URL given")
        # Not urlsplit: it raises on some userinfo (a "[" in a pasted secret).
        found = re.match(r"([A-Za-z][A-Za-z0-9+.-]*):", url)
        scheme = found.group(1).lower() if found else ""
        if scheme in ("s3", "s3a"):
            store = cls._open_s3(url)
        elif scheme in ("file", ""):
            store = cls._open_local(url)
        else:
            shown = _redact(url)
            raise StoreError(
                f"object store {shown[:200]}: unsupported scheme {scheme!r} (use file:// or "
                "a path, or s3://bucket/prefix)"
            )
        store.check()
        return store

    @classmethod
    def _open_local(cls, url: str) -> ObjectStore:
        from fsspec.implementations.local import LocalFileSystem

        if url[:5].lower() == "file:":
            try:
                parts = urlsplit(url)
            except ValueError:
                raise StoreError(f"object store {_redact(url)[:200]}: not a URL") from None
            if parts.netloc not in ("", "localhost") or parts.query or parts.fragment:
                raise StoreError(
                    f"object store {_redact(url)[:200]}: a file:// URL is file:///absolute/path"
                )
            path = Path(unquote(parts.path))
            if not path.is_absolute():
                raise StoreError(f"object store {_redact(url)[:200]}: not an absolute path")
        else:
            path = Path(url).expanduser().absolute()
        folder = Path(os.path.normpath(path))
        return cls(LocalFileSystem(), str(folder), folder.as_uri())

    @classmethod
    def _open_s3(cls, url: str) -> ObjectStore:
        try:
            import s3fs
        except ImportError:
            raise StoreError(
                "object store: s3:// needs s3fs (pip install 'evalrepro[team]')"
            ) from None
        # Parsed by hand, not by urlsplit: a secret pasted as it is (AWS's hold "/" and
        # "+") must neither break the parse nor show in a message. The userinfo is what
        # comes before the first "@", if that holds a ":" or no "/" (else the "@" is the
        # prefix's).
        if "://" not in url:
            raise StoreError("object store: an s3 URL is s3://bucket/prefix")
        rest = url.split("://", 1)[1]
        userinfo, at, location = rest.partition("@")
        if not at or (":" not in userinfo and "/" in userinfo):
            userinfo, location = "", rest
        bucket, _, prefix = location.partition("/")
        prefix = prefix.strip("/")
        shown = f"s3://{bucket}/{prefix}".rstrip("/")
        if not re.fullmatch(r"[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]", bucket):
            raise StoreError(f"object store {shown[:200]}: {bucket[:80]!r} is not a bucket name")
        if "?" in location or "#" in location:
            raise StoreError(f"object store {shown[:200]}: an s3 URL is s3://bucket/prefix")
        key = secret = None
        if userinfo:
            raw_key, _, raw_secret = userinfo.partition(":")
            key, secret = unquote(raw_key) or None, unquote(raw_secret) or None
        if (key is None) != (secret is None):
            raise StoreError(
                f"object store {shown}: the URL gives a key without a secret, or the "
                "reverse (give both, or neither and use the environment)"
            )
        endpoint = next((os.environ[v] for v in ENDPOINT_VARIABLES if os.environ.get(v)), None)
        client_kwargs: dict[str, Any] = {}
        if not (os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")):
            # An S3-compatible store needs one to sign with; AWS redirects as needed.
            client_kwargs["region_name"] = "us-east-1"
        fs = s3fs.S3FileSystem(
            key=key,
            secret=secret,
            endpoint_url=endpoint,
            client_kwargs=client_kwargs,
            # A wrong endpoint or key is said at once, not after a minute of retries.
            config_kwargs={"retries": {"max_attempts": 2, "mode": "standard"}},
            skip_instance_cache=True,
            use_listings_cache=False,
        )
        fs.retries = 2
        hidden = (
            key,
            secret,
            os.environ.get("AWS_ACCESS_KEY_ID"),
            os.environ.get("AWS_SECRET_ACCESS_KEY"),
            os.environ.get("AWS_SESSION_TOKEN"),
        )
        store = cls(fs, f"{bucket}/{prefix}" if prefix else bucket, shown, tuple(hidden))
        store._bucket = bucket
        store._endpoint = endpoint
        return store

    _bucket: str | None = None
    _endpoint: str | None = None

    def check(self) -> None:
        """One line unless the store can be reached (and, a folder, written)."""
        if self._bucket is None:
            folder = Path(self.root)
            if not folder.is_dir():
                if not folder.parent.is_dir():
                    raise StoreError(f"object store {self.url}: no such folder {folder.parent}")
                try:
                    folder.mkdir(exist_ok=True)
                except OSError as error:
                    raise self._error("cannot create the folder", error) from None
            if not os.access(folder, os.W_OK | os.X_OK):
                raise StoreError(f"object store {self.url}: the folder is not writable")
            return
        try:
            with self._errors("cannot reach the bucket"):
                self.fs.call_s3("head_bucket", Bucket=self._bucket)
        except _NotFound:
            raise StoreError(f"object store {self.url}: no such bucket {self._bucket}") from None

    # --- keys ------------------------------------------------------------------------

    def key(self, digest: str) -> str:
        hex_digest = digest_hex(digest)
        return f"{self.root}/sha256/{hex_digest[:2]}/{hex_digest}"

    def _temporary_key(self) -> str:
        return f"{self.root}/tmp/{self._session}/{uuid.uuid4().hex}"

    # --- temporary objects: a heartbeat while uploading, leftovers removed --------------

    @contextmanager
    def uploading(self) -> Iterator[None]:
        """Uploads under a heartbeat that says this session is live (renewed by a thread
        until the block ends, then removed with the session's temporary objects)."""
        alive = f"{self.root}/tmp/{self._session}.alive"
        stop = threading.Event()

        def beat() -> None:
            while not stop.wait(HEARTBEAT_SECONDS):
                self._touch(alive)

        self._touch(alive)
        thread = threading.Thread(target=beat, name="evalrepro-store-heartbeat", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
            self._remove_quietly(alive)
            self._remove_empty_folder(f"{self.root}/tmp/{self._session}")

    def _remove_empty_folder(self, folder: str) -> None:
        # Only a folder store has folders (S3's are prefixes): an empty one is left by
        # every upload session.
        if self._bucket is None:
            try:
                os.rmdir(folder)
            except OSError:
                pass  # not empty (a live upload), or gone

    def _touch(self, key: str) -> None:
        with self._errors("cannot write the upload's heartbeat"):
            if self._bucket is None:
                self.fs.makedirs(self.fs._parent(key), exist_ok=True)
            self.fs.pipe_file(key, b"")

    def remove_leftovers(self, now: float | None = None) -> int:
        """Remove the temporary objects that killed uploads left: those of sessions with no
        heartbeat renewed in ``STALE_SECONDS`` that are themselves older than that (a
        heartbeat of a dead session too). How many were removed. ``now``: the time to
        judge ages by (seconds since the epoch; default the clock's)."""
        now = time.time() if now is None else now
        folder = f"{self.root}/tmp"
        with self._errors("cannot list temporary objects"):
            self.fs.invalidate_cache()
            if not self.fs.exists(folder):
                return 0
            found = self.fs.find(folder, detail=True)
        live = {
            key[len(folder) + 1 : -len(".alive")]
            for key, info in found.items()
            if key.endswith(".alive") and now - _modified(info, now) < STALE_SECONDS
        }
        removed = 0
        for key, info in found.items():
            session = key[len(folder) + 1 :].split("/", 1)[0].removesuffix(".alive")
            if session in live or now - _modified(info, now) < STALE_SECONDS:
                continue
            self._remove_quietly(key)
            removed += 1
            if "/" in key[len(folder) + 1 :]:
                self._remove_empty_folder(f"{folder}/{session}")
        return removed

    # --- the operations ----------------------------------------------------------------

    def size(self, digest: str) -> int | None:
        """The stored object's size, or None when it is not stored."""
        key = self.key(digest)
        try:
            with self._errors(f"cannot look up {digest}"):
                info = self.fs.info(key)
        except _NotFound:
            return None
        return int(info["size"])

    def has(self, digest: str) -> bool:
        return self.size(digest) is not None

    def put_file(self, path: Path, digest: str, size: int) -> bool:
        """Store the file ``path`` (whose sha256 is ``digest``, size ``size``) unless it
        is stored: True if it was uploaded now. The upload is read back and checked
        before it gets its final key; a mismatch is a StoreError and leaves no object.
        An object already there whose size is not ``size`` (truncated in the store) is
        replaced."""
        final = self.key(digest)
        if self.size(digest) == size:
            return False
        if path.is_symlink() or not path.is_file():
            raise StoreError(f"object store {self.url}: {path} is not a regular file")
        temporary = self._temporary_key()
        try:
            with self._errors(f"cannot upload {path.name}"):
                if self._bucket is None:
                    self.fs.makedirs(self.fs._parent(temporary), exist_ok=True)
                self.fs.put_file(str(path), temporary)
                if self._bucket is None:
                    # On disk before it is renamed: a crash must not leave an empty object
                    # under a final key (which would pass for stored).
                    with open(temporary, "rb") as written:
                        os.fsync(written.fileno())
            stored_size, stored_digest = self._digest_of(temporary, size)
            if (stored_size, stored_digest) != (size, digest):
                raise StoreError(
                    f"object store {self.url}: {path.name} was stored as {stored_size} bytes "
                    f"of {stored_digest}, not {size} of {digest} (changed while uploading, or "
                    "the store altered it): not kept"
                )
            with self._errors(f"cannot store {path.name} under its digest"):
                if self._bucket is None:
                    self.fs.makedirs(self.fs._parent(final), exist_ok=True)
                self.fs.mv(temporary, final)
        finally:
            self._remove_quietly(temporary)
        return True

    def read_bytes(self, digest: str, max_size: int) -> bytes:
        """The object's bytes: at most ``max_size`` of them, their sha256 checked."""
        key = self.key(digest)
        size = self.size(digest)
        if size is None:
            raise StoreError(f"object store {self.url}: {digest} is not stored")
        if size > max_size:
            raise StoreError(
                f"object store {self.url}: {digest} is {size} bytes, more than the {max_size} read"
            )
        with self._errors(f"cannot read {digest}"), self.fs.open(key, "rb") as handle:
            data = handle.read(max_size + 1)
        if len(data) > max_size:
            raise StoreError(f"object store {self.url}: {digest} is more than {max_size} bytes")
        self._check(digest, "sha256:" + hashlib.sha256(data).hexdigest(), len(data))
        return data

    def fetch(self, digest: str, dest: Path, *, size: int | None = None) -> None:
        """The object streamed to ``dest`` (written atomically: whole, or not at all), its
        sha256 checked; ``size``, when known, bounds what is read."""
        key = self.key(digest)
        if self.size(digest) is None:
            raise StoreError(f"object store {self.url}: {digest} is not stored")
        with atomic.writer(dest) as out:
            got, length = self._stream(key, size, out.write)
            if size is not None and length != size:
                raise StoreError(
                    f"object store {self.url}: {digest} holds {length} bytes, not {size}: corrupt"
                )
            self._check(digest, got, length)

    # --- helpers -----------------------------------------------------------------------

    def _stream(self, key: str, limit: int | None, sink: Any = None) -> tuple[str, int]:
        """(sha256 digest, length) of the object at ``key``, read in chunks (at most
        ``limit`` + 1 bytes), each chunk handed to ``sink``."""
        hasher = hashlib.sha256()
        length = 0
        with self._errors("cannot read an object"), self.fs.open(key, "rb") as handle:
            while True:
                want = CHUNK if limit is None else min(CHUNK, limit + 1 - length)
                if want <= 0:
                    break
                chunk = handle.read(want)
                if not chunk:
                    break
                hasher.update(chunk)
                length += len(chunk)
                if sink is not None:
                    sink(chunk)
        return "sha256:" + hasher.hexdigest(), length

    def _digest_of(self, key: str, size: int) -> tuple[int, str]:
        digest, length = self._stream(key, size)
        return length, digest

    def _check(self, digest: str, got: str, length: int) -> None:
        if got != digest:
            raise StoreError(
                f"object store {self.url}: the object stored as {digest} is corrupt "
                f"({length} bytes whose sha256 is {got.removeprefix('sha256:')})"
            )

    def _remove_quietly(self, key: str) -> None:
        try:
            if self.fs.exists(key):
                self.fs.rm_file(key)
        except Exception:  # a leftover temporary object harms nothing: tmp/ is not read
            pass

    def _scrub(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return _USERINFO.sub("//***@", text)

    def _error(self, what: str, error: BaseException) -> StoreError:
        reason = self._scrub(_reason(error, self._endpoint))
        return StoreError(self._scrub(f"object store {self.url}: {what}: {reason}")[:600])

    @contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        """Any failure of the filesystem as one StoreError line (a missing object as
        _NotFound, for the callers that look)."""
        try:
            yield
        except StoreError:
            raise
        except FileNotFoundError as error:
            if self._bucket is not None and _code(error) == "NoSuchBucket":
                raise self._error(what, error) from None
            raise _NotFound(self._error(what, error).args[0]) from None
        except Exception as error:
            raise self._error(what, error) from None


def _modified(info: dict[str, Any], now: float) -> float:
    """When an object was last written (seconds since the epoch), from fsspec's
    ``info``: ``mtime`` on a folder, ``LastModified`` on S3; ``now`` when neither says
    (an object of unknown age is kept)."""
    moment = info.get("LastModified", info.get("mtime"))
    if hasattr(moment, "timestamp"):
        return float(moment.timestamp())
    return float(moment) if isinstance(moment, int | float) else now


def _redact(url: str) -> str:
    """``url`` with anything between ``//`` and its last ``@`` hidden."""
    head, slashes, rest = url.partition("//")
    if slashes and "@" in rest:
        return f"{head}//***@{rest.rpartition('@')[2]}"
    return url


class _NotFound(StoreError):
    """An object (or bucket) that is not there."""


def _code(error: BaseException) -> str | None:
    """The S3 error code behind an exception s3fs translated, if any."""
    for candidate in (error, error.__cause__, error.__context__):
        response = getattr(candidate, "response", None)
        if isinstance(response, dict):
            return response.get("Error", {}).get("Code")
    return None


def _reason(error: BaseException, endpoint: str | None) -> str:
    """Why, in a few words (no traceback, no request dump)."""
    name = type(error).__name__
    code = _code(error)
    text = " ".join(str(error).split())[:300]
    if name == "NoCredentialsError":
        return (
            "no credentials (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or give "
            "them in the URL)"
        )
    if code in ("InvalidAccessKeyId", "SignatureDoesNotMatch", "403", "AccessDenied") or (
        isinstance(error, PermissionError)
    ):
        return f"access denied ({code or text}: check the credentials)"
    if code in ("NoSuchBucket", "404") and isinstance(error, FileNotFoundError):
        return "no such bucket or object"
    if name in ("EndpointConnectionError", "ConnectTimeoutError", "ConnectionClosedError") or (
        isinstance(error, ConnectionError)
    ):
        where = endpoint or "the S3 endpoint"
        return f"cannot connect to {where}"
    if isinstance(error, FileNotFoundError):
        return "not found"
    return f"{name}: {text}" if text else name
