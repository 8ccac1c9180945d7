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


def test_power():
    assert evaluate("2 ^ 10") == 1024.0


def test_minus_binds_looser_than_power():
    assert evaluate("-2 ^ 2") == -4.0


def test_power_binds_tighter_than_product():
    assert evaluate("3 * 2 ^ 2") == 12.0


def test_variables():
    assert evaluate("rate * (hours + 1)", {"rate": 10, "hours": 3}) == 40.0


def test_unknown_variable():
    with pytest.raises(CalcError, match="unknown variable 'y' at 4"):
        evaluate("2 * y")


def test_unbalanced_parenthesis():
    with pytest.raises(CalcError, match=r"expected '\)' at 6"):
        evaluate("(1 + 2")


def test_trailing_tokens():
    with pytest.raises(CalcError, match="unexpected '3' at 2"):
        evaluate("2 3")
