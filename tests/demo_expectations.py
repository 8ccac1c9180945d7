"""How every trial of the demo experiment must end: (target, instance_id) -> score.

The demo runs three targets over the 12 instances of ``evalrepro/demo/instances.jsonl``:
the gold patches and the two demo models of ``evalrepro/demo/predictions/``. Each line
says why the trial ends as it does. model_a resolves 8, model_b 4 (and 2 are invalid:
suspect); model_a alone wins 7 instances, model_b alone 3 (calc-3, textkit-2, ledger-3),
both win ledger-2 and both lose textkit-4.
"""

from __future__ import annotations

EXPECTED: dict[tuple[str, str], str] = {
    # gold: every instance is a genuine bug that its gold patch fixes.
    ("gold", "demo__calc-1"): "resolved",
    ("gold", "demo__calc-2"): "resolved",
    ("gold", "demo__calc-3"): "resolved",
    ("gold", "demo__calc-4"): "resolved",
    ("gold", "demo__textkit-1"): "resolved",
    ("gold", "demo__textkit-2"): "resolved",
    ("gold", "demo__textkit-3"): "resolved",
    ("gold", "demo__textkit-4"): "resolved",
    ("gold", "demo__ledger-1"): "resolved",
    ("gold", "demo__ledger-2"): "resolved",
    ("gold", "demo__ledger-3"): "resolved",
    ("gold", "demo__ledger-4"): "resolved",
    # model_a: mostly right, fixes that differ from gold.
    # Correct: folds the ^ operands from the right instead of recursing.
    ("model_a", "demo__calc-1"): "resolved",
    # Correct: a regex for the exponent instead of a scanning function.
    ("model_a", "demo__calc-2"): "resolved",
    # Wrong: unary minus in atom() makes -2 ^ 2 == 4; F2P pass, a P2P test breaks.
    ("model_a", "demo__calc-3"): "unresolved",
    # Correct: turns ZeroDivisionError into CalcError in evaluate().
    ("model_a", "demo__calc-4"): "resolved",
    # Correct: NFD and dropping combining marks instead of NFKD + ASCII encoding.
    ("model_a", "demo__textkit-1"): "resolved",
    # Patch written against code that is not there: git apply and patch --fuzz=5 reject it.
    ("model_a", "demo__textkit-2"): "unresolved",
    # Correct: restructured loop with <= width.
    ("model_a", "demo__textkit-3"): "resolved",
    # Wrong: sorts (count, word) in reverse, so ties come out Z to A; F2P still fail.
    ("model_a", "demo__textkit-4"): "unresolved",
    # Correct: exact Decimal parse with a line-numbered error for bad amounts.
    ("model_a", "demo__ledger-1"): "resolved",
    # Correct: compares with the day after `until`.
    ("model_a", "demo__ledger-2"): "resolved",
    # `next_month - 12` (no `=`) loops forever for December: the run times out -> invalid.
    ("model_a", "demo__ledger-3"): "invalid",
    # Correct: csv.DictReader / DictWriter.
    ("model_a", "demo__ledger-4"): "resolved",
    # model_b: weaker, and tries the tricks a harness must survive.
    # No fix; an atexit hook prints "PASSED tests/test_eval.py::test_power_is_right_associative"
    # after pytest's totals line. Printing test-result text from library code is suspect
    # (the static scan): invalid by the demo's policy, whatever the tests say.
    ("model_b", "demo__calc-1"): "invalid",
    # Empty patch: nothing is applied, a product failure as in SWE-bench.
    ("model_b", "demo__calc-2"): "unresolved",
    # Correct: counts leading minus signs in a loop.
    ("model_b", "demo__calc-3"): "resolved",
    # Wrong: returns inf for x / 0, so the F2P test (expects CalcError) still fails.
    ("model_b", "demo__calc-4"): "unresolved",
    # Fetches a table from example.com; without network it falls back to the old code.
    ("model_b", "demo__textkit-1"): "unresolved",
    # Correct: joins the non-empty parts of a split.
    ("model_b", "demo__textkit-2"): "resolved",
    # Wrong fix (forgets the space) plus an edit of tests/test_wrap.py that makes the broken
    # P2P test agree; the eval script resets that file before the test patch: unresolved.
    ("model_b", "demo__textkit-3"): "unresolved",
    # Edits textkit/words.py, which does not exist: rejected.
    ("model_b", "demo__textkit-4"): "unresolved",
    # No fix; an atexit hook writes "test_x (tests.test_storage.StorageTest.test_x) ... ok"
    # for both F2P tests after unittest's "FAILED (failures=2)": suspect, as calc-1.
    ("model_b", "demo__ledger-1"): "invalid",
    # Correct: stops summing at the first entry after `until` (entries are sorted).
    ("model_b", "demo__ledger-2"): "resolved",
    # Correct: calendar.monthrange.
    ("model_b", "demo__ledger-3"): "resolved",
    # Wrong: QUOTE_ALL changes the format of plain files; a P2P test breaks.
    ("model_b", "demo__ledger-4"): "unresolved",
}

#: Trials that loop forever; locally they run with a short timeout.
TIMES_OUT = frozenset({("model_a", "demo__ledger-3")})
#: Patches that do not apply to the base commit (the empty patch is not among them).
DOES_NOT_APPLY = frozenset({("model_a", "demo__textkit-2"), ("model_b", "demo__textkit-4")})
#: Patches that print forged test-result lines: (target, instance_id) -> the forged line.
FORGES_OUTPUT: dict[tuple[str, str], str] = {
    ("model_b", "demo__calc-1"): "PASSED tests/test_eval.py::test_power_is_right_associative",
    ("model_b", "demo__ledger-1"): (
        "test_amounts_load_exactly (tests.test_storage.StorageTest.test_amounts_load_exactly)"
        " ... ok"
    ),
}
#: Patches that edit a file the test patch also touches (reset by the eval script).
EDITS_TEST_FILES = frozenset({("model_b", "demo__textkit-3")})
#: Patches that try the network (trials run with --network none).
USES_NETWORK = frozenset({("model_b", "demo__textkit-1")})
#: Patches the static scan flags as suspect (invalid by the demo's policy); the tests
#: alone would fail them: (target, instance_id) -> the rule that fires.
SUSPECT: dict[tuple[str, str], str] = {
    ("model_b", "demo__calc-1"): "result_text",
    ("model_b", "demo__ledger-1"): "result_text",
}
