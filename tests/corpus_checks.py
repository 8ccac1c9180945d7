"""The checks every runner's corpus log goes through, written once.

Each ``tests/test_parsers_<runner>.py`` runs them on its committed logs and on a fresh
run (``live``); where a runner's check really differs (pytest's JUnit comparisons and
folded skips, mocha's count check in place of a native parser), the difference stays
in that runner's file.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from evalrepro.grade.parsers import LogParser, ParsedLog, get_parser
from tests.corpus import CorpusLog
from tests.reference import swebench_status_map

#: What a FAIL_ONLY runner's log can show: the only statuses its truth is compared on.
FAIL_ONLY_SHOWN = frozenset({"FAILED", "ERROR", "XPASS"})


def truth_shown_to(parser: LogParser, truth: Mapping[str, str]) -> dict[str, str]:
    """The part of a runner's ``truth`` that ``parser`` can see in the log: all of it, or
    for a FAIL_ONLY parser (the runner prints only its failures) the failures."""
    if parser.fail_only:
        return {key: value for key, value in truth.items() if value in FAIL_ONLY_SHOWN}
    return dict(truth)


def compat_parse(name: str, text: str) -> ParsedLog:
    """Parse with compat parser ``name``, asserting on the way that it equals swebench."""
    parsed = get_parser(name).parse(text)
    assert parsed.statuses == swebench_status_map(name, text)
    return parsed


def assert_compat_parser_matches_swebench(log: CorpusLog, name: str) -> None:
    assert name not in log.known_differences
    assert get_parser(name).parse(log.text).statuses == swebench_status_map(name, log.text)


def assert_compat_matches_swebench(log: CorpusLog) -> None:
    """Every compat parser listed for ``log`` returns exactly swebench's map."""
    for name in log.compat:
        assert_compat_parser_matches_swebench(log, name)


def assert_native_matches_truth(log: CorpusLog) -> None:
    """The native parser returns the runner's truth (what it can show of it), with no
    problem; or, where the log forges result lines (its named difference), every real
    test still right, the invented ones extra, and problems that make it unscorable."""
    assert log.native is not None and log.truth is not None
    parser = get_parser(log.native)
    parsed = parser.parse(log.text)
    truth = truth_shown_to(parser, log.truth)
    assert parsed.suite_ran
    if log.native in log.known_differences:
        assert parsed.problems
        assert set(parsed.statuses) > set(truth)
        assert {key: parsed.statuses[key] for key in truth} == truth
    else:
        assert parsed.statuses == truth
        assert parsed.problems == ()


def live_logs_fixture(
    runner: str,
    produce: Callable[[Path], list[CorpusLog]],
    unavailable: Callable[[], str | None] = lambda: None,
) -> Callable[..., dict[str, CorpusLog]]:
    """The module's ``live_logs`` fixture: a fresh run of ``runner``'s cases, by case name;
    skipped with the reason ``unavailable`` returns when the runner cannot run here."""

    @pytest.fixture(scope="module", name="live_logs")
    def live_logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, CorpusLog]:
        reason = unavailable()
        if reason:
            pytest.skip(reason)
        return {log.case: log for log in produce(tmp_path_factory.mktemp(runner))}

    return live_logs
