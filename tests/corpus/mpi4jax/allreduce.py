# Modelled on mpi4jax/mpi4jax mpi4jax/_src/collective_ops/allreduce.py (MIT); rewritten, not copied:
# see SOURCE.md.
import numpy as np
from jax.interpreters import mlir


def mpi_allreduce_lowering(ctx, x, token, *, op, comm, transpose):
    nitems = int(np.prod(ctx.avals_in[0].shape))
    return mlir.lower_fun(
        lambda x, token: __import__("jax").ffi.ffi_call(
            "mpi_allreduce_ffi", (ctx.avals_out[0], ctx.avals_out[1]), has_side_effect=True
        )(x, token, nitems=np.int64(nitems), op=np.int64(op), comm=np.int64(comm), dtype=np.int64(0)),
        multiple_results=True,
    )(ctx, x, token)
