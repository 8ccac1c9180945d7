#!/bin/bash
set -uxo pipefail
cd /testbed
git config --global --add safe.directory /testbed
cd /testbed
git status
git show
git -c core.fileMode=false diff eacf51bded1c1ba1fb29cc5b681932364b41d80a
git checkout eacf51bded1c1ba1fb29cc5b681932364b41d80a tests/test_calc.py
git apply -v - <<'EOF_114329324912'
diff --git a/tests/test_calc.py b/tests/test_calc.py
index 55f45b0..b853621 100644
--- a/tests/test_calc.py
+++ b/tests/test_calc.py
@@ -1 +1,26 @@
-"""Tests to come."""
+def add(a, b):
+    return a + b
+
+
+def test_add():
+    assert add(1, 2) == 3
+
+
+def test_add_negative():
+    assert add(-1, -2) == -3
+
+
+def test_message_with_dash():
+    assert add(2, 2) == 5, "2 + 2 - expected 5"
+
+
+def test_multiline_message():
+    raise AssertionError("first line\nsecond line - with a dash")
+
+
+def test_key_error():
+    {}["missing"]
+
+
+def test_strings():
+    assert "a - b" == "a-b"

EOF_114329324912
: '>>>>> Start Test Output'
pytest -rA -v -p no:cacheprovider tests/test_calc.py
SWEBENCH_TEST_EXIT_CODE=$?
: '>>>>> End Test Output'
echo ">>>>> Test Exit Code: $SWEBENCH_TEST_EXIT_CODE"
git checkout eacf51bded1c1ba1fb29cc5b681932364b41d80a tests/test_calc.py
