"""Which compatible parser SWE-bench uses for each of its repos that we have parsers for.

SWE-bench instances older than swebench 5 carry no ``log_parser`` field; the harness
picked the parser by repo. This table (swebench's MAP_REPO_TO_PARSER_PY, plus the C++,
Go, Rust, Java, PHP, Ruby and JavaScript repos whose parsers exist here, as data) lets
``evalrepro grade`` re-grade such instances without being told the parser.
"""

SWEBENCH_REPO_PARSERS: dict[str, str] = {
    "astropy/astropy": "pytest_v2",
    "django/django": "django",
    "marshmallow-code/marshmallow": "pytest",
    "matplotlib/matplotlib": "matplotlib",
    "mwaskom/seaborn": "seaborn",
    "pallets/flask": "pytest",
    "psf/requests": "pytest_options",
    "pvlib/pvlib-python": "pytest",
    "pydata/xarray": "pytest",
    "pydicom/pydicom": "pytest_options",
    "pylint-dev/astroid": "pytest",
    "pylint-dev/pylint": "pytest_options",
    "pytest-dev/pytest": "pytest",
    "pyvista/pyvista": "pytest",
    "scikit-learn/scikit-learn": "pytest_v2",
    "sqlfluff/sqlfluff": "pytest",
    "sphinx-doc/sphinx": "pytest_v2",
    "sympy/sympy": "sympy",
    # C/C++ (swebench's MAP_REPO_TO_PARSER_C, GoogleTest repos)
    "fmtlib/fmt": "googletest",
    # Go (swebench's MAP_REPO_TO_PARSER_GO)
    "caddyserver/caddy": "gotest",
    "gin-gonic/gin": "gotest",
    "gohugoio/hugo": "gotest",
    "hashicorp/terraform": "gotest",
    "prometheus/prometheus": "gotest",
    # Rust (swebench's MAP_REPO_TO_PARSER_RUST)
    "astral-sh/ruff": "cargo",
    "burntsushi/ripgrep": "cargo",
    "nushell/nushell": "cargo",
    "sharkdp/bat": "cargo",
    "tokio-rs/axum": "cargo",
    "tokio-rs/tokio": "cargo",
    "uutils/coreutils": "cargo",
    # Java (swebench's MAP_REPO_TO_PARSER_JAVA, Maven repos)
    "apache/druid": "maven",
    "google/gson": "maven",
    "javaparser/javaparser": "maven",
    # PHP (swebench's MAP_REPO_TO_PARSER_PHP)
    "briannesbitt/carbon": "phpunit",
    "laravel/framework": "phpunit",
    "php-cs-fixer/php-cs-fixer": "phpunit",
    "phpoffice/phpspreadsheet": "phpunit",
    # Ruby (swebench's MAP_REPO_TO_PARSER_RUBY, RSpec repos)
    "fastlane/fastlane": "rspec_transformed_json",
    "jordansissel/fpm": "rspec_transformed_json",
    "rubocop/rubocop": "rspec_transformed_json",
    # JavaScript
    "axios/axios": "tap",
    "babel/babel": "jest",
    "eslint/eslint": "eslint",  # a FAIL_ONLY repo: its parser records failures only
    "facebook/docusaurus": "jest",
    "mrdoob/three.js": "tap",
    "vuejs/core": "vitest",
}
