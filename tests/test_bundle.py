"""Result bundles: `evalrepro bundle RUN` writes one archive that `verify BUNDLE` checks
offline, by the check that each kind of tampering breaks.

The run is the demo's gold run with the fake backend (tests/fake_backend.py: only the
container is scripted; the plan, grading, records and reports are the real code). The
same with real podman, images and reproduction: tests/test_reproduce.py.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import bagit
import pytest
from rich.console import Console

from evalrepro.cli import main
from evalrepro.config.experiment import compose
from evalrepro.digest import sha256_bytes
from evalrepro.errors import UserError
from evalrepro.pipeline import run_experiment
from evalrepro.publish.bundle import open_bundle, write_bundle
from evalrepro.publish.bundle_verify import check_bundle, print_bundle_check
from evalrepro.sample import load_samples
from tests.fake_backend import fake_backend, gold_scenario


def quiet() -> Console:
    return Console(file=open(os.devnull, "w"), width=120)


@pytest.fixture(scope="module")
def gold_run(tmp_path_factory) -> Path:
    """The demo's gold run, 12 resolved trials, in a folder of its own name."""
    root = tmp_path_factory.mktemp("gold")
    config = compose(["+experiment=demo"])
    samples = {s.instance_id: s for s in load_samples(Path(config.dataset.instances))}
    run_experiment(
        config,
        quiet(),
        run_dir=root / "demo-gold",
        cache_dir=root / "cache",
        backend=fake_backend(gold_scenario(samples)),
    )
    return root / "demo-gold"


