"""Finding codes about the op under sharding, vmap and grad."""

from xlacc.ground.catalogue.entry import RULES, CatalogueEntry

ENTRIES: tuple[CatalogueEntry, ...] = (
    CatalogueEntry(
        "custom-call-replicated",
        "transforms",
        "error",
        "a custom call runs on gathered inputs instead of per shard",
        "XLA cannot split an ffi_call or custom call it knows nothing about: under jax.jit over sharded inputs it "
        "all-gathers every input onto each device, runs the kernel on the whole array everywhere and returns a "
        "replicated result. The numbers are right and the op stops scaling (measured on two H200s: 12.9x slower "
        "than XLA's own sharded add).",
        "Tell XLA how the op splits: wrap the call in `jax.experimental.custom_partitioning` with a Shardy "
        "`sharding_rule` (xlacc projects: a [sharding] table in xlacc.toml, then `xlacc update`), or call it inside "
        "`jax.shard_map(op, mesh=..., in_specs=..., out_specs=...)` so that it runs on each shard.",
        "compiled HLO: `%all-gather = f32[16]{0} all-gather(%param) ...` then `custom-call(%all-gather, %all-gather.1), custom_call_target=\"add\"`",
        home=RULES + "hlo_sharding",
    ),
    CatalogueEntry(
        "sharding-rule-missing",
        "transforms",
        "error",
        "custom_partitioning without a Shardy sharding_rule",
        "Shardy is jax's partitioner (jax_use_shardy_partitioner, the default): it reads a custom_partitioning "
        "op's `sharding_rule` and refuses the old GSPMD callbacks (`infer_sharding_from_operands`, "
        "`propagate_user_sharding`) given without one; jax 0.11 drops them.",
        "Pass `sharding_rule=` to `def_partition`, in einsum-like notation: `\"..., ... -> ...\"` for an elementwise "
        "op, `\"... c, c -> ... c\"` for a row-wise one whose rows stay whole (raise in `partition` if `c` is split), "
        "and `factor=size` keywords for compound factors such as `(k g)`.",
        "`NotImplementedError: Shardy is used, but sharding propagation callbacks instead of sharding_rule are provided. Need to provide sharding_rule to migrate to Shardy.`",
        home=RULES + "error_text",
    ),
    CatalogueEntry(
        "vmap-method-missing",
        "transforms",
        "error",
        "jax.vmap of an ffi_call that has no vmap_method",
        "`jax.ffi.ffi_call(...)` without `vmap_method` has no batching rule: jax.vmap (or a transform that uses it, "
        "such as jax.jacobian) raises. jax 0.11 moves batching of FFI calls to jax.experimental.hijax and calls "
        "vmap_method deprecated.",
        "Say how a batch runs: `vmap_method=\"broadcast_all\"` (an elementwise kernel takes the batch as one more dim; "
        "unbatched operands are copied), `\"expand_dims\"` (the kernel broadcasts size-1 dims itself) or "
        "`\"sequential\"` (one launch per example); or wrap the call in `jax.custom_batching.custom_vmap` with a rule "
        "that folds the batch into a dim the kernel already loops over, as xlacc's generated bindings do.",
        "`NotImplementedError: vmap is only supported for the ffi_call primitive when vmap_method is one of 'sequential', ... Got vmap_method=None.`",
        home=RULES + "error_text",
    ),
    CatalogueEntry(
        "grad-undefined",
        "transforms",
        "error",
        "jax.grad of a custom call without a backward",
        "XLA cannot differentiate a kernel it cannot see: jax.grad, jax.vjp and jax.jvp of an ffi_call raise.",
        "Wrap the op in `jax.custom_vjp` whose backward calls a backward kernel (or differentiates a jax.numpy "
        "reference); in an xlacc project add a [backward] table to xlacc.toml (kind = \"kernel\" with "
        "NAME_backward_launch<T>() in the kernel file, or kind = \"reference\") and run `xlacc update`.",
        "`ValueError: The FFI call to `my_op` cannot be differentiated. You can use `jax.custom_jvp` or `jax.custom_jvp` to add support.`",
        home=RULES + "error_text",
    ),
)
