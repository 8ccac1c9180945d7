"""Write evalrepro/demo/polyglot/instances.jsonl: demo_polyglot's instances, one per language.

Run from the repo root: .venv/bin/python scripts/demo_author/polyglot.py
(maintainers only: a change to a polyglot repo changes its commit SHAs). Each patch is
made by editing a checkout at the base commit and taking git diff. FAIL_TO_PASS and
PASS_TO_PASS below are as ``evalrepro validate +dataset=demo_polyglot`` derived them (each
language's toolchain runs in its container, not here): after a change, validate again and
copy its lists here.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))
sys.path.insert(0, str(HERE))

from author import make_diff  # noqa: E402

from evalrepro.demo import DEMO_DIR  # noqa: E402
from evalrepro.sources.demo_repos import build_repo  # noqa: E402

OUT = DEMO_DIR / "polyglot" / "instances.jsonl"

ROMAN_TABLE = """	{1000, "M"}, {500, "D"}, {100, "C"}, {50, "L"}, {10, "X"}, {5, "V"}, {1, "I"},
"""
ROMAN_SUBTRACTIVE = """	{1000, "M"}, {900, "CM"}, {500, "D"}, {400, "CD"}, {100, "C"}, {90, "XC"},
	{50, "L"}, {40, "XL"}, {10, "X"}, {9, "IX"}, {5, "V"}, {4, "IV"}, {1, "I"},