@pytest.fixture(scope="module")
def bundle(gold_run, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bundle") / "demo-gold.bundle.tar.gz"
    write_bundle(gold_run, out)
    return out


@pytest.fixture
def unpacked(bundle, tmp_path) -> Path:
    """The bundle unpacked into a folder a test may edit: its bag's root."""
    with tarfile.open(bundle) as tar:
        tar.extractall(tmp_path)  # our own archive, not a hostile one
    return tmp_path / "demo-gold"


def rebag(bag: Path) -> None:
    """What an adversary who knows the format does after an edit: new manifests."""
    cwd = os.getcwd()
    try:
        bagit.Bag(str(bag)).save(manifests=True)
    finally:
        os.chdir(cwd)


def kinds(path: Path, **kwargs) -> set[str]:
    return {problem.kind for problem in check_bundle(path, **kwargs).problems}


# --- writing -------------------------------------------------------------------------


def test_the_same_run_bundles_to_the_same_bytes_wherever_it_lies(gold_run, bundle, tmp_path):
    again = tmp_path / "again.tar.gz"
    write_bundle(gold_run, again)
    assert again.read_bytes() == bundle.read_bytes()
    # A copy of the run elsewhere (other path, other file times) gives the same bytes too.
    copy = tmp_path / "elsewhere" / gold_run.name
    shutil.copytree(gold_run, copy)
    for path in copy.rglob("*"):
        os.utime(path, (1, 1), follow_symlinks=False)
    elsewhere = tmp_path / "elsewhere.tar.gz"
    write_bundle(copy, elsewhere)
    assert elsewhere.read_bytes() == bundle.read_bytes()


def test_the_archive_names_no_time_owner_or_mode_and_stores_identical_files_once(bundle):
    raw = bundle.read_bytes()
    assert raw[:2] == b"\x1f\x8b" and raw[4:8] == b"\0\0\0\0"  # gzip: no mtime
    assert raw[3] & 0x08 == 0  # gzip: no file name
    with tarfile.open(bundle) as tar:
        members = tar.getmembers()
    names = [m.name for m in members if not m.isdir()]
    assert names == sorted(names)
    assert {(m.mtime, m.uid, m.gid, m.uname, m.gname) for m in members} == {(0, 0, 0, "", "")}
    assert {m.mode for m in members if m.isdir()} == {0o755}
    assert {m.mode for m in members if not m.isdir()} == {0o644}
    links = [m for m in members if m.islnk()]
    # The swebench/ layout repeats every trial's log and patch: stored once, as links.
    assert any("/swebench/" in m.linkname and "/trials/" in m.name for m in links)
    assert all(m.linkname in names and names.index(m.linkname) < names.index(m.name) for m in links)


def test_a_bundle_holds_the_run_its_reports_viewer_inputs_and_standard_metadata(bundle):
    with open_bundle(bundle) as opened:
        data = opened.data
        for path in (
            "run/lockfile.lock.json",
            "run/results.json",
            "run/images/builds.json",
            "reports/report.json",
            "reports/report.md",
            "reports/report.html",
            "view/index.html",
            "bundle.json",
            "attestation.intoto.json",
            "ro-crate-metadata.json",
        ):
            assert (data / path).is_file(), path
        # The run's files, whatever they are: the lockfile holds the config (no config.json).
        assert not (data / "run" / "config.json").exists()
        assert len(list((data / "run" / "trials").iterdir())) == 12
        index = opened.index()
        [dataset] = [item for item in index.inputs if item.role == "dataset"]
        stored = data / dataset.path
        assert dataset.path == f"inputs/{dataset.sha256}/instances.jsonl"
        assert sha256_bytes(stored.read_bytes()) == f"sha256:{dataset.sha256}"
        statement = json.loads((data / "attestation.intoto.json").read_text())
        assert statement["predicateType"] == "https://in-toto.io/attestation/test-result/v0.1"
        assert statement["predicate"]["result"] == "PASSED"
        assert len(statement["predicate"]["passedTests"]) == 12
        crate = json.loads((data / "ro-crate-metadata.json").read_text())
        action = next(e for e in crate["@graph"] if e.get("@type") == "CreateAction")
        assert action["instrument"]
        assert (opened.bag / "manifest-sha256.txt").is_file()


def test_a_run_that_does_not_verify_is_not_bundled(gold_run, tmp_path):
    broken = tmp_path / gold_run.name
    shutil.copytree(gold_run, broken)
    log = next(broken.glob("trials/*/attempt-1/test_output.txt"))
    log.write_bytes(log.read_bytes() + b"x")
    with pytest.raises(UserError, match=r"verify finds .* a bundle is made from a run that"):
        write_bundle(broken, tmp_path / "b.tar.gz")
    assert not (tmp_path / "b.tar.gz").exists()


# --- verifying -------------------------------------------------------------------------


def test_a_bundle_verifies_with_neither_podman_nor_nix_on_the_path(bundle, tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "evalrepro", "verify", str(bundle)],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": str(empty)},
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok:" in done.stdout and "12 logs re-graded" in done.stdout


def test_the_crates_profiles_are_validated_when_asked_once_per_crate(unpacked, tmp_path):
    import evalrepro.publish.crate as crate

    default = check_bundle(unpacked)
    assert default.ok and any("profiles were not validated" in n for n in default.notes)
    assert list(default.seconds)[:2] == ["checksums", "signature"]  # each check timed
    cache = tmp_path / "cache"
    asked = check_bundle(unpacked, profiles=True, cache_dir=cache)
    assert asked.ok and not any("profiles" in n for n in asked.notes)
    (kept,) = (cache / "ro-crate").glob("*.json")
    assert json.loads(kept.read_text()) == []
    calls = []
    validate = crate._validate_all
    crate._validate_all = lambda root: calls.append(root) or validate(root)
    try:
        assert check_bundle(unpacked, profiles=True, cache_dir=cache).ok
        assert calls == []  # the kept answer: the validator did not run again
        # A crate whose metadata changed is another crate: validated again, and refused.
        metadata = unpacked / "data" / "ro-crate-metadata.json"
        graph = json.loads(metadata.read_text())
        graph["@context"] = "https://example.invalid/not-ro-crate"
        metadata.write_text(json.dumps(graph))
        again = check_bundle(unpacked, profiles=True, cache_dir=cache)
        assert len(calls) == 1 and "crate" in {p.kind for p in again.problems}
    finally:
        crate._validate_all = validate


def test_an_unpacked_bundle_verifies_as_the_archive_does(unpacked):
    check = check_bundle(unpacked)
    assert check.problems == []
    assert (check.planned, check.checked, check.regraded) == (12, 12, 12)
    assert check_bundle(unpacked.parent).ok  # the folder the archive was unpacked into


def _log(bag: Path) -> Path:
    return sorted(bag.glob("data/run/trials/*/attempt-1/test_output.txt"))[0]


def change_a_log_byte(bag: Path) -> None:
    log = _log(bag)
    data = bytearray(log.read_bytes())
    data[len(data) // 2] ^= 0x01
    log.write_bytes(bytes(data))


def remove_a_trial(bag: Path) -> None:
    shutil.rmtree(_log(bag).parent.parent)


def edit_a_result_consistently_with_its_log(bag: Path) -> None:
    """The log changed, and every digest the trial's records hold of it changed to match:
    the run alone cannot tell. The bundle's statement and crate still hold the old one."""
    log = _log(bag)
    old = sha256_bytes(log.read_bytes())
    log.write_bytes(log.read_bytes() + b"\n")
    new = sha256_bytes(log.read_bytes())
    for record in (log.parent / "result.json", log.parent.parent / "result.json"):
        record.write_text(record.read_text().replace(old, new))


def edit_a_reported_number(bag: Path) -> None:
    report = bag / "data" / "reports" / "report.json"
    data = json.loads(report.read_text())
    data["metrics"]["resolved"] = data["metrics"].get("resolved", 0) + 1
    report.write_text(json.dumps(data, indent=2) + "\n")


def edit_the_lockfile(bag: Path) -> None:
    lockfile = bag / "data" / "run" / "lockfile.lock.json"
    data = json.loads(lockfile.read_text())
    data["environment"]["timeout"] = 3600
    lockfile.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def add_a_file(bag: Path) -> None:
    (_log(bag).parent / "extra.txt").write_text("not recorded\n")


TAMPERING = {
    # edit: (the check that catches it once the manifests are rewritten to match)
    change_a_log_byte: "artifact",
    remove_a_trial: "missing",
    edit_a_result_consistently_with_its_log: "attestation",
    edit_a_reported_number: "report",
    edit_the_lockfile: "lockfile",
    add_a_file: "attestation",
}


@pytest.mark.parametrize("tamper", TAMPERING, ids=lambda f: f.__name__)
def test_tampering_is_caught_by_the_checksums(unpacked, tamper):
    tamper(unpacked)
    assert "checksum" in kinds(unpacked)


@pytest.mark.parametrize("tamper", TAMPERING, ids=lambda f: f.__name__)
def test_tampering_with_rewritten_manifests_is_caught_by_the_check_it_breaks(unpacked, tamper):
    tamper(unpacked)
    rebag(unpacked)
    found = kinds(unpacked)
    assert "checksum" not in found
    assert TAMPERING[tamper] in found, found


#: Each single edit: the check and the words of the line that must lead its problems
#: (with the manifests rewritten, the statement's line leads instead of the manifest's).
LEADS = {
    change_a_log_byte: ("checksum", "run/trials/", "/attempt-1/test_output.txt: sha256"),
    remove_a_trial: ("missing", "run/trials/", ": missing from the bundle (no result.json)"),
    edit_a_result_consistently_with_its_log: ("checksum", "attempt-1/test_output.txt: sha256"),
    edit_a_reported_number: ("checksum", "reports/report.json: sha256"),
    edit_the_lockfile: ("checksum", "run/lockfile.lock.json: sha256"),
    add_a_file: ("checksum", "attempt-1/extra.txt: "),
}


@pytest.mark.parametrize("rebagged", [False, True], ids=["edited", "manifests-rewritten"])
@pytest.mark.parametrize("tamper", TAMPERING, ids=lambda f: f.__name__)
def test_one_edit_is_one_cause_that_leads_the_problems_following_from_it(
    unpacked, tamper, rebagged, capsys
):
    tamper(unpacked)
    if rebagged:
        rebag(unpacked)
    check = check_bundle(unpacked)
    [cause] = check.causes
    kind, *words = LEADS[tamper]
    if rebagged and kind == "checksum":
        kind = "attestation"
    assert cause.lead is not None and cause.lead.kind == kind, cause.lead
    assert all(word in cause.lead.detail for word in words), cause.lead.detail
    assert check.problems == [cause.lead, *cause.follow]
    # Nothing names the folder the bundle was unpacked into, nor a temporary one.
    for problem in check.problems:
        assert str(unpacked) not in problem.detail and tempfile.gettempdir() not in problem.detail
        assert "did not finish" not in problem.detail
    assert main(["verify", "--json", str(unpacked)]) == 1
    [listed] = json.loads(capsys.readouterr().out)["causes"]
    assert listed["lead"] == cause.lead.model_dump() and len(listed["follow"]) == len(cause.follow)
    console = Console(record=True, width=400)
    print_bundle_check(console, check)
    text = console.export_text()
    assert text.index(cause.lead.detail) < text.index(f"{len(cause.follow)} problem")
    assert f"{len(check.problems)} problems from 1 edit" in text or len(check.problems) == 1


def test_a_size_change_bagits_payload_oxum_catches_first_names_the_file(unpacked):
    log = _log(unpacked)
    log.write_bytes(log.read_bytes() + b"one more line\n")
    details = [p.detail for p in check_bundle(unpacked).problems if p.kind == "checksum"]
    relative = log.relative_to(unpacked).as_posix()
    assert any(d.startswith(f"{relative}: sha256 ") for d in details), details
    assert not any("Payload-Oxum" in d for d in details)


def test_a_trial_missing_from_an_archived_bundle_names_no_temporary_folder(unpacked, tmp_path):
    remove_a_trial(unpacked)  # the first trial
    other = sorted(unpacked.glob("data/run/trials/*/attempt-1/test_output.txt"))[0]
    other.write_bytes(other.read_bytes().replace(b"PASSED", b"FAILED", 1))
    rebag(unpacked)
    archived = tmp_path / "edited.tar.gz"
    with tarfile.open(archived, "w:gz") as tar:
        tar.add(unpacked, arcname=unpacked.name)
    check = check_bundle(archived)
    assert len([c for c in check.causes if c.lead is not None]) == 2
    assert any(
        p.detail.endswith("missing from the bundle (no result.json)") for p in check.problems
    )
    for problem in check.problems:
        assert tempfile.gettempdir() not in problem.detail, problem.detail


def test_a_lockfile_edit_is_named_by_its_digests(unpacked):
    edit_the_lockfile(unpacked)
    rebag(unpacked)
    details = [p.detail for p in check_bundle(unpacked).problems if p.kind == "lockfile"]
    assert any("bundle's index recorded" in d for d in details)
    assert any("environment.timeout 3600 but the config says 30" in d for d in details)


def test_each_problem_is_one_line_and_the_exit_code_is_one(unpacked, capsys):
    change_a_log_byte(unpacked)
    assert main(["verify", "--json", str(unpacked)]) == 1
    payload = json.loads(capsys.readouterr().out)
    assert not payload["ok"]
    assert all("\n" not in p["detail"] for p in payload["problems"])


# --- signing -----------------------------------------------------------------------------


def ssh_key(folder: Path, name: str) -> tuple[Path, Path]:
    """A fresh ed25519 key and an allowed-signers file naming it for bundles."""
    key = folder / name
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(key)], check=True
    )
    allowed = folder / f"{name}.allowed"
    public = (folder / f"{name}.pub").read_text().split()
    allowed.write_text(
        f'{name}@example.org namespaces="evalrepro-bundle" {public[0]} {public[1]}\n'
    )
    return key, allowed


