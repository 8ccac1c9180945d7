"""Print the agreement table of the README: our parsers against swebench and ground truth.

    .venv/bin/python -m tests.agreement

For each runner of the committed corpus: how many (log, compatible parser) maps equal
swebench 5.0.2's key for key, and how many native maps equal the runner's own ground
truth; deliberate differences are counted apart, by name.
"""

from __future__ import annotations

from collections import defaultdict

from evalrepro.parsers import get_parser
from tests.corpus import all_corpus
from tests.corpus_checks import truth_shown_to
from tests.reference import swebench_status_map


def main() -> None:
    rows: dict[str, dict[str, list[int]]] = defaultdict(
        lambda: {"compat": [0, 0], "native": [0, 0], "named": [0, 0]}
    )
    for log in all_corpus():
        row = rows[log.runner]
        for name in log.compat:
            ours = {k: str(v) for k, v in get_parser(name).parse(log.text).statuses.items()}
            bucket = "named" if name in log.known_differences else "compat"
            row[bucket][0] += ours == swebench_status_map(name, log.text)
            row[bucket][1] += 1
        if log.native and log.truth is not None:
            native = get_parser(log.native)
            ours = {k: str(v) for k, v in native.parse(log.text).statuses.items()}
            truth = truth_shown_to(native, log.truth)
            bucket = "named" if log.native in log.known_differences else "native"
            row[bucket][0] += ours == truth
            row[bucket][1] += 1
    print("| runner | logs | compatible = swebench | native = ground truth | named differences |")
    print("| --- | --- | --- | --- | --- |")
    logs = defaultdict(int)
    for log in all_corpus():
        logs[log.runner] += 1
    for runner, row in sorted(rows.items()):
        cells = [f"{ok}/{total}" if total else "-" for ok, total in (row["compat"], row["native"])]
        cells.append(str(row["named"][1]) if row["named"][1] else "-")
        print(f"| {runner} | {logs[runner]} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
