#!/bin/bash
set -uxo pipefail
cd /testbed
git config --global --add safe.directory /testbed
cd /testbed
git status
git show
git -c core.fileMode=false diff df7190a4ff039dc42a05c194b87bcab3eef27d95
git checkout df7190a4ff039dc42a05c194b87bcab3eef27d95 tests/test_tb.py
git apply -v - <<'EOF_114329324912'
diff --git a/tests/test_tb.py b/tests/test_tb.py
index 55f45b0..aecb223 100644
--- a/tests/test_tb.py
+++ b/tests/test_tb.py
@@ -1 +1,33 @@
-"""Tests to come."""
+import pytest
+
+
+@pytest.fixture
+def broken():
+    raise RuntimeError("no database")
+
+
+@pytest.mark.parametrize("pair", ["a - b", "c d", "e[f]"])
+def test_pairs(pair):
+    assert pair != "a - b", "pair - rejected"
+
+
+def test_pass():
+    pass
+
+
+def test_fail():
+    assert 1 == 2
+
+
+def test_setup_error(broken):
+    pass
+
+
+@pytest.mark.xfail(reason="bug - 1")
+def test_xfail():
+    assert 0
+
+
+@pytest.mark.xfail(reason="maybe")
+def test_xpass():
+    pass

EOF_114329324912
: '>>>>> Start Test Output'
pytest --no-header -rA --tb=no -p no:cacheprovider tests/test_tb.py
SWEBENCH_TEST_EXIT_CODE=$?
: '>>>>> End Test Output'
echo ">>>>> Test Exit Code: $SWEBENCH_TEST_EXIT_CODE"
git checkout df7190a4ff039dc42a05c194b87bcab3eef27d95 tests/test_tb.py
