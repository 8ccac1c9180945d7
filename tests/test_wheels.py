"""Wheels pinned against the real PyPI, fetched again by hash (evalrepro.build.wheels)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from evalrepro.build import wheels
from evalrepro.build.wheels import (
    WheelPin,
    fetch_wheels,
    hashed_requirements,
    platform_tags,
    resolve_wheels,
    wheelhouse,
)
from evalrepro.errors import UserError

REQUIREMENTS = ["pytest==8.3.3", "iniconfig==2.0.0", "pluggy==1.5.0"]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("wheel-cache")


@pytest.fixture(scope="module")
def pins(cache: Path) -> list[WheelPin]:
    return resolve_wheels(REQUIREMENTS, python_version="3.11", cache_dir=cache)


def test_resolve_pins_every_wheel_sorted_with_its_url_and_hash(pins: list[WheelPin]) -> None:
    names = [pin.name for pin in pins]
    assert names == sorted(names)
    assert {"pytest", "iniconfig", "pluggy", "packaging"} <= set(names)
    by_name = {pin.name: pin for pin in pins}
    assert by_name["pytest"].version == "8.3.3"
    assert by_name["iniconfig"].filename == "iniconfig-2.0.0-py3-none-any.whl"
    for pin in pins:
        assert pin.url.startswith("https://") and pin.url.endswith("/" + pin.filename)
        assert re.fullmatch(r"[0-9a-f]{64}", pin.sha256)
        assert pin.digest == f"sha256:{pin.sha256}"
        assert not set(pin.store_name) & set("%:!")


def test_resolve_is_deterministic_for_one_index_state(pins: list[WheelPin], cache: Path) -> None:
    assert resolve_wheels(list(reversed(REQUIREMENTS)), cache_dir=cache) == pins


def test_a_resolve_is_kept_for_a_day_then_asked_of_the_index_again(
    pins: list[WheelPin], cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def pip(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("pip was asked")

    monkeypatch.setattr(wheels, "_pip", pip)
    # Within the day: the kept answer, and no pip.
    assert resolve_wheels(REQUIREMENTS, python_version="3.11", cache_dir=cache) == pins
    # Asked for a fresh answer, or a day later: pip again.
    with pytest.raises(RuntimeError, match="pip was asked"):
        resolve_wheels(REQUIREMENTS, python_version="3.11", cache_dir=cache, max_age=0)
    for kept in (cache / "resolved").iterdir():
        old = kept.stat().st_mtime - wheels.INDEX_MAX_AGE - 1
        os.utime(kept, (old, old))
    with pytest.raises(RuntimeError, match="pip was asked"):
        resolve_wheels(REQUIREMENTS, python_version="3.11", cache_dir=cache)
    # A kept answer that does not read as pins (cut short, edited) is asked again.
    for kept in (cache / "resolved").iterdir():
        os.utime(kept)
        kept.write_text('[{"name": "pytest"')
    with pytest.raises(RuntimeError, match="pip was asked"):
        resolve_wheels(REQUIREMENTS, python_version="3.11", cache_dir=cache)
    # Another Python is another request.
    with pytest.raises(RuntimeError, match="pip was asked"):
        resolve_wheels(REQUIREMENTS, python_version="3.12", cache_dir=cache)


def test_resolve_picks_wheels_for_the_target_python_not_the_host(cache: Path) -> None:
    # markupsafe ships compiled wheels per CPython: the cp310 one, on a 3.11 host.
    pins = resolve_wheels(["markupsafe==2.1.5"], python_version="3.10", cache_dir=cache)
    (pin,) = pins
    assert "-cp310-cp310-" in pin.filename and "manylinux" in pin.filename


def test_fetch_checks_hashes_and_caches_by_content(pins: list[WheelPin], cache: Path) -> None:
    files = fetch_wheels(pins, cache)
    assert [file.name for file in files] == [pin.filename for pin in pins]
    assert all(pin.sha256 in str(file) for pin, file in zip(pins, files, strict=True))
    # A cached file that was changed is not used: fetched again, and right again.
    files[0].write_bytes(b"tampered")
    again = fetch_wheels(pins, cache)
    assert again == files and again[0].read_bytes() != b"tampered"


def test_an_edited_hash_is_refused_naming_the_wheel(pins: list[WheelPin], cache: Path) -> None:
    pin = next(pin for pin in pins if pin.name == "iniconfig")
    edited = pin.model_copy(update={"sha256": "0" * 64})
    with pytest.raises(UserError, match=r"wheel iniconfig 2\.0\.0: the file at .* has sha256"):
        fetch_wheels([edited], cache)


def test_a_missing_file_is_refused_naming_the_wheel(pins: list[WheelPin], cache: Path) -> None:
    pin = next(pin for pin in pins if pin.name == "pluggy")
    gone = pin.model_copy(
        update={"url": pin.url.replace(pin.filename, "pluggy-0.0.0-py3-none-any.whl")}
    )
    gone = gone.model_copy(update={"sha256": "1" * 64})
    with pytest.raises(UserError, match=r"wheel pluggy 1\.5\.0 is no longer available"):
        fetch_wheels([gone], cache)


def test_wheelhouse_installs_offline_with_require_hashes(
    pins: list[WheelPin], cache: Path, tmp_path: Path
) -> None:
    house = wheelhouse(pins, cache, tmp_path / "house")
    assert sorted(p.name for p in house.iterdir()) == sorted(
        [pin.filename for pin in pins] + ["requirements.txt"]
    )
    assert (house / "requirements.txt").read_text() == hashed_requirements(pins)
    assert "pytest==8.3.3 --hash=sha256:" in hashed_requirements(pins)
    target = tmp_path / "target"
    args = ["--no-index", "--find-links", str(house), "--require-hashes", "--target", str(target)]
    env = {**os.environ, "PIP_CONFIG_FILE": os.devnull}
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            *args,
            "-r",
            str(house / "requirements.txt"),
        ],
        check=True,
        env={k: v for k, v in env.items() if k not in ("PIP_FIND_LINKS", "PIP_CONSTRAINT")},
    )
    assert (target / "pytest-8.3.3.dist-info").is_dir()


@pytest.mark.parametrize(
    ("requirements", "message"),
    [
        (["--index-url=http://x"], "not a Python requirement"),
        (["no-such-project-evalrepro-zz==1.0"], "cannot resolve the wheels"),
    ],
)
def test_bad_requirements_are_one_line_user_errors(
    requirements: list[str], message: str, cache: Path
) -> None:
    with pytest.raises(UserError, match=message) as caught:
        resolve_wheels(requirements, cache_dir=cache)
    assert "\n" not in str(caught.value)


def test_bad_python_version_is_a_user_error(cache: Path) -> None:
    with pytest.raises(UserError, match="not a CPython version"):
        resolve_wheels(["pytest"], python_version="3", cache_dir=cache)


def test_platform_tags_name_every_manylinux_up_to_glibc() -> None:
    tags = platform_tags("x86_64", (2, 36))
    assert tags[0] == "manylinux_2_36_x86_64" and "manylinux_2_17_x86_64" in tags
    assert tags[-3:] == ["manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"]


def test_markers_are_evaluated_for_the_target_python(cache: Path) -> None:
    # pytest needs exceptiongroup and tomli below 3.11 only.
    older = {
        pin.name for pin in resolve_wheels(["pytest==8.3.3"], python_version="3.9", cache_dir=cache)
    }
    newer = {
        pin.name
        for pin in resolve_wheels(["pytest==8.3.3"], python_version="3.11.2", cache_dir=cache)
    }
    assert {"exceptiongroup", "tomli"} <= older
    assert not {"exceptiongroup", "tomli"} & newer
