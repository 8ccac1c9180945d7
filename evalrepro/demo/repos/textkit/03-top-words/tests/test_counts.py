from textkit import top_words, word_counts, words


def test_words_are_lowercased():
    assert words("The cat, the HAT.") == ["the", "cat", "the", "hat"]


def test_apostrophes_stay_inside_words():
    assert words("Don't stop") == ["don't", "stop"]


def test_word_counts():
    assert word_counts("a b a") == {"a": 2, "b": 1}


def test_top_words_most_frequent_first():
    assert top_words("b a b c b a", 2) == [("b", 3), ("a", 2)]


def test_top_words_of_zero():
    assert top_words("a b", 0) == []
