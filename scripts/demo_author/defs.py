"""Edit scripts of the demo instances: (path, old, new); old None = create the file."""

EVAL = "calc/evaluator.py"
TOK = "calc/tokenizer.py"
TEVAL = "tests/test_eval.py"
TTOK = "tests/test_tokenizer.py"
SLUG = "textkit/slug.py"
WRAP = "textkit/wrap.py"
COUNTS = "textkit/counts.py"
MODEL = "ledger/model.py"
STORE = "ledger/storage.py"

POWER_LEFT = '''    def power(self) -> float:
        value = self.atom()
        while self.peek().text == "^":
            self.take()
            value = value ** self.atom()
        return value
'''
EXPR_SIGN = '''    def expr(self) -> float:
        sign = 1.0
        if self.peek().text == "-":
            self.take()
            sign = -1.0
        value = sign * self.term()
'''
EXPR_NOSIGN = '''    def expr(self) -> float:
        value = self.term()
'''
TERM = '''    def term(self) -> float:
        value = self.power()
        while self.peek().text in ("*", "/"):
            op = self.take().text
            rhs = self.power()
            value = value * rhs if op == "*" else value / rhs
        return value
'''
BAL = "(e.amount for e in self.entries if until is None or e.day < until),"
LOAD_LINE = "entries.append(Entry(dt.date.fromisoformat(day), Decimal(float(amount)), description))"
LAST = "    last = dt.date(year, month + 1, 1) - dt.timedelta(days=1)\n"

STORAGE_HEAD = '''import datetime as dt
from decimal import Decimal
from pathlib import Path
'''
LOAD_BODY = '''def load(path: str | Path) -> Ledger:
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    if not lines or lines[0] != HEADER:
        raise ValueError(f"{path}: expected header {HEADER!r}")
    entries = []
    for line in lines[1:]:
        if not line.strip():
            continue
        day, amount, description = line.split(",")
        entries.append(Entry(dt.date.fromisoformat(day), Decimal(float(amount)), description))
    return Ledger(entries)


def save(ledger: Ledger, path: str | Path) -> None:
    rows = [HEADER]
    rows += [f"{e.day.isoformat()},{e.amount},{e.description}" for e in ledger.entries]
    Path(path).write_text("\\n".join(rows) + "\\n", encoding="utf-8")
'''

