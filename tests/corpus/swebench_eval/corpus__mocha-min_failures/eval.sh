#!/bin/bash
set -uxo pipefail
cd /testbed
git config --global --add safe.directory /testbed
cd /testbed
git status
git show
git -c core.fileMode=false diff 52e250f1d6bf17ebf1c9f59fadd06aeab2374623
rm -f tests/a-strings.spec.js tests/b-errors.spec.js
git apply -v - <<'EOF_114329324912'
diff --git a/tests/a-strings.spec.js b/tests/a-strings.spec.js
new file mode 100644
index 0000000..fc7a9c9
--- /dev/null
+++ b/tests/a-strings.spec.js
@@ -0,0 +1,16 @@
+const assert = require('assert');
+
+describe('strings', () => {
+  it('concats', () => assert.strictEqual('a' + 'b', 'ab'));
+  it('fails equality', () => assert.strictEqual('a', 'b'));
+  describe('deeper', () => {
+    it('throws TypeError on bad input', () => { throw new TypeError('bad'); });
+    it('custom error class', () => {
+      class Oops extends Error {}
+      const error = new Oops('oops');
+      error.name = 'Oops';
+      throw error;
+    });
+  });
+  it('fails after the custom error', () => assert.deepStrictEqual([1], [2]));
+});
diff --git a/tests/b-errors.spec.js b/tests/b-errors.spec.js
new file mode 100644
index 0000000..65031c8
--- /dev/null
+++ b/tests/b-errors.spec.js
@@ -0,0 +1,6 @@
+const assert = require('assert');
+
+describe('Errors are reported', () => {
+  it('with a name containing the word', () => assert.ok(false));
+  it('ünïcødé title passes', () => {});
+});

EOF_114329324912
: '>>>>> Start Test Output'
mocha --reporter min tests/a-strings.spec.js tests/b-errors.spec.js
SWEBENCH_TEST_EXIT_CODE=$?
: '>>>>> End Test Output'
echo ">>>>> Test Exit Code: $SWEBENCH_TEST_EXIT_CODE"
rm -f tests/a-strings.spec.js tests/b-errors.spec.js
