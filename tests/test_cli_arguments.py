"""The command line: a command's config overrides may stand anywhere among its options, as
a user types them; anything else argparse does not know is still refused."""

from __future__ import annotations

import pytest

from evalrepro.cli import parse


def test_overrides_after_an_option_are_overrides_too():
    args = parse(["run", "+experiment=demo", "--config-dir", "conf", "dataset.instance_ids=[a]"])
    assert args.overrides == ["+experiment=demo", "dataset.instance_ids=[a]"]
    assert str(args.config_dir) == "conf"
    args = parse(["validate", "--output", "v.jsonl", "+dataset=mine", "validation.repeats=5"])
    assert args.overrides == ["+dataset=mine", "validation.repeats=5"]


def test_an_unknown_option_or_a_stray_argument_is_refused(capsys):
    with pytest.raises(SystemExit) as exit_:
        parse(["run", "+experiment=demo", "--config-dir", "conf", "--bogus"])
    assert exit_.value.code == 2
    assert "unrecognized arguments: --bogus" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parse(["report", "runs/x", "extra"])
