#!/bin/bash
set -uxo pipefail
cd /testbed
git config --global --add safe.directory /testbed
cd /testbed
git status
git show
git -c core.fileMode=false diff 52e250f1d6bf17ebf1c9f59fadd06aeab2374623
rm -f tests/math.spec.js
git apply -v - <<'EOF_114329324912'
diff --git a/tests/math.spec.js b/tests/math.spec.js
new file mode 100644
index 0000000..0ce6b64
--- /dev/null
+++ b/tests/math.spec.js
@@ -0,0 +1,9 @@
+const assert = require('assert');
+
+describe('math', () => {
+  it('adds', () => assert.strictEqual(1 + 1, 2));
+  describe('nested', () => {
+    it('multiplies', () => assert.strictEqual(2 * 2, 4));
+  });
+  it.skip('pending one', () => {});
+});

EOF_114329324912
: '>>>>> Start Test Output'
mocha --reporter min tests/math.spec.js
SWEBENCH_TEST_EXIT_CODE=$?
: '>>>>> End Test Output'
echo ">>>>> Test Exit Code: $SWEBENCH_TEST_EXIT_CODE"
rm -f tests/math.spec.js
