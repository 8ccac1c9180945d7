"""Podman's image store (:class:`evalrepro.runtimes.store.ImageStore`): every podman command
on images that evalrepro runs, builders' and archives' included."""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from evalrepro.errors import UserError
from evalrepro.runtimes.store import ImageStore, StoreError, last_line, run_args
from evalrepro.runtimes.tether import run_tethered

#: podman build's error when the image it just committed is gone before its lookup.
_LOST_COMMIT = b"locating just-written image"


class PodmanStore(ImageStore):
    tool: ClassVar[str] = "podman"

    def __init__(self, env: dict[str, str], cache_dir: Path, *, rootless: bool) -> None:
        #: podman's environment: ``CONTAINERS_CONF`` points at evalrepro's settings.
        self.env = env
        self.cache_dir = cache_dir
        self.rootless = rootless

    def podman(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        done = subprocess.run(
            ["podman", *args], capture_output=True, text=True, env=self.env, check=False
        )
        if check and done.returncode != 0:
            raise StoreError(f"podman {args[0]} failed: {last_line(done.stderr)}")
        return done

    # --- what is there ---------------------------------------------------------------

    def ids(self) -> dict[str, str]:
        """One listing, however many images (one ``inspect`` per layer costs 55-110 ms).

        podman 4.3 lists the store without a lock against removal: an image another
        process removes meanwhile fails the whole listing ("retrieving label for image
        ...: image not known"). Such a listing is tried again; one that keeps failing
        is a one-line error."""
        for delay in (0.2, 0.5, 1.0, None):
            done = self.podman(
                "images", "--no-trunc", "--format", "{{.Repository}}:{{.Tag}} {{.ID}}", check=False
            )
            if done.returncode == 0 or delay is None:
                break
            time.sleep(delay)
        if done.returncode != 0:
            raise UserError(f"podman images failed: {last_line(done.stderr)}")
        ids = {}
        for line in done.stdout.splitlines():
            reference, _, image_id = line.partition(" ")
            if image_id and not reference.endswith(":<none>"):
                ids[reference] = (
                    image_id if image_id.startswith("sha256:") else f"sha256:{image_id}"
                )
        return ids

    def image_id(self, reference: str) -> str | None:
        done = self.podman("image", "inspect", "--format", "{{.Id}}", reference, check=False)
        return done.stdout.strip() or None if done.returncode == 0 else None

    def inspect(self, reference: str) -> dict[str, Any] | None:
        done = self.podman("image", "inspect", "--format", "json", reference, check=False)
        if done.returncode != 0:
            return None
        try:
            (found,) = json.loads(done.stdout)
        except ValueError:
            return None
        return found if isinstance(found, dict) and found.get("Id") else None

    def layers(self, reference: str) -> list[str]:
        done = self.podman("image", "inspect", "--format", "{{json .RootFS.Layers}}", reference)
        return json.loads(done.stdout or "[]") or []

    def history(self, reference: str) -> list[Any]:
        done = self.podman("image", "inspect", "--format", "{{json .History}}", reference)
        return json.loads(done.stdout) or []

    def manifest_types(self, ids: Sequence[str]) -> dict[str, str]:
        hexes = sorted({image_id.removeprefix("sha256:") for image_id in ids})
        done = self.podman("image", "inspect", "--format", "{{.Id}} {{.ManifestType}}", *hexes)
        found = {}
        for line in done.stdout.splitlines():
            image_id, _, media_type = line.partition(" ")
            found[f"sha256:{image_id.removeprefix('sha256:')}"] = media_type.strip()
        return found

    # --- names -----------------------------------------------------------------------

    def tag(self, image: str, *names: str) -> None:
        self.podman("tag", image, *names)

    def untag(self, image: str, *names: str) -> None:
        self.podman("untag", image, *names, check=False)

    def remove(self, *references: str) -> None:
        self.podman("rmi", *references, check=False)

    # --- in and out ------------------------------------------------------------------

    def load(self, archive: Path) -> None:
        self.podman("load", "--quiet", "--input", str(archive))

    def _pulled(self, reference: str, *flags: str) -> str:
        done = self.podman("pull", "--quiet", *flags, reference, check=False)
        if done.returncode != 0:
            raise StoreError(last_line(done.stderr).removeprefix("Error: "))
        try:
            return done.stdout.split()[-1].removeprefix("sha256:")
        except IndexError:
            raise StoreError(f"podman pull {reference} named no image") from None

    def load_from_archive(self, archive: Path, number: int) -> str:
        return self._pulled(f"docker-archive:{archive}:@{number}")

    def load_from_layout(self, layout: Path, name: str) -> str:
        try:
            return self._pulled(f"oci:{layout}:{name}")
        finally:
            # podman 4.3 also names an image pulled from a layout after the layout's path.
            found = self.image_id(f"localhost{layout}:latest")
            if found is not None:
                self.untag(found, f"localhost{layout}:latest")

    def pull(self, reference: str, *, tls_verify: bool = True) -> str:
        return self._pulled(reference, f"--tls-verify={str(tls_verify).lower()}")

    def push(self, image: str, remote: str, *, tls_verify: bool = True) -> str:
        with tempfile.TemporaryDirectory(prefix="evalrepro-push-") as scratch:
            digest_file = Path(scratch) / "digest"
            done = self.podman(
                "push",
                f"--tls-verify={str(tls_verify).lower()}",
                "--digestfile",
                str(digest_file),
                image,
                remote,
                check=False,
            )
            if done.returncode != 0:
                raise StoreError(last_line(done.stderr) or "?")
            return digest_file.read_text().strip()

    def export_layout(self, image_id: str, layout: Path, name: str) -> None:
        self.podman("push", "--quiet", image_id.removeprefix("sha256:"), f"oci:{layout}:{name}")

    def save(self, references: Sequence[str], archive: Path) -> None:
        self.podman(
            "save", "--quiet", "--multi-image-archive", "--format", "docker-archive",
            "--output", str(archive), *references,
        )  # fmt: skip

    # --- building and looking inside -------------------------------------------------

    def build(
        self,
        context: Path,
        containerfile: Path,
        tag: str,
        *,
        log: Path,
        build_args: dict[str, str],
        network: bool,
        volumes: Sequence[tuple[str, str]] = (),
        omit_history: bool = False,
    ) -> int:
        args = [
            "build",
            "--pull=never",
            "--timestamp",
            "0",
            "--layers=false",
            *(["--omit-history"] if omit_history else []),
            "--file",
            str(containerfile),
            "--tag",
            tag,
            *(
                arg
                for name, value in build_args.items()
                for arg in ("--build-arg", f"{name}={value}")
            ),
            # A build that downloads shares the host's network (slirp4netns cannot open
            # /dev/net/tun here); the others have none.
            *(["--network", "host"] if network else ["--network", "none"]),
            *(arg for host, inside in volumes for arg in ("--volume", f"{host}:{inside}:ro")),
            str(context),
        ]
        with log.open("wb") as out:
            returncode = run_tethered(["podman", *args], stdout=out, env=self.env)
        if returncode != 0 and _LOST_COMMIT in log.read_bytes()[-4096:]:
            # podman 4.3 commits an image, then looks it up by name; a concurrent removal
            # of another name of the same image (two builds of identical content, one
            # finishing) can drop it in between. The build is deterministic: once more.
            with log.open("ab") as out:
                out.write(b"\n[evalrepro] podman lost the image it had just written: once more\n")
                out.flush()
                returncode = run_tethered(["podman", *args], stdout=out, env=self.env)
        return returncode

    def run(
        self, image: str, argv: Sequence[str], *, volumes: Sequence[tuple[str, str]] = ()
    ) -> subprocess.CompletedProcess:
        return self.podman(*run_args(image, argv, volumes), check=False)

    def remove_tree(self, path: Path) -> None:
        """Rootless, files a user namespace made (sub-uids) need one too to be deleted."""
        super().remove_tree(path)
        if path.exists() and self.rootless:
            subprocess.run(
                ["podman", "unshare", "rm", "-rf", "--", str(path)],
                env=self.env,
                capture_output=True,
                check=False,
            )
