"""Run in a child process by test_model_path.py (torchax is imported here, never in the test
process): a generated cpu paged-attention project's model path against the same models in torch.
Prints one JSON object: what each check measured.

    python model_path_child.py PROJECT_DIR KVW_PROJECT_DIR single|tp|dp|ragged   (PROJECT_DIR's name is its package)
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import torch

VOCAB = 256
PROMPT_LENS = (13, 20, 7)
NEW = 6
COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute")


def tiny(kind="llama", **extra):
    from transformers import LlamaConfig, MistralConfig, Qwen2Config

    cls = {"llama": LlamaConfig, "qwen2": Qwen2Config, "mistral": MistralConfig}[kind]
    # the smallest head size the decode op takes is 64; hidden stays 64 (q/k/v project up to 4 x 64)
    values = {"vocab_size": VOCAB, "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
              "head_dim": 64, "intermediate_size": 128, "max_position_embeddings": 128, "tie_word_embeddings": False}
    values.update(extra)
    return cls(**values)


def torch_model(config, seed=0, dtype=torch.float32):
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, attn_implementation="sdpa").to(dtype).eval()
    return model


def prompts(seed=0, lens=PROMPT_LENS):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, VOCAB, n).astype(np.int32) for n in lens]


def torch_greedy(model, prompt_list, new):
    out = []
    with torch.no_grad():
        for p in prompt_list:
            ids = torch.as_tensor(p, dtype=torch.long)[None]
            got = []
            for _ in range(new):
                token = int(model(ids).logits[0, -1].argmax())
                got.append(token)
                ids = torch.cat([ids, torch.tensor([[token]])], 1)
            out.append(got)
    return out


def torch_forced(model, prompt_list, continuation):
    """f32 logits [n + 1, batch, vocab] of each prompt then the continuation, as teacher_forced_logits."""
    rows = []
    with torch.no_grad():
        for p, c in zip(prompt_list, continuation):
            ids = torch.as_tensor(np.concatenate([p, c]), dtype=torch.long)[None]
            rows.append(model(ids).logits[0, len(p) - 1:].float().numpy())
    return np.stack(rows, 1)


def ragged_standin(query, key_cache, value_cache, cu_q_lens, kv_lens, block_tables, num_seqs, *, scale, sliding_window=0, soft_cap=0.0):
    """The ragged paged attention op's signature in plain jnp, any layout: each query token finds its
    sequence in cu_q_lens, sits at position kv_len - q_len + its index, attends causally."""
    import jax.numpy as jnp

    tokens, heads, size = query.shape
    _, block, kv_heads, _ = key_cache.shape
    seqs, blocks = block_tables.shape
    index = jnp.arange(tokens)
    seq = jnp.clip(jnp.searchsorted(cu_q_lens, index, side="right") - 1, 0, seqs - 1)
    q_len = cu_q_lens[seq + 1] - cu_q_lens[seq]
    pos = kv_lens[seq] - q_len + index - cu_q_lens[seq]
    keys = key_cache[block_tables].reshape(seqs, blocks * block, kv_heads, size)[seq]
    values = value_cache[block_tables].reshape(seqs, blocks * block, kv_heads, size)[seq]
    group = heads // kv_heads
    q = query.reshape(tokens, kv_heads, group, size).astype(jnp.float32)
    scores = jnp.einsum("tkgd,tjkd->tkgj", q, keys.astype(jnp.float32)) * scale
    if soft_cap:
        scores = soft_cap * jnp.tanh(scores / soft_cap)
    key_pos = jnp.arange(blocks * block)[None, :]
    valid = (key_pos <= pos[:, None]) & (key_pos < kv_lens[seq][:, None])
    if sliding_window:
        valid &= key_pos > pos[:, None] - sliding_window
    scores = jnp.where(valid[:, None, None, :], scores, -jnp.inf)
    weights = jnp.exp(scores - jnp.max(scores, -1, keepdims=True))
    out = jnp.einsum("tkgj,tjkd->tkgd", weights / jnp.sum(weights, -1, keepdims=True), values.astype(jnp.float32))
    live = (index < cu_q_lens[num_seqs[0]])[:, None, None]
    return jnp.where(live, out.reshape(tokens, heads, size), 0).astype(query.dtype)


def error_of(call):
    try:
        call()
    except Exception as e:  # noqa: BLE001
        return f"{type(e).__name__}: {e}"
    return None


def single(xm, kvw_op):
    import jax
    from transformers import BartConfig, DeepseekV3Config

    results = {}
    model = torch_model(tiny())
    engine = xm.Engine(model, max_seqs=4, max_len=48)
    batch = prompts()
    greedy = engine.generate(batch, max_new_tokens=NEW)
    results["greedy"] = greedy.tokens
    results["decode_compiles"] = engine._decode._cache_size()
    results["torch_greedy"] = torch_greedy(model, batch, NEW)
    results["finish"] = greedy.finish
    forced = np.array([t[: NEW - 1] for t in results["torch_greedy"]])
    got = engine.teacher_forced_logits(batch, forced)
    want = torch_forced(model, batch, forced)
    results["forced_max_abs_diff"] = float(np.abs(got - want).max())
    results["forced_shape"] = list(got.shape)
    # sampling
    results["sample_a"] = engine.generate(batch, max_new_tokens=NEW, temperature=1.0, seed=1).tokens
    results["sample_b"] = engine.generate(batch, max_new_tokens=NEW, temperature=1.0, seed=1).tokens
    results["sample_c"] = engine.generate(batch, max_new_tokens=NEW, temperature=1.0, seed=2).tokens
    results["nucleus_of_one"] = engine.generate(batch, max_new_tokens=NEW, temperature=0.7, top_p=1e-6, seed=3).tokens
    # EOS: the third greedy token of the first prompt
    eos = results["torch_greedy"][0][2]
    stopped = engine.generate(batch, max_new_tokens=NEW, eos_token_id=[eos])
    results["eos"], results["eos_tokens"], results["eos_finish"] = eos, stopped.tokens, stopped.finish
    results["free_blocks_after"], results["num_blocks"] = engine.cache.free_blocks, engine.cache.num_blocks
    results["merged_qkv"] = merged_projections(model, engine)
    results["merged_gate_up"] = merged_projections(model, engine, "mlp", ("gate_proj", "up_proj"), "gate_up_proj")
    # cache reuse: a cache with room for one batch only, two requests one after the other
    needed = sum(-(-(n + NEW) // 16) for n in PROMPT_LENS) + 1
    small = xm.Engine(model, max_seqs=3, max_len=48, num_blocks=needed)
    second = prompts(seed=5, lens=(9, 17, 20))  # as many blocks as the first batch
    results["reuse"] = [small.generate(batch, max_new_tokens=NEW).tokens, small.generate(second, max_new_tokens=NEW).tokens]
    results["reuse_torch_second"] = torch_greedy(model, second, NEW)
    results["reuse_free_blocks"] = small.cache.free_blocks
    results["reuse_needed"] = needed
    results["reuse_merged_qkv"] = merged_projections(model, small)
    # the ragged path: one jax function for prefill and decode
    ragged = xm.Engine(model, max_seqs=4, max_len=48, prefill_attention=ragged_standin, decode_attention=ragged_standin)
    results["ragged_forced_max_abs_diff"] = float(np.abs(ragged.teacher_forced_logits(batch, forced) - want).max())
    results["ragged_greedy"] = ragged.generate(batch, max_new_tokens=NEW).tokens
    # the cache written by the paged-kv-write project's op
    with_op = xm.Engine(model, max_seqs=4, max_len=48, kv_write=kvw_op)
    results["kv_write_op"] = with_op.kv_write_name
    results["kv_write_greedy"] = with_op.generate(batch, max_new_tokens=NEW).tokens
    results["kv_write_custom_calls"] = sorted(set(re.findall(r'custom_call_target="([^"]+)"', with_op.compiled_decode_text(3))))
    # Qwen2 (biases on q/k/v) and Mistral (sliding window longer than the context)
    for kind, extra in (("qwen2", {}), ("mistral", {"sliding_window": 64})):
        other = torch_model(tiny(kind, **extra), seed=3)
        got = xm.Engine(other, max_seqs=4, max_len=48).teacher_forced_logits(batch, forced)
        results[f"{kind}_forced_max_abs_diff"] = float(np.abs(got - torch_forced(other, batch, forced)).max())
    results["errors"] = errors(xm, model, BartConfig, DeepseekV3Config)
    results["devices"] = jax.device_count()
    return results


def merged_projections(model, engine, module="self_attn", parts=("q_proj", "k_proj", "v_proj"), merged_name="qkv_proj") -> dict:
    """Where layer 0's q/k/v (or gate/up) weights live: the jax parameters' names, torch's weights'
    byte offsets into the merged tensor, and the address jax reads it at."""
    prefix = f"lm.model.layers.0.{module}."
    owner = getattr(model.model.layers[0], module)
    views = [getattr(owner, name).weight for name in parts]
    merged = engine.params.get(prefix + merged_name + ".weight")
    base = merged.unsafe_buffer_pointer() if merged is not None else None
    return {"params": sorted(k[len(prefix):] for k in engine.params if k.startswith(prefix) and k.endswith("proj.weight")),
            "torch_offsets": [v.data_ptr() - base for v in views] if base is not None else None,
            "row_bytes": views[0].shape[1] * views[0].element_size(), "rows": [v.shape[0] for v in views], "address": base}


def errors(xm, model, BartConfig, DeepseekV3Config):
    """Each bad input's message, and whether anything was compiled before it."""
    found = {}
    found["head_size"] = error_of(lambda: xm.Engine(torch_model(tiny(head_dim=16)), max_seqs=2, max_len=32))
    found["mla"] = error_of(lambda: xm.check_model(DeepseekV3Config(), "f32", max_len=32))
    found["cross_attention"] = error_of(lambda: xm.check_model(BartConfig(), "f32", max_len=32))
    found["dtype"] = error_of(lambda: xm.Engine(torch_model(tiny(), dtype=torch.bfloat16), max_seqs=2, max_len=32))
    found["sliding_window"] = error_of(lambda: xm.check_model(tiny("mistral", sliding_window=16), "f32", max_len=32))
    engine = xm.Engine(model, max_seqs=4, max_len=48, num_blocks=4)
    found["cache_too_small"] = error_of(lambda: engine.generate(prompts(), max_new_tokens=NEW))
    found["prompt_too_long"] = error_of(lambda: engine.generate([np.zeros(45, np.int32)], max_new_tokens=NEW))
    found["too_many_sequences"] = error_of(lambda: engine.generate(prompts(lens=(3,) * 5), max_new_tokens=2))
    found["compiled_before_errors"] = engine._prefill._cache_size() + engine._decode._cache_size()
    found["free_blocks_after_errors"] = engine.cache.free_blocks
    return found


