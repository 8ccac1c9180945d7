"""Test-level judgement follows SWE-bench v5 (semantics.md, "Grading")."""

import pytest

from evalrepro.grade import grading
from evalrepro.grade.grading import resolve_key
from evalrepro.records.observation import Resolution


def report(statuses, f2p=(), p2p=(), fail_only=False):
    return grading.tests_report(statuses, list(f2p), list(p2p), fail_only=fail_only)


@pytest.mark.parametrize("status", ["PASSED", "XFAIL", "XPASS"])
def test_a_fail_to_pass_test_passes_when_it_passed_or_xfailed_or_xpassed(status):
    assert report({"t": status}, f2p=["t"]).fail_to_pass.success == ["t"]


@pytest.mark.parametrize("status", ["FAILED", "ERROR", "SKIPPED"])
def test_a_fail_to_pass_test_fails_when_failed_errored_or_skipped(status):
    # SKIPPED: a patch that makes every F2P test skip must not resolve (SWE-bench v5).
    assert report({"t": status}, f2p=["t"]).fail_to_pass.failure == ["t"]


def test_a_test_missing_from_the_log_counts_as_failed():
    result = report({"other": "PASSED"}, f2p=["t"], p2p=["u"])
    assert result.fail_to_pass.failure == ["t"]
    assert result.pass_to_pass.failure == ["u"]


def test_a_skipped_pass_to_pass_test_is_maintained_a_skip_is_not_a_regression():
    assert report({"t": "SKIPPED"}, p2p=["t"]).pass_to_pass.success == ["t"]


def test_empty_lists_count_as_all_passed():
    assert report({}, f2p=[], p2p=[]).resolution is Resolution.FULL


def test_full_partial_and_no_resolution():
    statuses = {"a": "PASSED", "b": "FAILED", "p": "PASSED", "q": "FAILED"}
    assert report(statuses, f2p=["a"], p2p=["p"]).resolution is Resolution.FULL
    assert report(statuses, f2p=["a", "b"], p2p=["p"]).resolution is Resolution.PARTIAL
    assert report(statuses, f2p=["b"], p2p=["p"]).resolution is Resolution.NO
    # Breaking one PASS_TO_PASS test is never a resolution, however many F2P pass.
    assert report(statuses, f2p=["a"], p2p=["p", "q"]).resolution is Resolution.NO
    assert report(statuses, f2p=["a", "b"], p2p=["q"]).resolution is Resolution.NO


def test_a_truncated_parametrized_id_matches_when_all_candidates_agree():
    # SWE-bench issue 290: dataset ids cut mid-parameter, e.g. "test_x[log(photon"
    statuses = {"test_x[log(photon)]": "PASSED", "test_x[log(photon) 2]": "XFAIL"}
    assert resolve_key("test_x[log(photon", statuses) == "test_x[log(photon)]"
    assert report(statuses, f2p=["test_x[log(photon"]).resolution is Resolution.FULL


def test_a_truncated_id_whose_candidates_disagree_matches_nothing():
    statuses = {"test_x[a b]": "PASSED", "test_x[a c]": "FAILED"}
    assert resolve_key("test_x[a", statuses) is None
    assert report(statuses, f2p=["test_x[a"]).fail_to_pass.failure == ["test_x[a"]


def test_a_complete_id_never_prefix_matches():
    assert resolve_key("test_x", {"test_x_and_more": "PASSED"}) is None
    assert resolve_key("test_x[1]", {"test_x[1]-extra": "PASSED"}) is None


def test_fail_only_runners_pass_every_test_that_is_not_explicitly_failed():
    result = report({"b": "FAILED", "c": "ERROR"}, f2p=["a", "b"], p2p=["c"], fail_only=True)
    assert result.fail_to_pass.success == ["a"]
    assert result.fail_to_pass.failure == ["b"]
    # swebench's FAIL_ONLY check looks for FAILED only; ERROR is not printed by such runners
    assert result.pass_to_pass.success == ["c"]


def test_a_status_token_swebench_does_not_know_counts_neither_passed_nor_failed():
    # swebench's pytest parser records "ERROR: file or directory not found" as test
    # "file" with status "ERROR:"; its grading puts such a test in neither list.
    result = report({"file": "ERROR:", "t": "PASSED"}, f2p=["file", "t"], p2p=["file"])
    assert result.fail_to_pass.success == ["t"]
    assert result.fail_to_pass.failure == []
    assert result.pass_to_pass.total == 0
