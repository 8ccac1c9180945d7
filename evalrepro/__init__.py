"""evalrepro: reproducible SWE-bench-style evaluation of code patches.

The pipeline reads top-down: config -> plan (lock) -> execute -> observe -> score -> report.
"""

from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

try:
    __version__ = version("evalrepro")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+source"

#: The installed package's folder (a wheel's copies of conf/ and backends/ live inside it).
PACKAGE_DIR = Path(__file__).resolve().parent
