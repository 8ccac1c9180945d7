#!/bin/bash
set -uxo pipefail
cd /testbed
git config --global --add safe.directory /testbed
cd /testbed
git status
git show
git -c core.fileMode=false diff e74f8e5b71ae263617ab48471583a1f0a7c52d3e
git checkout e74f8e5b71ae263617ab48471583a1f0a7c52d3e tests/test_calc.py
git apply -v - <<'EOF_114329324912'
diff --git a/tests/test_calc.py b/tests/test_calc.py
index 55f45b0..b8808cf 100644
--- a/tests/test_calc.py
+++ b/tests/test_calc.py
@@ -1 +1,9 @@
-"""Tests to come."""
+from calc import add
+
+
+def test_fixed():
+    assert add(1, 1) == 2
+
+
+def test_kept():
+    assert add(1, 0) == 1

EOF_114329324912
: '>>>>> Start Test Output'
pytest --no-header -rA --tb=no -p no:cacheprovider tests/test_calc.py
SWEBENCH_TEST_EXIT_CODE=$?
: '>>>>> End Test Output'
echo ">>>>> Test Exit Code: $SWEBENCH_TEST_EXIT_CODE"
git checkout e74f8e5b71ae263617ab48471583a1f0a7c52d3e tests/test_calc.py
