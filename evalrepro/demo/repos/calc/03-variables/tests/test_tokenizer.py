import pytest

from calc import CalcError, tokenize


def kinds(source):
    return [(token.kind, token.text) for token in tokenize(source)]


def test_numbers_and_operators():
    assert kinds("1 + 22*3.5") == [
        ("num", "1"),
        ("op", "+"),
        ("num", "22"),
        ("op", "*"),
        ("num", "3.5"),
        ("end", ""),
    ]


def test_positions():
    assert [token.pos for token in tokenize(" 12 +(4)")] == [1, 4, 5, 6, 7, 8]


def test_names():
    assert kinds("rate_2*x") == [("name", "rate_2"), ("op", "*"), ("name", "x"), ("end", "")]


def test_rejects_unknown_character():
    with pytest.raises(CalcError, match="unexpected '#' at 2"):
        tokenize("1 # 2")


def test_rejects_malformed_number():
    with pytest.raises(CalcError, match="bad number '1.2.3' at 0"):
        tokenize("1.2.3")
