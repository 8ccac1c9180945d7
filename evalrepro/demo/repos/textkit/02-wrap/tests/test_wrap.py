import pytest

from textkit import fill, wrap


def test_fills_lines_greedily():
    assert wrap("the quick brown fox jumps", 10) == ["the quick", "brown fox", "jumps"]


def test_no_line_exceeds_width():
    assert wrap("ab cd ef", 4) == ["ab", "cd", "ef"]


def test_long_word_gets_its_own_line():
    assert wrap("a extraordinary b", 5) == ["a", "extraordinary", "b"]


def test_whitespace_collapses():
    assert wrap("  one\n\ntwo   three ", 20) == ["one two three"]


def test_empty_text_has_no_lines():
    assert wrap("   ", 10) == []


def test_rejects_width_below_one():
    with pytest.raises(ValueError, match="at least 1"):
        wrap("x", 0)


def test_fill_joins_lines():
    assert fill("aa bb cc", 6) == "aa bb\ncc"
