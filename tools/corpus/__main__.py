"""Entry point for ``python -m corpus`` (see :mod:`corpus.cli`)."""

import sys

from corpus.cli import main

sys.exit(main())
