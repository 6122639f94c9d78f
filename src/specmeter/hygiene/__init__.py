"""Measurement hygiene: what else the machine did while specmeter measured, a verdict on it, and ``doctor``.

Modules (this ``__init__`` imports none of them, so importing the package costs nothing):

* ``probes`` — cheap readings through psutil and /proc (CPU times, processes, PSI, governors).
* ``gpu`` — NVML, optional and import-guarded (``pip install specmeter[gpu]``).
* ``sampler`` — :class:`~specmeter.hygiene.sampler.MachineSampler`, the low-rate thread beside a run.
* ``verdict`` — quiet / busy / unusable, the thresholds, ``EXIT_NOISY_MACHINE`` (4, ``--strict``).
* ``stability`` — instability read from the records themselves (drift test, timing noise).
* ``section`` — the one hook a measuring command needs::

      from specmeter.hygiene.section import MachineWatch, stability_by_candidate
      watch = MachineWatch.start(threads=torch.get_num_threads())
      ...  # measure
      result.set_section("hygiene", watch.finish(stability_by_candidate(baseline, {label: records})))

  ``measuring.run.run_candidates`` already does this for bench, tune, select and demo, so a command built
  on it (``whatif``) gets the section, the console line and ``--strict`` without a line of its own.
* ``doctor`` — the checks of ``specmeter doctor``.
"""
