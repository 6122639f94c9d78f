"""The bundled demo: its models, how their training data and golden sets are built, and the demo run.

* ``models`` — where the shipped models live (``assets/models``), their names and the field report's
  letters (A, B, C).
* ``demo`` — ``specmeter demo``'s stages through the measuring core, and its summary.

The deterministic synthetic corpus the models are trained on and the held-out golden sets
``assets/golden/{general,legal}.jsonl`` are written by a build tool outside the package (``tools/corpus``,
run by ``make models``; docs/corpus.md).

Nothing here is needed to measure a user's own models; ``workloads`` loads the golden sets users bring.
"""