def tensor_parallel(xm):
    import jax

    model = torch_model(tiny())
    batch = prompts()
    engine = xm.Engine(model, max_seqs=4, max_len=48, mesh=xm.tensor_parallel_mesh(2))
    result = {"devices": jax.device_count(), "greedy": engine.generate(batch, max_new_tokens=NEW).tokens,
              "torch_greedy": torch_greedy(model, batch, NEW), "decode_compiles": engine._decode._cache_size()}
    result["nucleus_of_one"] = engine.generate(batch, max_new_tokens=NEW, temperature=0.7, top_p=1e-6, seed=3).tokens
    run = engine.start(batch, max_new_tokens=NEW)
    result["request_arrays_on_devices"] = sorted({len(a.sharding.device_set) for a in (run.tables, run.stop_lens, run.lens, engine._key)})
    engine.finish(run)
    decode = engine.compiled_decode_text(len(batch))
    result["decode_collectives"] = collectives(decode)
    result["prefill_collectives"] = collectives(engine.compiled_prefill_text(len(batch), 32))
    result["cache_sharding"] = spec_of(engine.cache.layers[0][0])
    qkv = engine.params["lm.model.layers.0.self_attn.qkv_proj.weight"]
    result["qkv_proj_sharding"] = spec_of(qkv)
    result["o_proj_sharding"] = spec_of(engine.params["lm.model.layers.0.self_attn.o_proj.weight"])
    result["head_sharding"] = spec_of(engine.params["lm.lm_head.weight"])
    attention = model.model.layers[0].self_attn
    parts = [getattr(attention, name).weight.detach().numpy() for name in ("q_proj", "k_proj", "v_proj")]
    shards = sorted(qkv.addressable_shards, key=lambda shard: shard.index[0].start or 0)
    tied = torch_model(tiny(tie_word_embeddings=True), seed=4)  # the head is the embedding: kept whole on every device
    tied_engine = xm.Engine(tied, max_seqs=4, max_len=48, mesh=xm.tensor_parallel_mesh(2))
    result["tied_head_split"] = tied_engine._head is not None
    result["tied_greedy"], result["tied_torch_greedy"] = tied_engine.generate(batch, max_new_tokens=NEW).tokens, torch_greedy(tied, batch, NEW)
    result["qkv_shards_hold_their_rows"] = [
        bool(np.array_equal(np.asarray(shard.data), np.concatenate([part.reshape(2, -1, part.shape[1])[i] for part in parts])))
        for i, shard in enumerate(shards)]
    return result


