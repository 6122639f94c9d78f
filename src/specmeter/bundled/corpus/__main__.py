"""Entry point for ``python -m specmeter.bundled.corpus`` (see :mod:`specmeter.bundled.corpus.cli`)."""

import sys

from specmeter.bundled.corpus.cli import main

sys.exit(main())