"""

INSTANCES = [
    {
        "id": "polyglot__roman-1",
        "repo": "polyglot/roman",
        "language": "go",
        "problem": "ToRoman(4) gives IIII and ToRoman(1994) MDCCCCLXXXXIIII: the subtractive forms "
        "(IV, IX, XL, XC, CD, CM) are never used.",
        "gold": [("roman.go", ROMAN_TABLE, ROMAN_SUBTRACTIVE)],
        "wrong": [
            ("roman.go", ROMAN_TABLE, ROMAN_TABLE.replace('{5, "V"}', '{5, "V"}, {4, "IV"}'))
        ],
        "tests": [
            (
                "roman_test.go",
                "func TestOutOfRange(",
                "func TestSubtractive(t *testing.T) {\n"
                '\tcheck(t, 4, "IV")\n\tcheck(t, 9, "IX")\n\tcheck(t, 40, "XL")\n'
                '\tcheck(t, 1994, "MCMXCIV")\n}\n\nfunc TestOutOfRange(',
            )
        ],
        "f2p": ["example.com/roman::TestSubtractive"],
        "p2p": ["example.com/roman::TestAdditive", "example.com/roman::TestOutOfRange"],
    },
    {
        "id": "polyglot__intervals-1",
        "repo": "polyglot/intervals",
        "language": "rust",
        "problem": "merge(vec![(1, 3), (3, 5)]) keeps both intervals: closed intervals that "
        "touch share a point and should merge into (1, 5).",
        "gold": [("src/lib.rs", "if start < last.1", "if start <= last.1")],
        "wrong": [("src/lib.rs", "if start < last.1", "if start < last.1 + 0")],
        "tests": [
            (
                "tests/merge.rs",
                "#[test]\nfn empty_input()",
                "#[test]\nfn merges_touching_intervals() {\n"
                "    assert_eq!(merge(vec![(3, 5), (1, 3)]), vec![(1, 5)]);\n}\n\n"
                "#[test]\nfn empty_input()",
            )
        ],
        "f2p": ["merge:tests/merge.rs::merges_touching_intervals"],
        "p2p": [
            "merge:tests/merge.rs::empty_input",
            "merge:tests/merge.rs::keeps_disjoint_intervals",
            "merge:tests/merge.rs::merges_overlapping_intervals",
        ],
    },
    {
        "id": "polyglot__slug-1",
        "repo": "polyglot/slug",
        "language": "javascript",
        "problem": "slugify('Hello, World!') gives 'hello-world-': punctuation at either end "
        "of a title leaves a dash there.",
        "gold": [
            (
                "slug.js",
                "    .replace(/[^a-z0-9]+/g, '-');",
                "    .replace(/[^a-z0-9]+/g, '-')\n    .replace(/^-+|-+$/g, '');",
            )
        ],
        "wrong": [
            (
                "slug.js",
                "    .replace(/[^a-z0-9]+/g, '-');",
                "    .replace(/[^a-z0-9]+/g, '-')\n    .replace(/-+$/, '');",
            )
        ],
        "tests": [
            (
                "test/slug.test.js",
                "test('collapses runs of punctuation'",
                "test('trims dashes at both ends', () => {\n"
                "  assert.strictEqual(slugify('\u00a1Hello, World!'), 'hello-world');\n});\n\n"
                "test('collapses runs of punctuation'",
            )
        ],
        "f2p": ["trims dashes at both ends"],
        "p2p": [
            "collapses runs of punctuation",
            "drops accents",
            "lower-cases words and joins them with dashes",
        ],
    },
    {
        "id": "polyglot__ringbuf-1",
        "repo": "polyglot/ringbuf",
        "language": "c",
        "problem": "rb_len is wrong once the buffer has wrapped around: after four pushes, "
        "three pops and two more pushes it returns a huge number instead of 3.",
        "gold": [
            (
                "src/ringbuf.c",
                "    /* The slots between the read and the write position. */\n"
                "    return rb->tail - rb->head;",
                "    return rb->count;",
            )
        ],
        "wrong": [
            (
                "src/ringbuf.c",
                "    return rb->tail - rb->head;",
                "    return rb->tail >= rb->head ? rb->tail - rb->head : rb->head - rb->tail;",
            )
        ],
        "tests": [
            (
                "tests/test_wraparound.c",
                None,
                '#include "../src/ringbuf.h"\n#include "check.h"\n\nint main(void) {\n'
                "    ringbuf rb;\n    int value = 0;\n    rb_init(&rb);\n"
                "    for (int i = 0; i < RB_CAPACITY; i++)\n        CHECK(rb_push(&rb, i));\n"
                "    for (int i = 0; i < 3; i++)\n        CHECK(rb_pop(&rb, &value));\n"
                "    CHECK(rb_push(&rb, 10));\n    CHECK(rb_push(&rb, 11));\n"
                "    CHECK(rb_len(&rb) == 3);\n    CHECK(rb_pop(&rb, &value) && value == 3);\n"
                "    return failures != 0;\n}\n",
            )
        ],
        "f2p": ["test_wraparound#test_wraparound"],
        "p2p": ["test_full#test_full", "test_push_pop#test_push_pop"],
    },
    {
        "id": "polyglot__wordwrap-1",
        "repo": "polyglot/wordwrap",
        "language": "ruby",
        "problem": "WordWrap.wrap('ab cd', 5) gives ['ab', 'cd']: a line that fills the width "
        "exactly is broken one word early.",
        "gold": [("lib/wordwrap.rb", "word.length >= width", "word.length > width")],
        "wrong": [("lib/wordwrap.rb", "word.length >= width", "word.length >= width + 2")],
        "tests": [
            (
                "spec/wordwrap_spec.rb",
                "  it 'gives no lines for blank text' do",
                "  it 'fills a line to exactly the width' do\n"
                "    expect(WordWrap.wrap('ab cd ef', 5)).to eq(['ab cd', 'ef'])\n"
                "    expect(WordWrap.wrap('abc de f', 5)).to eq(['abc', 'de f'])\n  end\n\n"
                "  it 'gives no lines for blank text' do",
            )
        ],
        "f2p": ["./spec/wordwrap_spec.rb::WordWrap fills a line to exactly the width"],
        "p2p": [
            "./spec/wordwrap_spec.rb::WordWrap breaks between words",
            "./spec/wordwrap_spec.rb::WordWrap gives no lines for blank text",
            "./spec/wordwrap_spec.rb::WordWrap keeps a short text on one line",
        ],
    },
    {
        "id": "polyglot__money-1",
        "repo": "polyglot/money",
        "language": "php",
        "problem": "Money::format(105) gives '$1.5': cents below ten lose their leading zero.",
        "gold": [("src/Money.php", "'%s$%d.%d'", "'%s$%d.%02d'")],
        "wrong": [("src/Money.php", "'%s$%d.%d'", "'%s$%d.%2d'")],
        "tests": [
            (
                "tests/MoneyTest.php",
                "    public function testDebts(): void",
                "    public function testCentsBelowTen(): void\n    {\n"
                "        $this->assertSame('$1.05', Money::format(105));\n"
                "        $this->assertSame('-$0.07', Money::format(-7));\n    }\n\n"
                "    public function testDebts(): void",
            )
        ],
        "f2p": ["MoneyTest#testCentsBelowTen"],
        "p2p": ["MoneyTest#testDebts", "MoneyTest#testWholeDollars"],
    },
]


def main() -> None:
    work = Path(tempfile.mkdtemp())
    records = []
    for number, d in enumerate(INSTANCES):
        repo = work / d["repo"]
        base = list(build_repo(d["repo"], repo).values())[-1]
        records.append(
            {
                "instance_id": d["id"],
                "repo": d["repo"],
                "base_commit": base,
                "patch": make_diff(repo, base, d["gold"]),
                "test_patch": make_diff(repo, base, d["tests"]),
                "problem_statement": d["problem"].strip() + "\n",
                "hints_text": "",
                "version": "1.0",
                "created_at": f"2024-04-{number + 1:02d}T12:00:00Z",
                "FAIL_TO_PASS": d["f2p"],
                "PASS_TO_PASS": d["p2p"],
            }
        )
        d["wrong_patch"] = make_diff(repo, base, d["wrong"])
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text("".join(json.dumps(r) + "\n" for r in records))
    wrong = DEMO_DIR / "polyglot" / "wrong.jsonl"
    wrong.write_text(
        "".join(
            json.dumps(
                {
                    "instance_id": d["id"],
                    "model_name_or_path": "wrong",
                    "model_patch": d["wrong_patch"],
                }
            )
            + "\n"
            for d in INSTANCES
        )
    )
    print(f"wrote {OUT} and {wrong}")


if __name__ == "__main__":
    main()