def collectives(hlo: str) -> dict:
    return {c: len(re.findall(rf"\b{c}(?:-start)?\(", hlo)) for c in COLLECTIVES}


def spec_of(array) -> list:
    """The array's PartitionSpec as a list, every dimension named (None: not split)."""
    spec = list(array.sharding.spec)
    return spec + [None] * (array.ndim - len(spec))


def data_parallel(xm):
    """Sequences over 2 shards, and 2 x 2 with tensor parallelism (4 devices); the prefill in 2 calls."""
    import jax

    model = torch_model(tiny())
    batch = prompts(lens=(13, 20, 7, 16))
    result = {"devices": jax.device_count(), "torch_greedy": torch_greedy(model, batch, NEW)}
    for dp, tp in ((2, 1), (2, 2)):
        engine = xm.Engine(model, max_seqs=4, max_len=48, mesh=xm.model_mesh(dp=dp, tp=tp), max_prefill_tokens=32)
        name = f"dp{dp}_tp{tp}"
        result[name] = engine.generate(batch, max_new_tokens=NEW).tokens
        result[f"{name}_prefill_calls"] = [list(map(int, rows)) for rows in engine._prefill_calls(len(batch), 32)]
        run = engine.start(batch, max_new_tokens=NEW)  # each row's blocks (and its unused entries) from its shard's range
        per_shard = engine.cache.num_blocks // dp
        result[f"{name}_shards_of_blocks"] = [sorted({int(b) // per_shard for b in engine.cache.tables[seq]}) for seq in run.seqs]
        engine.finish(run)
        result[f"{name}_decode_collectives"] = collectives(engine.compiled_decode_text(len(batch)))
        result[f"{name}_prefill_collectives"] = collectives(engine.compiled_prefill_text(2, 32))
        result[f"{name}_cache_sharding"] = spec_of(engine.cache.layers[0][0])
        result[f"{name}_odd_batch"] = error_of(lambda engine=engine: engine.generate(prompts(lens=(5, 6, 7)), max_new_tokens=2))
    return result


def ragged_op(xm):
    """A ragged-paged-attention project: the op itself serves prefill and decode (and a sliding window)."""
    model = torch_model(tiny())
    batch = prompts()
    engine = xm.Engine(model, max_seqs=4, max_len=48)
    result = {"greedy": engine.generate(batch, max_new_tokens=NEW).tokens, "torch_greedy": torch_greedy(model, batch, NEW)}
    forced = np.array([t[: NEW - 1] for t in result["torch_greedy"]])
    result["forced_max_abs_diff"] = float(np.abs(engine.teacher_forced_logits(batch, forced) - torch_forced(model, batch, forced)).max())
    result["op_kind"] = xm.OP_KIND
    calls = re.compile(r'custom_call_target="([^"]+)"')
    result["decode_custom_calls"] = sorted(set(calls.findall(engine.compiled_decode_text(3))))
    result["prefill_custom_calls"] = sorted(set(calls.findall(engine.compiled_prefill_text(3, 32))))
    windowed = torch_model(tiny("mistral", sliding_window=8), seed=4)
    got = xm.Engine(windowed, max_seqs=4, max_len=48).teacher_forced_logits(batch, forced)
    result["sliding_window_forced_max_abs_diff"] = float(np.abs(got - torch_forced(windowed, batch, forced)).max())
    return result


def main():
    import importlib

    project, kvw_project, mode = sys.argv[1:4]
    sys.path[:0] = [project, kvw_project]
    from kvw.jax import kvw as kvw_op

    xm = importlib.import_module(f"{Path(project).name}.model")

    run = {"single": lambda: single(xm, kvw_op), "tp": lambda: tensor_parallel(xm), "dp": lambda: data_parallel(xm),
           "ragged": lambda: ragged_op(xm)}[mode]
    print(json.dumps(run()))


if __name__ == "__main__":
    main()