def test_a_signed_bundle_verifies_against_its_signer_and_not_another(gold_run, tmp_path):
    key, allowed = ssh_key(tmp_path, "author")
    _, stranger = ssh_key(tmp_path, "stranger")
    signed = tmp_path / "signed.tar.gz"
    write_bundle(gold_run, signed, sign_key=key)
    check = check_bundle(signed, allowed_signers=allowed)
    assert check.ok, check.problems
    assert check.signer == "author@example.org"
    assert kinds(signed, allowed_signers=stranger) == {"signature"}
    # Without a trust anchor, the signature is noted, not taken as proof.
    assert check_bundle(signed).notes and check_bundle(signed).ok


def test_a_signed_bundle_rewritten_after_an_edit_fails_its_signature(gold_run, tmp_path):
    key, allowed = ssh_key(tmp_path, "author")
    signed = tmp_path / "signed.tar.gz"
    write_bundle(gold_run, signed, sign_key=key)
    with tarfile.open(signed) as tar:
        tar.extractall(tmp_path / "x")
    bag = tmp_path / "x" / gold_run.name
    edit_a_reported_number(bag)
    rebag(bag)
    assert "signature" in kinds(bag, allowed_signers=allowed)


def unpack(archive: Path, into: Path) -> Path:
    with tarfile.open(archive) as tar:
        tar.extractall(into)  # our own archive, not a hostile one
    [bag] = into.iterdir()
    return bag


