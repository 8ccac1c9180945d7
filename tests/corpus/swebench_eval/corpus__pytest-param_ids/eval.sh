#!/bin/bash
set -uxo pipefail
cd /testbed
git config --global --add safe.directory /testbed
cd /testbed
git status
git show
git -c core.fileMode=false diff ed77229868d1743be60e1369f795c4e8a0bd2e3d
git checkout ed77229868d1743be60e1369f795c4e8a0bd2e3d tests/test_ids.py
git apply -v - <<'EOF_114329324912'
diff --git a/tests/test_ids.py b/tests/test_ids.py
index 55f45b0..0fd1238 100644
--- a/tests/test_ids.py
+++ b/tests/test_ids.py
@@ -1 +1,41 @@
-"""Tests to come."""
+import pytest
+
+IDS = [
+    "a b",
+    "a - b",
+    "x[1]",
+    "é",
+    "日本",
+    "tab\there",
+    "line\nbreak",
+    "10m",
+    "MouseButton.LEFT",
+    "/usr/lib/libfoo.so",
+    "a::b",
+    "end - ",
+]
+FAILING = {"a - b", "x[1]", "é"}
+
+
+@pytest.mark.parametrize("value", IDS)
+def test_ids(value):
+    assert value not in FAILING
+
+
+@pytest.mark.parametrize("word", ["alpha beta", "alpha gamma"])
+def test_collapse(word):
+    assert word != "alpha beta"
+
+
+@pytest.mark.parametrize("x", [1, 2], ids=["first case", "second case"])
+def test_explicit_ids(x):
+    pass
+
+
+def test_café():
+    pass
+
+
+class TestÜnicode:
+    def test_naïve(self):
+        assert False

EOF_114329324912
: '>>>>> Start Test Output'
pytest -rA -v -p no:cacheprovider tests/test_ids.py
SWEBENCH_TEST_EXIT_CODE=$?
: '>>>>> End Test Output'
echo ">>>>> Test Exit Code: $SWEBENCH_TEST_EXIT_CODE"
git checkout ed77229868d1743be60e1369f795c4e8a0bd2e3d tests/test_ids.py
