"""Entry point for ``python -m specmeter.workloads.corpus`` (see :mod:`specmeter.workloads.corpus.cli`)."""

import sys

from specmeter.workloads.corpus.cli import main

sys.exit(main())
