"""``python -m cruxflow.cli``: the same as the ``cruxflow`` console script."""

import sys

from cruxflow.cli import main

sys.exit(main())
