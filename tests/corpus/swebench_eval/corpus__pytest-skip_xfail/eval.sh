#!/bin/bash
set -uxo pipefail
cd /testbed
git config --global --add safe.directory /testbed
cd /testbed
git status
git show
git -c core.fileMode=false diff 6e72bd1339605521324246aeb24e5c09c8993a19
git checkout 6e72bd1339605521324246aeb24e5c09c8993a19 tests/test_marks.py
git apply -v - <<'EOF_114329324912'
diff --git a/tests/test_marks.py b/tests/test_marks.py
index 55f45b0..0251908 100644
--- a/tests/test_marks.py
+++ b/tests/test_marks.py
@@ -1 +1,62 @@
-"""Tests to come."""
+import sys
+
+import pytest
+
+
+@pytest.mark.skip(reason="not on this platform")
+def test_skip_marker():
+    pass
+
+
+@pytest.mark.skipif(sys.version_info > (3,), reason="python 3")
+def test_skipif():
+    pass
+
+
+def test_skip_inside():
+    pytest.skip("decided at run time")
+
+
+@pytest.mark.xfail(reason="known bug - #123")
+def test_xfail():
+    assert 0
+
+
+@pytest.mark.xfail(reason="should fail", strict=True)
+def test_xfail_strict():
+    assert 0
+
+
+@pytest.mark.xfail(reason="fixed already?")
+def test_xpass():
+    pass
+
+
+@pytest.mark.xfail(reason="must fail", strict=True)
+def test_xpass_strict():
+    pass
+
+
+@pytest.mark.xfail(run=False, reason="would hang")
+def test_xfail_not_run():
+    pass
+
+
+def test_xfail_inside():
+    pytest.xfail("imperative")
+
+
+@pytest.mark.parametrize(
+    "n",
+    [
+        1,
+        pytest.param(2, marks=pytest.mark.xfail(reason="two")),
+        pytest.param(3, marks=pytest.mark.skip(reason="three")),
+    ],
+)
+def test_param_marks(n):
+    assert n != 2
+
+
+def test_pass():
+    pass

EOF_114329324912
: '>>>>> Start Test Output'
pytest -rA -v -p no:cacheprovider tests/test_marks.py
SWEBENCH_TEST_EXIT_CODE=$?
: '>>>>> End Test Output'
echo ">>>>> Test Exit Code: $SWEBENCH_TEST_EXIT_CODE"
git checkout 6e72bd1339605521324246aeb24e5c09c8993a19 tests/test_marks.py
