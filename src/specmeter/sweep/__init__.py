"""``specmeter sweep``: launch or reach server configurations (no speculation, each k, a schedule) and run the
same load levels on each.

``config`` (what to sweep) → ``launch`` (a server from a template, its own process group, health wait, clean
stop) → ``state`` (the run's state types) → ``run`` (configurations in order, baseline first and last) →
``search`` (the SLO capacity search per configuration, on ``capacity``'s bisection) → ``result`` (the E
matrix, best k, schedule, capacity) → ``view`` (the console).
"""
