"""The corpus is data, never tests: pytest's doctest plugin takes every ``test*.txt`` for
a doctest file, and the ``>>>>>`` lines of an eval log's ``test_output.txt`` for prompts."""

collect_ignore_glob = ["*"]
