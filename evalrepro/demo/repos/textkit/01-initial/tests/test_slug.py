from textkit import slugify


def test_lowercases_and_joins_words():
    assert slugify("Hello World") == "hello-world"


def test_keeps_digits():
    assert slugify("Python 3 release") == "python-3-release"


def test_strips_separators_at_the_edges():
    assert slugify("!Hello!") == "hello"


def test_custom_separator():
    assert slugify("Hello World", sep="_") == "hello_world"


def test_max_length_cuts_at_a_separator():
    assert slugify("one two three", max_length=7) == "one-two"
    assert slugify("one two three", max_length=8) == "one-two"