def test_a_signed_bundles_statement_is_a_dsse_envelope_in_totos_tooling_verifies(
    gold_run, tmp_path
):
    from cryptography.hazmat.primitives.serialization import load_ssh_public_key
    from in_toto.models.metadata import Envelope, Metadata, SignatureVerificationError
    from securesystemslib.signer import SSlibKey

    key, allowed = ssh_key(tmp_path, "author")
    stranger, _ = ssh_key(tmp_path, "stranger")
    signed = tmp_path / "signed.tar.gz"
    write_bundle(gold_run, signed, sign_key=key)
    bag = unpack(signed, tmp_path / "x")
    path = bag / "data" / "attestation.intoto.jsonl"
    envelope = Metadata.load(str(path))  # in-toto's own reader
    assert isinstance(envelope, Envelope)
    assert envelope.payload_type == "application/vnd.in-toto+json"
    assert envelope.payload == (bag / "data" / "attestation.intoto.json").read_bytes()

    def public(name: Path) -> dict:
        ssl = SSlibKey.from_crypto(load_ssh_public_key(Path(f"{name}.pub").read_bytes()))
        return {**ssl.to_dict(), "keyid": ssl.keyid}

    envelope.verify_signature(public(key))  # raises unless the author's key signed it
    with pytest.raises(SignatureVerificationError):
        envelope.verify_signature(public(stranger))
    # Listed in the manifest and described by the crate; the index names it.
    assert "data/attestation.intoto.jsonl" in (bag / "manifest-sha256.txt").read_text()
    assert json.loads((bag / "data" / "bundle.json").read_text())["envelope"] == (
        "attestation.intoto.jsonl"
    )
    check = check_bundle(bag, allowed_signers=allowed)
    assert check.ok, check.problems
    assert check.signer == "author@example.org"


