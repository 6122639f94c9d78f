"""Choosing a draft and a draft length: ``compat`` (can it serve the target), ``tune`` (best k, cost curve),
``select`` (which draft for which traffic).

Modules: :mod:`tokens` and :mod:`compat` make the compatibility checks on what :mod:`specmeter.modeldir`
reads from model directories (no weights), :mod:`tune` analyses a k sweep with the cost model of
:mod:`specmeter.metrics.costmodel`, :mod:`mix` and :mod:`select` rank candidates for a traffic mix, and the
``console_*`` modules render each for the terminal. Nothing is re-exported here, so importing one piece does
not import the others.
"""
