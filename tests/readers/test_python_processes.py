"""xlacc.readers.python.processes: device initialisation, forks, and XLA implementations that fold away."""

from __future__ import annotations

import textwrap

from xlacc.readers.python import read


def facts(source: str):
    return read("run.py", textwrap.dedent(source))


def test_inits_and_forks_with_their_scopes():
    found = facts(
        """
        import multiprocessing, torch, jax
        def setup():
            torch.ones(2).to("cuda:0")
            jax.devices()
            torch.cuda.is_available()
        pool = multiprocessing.Pool(2)
        other = concurrent.futures.ProcessPoolExecutor(mp_context=ctx)
        """
    )
    assert [(scope, code) for _, code, scope in found.gpu_inits] == [("setup", 'torch.ones(2).to("cuda:0")'), ("setup", "jax.devices()")]
    assert [code for _, code, _ in found.forks] == ["multiprocessing.Pool(2)"]


def test_a_spawn_start_method_is_seen():
    assert facts("import multiprocessing\nmultiprocessing.set_start_method('spawn')\n").spawn_configured
    assert facts("import multiprocessing\nmultiprocessing.get_context('fork')\n").forks


def test_an_xla_implementation_returning_a_fresh_constant_tensor():
    found = facts(
        """
        import torch
        @torch.library.impl(lib, "op", "XLA")
        def op_xla(q, k):
            out = torch.zeros_like(q)
            return out
        @torch.library.impl(lib, "filled", "XLA")
        def filled_xla(q):
            out = torch.zeros_like(q)
            kernel(q, out)
            return out
        def plain(q):
            return torch.empty_like(q), torch.zeros(3)
        lib.impl("plain", plain, "XLA")
        """
    )
    assert [(function, returned) for _, function, returned in found.constant_impls] == [
        ("op_xla", "out"),
        ("plain", "torch.empty_like(q), torch.zeros(3)"),
    ]
