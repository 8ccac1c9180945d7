"""Debian packages pinned against the real mirror, fetched again by hash (build.debian)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from evalrepro.build import debian
from evalrepro.build.debian import DebPin, MirrorError
from evalrepro.errors import UserError

MIRROR = "http://deb.debian.org/debian"
#: The demo's base packages (conf/environment/podman.yaml).
DEMO = ["python3", "python3-venv", "python3-pip", "git", "patch", "ca-certificates"]

pytestmark = pytest.mark.skipif(
    shutil.which("mmdebstrap") is None or shutil.which("dpkg-scanpackages") is None,
    reason="needs mmdebstrap and dpkg-dev (scripts/setup)",
)


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("debian-cache")


@pytest.fixture(scope="module")
def pins(cache: Path) -> list[DebPin]:
    return debian.resolve("bookworm", MIRROR, DEMO, cache_dir=cache)


@pytest.fixture(scope="module")
def small(pins: list[DebPin]) -> list[DebPin]:
    """A few small pins, for the fetch tests."""
    wanted = {"patch", "libc6", "libgcc-s1", "gcc-12-base"}  # patch and its dependencies
    return [pin for pin in pins if pin.package in wanted]


def test_resolve_pins_what_mmdebstrap_minbase_installs(pins: list[DebPin], cache: Path) -> None:
    by_name = {pin.package: pin for pin in pins}
    # The Essential:yes set, apt (Priority: required), the included packages, their
    # dependencies; never a Recommends (git recommends less, patch recommends ed).
    assert {"base-files", "dpkg", "libc6", "apt", *DEMO} <= by_name.keys()
    assert "less" not in by_name and "ed" not in by_name
    assert [pin.package for pin in pins] == sorted(by_name)
    assert by_name["python3"].version.startswith("3.11.")
    for pin in pins:
        assert pin.filename.startswith("pool/main/") and pin.filename.endswith(".deb")
        assert pin.sha256.startswith("sha256:") and pin.size
        assert not set(pin.store_name) & set("%:~")
    # One state of the lists, one answer.
    assert debian.resolve("bookworm", MIRROR, list(reversed(DEMO)), cache_dir=cache) == pins


@pytest.mark.parametrize(
    ("suite", "packages", "message"),
    [
        ("bookworm", ["no-such-package-zz"], "apt cannot install no-such-package-zz"),
        ("bookworm", ["Bad Name"], "not a Debian package name"),
        ("no suite", ["git"], "not a Debian suite name"),
    ],
)
def test_bad_requests_are_one_line_user_errors(
    cache: Path, suite: str, packages: list[str], message: str
) -> None:
    with pytest.raises(UserError, match=message) as caught:
        debian.resolve(suite, MIRROR, packages, cache_dir=cache)
    assert "\n" not in str(caught.value)


def test_fetch_checks_and_caches_by_content(
    small: list[DebPin], cache: Path, tmp_path: Path
) -> None:
    files = debian.fetch(small, tmp_path / "a", mirror=MIRROR, cache_dir=cache)
    assert sorted(files) == sorted(pin.package for pin in small)
    for pin in small:
        assert files[pin.package].name == pin.store_name
        assert files[pin.package].stat().st_size == pin.size
    # A cached file that was changed is not used: it is fetched again.
    cached = cache / "debs" / f"{small[0].sha256.removeprefix('sha256:')}.deb"
    cached.unlink()
    cached.write_bytes(b"tampered")
    again = debian.fetch(small, tmp_path / "b", mirror=MIRROR, cache_dir=cache)
    assert again[small[0].package].read_bytes() != b"tampered"
    assert cached.read_bytes() != b"tampered"


def test_a_file_that_differs_from_its_pin_is_refused_naming_it(
    small: list[DebPin], cache: Path, tmp_path: Path
) -> None:
    pin = next(pin for pin in small if pin.package == "patch")
    # A mirror that serves other bytes under the pinned file name.
    mirror = tmp_path / "mirror"
    served = mirror / pin.filename
    served.parent.mkdir(parents=True)
    served.write_bytes(b"not the pinned bytes")
    mirror.chmod(0o755)
    edited = pin.model_copy(update={"sha256": "sha256:" + "0" * 64, "size": None})
    with pytest.raises(UserError, match=rf"Debian package patch {pin.version} does not match"):
        debian.fetch([edited], tmp_path / "out", mirror=f"file://{mirror}", cache_dir=cache)


def test_an_unavailable_version_is_refused_suggesting_an_archive(
    small: list[DebPin], tmp_path: Path
) -> None:
    # A cache of its own: the cache knows files by their hash, and this one has patch's.
    pin = next(pin for pin in small if pin.package == "patch")
    gone = pin.model_copy(
        update={"version": "0.1-1", "filename": "pool/main/p/patch/patch_0.1-1_amd64.deb"}
    )
    with pytest.raises(UserError, match=r"environment\.base\.archive") as caught:
        debian.fetch([gone], tmp_path / "out", mirror=MIRROR, cache_dir=tmp_path / "cache")
    assert "Debian package patch 0.1-1 is no longer available" in str(caught.value)


def test_an_unreachable_mirror_is_an_infrastructure_error(
    small: list[DebPin], tmp_path: Path
) -> None:
    with pytest.raises(MirrorError, match="cannot download Debian package"):
        debian.fetch(
            small[:1], tmp_path / "o", mirror="http://127.0.0.1:9/debian", cache_dir=tmp_path / "c"
        )


def test_local_repository_serves_exactly_the_pins_to_mmdebstrap(
    small: list[DebPin], cache: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    files = debian.fetch(small, tmp_path / "debs", mirror=MIRROR, cache_dir=cache)
    # mmdebstrap's apt (root of a user namespace) must be able to enter every folder.
    public = Path(tempfile.mkdtemp(prefix="evalrepro-test-"))
    public.chmod(0o755)
    request.addfinalizer(lambda: shutil.rmtree(public, ignore_errors=True))
    line = debian.local_repository(
        list(files.values()), public / "repo", suite="bookworm", pins=small
    )
    assert line.startswith("deb [trusted=yes] copy://") and line.endswith(" ./")
    assert "Suite: bookworm" in (public / "repo" / "Release").read_text()
    out = tmp_path / "extract.tar"
    command = ["mmdebstrap", "--variant=extract", "--mode=unshare", "--skip=output/dev"]
    done = subprocess.run(
        [*command, "--include=patch", "bookworm", str(out), line],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    listing = subprocess.run(["tar", "-tf", str(out)], capture_output=True, text=True).stdout
    assert "./usr/bin/patch" in listing.splitlines()


def test_local_repository_refuses_a_pin_whose_file_holds_another_version(
    small: list[DebPin], cache: Path, tmp_path: Path
) -> None:
    files = debian.fetch(small, tmp_path / "debs", mirror=MIRROR, cache_dir=cache)
    edited = [
        pin.model_copy(update={"version": "9.9-9"}) if pin.package == "patch" else pin
        for pin in small
    ]
    with pytest.raises(UserError, match=r"Debian package patch is pinned as 9\.9-9"):
        debian.local_repository(list(files.values()), tmp_path / "repo", pins=edited)


def test_a_resolve_is_kept_by_the_state_of_the_lists_and_asks_apt_nothing_again(
    pins: list[DebPin], cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_apt(self, *args, **kwargs):
        raise AssertionError(f"apt was run: {args}")

    with monkeypatch.context() as patched:
        patched.setattr(debian._AptRoot, "run", no_apt)
        assert debian.resolve("bookworm", MIRROR, DEMO, cache_dir=cache) == pins
        # Another request is another closure: apt is asked.
        with pytest.raises(AssertionError, match="apt was run"):
            debian.resolve("bookworm", MIRROR, ["patch"], cache_dir=cache)
        # So is the same request once the lists changed (a refresh that brought a new
        # Release): the kept answer is for the lists it was resolved from.
        (release,) = (cache / "apt").glob("bookworm-*/var/lib/apt/lists/*_InRelease")
        kept = release.read_bytes()
        release.write_bytes(kept + b"\n")
        try:
            with pytest.raises(AssertionError, match="apt was run"):
                debian.resolve("bookworm", MIRROR, DEMO, cache_dir=cache)
        finally:
            release.write_bytes(kept)
