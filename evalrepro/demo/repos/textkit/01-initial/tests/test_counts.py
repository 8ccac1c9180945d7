from textkit import word_counts, words


def test_words_are_lowercased():
    assert words("The cat, the HAT.") == ["the", "cat", "the", "hat"]


def test_apostrophes_stay_inside_words():
    assert words("Don't stop") == ["don't", "stop"]


def test_word_counts():
    assert word_counts("a b a") == {"a": 2, "b": 1}