def _resign_statement(bag: Path) -> None:
    """The statement edited (one test now failed) and the envelope's payload with it; the
    signature kept, the manifests rewritten."""
    import base64

    statement_file = bag / "data" / "attestation.intoto.json"
    statement = json.loads(statement_file.read_text())
    statement["predicate"]["failedTests"] = statement["predicate"]["passedTests"][:1]
    statement_file.write_text(json.dumps(statement, indent=2, sort_keys=True) + "\n")
    path = bag / "data" / "attestation.intoto.jsonl"
    envelope = json.loads(path.read_text())
    envelope["payload"] = base64.b64encode(statement_file.read_bytes()).decode()
    path.write_text(json.dumps(envelope) + "\n")


def _strip_envelope(bag: Path) -> None:
    (bag / "data" / "attestation.intoto.jsonl").unlink()


def _envelope_by_another_key(bag: Path) -> None:
    from securesystemslib.signer import CryptoSigner

    from evalrepro.publish.signing import sign_statement

    key = CryptoSigner.generate_ed25519()
    statement = (bag / "data" / "attestation.intoto.json").read_bytes()
    path = bag / "data" / "attestation.intoto.jsonl"
    path.write_text(json.dumps(sign_statement(statement, key)) + "\n")


@pytest.mark.parametrize("tamper", [_resign_statement, _strip_envelope, _envelope_by_another_key])
def test_a_tampered_envelope_is_refused(gold_run, tmp_path, tamper):
    key, allowed = ssh_key(tmp_path, "author")
    signed = tmp_path / "signed.tar.gz"
    write_bundle(gold_run, signed, sign_key=key)
    bag = unpack(signed, tmp_path / "x")
    tamper(bag)
    rebag(bag)
    # The tag manifest's SSH signature fails too (the manifests changed): the envelope's
    # own check is what names it.
    details = [p.detail for p in check_bundle(bag, allowed_signers=allowed).problems]
    assert any(d.startswith("attestation.intoto.jsonl: ") for d in details), details


