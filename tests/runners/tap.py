"""Produce the TAP corpus: node's test runner and Perl's Test::More, really run.

Ground truth is each runner's own event stream, recorded in the same run as the TAP:

* node: a small reporter module (``events-reporter.mjs``) passed as a second
  ``--test-reporter`` writes node's ``test:pass`` / ``test:fail`` events to JSON. node
  20's JUnit reporter was not enough: it writes a test that has subtests as a
  ``<testsuite>`` without its own outcome, and a ``describe`` whose body threw as a
  ``<testcase>``, so it cannot tell tests from suites;
* Test::More: a Test2 hub listener (``Test2EventLog.pm``, loaded with ``-M``) writes
  every assertion event of the root hub, with subtests' children, to JSON.

The events are turned into ids and statuses by the rules documented in
``evalrepro/grade/parsers/tap_full.py``, re-implemented here independently of the parser.
node prints absolute paths in its YAML diagnostics; the temp dir is replaced by
``/corpus`` so the committed logs do not depend on the machine.

Run ``python -m tests.runners.tap`` from the repo root to rewrite tests/corpus/tap/.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.corpus import CorpusLog, write_corpus

RUNNER = "tap"
SEPARATOR = " > "
COMPAT = ("tap",)
NATIVE = "tap_full"
WORKDIR_STAND_IN = "/corpus"

NODE_EVENTS_REPORTER = """\
// Records node's own test:pass / test:fail events (the runner's ground truth) as JSON.
export default async function* eventLog(source) {
  const events = [];
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const { name, nesting, skip, todo, details } = event.data;
    events.push({
      passed: event.type === 'test:pass',
      name,
      nesting,
      skip: skip !== undefined && skip !== false,
      todo: todo !== undefined && todo !== false,
      suite: details?.type === 'suite',
      failureType: details?.error?.failureType ?? null,
    });
  }
  yield JSON.stringify(events, null, 1) + '\\n';
}
"""

PERL_EVENT_LOG = """\
package Test2EventLog;
# Records the root hub's assertion events, subtests' children included, as JSON.
use strict; use warnings;
use JSON::PP ();
use Test2::API qw(test2_add_callback_post_load test2_stack);

my @events;

sub _assertion {
    my ($f, $number) = @_;
    my %amnesty = map { (lc $_->{tag} => 1) } @{ $f->{amnesty} || [] };
    my @children;
    if (my $parent = $f->{parent}) {
        my $n = 0;
        for my $child (@{ $parent->{children} || [] }) {
            push @children, _assertion($child, ++$n) if $child->{assert};
        }
    }
    return {
        number => $number,
        name => $f->{assert}{details},
        passed => $f->{assert}{pass} ? JSON::PP::true : JSON::PP::false,
        skip => $amnesty{skip} ? JSON::PP::true : JSON::PP::false,
        todo => $amnesty{todo} ? JSON::PP::true : JSON::PP::false,
        children => \\@children,
    };
}

test2_add_callback_post_load(sub {
    test2_stack()->top->listen(sub {
        my ($hub, $e, $count, $f) = @_;
        $f ||= $e->facet_data;
        push @events, _assertion($f, $count) if $f->{assert};
    });
});

END {
    my $path = $ENV{TEST2_EVENT_LOG} or return;
    open my $fh, '>', $path or die "cannot write $path: $!";
    print {$fh} JSON::PP->new->canonical->pretty->encode(\\@events);
    close $fh;
}
1;
"""

NODE_PASSING = {
    "test/passing.test.mjs": """\
import { test, describe, it } from 'node:test';
import assert from 'node:assert';

test('adds numbers', () => { assert.strictEqual(1 + 1, 2); });
describe('parser', () => {
  it('reads a line', () => {});
  describe('escapes', () => {
    it('keeps unicode ünïcødé', () => {});
  });
});
test('parent test', async (t) => {
  await t.test('first step', () => {});
  await t.test('second step', () => {});
});
""",
}

NODE_MIXED = {
    "test/a-basic.test.mjs": """\
import { test, describe, it } from 'node:test';
import assert from 'node:assert';

test('adds numbers', () => { assert.strictEqual(1 + 1, 2); });
test('fails on purpose', () => { assert.strictEqual(1 + 1, 3); });
test('skipped by option', { skip: 'not today' }, () => {});
test('skipped at runtime', (t) => { t.skip('no network'); });
test('todo that fails', { todo: 'later' }, () => { throw new Error('not yet'); });
test('todo that passes', { todo: true }, () => {});
describe('outer suite', () => {
  describe('inner suite', () => {
    it('deep pass', () => {});
    it('deep fail', () => { assert.ok(false); });
  });
  it('shallow pass', () => {});
});
test('name with spaces # and ünïcødé ✓', () => {});
test('back\\\\slash in name', () => {});
test('- leading dash', () => {});
test('parent test', async (t) => {
  await t.test('sub a', () => {});
  await t.test('sub b', () => { throw new Error('boom'); });
});
describe('shared', () => { it('works', () => {}); });
""",
    "test/b-shared.test.mjs": """\