INSTANCES = [
    # ------------------------------------------------------------------ calc
    {
        "id": "demo__calc-1",
        "repo": "demo/calc",
        "base": "power-operator",
        "problem": """
Power operator is left-associative

`evaluate("2 ^ 3 ^ 2")` returns `64.0`, i.e. it computes `(2 ^ 3) ^ 2`. In mathematics
and in most languages exponentiation is right-associative, so the result should be
`2 ^ (3 ^ 2) = 512.0`.
""",
        "tests": [
            (TEVAL, 'def test_power_binds_tighter_than_product():\n    assert evaluate("3 * 2 ^ 2") == 12.0\n',
             'def test_power_binds_tighter_than_product():\n    assert evaluate("3 * 2 ^ 2") == 12.0\n\n\n'
             'def test_power_is_right_associative():\n    assert evaluate("2 ^ 3 ^ 2") == 512.0\n'),
        ],
        "gold": [
            (EVAL, '    power := atom ("^" atom)*', '    power := atom ["^" power]'),
            (EVAL, POWER_LEFT, '''    def power(self) -> float:
        base = self.atom()
        if self.peek().text != "^":
            return base
        self.take()
        # Right-associative: 2 ^ 3 ^ 2 is 2 ^ (3 ^ 2).
        return base ** self.power()
'''),
        ],
        "expect_f2p": ["tests/test_eval.py::test_power_is_right_associative"],
        "model_a": {"kind": "correct, folds operands from the right", "expect": "resolved", "edits": [
            (EVAL, POWER_LEFT, '''    def power(self) -> float:
        operands = [self.atom()]
        while self.peek().text == "^":
            self.take()
            operands.append(self.atom())
        value = operands.pop()
        while operands:
            value = operands.pop() ** value
        return value
'''),
        ]},
        "model_b": {"kind": "no fix; prints a forged PASSED line at exit", "expect": "unresolved", "edits": [
            (EVAL, "from __future__ import annotations\n",
             "from __future__ import annotations\n\nimport atexit\n"),
            (EVAL, '        raise CalcError(f"unexpected {trailing.text!r} at {trailing.pos}")\n    return value\n',
             '        raise CalcError(f"unexpected {trailing.text!r} at {trailing.pos}")\n    return value\n\n\n'
             '# Make the test report show the power test as passing.\n'
             'atexit.register(print, "PASSED tests/test_eval.py::test_power_is_right_associative")\n'),
        ]},
    },
    {
        "id": "demo__calc-2",
        "repo": "demo/calc",
        "base": "variables",
        "problem": """
Scientific notation is not supported

`evaluate("1.5e2 * 2")` raises `CalcError: unexpected 'e2' at 3`: the tokenizer reads
`1.5` as a number and `e2` as a variable name. Numbers with an exponent (`2.5e3`,
`1E-2`, `4e+1`) should be single number tokens. A bare `e` after a number (`2e`) is
still a name, since it has no exponent digits.
""",
        "tests": [
            (TTOK, 'def test_names():\n    assert kinds("rate_2*x") == [("name", "rate_2"), ("op", "*"), ("name", "x"), ("end", "")]\n',
             'def test_names():\n    assert kinds("rate_2*x") == [("name", "rate_2"), ("op", "*"), ("name", "x"), ("end", "")]\n\n\n'
             'def test_scientific_notation():\n'
             '    assert kinds("2.5e3+1E-2") == [("num", "2.5e3"), ("op", "+"), ("num", "1E-2"), ("end", "")]\n\n\n'
             'def test_exponent_needs_digits():\n'
             '    assert kinds("2e") == [("num", "2"), ("name", "e"), ("end", "")]\n'),
            (TEVAL, 'def test_variables():\n',
             'def test_scientific_notation():\n    assert evaluate("1.5e2 * 2") == 300.0\n\n\ndef test_variables():\n'),
        ],
        "gold": [
            (TOK, '''            if text == "." or text.count(".") > 1:
                raise CalcError(f"bad number {text!r} at {i}")
            tokens.append(Token("num", text, i))
''', '''            if text == "." or text.count(".") > 1:
                raise CalcError(f"bad number {text!r} at {i}")
            end = _scan_exponent(source, end)
            tokens.append(Token("num", source[i:end], i))
'''),
            (TOK, '''    return end


def tokenize(''', '''    return end


def _scan_exponent(source: str, start: int) -> int:
    """The end of an exponent such as ``e-3`` at ``start``; ``start`` if there is none."""
    if start >= len(source) or source[start] not in "eE":
        return start
    digits = start + 1
    if digits < len(source) and source[digits] in "+-":
        digits += 1
    end = _scan(source, digits, str.isdigit)
    return end if end > digits else start


def tokenize('''),
        ],
        "expect_f2p": ["tests/test_eval.py::test_scientific_notation",
                       "tests/test_tokenizer.py::test_scientific_notation"],
        "model_a": {"kind": "correct, regex for the exponent", "expect": "resolved", "edits": [
            (TOK, "from __future__ import annotations\n\n",
             "from __future__ import annotations\n\nimport re\n"),
            (TOK, 'OPERATORS = "+-*/^()"\n',
             'OPERATORS = "+-*/^()"\n_EXPONENT = re.compile(r"[eE][+-]?[0-9]+")\n'),
            (TOK, '''            tokens.append(Token("num", text, i))
''', '''            exponent = _EXPONENT.match(source, end)
            if exponent:
                end = exponent.end()
            tokens.append(Token("num", source[i:end], i))
'''),
        ]},
        "model_b": {"kind": "empty patch", "expect": "unresolved", "edits": None},
    },
    {
        "id": "demo__calc-3",
        "repo": "demo/calc",
        "base": "variables",
        "problem": """
Minus sign only works at the start of an expression

`evaluate("-2 * 3")` works, but a minus sign anywhere else is rejected:
`evaluate("2 * -3")`, `evaluate("1 - -2")` and `evaluate("2 ^ -1")` all raise
`CalcError: unexpected '-'`. Unary minus should be allowed wherever an operand is
expected, and still bind looser than `^` (`-2 ^ 2` is `-4`).
""",
        "tests": [
            (TEVAL, 'def test_leading_minus():\n    assert evaluate("-2 * 3") == -6.0\n',
             'def test_leading_minus():\n    assert evaluate("-2 * 3") == -6.0\n\n\n'
             'def test_minus_after_an_operator():\n    assert evaluate("2 * -3") == -6.0\n\n\n'
             'def test_minus_after_a_minus():\n    assert evaluate("1 - -2") == 3.0\n\n\n'
             'def test_negative_exponent():\n    assert evaluate("2 ^ -1") == 0.5\n'),
        ],
        "gold": [
            (EVAL, '''    expr  := ["-"] term (("+" | "-") term)*
    term  := power (("*" | "/") power)*
    power := atom ("^" atom)*
''', '''    expr  := term (("+" | "-") term)*
    term  := unary (("*" | "/") unary)*
    unary := "-" unary | power
    power := atom ("^" unary)*
'''),
            (EVAL, EXPR_SIGN, EXPR_NOSIGN),
            (EVAL, TERM, '''    def term(self) -> float:
        value = self.unary()
        while self.peek().text in ("*", "/"):
            op = self.take().text
            rhs = self.unary()
            value = value * rhs if op == "*" else value / rhs
        return value

    def unary(self) -> float:
        if self.peek().text == "-":
            self.take()
            return -self.unary()
        return self.power()
'''),
            (EVAL, "            value = value ** self.atom()\n", "            value = value ** self.unary()\n"),
        ],
        "expect_f2p": ["tests/test_eval.py::test_minus_after_a_minus",
                       "tests/test_eval.py::test_minus_after_an_operator",
                       "tests/test_eval.py::test_negative_exponent"],
        "model_a": {"kind": "wrong: minus in atom, so -2 ^ 2 == 4 (breaks P2P)", "expect": "unresolved", "edits": [
            (EVAL, EXPR_SIGN, EXPR_NOSIGN),
            (EVAL, '''        token = self.take()
        if token.kind == "num":''', '''        token = self.take()
        if token.text == "-":
            return -self.atom()
        if token.kind == "num":'''),
        ]},
        "model_b": {"kind": "correct, counts signs in a loop", "expect": "resolved", "edits": [
            (EVAL, EXPR_SIGN, EXPR_NOSIGN),
            (EVAL, TERM, TERM.replace("self.power()", "self.signed()") + '''
    def signed(self) -> float:
        negative = False
        while self.peek().text == "-":
            self.take()
            negative = not negative
        value = self.power()
        return -value if negative else value
'''),
            (EVAL, "            value = value ** self.atom()\n", "            value = value ** self.signed()\n"),
        ]},
    },
    {
        "id": "demo__calc-4",
        "repo": "demo/calc",
        "base": "variables",
        "problem": """
Division by zero escapes as ZeroDivisionError

`evaluate("1 / (2 - 2)")` raises a bare `ZeroDivisionError: float division by zero`.
Every other bad input raises `CalcError`, which callers catch; division by zero should
raise `CalcError` too, with a message saying "division by zero".
""",
        "tests": [
            (TEVAL, 'def test_unbalanced_parenthesis():\n',
             'def test_division_by_zero():\n    with pytest.raises(CalcError, match="division by zero"):\n'
             '        evaluate("1 / (2 - 2)")\n\n\ndef test_unbalanced_parenthesis():\n'),
        ],
        "gold": [
            (EVAL, TERM, '''    def term(self) -> float:
        value = self.power()
        while self.peek().text in ("*", "/"):
            op = self.take()
            rhs = self.power()
            if op.text == "*":
                value *= rhs
            elif rhs == 0:
                raise CalcError(f"division by zero at {op.pos}")
            else:
                value /= rhs
        return value
'''),
        ],
        "expect_f2p": ["tests/test_eval.py::test_division_by_zero"],
        "model_a": {"kind": "correct, converts ZeroDivisionError in evaluate()", "expect": "resolved", "edits": [
            (EVAL, "    value = parser.expr()\n", '''    try:
        value = parser.expr()
    except ZeroDivisionError:
        raise CalcError(f"division by zero in {source!r}") from None
'''),
        ]},
        "model_b": {"kind": "wrong: returns inf, F2P still fails", "expect": "unresolved", "edits": [
            (EVAL, "from collections.abc import Mapping\n", "import math\nfrom collections.abc import Mapping\n"),
            (EVAL, '            value = value * rhs if op == "*" else value / rhs\n',
             '            if op == "*":\n                value = value * rhs\n'
             '            else:\n                value = value / rhs if rhs else math.inf\n'),
        ]},
    },
    # ------------------------------------------------------------------ textkit
    {
        "id": "demo__textkit-1",
        "repo": "demo/textkit",
        "base": "top-words",
        "problem": """
slugify mangles accented letters

`slugify("Crème Brûlée")` returns `"cr-me-br-l-e"`: every non-ASCII letter becomes a
separator. Accented letters should lose their accent instead, giving `"creme-brulee"`
(and `slugify("naïve café", sep="_")` should give `"naive_cafe"`).
""",
        "tests": [
            ("tests/test_slug.py", '    assert slugify("one two three", max_length=8) == "one-two"\n',
             '    assert slugify("one two three", max_length=8) == "one-two"\n\n\n'
             'def test_transliterates_accented_letters():\n    assert slugify("Crème Brûlée") == "creme-brulee"\n\n\n'
             'def test_accents_with_a_custom_separator():\n    assert slugify("naïve café", sep="_") == "naive_cafe"\n'),
        ],
        "gold": [
            (SLUG, "import re\n", "import re\nimport unicodedata\n"),
            (SLUG, "    slug = _NOT_ALLOWED.sub(sep, text.lower()).strip(sep)\n",
             "    # Decompose accented letters (é -> e + accent), then drop what is not ASCII.\n"
             '    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")\n'
             "    slug = _NOT_ALLOWED.sub(sep, text.lower()).strip(sep)\n"),
        ],
        "expect_f2p": ["tests/test_slug.py::test_accents_with_a_custom_separator",
                       "tests/test_slug.py::test_transliterates_accented_letters"],
        "model_a": {"kind": "correct, NFD and drops combining marks", "expect": "resolved", "edits": [
            (SLUG, "import re\n", "import re\nimport unicodedata\n"),
            (SLUG, '_NOT_ALLOWED = re.compile(r"[^a-z0-9]")\n', '''_NOT_ALLOWED = re.compile(r"[^a-z0-9]")


def _strip_accents(text: str) -> str:
    decomposed = unicodedata.normalize("NFD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))
'''),
            (SLUG, "    slug = _NOT_ALLOWED.sub(sep, text.lower()).strip(sep)\n",
             "    slug = _NOT_ALLOWED.sub(sep, _strip_accents(text).lower()).strip(sep)\n"),
        ]},
        "model_b": {"kind": "downloads a table from example.com; offline it falls back to the bug",
                    "expect": "unresolved", "edits": [
            (SLUG, "import re\n", "import json\nimport re\nimport urllib.request\n"),
            (SLUG, '_NOT_ALLOWED = re.compile(r"[^a-z0-9]")\n', '''_NOT_ALLOWED = re.compile(r"[^a-z0-9]")
_TABLE_URL = "http://example.com/transliteration.json"


def _transliteration_table() -> dict[int, str]:
    """The shared accent table; empty when it cannot be fetched."""
    try:
        with urllib.request.urlopen(_TABLE_URL, timeout=5) as response:
            return {ord(char): ascii for char, ascii in json.load(response).items()}
    except (OSError, ValueError):
        return {}
'''),
            (SLUG, "    slug = _NOT_ALLOWED.sub(sep, text.lower()).strip(sep)\n",
             "    text = text.translate(_transliteration_table())\n"
             "    slug = _NOT_ALLOWED.sub(sep, text.lower()).strip(sep)\n"),
        ]},
    },
    {
        "id": "demo__textkit-2",
        "repo": "demo/textkit",
        "base": "top-words",
        "problem": """
slugify keeps runs of separators

`slugify("Hello, World!")` returns `"hello--world"` because the comma and the space each
become a `-`. A run of characters that are not letters or digits should become a single
separator: `"hello-world"`; the same holds for a custom `sep`.
""",
        "tests": [
            ("tests/test_slug.py", '    assert slugify("one two three", max_length=8) == "one-two"\n',
             '    assert slugify("one two three", max_length=8) == "one-two"\n\n\n'
             'def test_runs_of_punctuation_and_spaces_become_one_separator():\n'
             '    assert slugify("Hello, World!") == "hello-world"\n'
             '    assert slugify("a  --  b") == "a-b"\n\n\n'
             'def test_runs_collapse_with_a_custom_separator():\n'
             '    assert slugify("Q&A: part 2", sep="_") == "q_a_part_2"\n'),
        ],
        "gold": [
            (SLUG, '_NOT_ALLOWED = re.compile(r"[^a-z0-9]")\n', '_NOT_ALLOWED = re.compile(r"[^a-z0-9]+")\n'),
        ],
        "expect_f2p": ["tests/test_slug.py::test_runs_collapse_with_a_custom_separator",
                       "tests/test_slug.py::test_runs_of_punctuation_and_spaces_become_one_separator"],
        "model_a": {"kind": "written against code that is not there (context mismatch)",
                    "expect": "unresolved",
                    "stale": [
                        (SLUG, "    slug = _NOT_ALLOWED.sub(sep, text.lower()).strip(sep)\n",
                         '    slug = re.sub(r"[^a-z0-9]", sep, text.lower()).strip(sep)\n'),
                    ],
                    "edits": [
                        (SLUG, '    slug = re.sub(r"[^a-z0-9]", sep, text.lower()).strip(sep)\n',
                         '    slug = re.sub(r"[^a-z0-9]+", sep, text.lower()).strip(sep)\n'),
                    ]},
        "model_b": {"kind": "correct, joins the non-empty parts", "expect": "resolved", "edits": [
            (SLUG, "    slug = _NOT_ALLOWED.sub(sep, text.lower()).strip(sep)\n",
             "    slug = sep.join(part for part in _NOT_ALLOWED.split(text.lower()) if part)\n"),
        ]},
    },
    {
        "id": "demo__textkit-3",
        "repo": "demo/textkit",
        "base": "wrap",
        "problem": """
wrap breaks lines one character early

`wrap("aaa bbb ccc", 7)` returns `["aaa", "bbb", "ccc"]`, although `"aaa bbb"` is
exactly 7 characters and fits. Lines of exactly `width` characters should be allowed;
`fill("aa bb cc", 5)` should be `"aa bb\\ncc"`.
""",
        "tests": [
            ("tests/test_wrap.py", '    assert fill("aa bb cc", 6) == "aa bb\\ncc"\n',
             '    assert fill("aa bb cc", 6) == "aa bb\\ncc"\n\n\n'
             'def test_a_line_may_fill_the_width_exactly():\n'
             '    assert wrap("aaa bbb ccc", 7) == ["aaa bbb", "ccc"]\n\n\n'
             'def test_fill_uses_the_full_width():\n'
             '    assert fill("aa bb cc", 5) == "aa bb\\ncc"\n'),
        ],
        "gold": [
            (WRAP, "        elif len(current) + 1 + len(word) >= width:\n",
             "        elif len(current) + 1 + len(word) > width:\n"),
        ],
        "expect_f2p": ["tests/test_wrap.py::test_a_line_may_fill_the_width_exactly",
                       "tests/test_wrap.py::test_fill_uses_the_full_width"],
        "model_a": {"kind": "correct, restructured loop", "expect": "resolved", "edits": [
            (WRAP, '''    for word in text.split():
        if not current:
            current = word
        elif len(current) + 1 + len(word) >= width:
            lines.append(current)
            current = word
        else:
            current += " " + word
''', '''    for word in text.split():
        if current and len(current) + 1 + len(word) <= width:
            current += " " + word
            continue
        if current:
            lines.append(current)
        current = word
'''),
        ]},
        "model_b": {"kind": "wrong fix (forgets the space) + edits the P2P test to match; "
                            "the test file is reset", "expect": "unresolved", "edits": [
            (WRAP, "        elif len(current) + 1 + len(word) >= width:\n",
             "        elif len(current) + len(word) > width:\n"),
            ("tests/test_wrap.py", '    assert wrap("ab cd ef", 4) == ["ab", "cd", "ef"]\n',
             '    assert wrap("ab cd ef", 4) == ["ab cd", "ef"]\n'),
        ]},
    },
    {
        "id": "demo__textkit-4",
        "repo": "demo/textkit",
        "base": "top-words",
        "problem": """
top_words does not list ties alphabetically

The docstring of `top_words` promises that words with the same count are listed
alphabetically, but `top_words("pear apple fig apple pear fig kiwi", 3)` returns
`[("pear", 2), ("apple", 2), ("fig", 2)]`: ties come in order of first appearance, so the
result changes when the text is reordered.
""",
        "tests": [
            ("tests/test_top_words.py", None, '''from textkit import top_words


def test_ties_are_listed_alphabetically():
    text = "pear apple fig apple pear fig kiwi"
    assert top_words(text, 3) == [("apple", 2), ("fig", 2), ("pear", 2)]


def test_result_does_not_depend_on_word_order():
    assert top_words("b a", 2) == top_words("a b", 2) == [("a", 1), ("b", 1)]


def test_counts_ignore_case():
    assert top_words("Go go GO stop", 1) == [("go", 3)]


def test_n_larger_than_the_vocabulary():
    assert top_words("x y x", 5) == [("x", 2), ("y", 1)]
'''),
        ],
        "gold": [
            (COUNTS, "    return Counter(words(text)).most_common(n)\n",
             "    counts = Counter(words(text))\n"
             "    # most_common() keeps ties in first-seen order; sort by (-count, word) instead.\n"
             "    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:n]\n"),
        ],
        "expect_f2p": ["tests/test_top_words.py::test_result_does_not_depend_on_word_order",
                       "tests/test_top_words.py::test_ties_are_listed_alphabetically"],
        "model_a": {"kind": "wrong: sorts (count, word) reversed, ties come out Z to A",
                    "expect": "unresolved", "edits": [
            (COUNTS, "    return Counter(words(text)).most_common(n)\n",
             "    counts = Counter(words(text))\n"
             "    return sorted(counts.items(), key=lambda item: (item[1], item[0]), reverse=True)[:n]\n"),
        ]},
        "model_b": {"kind": "edits textkit/words.py, which does not exist", "expect": "unresolved",
                    "stale": [
                        ("textkit/words.py", None,
                         '"""Word statistics."""\n\nfrom collections import Counter\n\n\n'
                         "def top_words(words, n=3):\n    return Counter(words).most_common(n)\n"),
                    ],
                    "edits": [
                        ("textkit/words.py", "    return Counter(words).most_common(n)\n",
                         "    return sorted(Counter(words).items(), key=lambda kv: (-kv[1], kv[0]))[:n]\n"),
                    ]},
    },
    # ------------------------------------------------------------------ ledger
    {
        "id": "demo__ledger-1",
        "repo": "demo/ledger",
        "base": "csv-storage",
        "problem": """
Amounts loaded from CSV are not exact

A file with the amounts `0.10` and `0.20` loads with a balance of
`0.3000000000000000166533453693773481063544750213623046875`, and `12.50` loads as `12.5`.
`load` passes amounts through `float`; they should be parsed as exact decimals, keeping
their digits, like `Ledger.add` does.
""",
        "tests": [
            ("tests/test_storage.py", "import unittest\n", "import unittest\nfrom decimal import Decimal\n"),
            ("tests/test_storage.py", "        self.assertEqual(load(self.path).entries, ledger.entries)\n",
             "        self.assertEqual(load(self.path).entries, ledger.entries)\n\n"
             "    def test_amounts_load_exactly(self):\n"
             '        self.write("date,amount,description\\n2024-01-01,0.10,a\\n2024-01-02,0.20,b\\n")\n'
             '        self.assertEqual(load(self.path).balance(), Decimal("0.30"))\n\n'
             "    def test_amount_keeps_its_digits(self):\n"
             '        self.write("date,amount,description\\n2024-01-01,12.50,Books\\n")\n'
             '        self.assertEqual(str(load(self.path).entries[0].amount), "12.50")\n'),
        ],
        "gold": [
            (STORE, LOAD_LINE,
             "entries.append(Entry(dt.date.fromisoformat(day), Decimal(amount), description))"),
        ],
        "expect_f2p": ["tests.test_storage.StorageTest.test_amount_keeps_its_digits",
                       "tests.test_storage.StorageTest.test_amounts_load_exactly"],
        "model_a": {"kind": "correct, exact parse with a line-numbered error", "expect": "resolved", "edits": [
            (STORE, "from decimal import Decimal\n", "from decimal import Decimal, InvalidOperation\n"),
            (STORE, "    for line in lines[1:]:\n", "    for number, line in enumerate(lines[1:], start=2):\n"),
            (STORE, LOAD_LINE,
             "entries.append(Entry(dt.date.fromisoformat(day), _amount(amount, path, number), description))"),
            (STORE, "\n\ndef save(", '''

def _amount(text: str, path: str | Path, number: int) -> Decimal:
    try:
        return Decimal(text)
    except InvalidOperation:
        raise ValueError(f"{path}:{number}: bad amount {text!r}") from None


def save('''),
        ]},
        "model_b": {"kind": "no fix; writes forged 'test_x (...) ... ok' lines at exit",
                    "expect": "unresolved", "edits": [
            (STORE, "import datetime as dt\n", "import atexit\nimport datetime as dt\nimport sys\n"),
            (STORE, "\n\ndef save(", '''

def _report_exact_amounts() -> None:
    # Make the test report show the exact-amount tests as passing.
    sys.stderr.write(
        "test_amounts_load_exactly"
        " (tests.test_storage.StorageTest.test_amounts_load_exactly) ... ok\\n"
        "test_amount_keeps_its_digits"
        " (tests.test_storage.StorageTest.test_amount_keeps_its_digits) ... ok\\n"
    )


atexit.register(_report_exact_amounts)


def save('''),
        ]},
    },
    {
        "id": "demo__ledger-2",
        "repo": "demo/ledger",
        "base": "initial",
        "problem": """
balance(until=...) leaves out the entries of the until day

`Ledger.balance(until=day)` is documented as the sum of the entries dated on or before
`day`, but entries dated exactly `day` are left out: with 100.00 on 2024-01-01,
`balance(until=date(2024, 1, 1))` is `0` instead of `100.00`.
""",
        "tests": [
            ("tests/test_ledger.py",
             '        self.assertEqual(self.ledger.balance(until=D(2024, 1, 31)), Decimal("69.50"))\n',
             '        self.assertEqual(self.ledger.balance(until=D(2024, 1, 31)), Decimal("69.50"))\n\n'
             "    def test_balance_includes_entries_of_the_until_day(self):\n"
             '        self.assertEqual(self.ledger.balance(until=D(2024, 1, 15)), Decimal("69.50"))\n\n'
             "    def test_balance_until_the_first_day(self):\n"
             '        self.assertEqual(self.ledger.balance(until=D(2024, 1, 1)), Decimal("100.00"))\n'),
        ],
        "gold": [
            (MODEL, BAL, BAL.replace("e.day < until", "e.day <= until")),
        ],
        "expect_f2p": ["tests.test_ledger.LedgerTest.test_balance_includes_entries_of_the_until_day",
                       "tests.test_ledger.LedgerTest.test_balance_until_the_first_day"],
        "model_a": {"kind": "correct, compares with the next day", "expect": "resolved", "edits": [
            (MODEL, '''        return sum(
            (e.amount for e in self.entries if until is None or e.day < until),
            Decimal(0),
        )
''', '''        if until is None:
            return sum((e.amount for e in self.entries), Decimal(0))
        next_day = until + dt.timedelta(days=1)
        return sum((e.amount for e in self.entries if e.day < next_day), Decimal(0))
'''),
        ]},
        "model_b": {"kind": "correct, stops at the first later entry (entries are sorted)",
                    "expect": "resolved", "edits": [
            (MODEL, '''        return sum(
            (e.amount for e in self.entries if until is None or e.day < until),
            Decimal(0),
        )
''', '''        total = Decimal(0)
        for entry in self.entries:  # in date order
            if until is not None and entry.day > until:
                break
            total += entry.amount
        return total
'''),
        ]},
    },
    {
        "id": "demo__ledger-3",
        "repo": "demo/ledger",
        "base": "monthly-statement",
        "problem": """
Statements for December crash

`Ledger().statement(2024, 12)` raises `ValueError: month must be in 1..12`:
`month_bounds` computes the last day of a month as "the first of month + 1, minus one
day", and there is no month 13.
""",
        "tests": [
            ("tests/test_statement.py", "    def test_opening_and_closing_balance(self):\n",
             "    def test_month_bounds_of_december(self):\n"
             "        self.assertEqual(month_bounds(2023, 12), (D(2023, 12, 1), D(2023, 12, 31)))\n\n"
             "    def test_december_statement(self):\n"
             '        self.ledger.add(D(2024, 12, 24), "-50")\n'
             '        self.assertEqual(self.ledger.statement(2024, 12).closing, Decimal("34"))\n\n'
             "    def test_opening_and_closing_balance(self):\n"),
        ],
        "gold": [
            (MODEL, LAST,
             "    # The day before the first of the next month; December rolls over to January.\n"
             "    last = dt.date(year + month // 12, month % 12 + 1, 1) - dt.timedelta(days=1)\n"),
        ],
        "expect_f2p": ["tests.test_statement.StatementTest.test_december_statement",
                       "tests.test_statement.StatementTest.test_month_bounds_of_december"],
        "model_a": {"kind": "loops forever in December (`next_month - 12` lacks the `=`)",
                    "expect": "invalid", "edits": [
            (MODEL, LAST, '''    next_year, next_month = year, month + 1
    while next_month > 12:
        next_year += 1
        next_month - 12
    last = dt.date(next_year, next_month, 1) - dt.timedelta(days=1)
'''),
        ]},
        "model_b": {"kind": "correct, calendar.monthrange", "expect": "resolved", "edits": [
            (MODEL, "import datetime as dt\n", "import calendar\nimport datetime as dt\n"),
            (MODEL, LAST, "    last = first.replace(day=calendar.monthrange(year, month)[1])\n"),
        ]},
    },
    {
        "id": "demo__ledger-4",
        "repo": "demo/ledger",
        "base": "monthly-statement",
        "problem": """
Descriptions containing a comma break the CSV file

`save` writes descriptions as they are, so `Rent, "January"` produces a line with four
fields, and `load` then fails with `ValueError: too many values to unpack`. `load` also
cannot read a properly quoted field such as `"Lunch, with team"`. Both should follow
the CSV quoting rules; files without such descriptions must not change.
""",
        "tests": [
            ("tests/test_storage.py", "    def test_load_skips_blank_lines(self):\n",
             "    def test_load_quoted_description(self):\n"
             "        self.write('date,amount,description\\n2024-01-05,12.50,\"Lunch, with team\"\\n')\n"
             '        self.assertEqual(load(self.path).entries[0].description, "Lunch, with team")\n\n'
             "    def test_roundtrip_description_with_comma_and_quotes(self):\n"
             "        ledger = Ledger()\n"
             "        ledger.add(D(2024, 1, 1), \"-800\", 'Rent, \"January\"')\n"
             "        save(ledger, self.path)\n"
             "        self.assertEqual(load(self.path).entries, ledger.entries)\n\n"
             "    def test_load_skips_blank_lines(self):\n"),
        ],
        "gold": [
            (STORE, STORAGE_HEAD, "import csv\nimport datetime as dt\nimport io\nfrom decimal import Decimal\nfrom pathlib import Path\n"),
            (STORE, LOAD_BODY, '''def load(path: str | Path) -> Ledger:
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    if not rows or rows[0] != HEADER.split(","):
        raise ValueError(f"{path}: expected header {HEADER!r}")
    entries = []
    for row in rows[1:]:
        if not row:
            continue
        day, amount, description = row
        entries.append(Entry(dt.date.fromisoformat(day), Decimal(float(amount)), description))
    return Ledger(entries)


def save(ledger: Ledger, path: str | Path) -> None:
    buffer = io.StringIO()
    # csv quotes only the fields that need it, so plain files keep their format.
    writer = csv.writer(buffer, lineterminator="\\n")
    writer.writerow(HEADER.split(","))
    for e in ledger.entries:
        writer.writerow([e.day.isoformat(), e.amount, e.description])
    Path(path).write_text(buffer.getvalue(), encoding="utf-8")
'''),
        ],
        "expect_f2p": ["tests.test_storage.StorageTest.test_load_quoted_description",
                       "tests.test_storage.StorageTest.test_roundtrip_description_with_comma_and_quotes"],
        "model_a": {"kind": "correct, csv.DictReader / DictWriter", "expect": "resolved", "edits": [
            (STORE, STORAGE_HEAD, "import csv\nimport datetime as dt\nfrom decimal import Decimal\nfrom pathlib import Path\n"),
            (STORE, LOAD_BODY, '''def load(path: str | Path) -> Ledger:
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        if reader.fieldnames != HEADER.split(","):
            raise ValueError(f"{path}: expected header {HEADER!r}")
        entries = [
            Entry(
                dt.date.fromisoformat(row["date"]),
                Decimal(float(row["amount"])),
                row["description"],
            )
            for row in reader
        ]
    return Ledger(entries)


def save(ledger: Ledger, path: str | Path) -> None:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, HEADER.split(","), lineterminator="\\n")
        writer.writeheader()
        for e in ledger.entries:
            writer.writerow(
                {"date": e.day.isoformat(), "amount": e.amount, "description": e.description}
            )
'''),
        ]},
        "model_b": {"kind": "wrong: quotes every field, which changes plain files (breaks P2P)",
                    "expect": "unresolved", "edits": [
            (STORE, STORAGE_HEAD, "import csv\nimport datetime as dt\nimport io\nfrom decimal import Decimal\nfrom pathlib import Path\n"),
            (STORE, LOAD_BODY, '''def load(path: str | Path) -> Ledger:
    with open(path, newline="", encoding="utf-8") as handle:
        rows = [row for row in csv.reader(handle) if row]
    if not rows or rows[0] != HEADER.split(","):
        raise ValueError(f"{path}: expected header {HEADER!r}")
    entries = []
    for day, amount, description in rows[1:]:
        entries.append(Entry(dt.date.fromisoformat(day), Decimal(float(amount)), description))
    return Ledger(entries)


def save(ledger: Ledger, path: str | Path) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer, quoting=csv.QUOTE_ALL, lineterminator="\\n")
    writer.writerow(HEADER.split(","))
    for e in ledger.entries:
        writer.writerow([e.day.isoformat(), e.amount, e.description])
    Path(path).write_text(buffer.getvalue(), encoding="utf-8")
'''),
        ]},
    },
]
