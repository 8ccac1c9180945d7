#!/bin/bash
set -uxo pipefail
cd /testbed
git config --global --add safe.directory /testbed
cd /testbed
git status
git show
git -c core.fileMode=false diff 0546d8828a4adfeda824c8152f0943222c1b5944
git checkout 0546d8828a4adfeda824c8152f0943222c1b5944 shop/tests.py
git apply -v - <<'EOF_114329324912'
diff --git a/shop/tests.py b/shop/tests.py
index 55f45b0..d411a90 100644
--- a/shop/tests.py
+++ b/shop/tests.py
@@ -1 +1,116 @@
-"""Tests to come."""
+import sys
+import unittest
+
+from django.contrib.auth.models import User
+from django.db import IntegrityError
+from django.test import SimpleTestCase, TestCase
+
+
+class Accounts(TestCase):
+    def test_creates_user(self):
+        User.objects.create(username="ada")
+        self.assertEqual(User.objects.count(), 1)
+
+    def test_duplicate_username(self):
+        User.objects.create(username="ada")
+        User.objects.create(username="ada")
+
+    def test_username_is_unique(self):
+        """Usernames are unique."""
+        User.objects.create(username="ada")
+        with self.assertRaises(IntegrityError):
+            User.objects.create(username="ada")
+
+
+class Arithmetic(SimpleTestCase):
+    def test_adds(self):
+        self.assertEqual(1 + 1, 2)
+
+    def test_subtracts(self):
+        self.assertEqual(2 - 1, 0)
+
+    @unittest.skip("needs a GPU")
+    def test_gpu(self):
+        pass
+
+    def test_documented(self):
+        """Adding zero changes nothing."""
+        self.assertEqual(5 + 0, 5)
+
+    def test_documented_multiline(self):
+        """
+        Multiplying by one changes nothing.
+
+        The runner prints only the first non-empty docstring line.
+        """
+        self.assertEqual(7 * 1, 7)
+
+    def test_rounds(self):
+        """Rounding ... is exact."""
+        self.assertEqual(round(2.675, 2), 2.68)
+
+    def test_parity(self):
+        for number in range(4):
+            with self.subTest(number=number):
+                self.assertEqual(number % 2, 0)
+
+    def test_parity_documented(self):
+        """Subtests of a documented test."""
+        for key in ("a", "b"):
+            with self.subTest(key=key):
+                if key == "b":
+                    raise KeyError(key)
+
+
+class Chatter(SimpleTestCase):
+    def test_prints_then_passes(self):
+        print("computing...", flush=True)
+
+    def test_prints_partial_line(self):
+        sys.stderr.write("progress: 50%")
+        sys.stderr.flush()
+
+    def test_prints_unflushed(self):
+        # Block-buffered stdout: this reaches the log only when the process exits.
+        print("printed by test_prints_unflushed")
+
+    def test_prints_okay_then_fails(self):
+        print("okay, done", flush=True)
+        self.fail("printed okay, then failed")
+
+    def test_server_error(self):
+        # What django.request logs for a view that raised, under a console handler.
+        sys.stderr.write("Internal Server Error: /checkout/\n")
+
+    def test_runtests_banner(self):
+        # What a test that runs Django's runtests.py in-process lets through.
+        sys.stderr.write(
+            "Testing against Django installed in '/opt/django' with up to 4 processes\n"
+            "Found 1 test(s).\n"
+            "System check identified no issues (0 silenced).\n"
+        )
+
+    def test_version_alternative(self):
+        """--version is equivalent to version"""
+
+
+class Known(SimpleTestCase):
+    @unittest.expectedFailure
+    def test_fixed_bug(self):
+        self.assertTrue(True)
+
+    @unittest.expectedFailure
+    def test_open_bug(self):
+        self.assertEqual(0.1 + 0.2, 0.3)
+
+
+class KnownFixture(SimpleTestCase):
+    # Runs right after an expected failure: Python 3.11 prints this class's
+    # setUpClass error as a bare "ERROR" line, without its name.
+    @classmethod
+    def setUpClass(cls):
+        super().setUpClass()
+        raise ConnectionError("fixture server unavailable")
+
+    def test_never_runs(self):
+        pass

EOF_114329324912
: '>>>>> Start Test Output'
python -m django test --settings=corpus_settings --verbosity 2 --parallel 1 shop
SWEBENCH_TEST_EXIT_CODE=$?
: '>>>>> End Test Output'
echo ">>>>> Test Exit Code: $SWEBENCH_TEST_EXIT_CODE"
git checkout 0546d8828a4adfeda824c8152f0943222c1b5944 shop/tests.py
