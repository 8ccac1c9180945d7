#!/bin/bash
set -uxo pipefail
cd /testbed
git config --global --add safe.directory /testbed
cd /testbed
git status
git show
git -c core.fileMode=false diff 4fb803fb973f56a687002899864218eff21721bf
git checkout 4fb803fb973f56a687002899864218eff21721bf ledger/tests.py
git apply -v - <<'EOF_114329324912'
diff --git a/ledger/tests.py b/ledger/tests.py
index 55f45b0..b4c0b91 100644
--- a/ledger/tests.py
+++ b/ledger/tests.py
@@ -1 +1,15 @@
-"""Tests to come."""
+from django.test import SimpleTestCase
+
+
+class Balances(SimpleTestCase):
+    def test_empty(self):
+        self.assertEqual(sum([]), 0)
+
+    def test_sums(self):
+        """Balances add up."""
+        self.assertEqual(sum([1, 2]), 3)
+
+    def test_parity(self):
+        for number in (0, 2):
+            with self.subTest(number=number):
+                self.assertEqual(number % 2, 0)

EOF_114329324912
: '>>>>> Start Test Output'
python -m django test --settings=corpus_settings --verbosity 2 --parallel 1 ledger
SWEBENCH_TEST_EXIT_CODE=$?
: '>>>>> End Test Output'
echo ">>>>> Test Exit Code: $SWEBENCH_TEST_EXIT_CODE"
git checkout 4fb803fb973f56a687002899864218eff21721bf ledger/tests.py
