"""``python -m cruxflow.cli``: the same as the ``cruxflow`` console script."""

import sys

from cruxflow.cli import main

if __name__ == "__main__":  # importing it (pkgutil.walk_packages) must not run the CLI
    sys.exit(main())
