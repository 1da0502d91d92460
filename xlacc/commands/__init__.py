"""The capabilities, one package per command, each importing only from the ones listed below it:

- ``bench``: ``xlacc bench``, timing the op against XLA and its best peer;
- ``smoke``: ``xlacc run-smoke``, the op in child processes (the harnesses are the only code that
  imports jax or torch);
- ``build``: ``xlacc build``, which applies doctor's rules to what it compiled;
- ``doctor``: ``xlacc doctor`` (inputs, program, rules, engine, command runner);
- ``new``: ``xlacc new`` and ``xlacc update`` (the project, its record, wrapping a kernel).
"""
