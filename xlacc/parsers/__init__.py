"""Readers of source code that other parts of xlacc share: C, C++ and CUDA (:mod:`xlacc.parsers.cxx`)
and Python (:mod:`xlacc.parsers.python`). They read; they never compile, import or run anything."""
