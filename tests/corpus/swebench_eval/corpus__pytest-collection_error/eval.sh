#!/bin/bash
set -uxo pipefail
cd /testbed
git config --global --add safe.directory /testbed
cd /testbed
git status
git show
git -c core.fileMode=false diff 85ff1e4d3e21b4ddf066cb67891dea7ba69cf650
git checkout 85ff1e4d3e21b4ddf066cb67891dea7ba69cf650 tests/test_ok.py
rm -f tests/test_broken.py
git apply -v - <<'EOF_114329324912'
diff --git a/tests/test_broken.py b/tests/test_broken.py
new file mode 100644
index 0000000..7c88eb8
--- /dev/null
+++ b/tests/test_broken.py
@@ -0,0 +1,5 @@
+undefined_name
+
+
+def test_never_collected():
+    pass
diff --git a/tests/test_ok.py b/tests/test_ok.py
index 55f45b0..872b706 100644
--- a/tests/test_ok.py
+++ b/tests/test_ok.py
@@ -1 +1,6 @@
-"""Tests to come."""
+def test_one():
+    pass
+
+
+def test_two():
+    assert 1 + 1 == 2

EOF_114329324912
: '>>>>> Start Test Output'
pytest -rA -v -p no:cacheprovider tests/test_ok.py tests/test_broken.py
SWEBENCH_TEST_EXIT_CODE=$?
: '>>>>> End Test Output'
echo ">>>>> Test Exit Code: $SWEBENCH_TEST_EXIT_CODE"
git checkout 85ff1e4d3e21b4ddf066cb67891dea7ba69cf650 tests/test_ok.py
rm -f tests/test_broken.py
