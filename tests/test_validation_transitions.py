"""Validation's judgement of tests and instances, from the status maps of repeated runs
before and after the gold patch: the transitions SWE-bench names, flaky tests apart, and
the verdict that says why an instance can or cannot be resolved.
"""

from __future__ import annotations

from swebench.harness.constants import FAIL_TO_FAIL, FAIL_TO_PASS, PASS_TO_FAIL, PASS_TO_PASS
from swebench.harness.grading import get_eval_tests_report

from evalrepro.records.validation import RunFacts
from evalrepro.validation.transitions import transitions_of, validate_instance

P, F, S, E = "PASSED", "FAILED", "SKIPPED", "ERROR"


def runs(*maps: dict[str, str]) -> list[RunFacts]:
    return [RunFacts(status_map=m) for m in maps]


def kinds(before, after) -> dict[str, str]:
    return {t.test: t.transition for t in transitions_of(before, after)}


def test_each_test_gets_the_transition_its_two_sides_agree_on():
    before = [{"fixed": F, "kept": P, "broken": P, "dead": E, "skip": S}] * 3
    after = [{"fixed": P, "kept": P, "broken": F, "dead": F, "skip": S, "new": P}] * 3
    assert kinds(before, after) == {
        "fixed": "FAIL_TO_PASS",
        "kept": "PASS_TO_PASS",
        "broken": "PASS_TO_FAIL",
        "dead": "FAIL_TO_FAIL",
        "skip": "SKIPPED",
        # Absent before (its file did not import without the fix) is failing, as graded.
        "new": "FAIL_TO_PASS",
    }


def test_a_test_whose_repeats_disagree_is_flaky_with_its_pass_counts():
    before = [{"t": F, "u": F}, {"t": F, "u": F}, {"t": F, "u": F}]
    after = [{"t": P, "u": P}, {"t": F, "u": P}, {"t": P, "u": P}]
    (flaky, stable) = transitions_of(before, after)
    assert (flaky.transition, flaky.before_passed, flaky.after_passed) == ("flaky", 0, 2)
    assert stable.transition == "FAIL_TO_PASS"


def test_derived_lists_grade_as_swebench_grades_them():
    before = [{"a": F, "b": P, "c": P, "d": F, "e": S, "g[1]": E}] * 2
    after = [{"a": P, "b": P, "c": F, "d": F, "e": P, "g[1]": P}] * 2
    result = validate_instance("x", runs(*before), runs(*after))
    gold = {
        FAIL_TO_PASS: result.fail_to_pass,
        PASS_TO_PASS: result.pass_to_pass,
        FAIL_TO_FAIL: result.fail_to_fail,
        PASS_TO_FAIL: result.pass_to_fail,
    }
    # After the gold patch, SWE-bench's own report: every F2P and P2P test succeeds...
    report = get_eval_tests_report(after[0], gold, calculate_to_fail=True)
    assert report[FAIL_TO_PASS]["failure"] == [] and report[PASS_TO_PASS]["failure"] == []
    assert sorted(report[FAIL_TO_PASS]["success"]) == ["a", "e", "g[1]"]
    # ... and before it, every F2P test fails and every P2F test passes.
    report = get_eval_tests_report(before[0], gold, calculate_to_fail=True)
    assert report[FAIL_TO_PASS]["success"] == []
    assert report[PASS_TO_FAIL]["success"] == ["c"]


def test_verdicts_name_why_an_instance_cannot_be_resolved():
    ok = validate_instance("x", runs({"t": F}), runs({"t": P}))
    assert (ok.verdict, ok.fail_to_pass) == ("valid", ["t"])
    nothing = validate_instance("x", runs({"t": P}), runs({"t": P}))
    assert nothing.verdict == "no_fail_to_pass" and nothing.pass_to_pass == ["t"]
    breaks = validate_instance("x", runs({"t": F, "u": P}), runs({"t": P, "u": F}))
    assert breaks.verdict == "gold_breaks_tests" and "u" in breaks.detail
    flaky = validate_instance("x", runs({"t": F, "u": P}, {"t": F, "u": F}), runs(*[{"t": P}] * 2))
    assert (flaky.verdict, flaky.flaky, flaky.fail_to_pass) == ("flaky_tests", ["u"], ["t"])
    broken = RunFacts(status_map={}, ran=False, problem="the tests did not start: no module x")
    down = validate_instance("x", runs({"t": F}), [broken])
    assert down.verdict == "tests_not_run" and "no module x" in down.detail
    nothing_passes = validate_instance("x", runs({"tests/t.py": E}), runs({"tests/t.py": E}))
    assert nothing_passes.verdict == "tests_not_run" and "tests/t.py" in nothing_passes.detail
    garbled = RunFacts(status_map={}, parsed=False, problem="no markers")
    assert validate_instance("x", [garbled], runs({"t": P})).verdict == "log_unparseable"


def test_every_disagreement_with_the_declared_lists_is_listed():
    result = validate_instance(
        "x",
        runs({"a": F, "b": P, "c": F}),
        runs({"a": P, "b": P, "c": P}),
        declared=(["a", "b"], ["gone"]),
    )
    assert result.disagreements == [
        "FAIL_TO_PASS declares b: derived PASS_TO_PASS",
        "PASS_TO_PASS declares gone: derived not reported by any run",
        "derived FAIL_TO_PASS c: the dataset lists it in neither",
    ]


def test_a_run_that_applies_no_patch_is_given_none():
    from evalrepro.records.testspec import ResolvedProtection
    from evalrepro.run.patchcheck import check_patch

    protection = ResolvedProtection(policy="restore", suspect="invalid", patterns=[], test_dirs=[])
    assert check_patch(b"", protection, without_patch=True).problem is None
    refused = check_patch(b"diff --git a/x b/x\n", protection, without_patch=True).problem
    assert refused is not None and refused.startswith("unsafe:")
    # Anywhere else, an empty patch is the target's (empty) answer, as before.
    assert check_patch(b"", protection).problem == "empty"


def test_the_html_report_shows_test_ids_from_logs_as_text_only():
    from evalrepro.records.validation import ValidationReport
    from evalrepro.report.validation import validation_html

    hostile = "<script>alert(1)</script>"
    instance = validate_instance("x", runs({hostile: P}, {hostile: F}), runs({hostile: P}))
    report = ValidationReport(
        dataset="d",
        repeats=2,
        before_lockfile="",
        after_lockfile="",
        harness_version="0",
        instances=[instance],
    )
    page = validation_html(report)
    assert hostile not in page and "&lt;script&gt;" in page
