"""Run history: every measured run in a SQLite store, and the comparison of two runs.

``RunStore`` is the store itself, ``RunRecorder`` is how a command records a run as it goes,
``load_source`` turns a run id or a result JSON file into a ``RunSource``, and ``compare_sources``
compares two of them. No torch anywhere in this package.
"""

from specmeter.store.db import RunInfo, RunStore, StoredRequest, StoreError, run_description
from specmeter.store.paths import STORE_ENV, default_store_path
from specmeter.store.recorder import RunRecorder
from specmeter.store.schema import SCHEMA_VERSION
from specmeter.store.sources import RunSource, is_run_ref, load_result_file, load_source, rebuild_result

__all__ = [
    "SCHEMA_VERSION",
    "STORE_ENV",
    "RunInfo",
    "RunRecorder",
    "RunSource",
    "RunStore",
    "StoreError",
    "StoredRequest",
    "default_store_path",
    "is_run_ref",
    "load_result_file",
    "load_source",
    "rebuild_result",
    "run_description",
]
