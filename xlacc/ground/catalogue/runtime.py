"""Finding codes about what a run printed or how it ended."""

from xlacc.ground.catalogue.entry import RULES, CatalogueEntry

ENTRIES: tuple[CatalogueEntry, ...] = (
    CatalogueEntry(
        "kernel-crash",
        "runtime",
        "error",
        "the process was killed by a signal",
        "Custom calls crash instead of failing when registration and call disagree (a legacy function registered "
        "as typed FFI crashes during registration; a typed handler called as legacy crashes at execution), when "
        "a kernel writes out of bounds (legacy calls check no sizes), or on an abort inside XLA.",
        "Run custom-call code in a child process (`xlacc run-smoke` does) and check `xlacc doctor` on the "
        "sources for api-version-mismatch and hardcoded-size; look for a `Check failed:` line above the crash.",
        "`Fatal Python error: Segmentation fault` / exit status -11 (SIGSEGV)",
        home=RULES + "crash",
    ),
    CatalogueEntry(
        "cuda-init-before-fork",
        "runtime",
        "error",
        "CUDA initialised before forking",
        "A forked child cannot use the CUDA context its parent created (`Cannot re-initialize CUDA in forked "
        "subprocess`), and JAX warns that os.fork() is incompatible with its threads.",
        "Start children with `multiprocessing.get_context(\"spawn\")` (or `set_start_method(\"spawn\")`), or "
        "initialise CUDA, torch_xla or JAX only inside the children.",
        "`RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, you must use the 'spawn' start method`",
        home=RULES + "python",
    ),
    CatalogueEntry(
        "torchax-no-lowering",
        "runtime",
        "error",
        "an op has no torchax lowering",
        "torchax runs each torch op through its table of jax lowerings. An aten op missing from the table raises "
        "`OperatorNotFound: Operator with name aten::X has no lowering`. A torch.library op (such as `xlacc::NAME`) "
        "with no `override_op_definition` falls through to its own implementation with torchax tensors, which fails "
        "with `torchax Tensors can only do math within the torchax environment` although the code runs inside it; "
        "the traceback then passes through torch/_library.",
        "For an xlacc op: `NAME.torch.register_torchax()` once torchax is imported (importing NAME.torch after "
        "torchax, or calling NAME() on torchax tensors, does it). For your own op: "
        "`torchax.default_env().override_op_definition(torch.ops.NS.op.default, lambda *args: "
        "torchax.interop.call_jax(jax_fn, *args))`, with the jax function taking the op's arguments positionally. "
        "For an aten op: the same override with a jax implementation, or ops torchax lowers.",
        "`torchax.tensor.OperatorNotFound: Operator with name aten::poisson has no lowering`",
        home=RULES + "error_text",
    ),
    CatalogueEntry(
        "torchax-mixed-tensors",
        "runtime",
        "error",
        "torch tensors, torchax tensors and jax arrays mixed",
        "Under torchax every tensor an op or a jitted function sees must be a torchax tensor (device \"jax\", a jax "
        "array inside), used inside `torchax.default_env()`. A plain CPU or CUDA tensor in the mix fails with "
        "`Expect a Tensor or a View but got <class 'torch.Tensor'>` (eager) or a bare `AssertionError: <class "
        "'torch.Tensor'>` (torchax.interop.jax_jit, call_jax); a jax array given to a torch op fails with `must be "
        "Tensor, not jaxlib._jax.ArrayImpl`; a torchax tensor used outside the environment fails with `torchax "
        "Tensors can only do math within the torchax environment`.",
        "Bring torch tensors in with `t.to(\"jax\")` inside `with torchax.default_env():` (a copy) and jax arrays "
        "with `torchax.interop.torch_view(a)` (no copy, as a KV cache held by jax should be); take the array out with "
        "`t.jax()`; run every torchax op inside the environment (or `torchax.enable_globally()`).",
        "`AssertionError: Expect a Tensor or a View but got <class 'torch.Tensor'>; usually this means there is a mixed math between XLATensor and torch.Tensor`",
        home=RULES + "error_text",
    ),
)
