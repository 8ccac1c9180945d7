import sys

from evalrepro.cli import main

sys.exit(main())