import { describe, it } from 'node:test';

describe('shared', () => { it('works', () => { throw new Error('same name, other file'); }); });
""",
}

NODE_HOOKS = {
    "test/hooks.test.mjs": """\
import { test, describe, it, before, after, beforeEach, afterEach } from 'node:test';

describe('before fails', () => {
  before(() => { throw new Error('before exploded'); });
  it('never runs', () => {});
  it('never runs either', () => {});
});
describe('after fails', () => {
  after(() => { throw new Error('after exploded'); });
  it('ran fine', () => {});
});
describe('each hooks', () => {
  beforeEach((t) => { if (t.name === 'setup fails') throw new Error('beforeEach'); });
  afterEach((t) => { if (t.name === 'teardown fails') throw new Error('afterEach'); });
  it('setup fails', () => {});
  it('teardown fails', () => {});
  it('untouched', () => {});
});
describe('body throws', () => { throw new Error('describe body exploded'); });
describe.skip('skipped suite', () => { it('not reported', () => {}); });
describe.todo('todo suite', () => {
  it('fails inside todo suite', () => { throw new Error('x'); });
});
test('times out', { timeout: 10 }, async () => { await new Promise((r) => setTimeout(r, 100)); });
test('after the timeout', () => {});
""",
}

NODE_FAKE_LINES = {
    "test/fake.test.mjs": """\
import { test } from 'node:test';
import fs from 'node:fs';

test('prints fake results', () => {
  console.log('ok 99 - fake');
  console.log('not ok 98 - fake failure');
  console.error('ok 97 - fake on stderr');
  fs.writeSync(1, 'ok 96 - fake written to fd 1\\n1..99\\n# tests 99\\n');
});
test('real failure', () => { throw new Error('real'); });
test('real pass', () => {});
""",
}

PERL_PLAN = {
    "t/plan.t": """\
use strict;
use warnings;
use Test::More tests => 10;

ok(1, 'adds numbers');
is(1 + 1, 3, 'fails # with a hash');
ok(1);
SKIP: {
    skip 'no network', 1;
    ok(0, 'needs the network');
}
TODO: {
    local $TODO = 'not implemented';
    ok(0, 'todo that fails');
    ok(1, 'todo that passes');
    todo_skip 'cannot even try', 1;
}
subtest 'a group' => sub {
    plan tests => 2;
    ok(1, 'inner pass');
    is('a', 'b', 'inner fail');
};
is_deeply([1, 2], [1, 3], 'deep structures ünïcødé');
like('hello world', qr/world/, 'matches a pattern');
""",
}

PERL_DONE_TESTING = {
    "t/done.t": """\
use strict;
use warnings;
use Test::More;

is(2 * 2, 4, 'is equal');
is(3 * 3, 9, 'is equal');
subtest 'outer' => sub {
    ok(1, 'first');
    subtest 'inner' => sub {
        ok(1, 'deepest');
        done_testing;
    };
    done_testing;
};
cmp_ok(5, '>', 3, 'five is more than three');
done_testing;
""",
}

PERL_FAKE_LINES = {
    "t/fake.t": """\
use strict;
use warnings;
use Test::More tests => 3;

