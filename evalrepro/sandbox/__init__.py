"""What runs inside a trial's sandbox: the supervisor and the exit guard.

Both are standalone, standard-library-only files: the container runs them with the base
image's own Python, and the host imports ``supervisor`` only for its protocol constants
and its matching rules, so that each is defined once.
"""

from pathlib import Path

SANDBOX_DIR = Path(__file__).resolve().parent
SUPERVISOR = SANDBOX_DIR / "supervisor.py"
GUARD = SANDBOX_DIR / "guard.py"
#: The second runner's plain driver (run in a fresh process, without the test framework).
PLAIN_DRIVER = SANDBOX_DIR / "plain.py"

#: Where the attempt's inputs are mounted (read-only) in the sandbox. The model patch is
#: the patch tools' (they run as the test user); the test patch and the program name the
#: instance's tests and the canaries: they are in a folder only the container's root may
#: enter (docs/threat-model.md, "What the test process can see").
PATCH_PATH = "/evalrepro/patch.diff"
PRIVATE_DIR = "/evalrepro/private"
TEST_PATCH_PATH = PRIVATE_DIR + "/test.patch"
PROGRAM_PATH = PRIVATE_DIR + "/program.json"
SUPERVISOR_PATH = "/evalrepro/supervisor.py"
GUARD_PATH = "/evalrepro/guard.py"
TESTBED = "/testbed"
#: The harness's own copy of the repo's history (root-owned, outside /testbed).
GIT_DIR = "/opt/evalrepro/repo.git"
