import pytest

from calc import CalcError, evaluate


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("1 + 2", 3.0),
        ("7 - 2 - 1", 4.0),
        ("2 * 3 + 4", 10.0),
        ("2 * (3 + 4)", 14.0),
        ("7 / 2", 3.5),
    ],
)
def test_arithmetic(source, expected):
    assert evaluate(source) == expected


def test_leading_minus():
    assert evaluate("-2 * 3") == -6.0


def test_unbalanced_parenthesis():
    with pytest.raises(CalcError, match=r"expected '\)' at 6"):
        evaluate("(1 + 2")


def test_trailing_tokens():
    with pytest.raises(CalcError, match="unexpected '3' at 2"):
        evaluate("2 3")