ok(1, 'real pass');
print "ok 2 - fake printed by the code under test\\n";
ok(0, 'real failure');
ok(1, 'last real test');
print "ok 99 - fake\\n";
""",
}

FORGED_DIFFERENCE = (
    "the script prints forged result lines; tap_full parses them like any other but "
    "reports the broken numbering and plan in problems, so the log is unscorable"
)


@dataclass(frozen=True)
class _Case:
    case: str
    tool: str  # "node" | "perl"
    files: dict[str, str]
    known_differences: dict[str, str] = field(default_factory=dict)


CASES = (
    _Case("node_passing", "node", NODE_PASSING),
    _Case("node_mixed", "node", NODE_MIXED),
    _Case("node_hooks", "node", NODE_HOOKS),
    _Case("node_fake_lines", "node", NODE_FAKE_LINES),
    _Case("perl_plan", "perl", PERL_PLAN),
    _Case("perl_done_testing", "perl", PERL_DONE_TESTING),
    _Case("perl_fake_lines", "perl", PERL_FAKE_LINES, {NATIVE: FORGED_DIFFERENCE}),
)


def missing_tools() -> list[str]:
    """The executables the live run needs and cannot find."""
    return [tool for tool in ("node", "perl") if shutil.which(tool) is None]


def _ids(entries: Iterator[tuple[tuple[str, ...], str | None]]) -> dict[str, str]:
    """Join name paths into ids; number repeated ids in output order; drop non-tests."""
    truth: dict[str, str] = {}
    seen: Counter[str] = Counter()
    for path, status in entries:
        if status is None:
            continue
        test_id = SEPARATOR.join(path)
        seen[test_id] += 1
        truth[test_id if seen[test_id] == 1 else f"{test_id} [#{seen[test_id]}]"] = status
    return truth


def _node_status(event: dict[str, Any]) -> str | None:
    if event["suite"] and (event["passed"] or event["failureType"] == "subtestsFailed"):
        return None  # a suite is not a test unless it failed on its own
    if event["skip"]:
        return "SKIPPED"
    if event["todo"]:
        return "XPASS" if event["passed"] else "XFAIL"
    if event["passed"]:
        return "PASSED"
    if event["suite"] or event["failureType"] in ("hookFailed", "cancelledByParent"):
        return "ERROR"
    return "FAILED"


def node_truth(events: list[dict[str, Any]]) -> dict[str, str]:
    """Ids and statuses from node's events, which arrive children first."""
    pending: dict[int, list[tuple[dict[str, Any], list[Any]]]] = {}
    for event in events:
        children = pending.pop(event["nesting"] + 1, [])
        pending.setdefault(event["nesting"], []).append((event, children))

    def walk(nodes: list[Any], path: tuple[str, ...]) -> Iterator[Any]:
        for event, children in nodes:
            full = (*path, event["name"])
            yield from walk(children, full)
            yield full, _node_status(event)

    return _ids(walk(pending.get(0, []), ()))


def _perl_status(event: dict[str, Any]) -> str:
    # todo_skip carries both marks; its TAP line says ``# TODO & SKIP``, so TODO first.
    if event["todo"]:
        return "XPASS" if event["passed"] else "XFAIL"
    if event["skip"]:
        return "SKIPPED"
    return "PASSED" if event["passed"] else "FAILED"


def perl_truth(events: list[dict[str, Any]]) -> dict[str, str]:
    """Ids and statuses from Test2's assertion events (a subtest after its children)."""

    def walk(nodes: list[dict[str, Any]], path: tuple[str, ...]) -> Iterator[Any]:
        for event in nodes:
            full = (*path, event["name"] or f"#{event['number']}")
            yield from walk(event["children"], full)
            yield full, _perl_status(event)

    return _ids(walk(events, ()))


def _run(command: list[str], cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(
        command,
        cwd=cwd,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=120,
        check=False,
    )
    return done.stdout.decode("utf-8")


def _produce_case(spec: _Case, workdir: Path) -> CorpusLog:
    casedir = workdir / spec.case
    for name, source in spec.files.items():
        (casedir / name).parent.mkdir(parents=True, exist_ok=True)
        (casedir / name).write_text(source, encoding="utf-8")
    events_file = casedir / "events.json"
    files = sorted(spec.files)
    if spec.tool == "node":
        (casedir / "events-reporter.mjs").write_text(NODE_EVENTS_REPORTER, encoding="utf-8")
        command = [
            "node", "--test", "--test-concurrency=1",
            "--test-reporter=tap", "--test-reporter-destination=stdout",
            "--test-reporter=./events-reporter.mjs",
            "--test-reporter-destination=events.json",
            *files,
        ]  # fmt: skip
        text = _run(command, casedir, {})
        truth = node_truth(json.loads(events_file.read_text(encoding="utf-8")))
    else:
        (casedir / "truth").mkdir()
        (casedir / "truth" / "Test2EventLog.pm").write_text(PERL_EVENT_LOG, encoding="utf-8")
        command = ["perl", "-Itruth", "-MTest2EventLog", *files]
        text = _run(command, casedir, {"TEST2_EVENT_LOG": str(events_file)})
        truth = perl_truth(json.loads(events_file.read_text(encoding="utf-8")))
    resolved = str(casedir.resolve())
    text = text.replace(resolved, WORKDIR_STAND_IN).replace(str(casedir), WORKDIR_STAND_IN)
    return CorpusLog(
        runner=RUNNER,
        case=spec.case,
        command=" ".join(command) + " 2>&1",
        text=text,
        truth=truth,
        compat=COMPAT,
        native=NATIVE,
        known_differences=dict(spec.known_differences),
    )


def produce(workdir: Path) -> list[CorpusLog]:
    # The cases are independent processes; running them side by side keeps the live
    # tests within a second or so.
    with ThreadPoolExecutor() as pool:
        return list(pool.map(lambda spec: _produce_case(spec, workdir), CASES))


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        folder = write_corpus(RUNNER, produce(Path(tmp)))
    print(f"wrote {folder}")