def test_a_key_that_cannot_sign_is_one_line_before_any_work(gold_run, tmp_path, capsys):
    junk = tmp_path / "key"
    junk.write_text("not a key\n")
    out = tmp_path / "b.tar.gz"
    assert main(["bundle", str(gold_run), "-o", str(out), "--sign", str(junk)]) == 2
    err = capsys.readouterr().err
    assert "--sign" in err and "private key" in err and err.count("\n") == 1
    assert "://" not in err  # the key library's web pointers are not ours to print
    locked = tmp_path / "locked"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "secret", "-f", str(locked)], check=True
    )
    assert main(["bundle", str(gold_run), "-o", str(out), "--sign", str(locked)]) == 2
    err = capsys.readouterr().err
    assert "passphrase" in err and err.count("\n") == 1
    assert not out.exists()


def readme_commands(bag: Path) -> list[str]:
    return [
        line.strip().removeprefix("$ ")
        for line in (bag / "data" / "README.txt").read_text().splitlines()
        if line.strip().startswith("$ ")
    ]


def test_the_readme_tells_a_reviewer_without_evalrepro_how_to_check_with_plain_tools(
    gold_run, tmp_path
):
    key, allowed = ssh_key(tmp_path, "author")
    signed = tmp_path / "signed.tar.gz"
    write_bundle(gold_run, signed, sign_key=key)
    bag = unpack(signed, tmp_path / "x")
    readme = (bag / "data" / "README.txt").read_text()
    assert "  data/README.txt\n" in (bag / "manifest-sha256.txt").read_text()
    # Facts from the records: the report's counts, the lockfile's digest, the key.
    assert "12 trials on demo, 12 resolved" in readme
    lockfile = bag / "data" / "run" / "lockfile.lock.json"
    assert sha256_bytes(lockfile.read_bytes()).removeprefix("sha256:") in readme
    fingerprint = subprocess.run(
        ["ssh-keygen", "-l", "-f", f"{key}.pub"], capture_output=True, text=True, check=True
    ).stdout.split()[1]
    assert fingerprint in readme
    commands = readme_commands(bag)
    assert [c.split()[0] for c in commands] == ["bagit.py", "sha256sum", "sha256sum", "ssh-keygen"]
    # The commands as written, with the author's published name and allowed-signers file.
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}

    def run(command: str) -> int:
        command = command.replace("-I AUTHOR", "-I author@example.org")
        command = command.replace("-f allowed_signers", f"-f {allowed}")
        return subprocess.run(
            command, shell=True, cwd=bag, env=env, capture_output=True, check=False
        ).returncode

    assert [run(c) for c in commands] == [0, 0, 0, 0]
    change_a_log_byte(bag)
    assert [run(c) for c in commands] == [1, 1, 0, 0]  # the manifest catches it
    rebag(bag)
    assert [run(c) for c in commands] == [0, 0, 0, 255]  # the signature then does


def test_an_unsigned_bundles_readme_says_so(bundle, tmp_path):
    bag = unpack(bundle, tmp_path / "x")
    assert "The bundle is not signed." in (bag / "data" / "README.txt").read_text()
    assert [c.split()[0] for c in readme_commands(bag)] == ["bagit.py", "sha256sum", "sha256sum"]


def test_an_unsigned_bundle_fails_when_a_signer_is_required(bundle, tmp_path):
    _, allowed = ssh_key(tmp_path, "author")
    assert kinds(bundle, allowed_signers=allowed) == {"signature"}


# --- hostile archives --------------------------------------------------------------------


def archive(tmp_path: Path, *members: tuple[tarfile.TarInfo, bytes]) -> Path:
    out = tmp_path / "hostile.tar.gz"
    with tarfile.open(out, "w:gz") as tar:
        for info, data in members:
            info.size = len(data) if info.isreg() else 0
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return out


