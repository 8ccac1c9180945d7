#!/bin/bash
set -uxo pipefail
cd /testbed
git config --global --add safe.directory /testbed
cd /testbed
git status
git show
git -c core.fileMode=false diff 5498b63c07395b195173f3dac4d4e3cab30edc49
rm -f sympy/corpus/tests/test_algebra.py sympy/corpus/tests/test_calculus.py sympy/corpus/tests/test_long.py
git apply -v - <<'EOF_114329324912'
diff --git a/sympy/corpus/tests/test_algebra.py b/sympy/corpus/tests/test_algebra.py
new file mode 100644
index 0000000..20a1ab0
--- /dev/null
+++ b/sympy/corpus/tests/test_algebra.py
@@ -0,0 +1,39 @@
+from sympy import Rational, Symbol, expand
+from sympy.testing.pytest import XFAIL, raises, skip
+
+x = Symbol("x")
+
+
+def test_expand():
+    assert expand((x + 1) ** 2) == x**2 + 2 * x + 1
+
+
+def test_rational_sum():
+    assert Rational(1, 3) + Rational(1, 3) == Rational(1, 2)
+
+
+def test_raises_wrong_error():
+    raise ValueError("an exception, not an assertion")
+
+
+def test_needs_gpu():
+    skip("needs a GPU")
+
+
+@XFAIL
+def test_known_bug():
+    assert Rational(1, 10) * 3 == Rational(3, 11)
+
+
+@XFAIL
+def test_fixed_bug():
+    assert True
+
+
+def test_prints():
+    print("expanding...")
+    assert expand(x * (x + 1)) == x**2 + x
+
+
+def test_raises():
+    raises(ZeroDivisionError, lambda: 1 / 0)
diff --git a/sympy/corpus/tests/test_calculus.py b/sympy/corpus/tests/test_calculus.py
new file mode 100644
index 0000000..5f1da9b
--- /dev/null
+++ b/sympy/corpus/tests/test_calculus.py
@@ -0,0 +1,11 @@
+from sympy import Symbol, diff, sin, cos
+
+x = Symbol("x")
+
+
+def test_derivative():
+    assert diff(sin(x), x) == cos(x)
+
+
+def test_second_derivative():
+    assert diff(sin(x), x, 2) == sin(x)
diff --git a/sympy/corpus/tests/test_long.py b/sympy/corpus/tests/test_long.py
new file mode 100644
index 0000000..4d4acca
--- /dev/null
+++ b/sympy/corpus/tests/test_long.py
@@ -0,0 +1,6 @@
+def test_short():
+    assert True
+
+
+def test_a_name_so_long_that_the_verdict_of_the_file_no_longer_fits_on_its_line():
+    assert True

EOF_114329324912
: '>>>>> Start Test Output'
python sympy_recorder.py sympy/corpus/tests/test_algebra.py sympy/corpus/tests/test_calculus.py sympy/corpus/tests/test_long.py
SWEBENCH_TEST_EXIT_CODE=$?
: '>>>>> End Test Output'
echo ">>>>> Test Exit Code: $SWEBENCH_TEST_EXIT_CODE"
rm -f sympy/corpus/tests/test_algebra.py sympy/corpus/tests/test_calculus.py sympy/corpus/tests/test_long.py
