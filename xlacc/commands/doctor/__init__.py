"""``xlacc doctor``: what is wrong with a custom call, why, and how to fix it.

    engine.py      what to examine for a request, run the rules over it, and gather one report
    inputs.py      what to read: file kinds, folder walks, notes, notebooks, bounded logs
    program.py     the parsed program: kernels, entry points, the Python that registers and calls them
    analysis.py    the source rules run over a program, findings per file
    command.py     `doctor -- COMMAND`: run it, read what it runs, rank what it showed
    section.py     one thing examined and what was found there
    rules/         one module per subject; each finding code is detected in exactly one of them, and
                   build and run-smoke call these same functions
The catalogue of codes (titles, fixes, where each is detected) is :mod:`xlacc.ground.catalogue`.
"""