def member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    return info


@pytest.mark.parametrize(
    ("members", "says"),
    [
        ([(member("b/../../etc/x"), b"x")], "outside"),
        ([(member("/abs/x"), b"x")], "outside"),
        ([(member("b/link", tarfile.SYMTYPE, "/etc/passwd"), b"")], "symbolic link"),
        ([(member("b/fifo", tarfile.FIFOTYPE), b"")], "special file"),
        ([(member("b/x"), b"1"), (member("b/x"), b"2")], "twice"),
        ([(member("b/h", tarfile.LNKTYPE, "/etc/passwd"), b"")], "hard link"),
    ],
    ids=["dotdot", "absolute", "symlink", "fifo", "twice", "hardlink-out"],
)
def test_a_hostile_archive_is_refused_in_one_line_before_anything_is_written(
    tmp_path, capsys, members, says
):
    hostile = archive(tmp_path, *members)
    assert main(["verify", str(hostile)]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1


def test_not_a_bundle_is_one_line(tmp_path, capsys):
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(gzip.compress(b"not a tar at all" * 100))
    assert main(["verify", str(junk)]) == 2
    assert capsys.readouterr().err.count("\n") == 1


# --- commands that read runs read bundles ------------------------------------------------


def test_report_compare_verify_and_view_accept_a_bundle(gold_run, bundle, tmp_path, capsys):
    assert main(["report", "--json", str(bundle)]) == 0
    from_bundle = json.loads(capsys.readouterr().out)
    assert main(["report", "--json", str(gold_run)]) == 0
    from_run = json.loads(capsys.readouterr().out)
    assert from_bundle["metrics"] == from_run["metrics"]
    assert from_bundle["run"] == str(bundle)
    assert main(["verify", str(bundle), str(gold_run)]) == 0
    assert "comparable" in capsys.readouterr().out
    assert main(["compare", "--json", "--n-resamples", "200", str(bundle), str(gold_run)]) == 0
    [pair] = json.loads(capsys.readouterr().out)["pairs"]
    assert pair["comparable"] and pair["a_path"] == str(bundle)
    assert main(["view", str(bundle), "--output", str(tmp_path / "site")]) == 0
    assert (tmp_path / "site" / "index.html").is_file()
    assert main(["report", str(bundle), "--html", str(tmp_path / "r.html")]) == 0
    assert (tmp_path / "r-view" / "index.html").is_file()


def test_problems_full_of_markup_print_as_text(tmp_path):
    from evalrepro.publish.bundle_verify import BundleCheck, print_bundle_check

    check = BundleCheck(run=tmp_path / "b[/]x.tar.gz", signer="[bold]me[/]")
    check.add("artifact", "trials/t[/tmp/a]/attempt-1/test_output.txt: [red]changed[/]")
    console = Console(record=True, width=300)
    print_bundle_check(console, check)
    text = console.export_text()
    assert "t[/tmp/a]/attempt-1/test_output.txt: [red]changed[/]" in text
    assert "b[/]x.tar.gz" in text


def test_a_missing_allowed_signers_file_is_one_line(bundle, tmp_path, capsys):
    assert main(["verify", str(bundle), "--allowed-signers", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err
    assert "--allowed-signers" in err and "no such file" in err and err.count("\n") == 1


@pytest.mark.parametrize("name", ["download", "demo-gold.bundle", "demo-gold.gz"])
def test_a_bundle_is_told_by_its_content_whatever_its_name(bundle, tmp_path, capsys, name):
    renamed = tmp_path / name
    shutil.copyfile(bundle, renamed)
    assert main(["verify", str(renamed)]) == 0
    out = capsys.readouterr().out
    assert "not a run directory" not in out and "ok:" in out
    assert main(["report", "--json", str(renamed)]) == 0
    assert json.loads(capsys.readouterr().out)["metrics"]["resolved"] == 12
    # A plain file that is no archive is still a run directory that is not one.
    (tmp_path / "notes").write_text("not an archive\n")
    assert main(["verify", str(tmp_path / "notes")]) == 2
    assert "not a run directory" in capsys.readouterr().err
