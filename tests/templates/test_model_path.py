"""The model path every attention project gets (NAME/model.py, serve_NAME.py): a cpu paged-attention
project built once for the module, its generated Engine serving tiny transformers models in a child
process (tests/templates/model_path_child.py) against the same models in torch."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from needs import GXX

from xlacc.commands.new.project import NewRequest, create, files_for, spec_for

CHILD = Path(__file__).with_name("model_path_child.py")
REPO = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.skipif(GXX is None, reason="g++ is not installed"),
    pytest.mark.skipif(
        any(importlib.util.find_spec(m) is None for m in ("jax", "torch", "torchax", "transformers")),
        reason="the model path needs jax, torch, torchax and transformers: pip install -e '.[jax,torch,model]'",
    ),
]


def _env(**extra) -> dict:
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    env.pop("XLA_FLAGS", None)
    env.update(extra)
    return env


def _build(directory: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "xlacc", "build"], cwd=directory, env=_env(), capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]


@pytest.fixture(scope="module")
def projects(tmp_path_factory) -> tuple[Path, Path, Path]:
    """pa (paged-attention, f32 only), kvw (paged-kv-write) and rpa (ragged-paged-attention), cpu,
    jax + torchax, built."""
    root = tmp_path_factory.mktemp("model_path")
    made = []
    for name, template in (("pa", "paged-attention"), ("kvw", "paged-kv-write"), ("rpa", "ragged-paged-attention")):
        create(NewRequest(name=name, template=template, platform="cpu", frameworks=["jax", "torchax"], dtypes=["f32"], directory=root / name))
        made.append(root / name)
    for directory in made:
        _build(directory)
    return made[0], made[1], made[2]


def _child(projects, mode: str, **env) -> dict:
    project = projects[2] if mode == "ragged" else projects[0]
    run = subprocess.run([sys.executable, str(CHILD), str(project), str(projects[1]), mode], env=_env(**env), capture_output=True,
                         text=True, timeout=900, check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-6000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def single(projects) -> dict:
    return _child(projects, "single")


def test_attention_templates_get_the_model_path_and_others_do_not(tmp_path):
    def paths(template):
        spec, _ = spec_for(NewRequest(name="op", template=template, platform="cpu", frameworks=["jax", "torchax"], directory=tmp_path / template))
        return {path for _, path in files_for(spec)}

    assert {"op/model.py", "op/model_adapter.py", "op/paged_cache.py", "serve_op.py"} <= paths("paged-attention")
    assert {"op/model.py", "op/model_adapter.py", "op/paged_cache.py", "serve_op.py"} <= paths("ragged-paged-attention")
    assert not {"op/model.py", "serve_op.py"} & paths("paged-kv-write")
    assert not {"op/model.py", "serve_op.py"} & paths("rms-norm")


def test_free_running_greedy_tokens_equal_torch(single):
    assert single["greedy"] == single["torch_greedy"]
    assert single["finish"] == ["length"] * 3


def test_a_generate_compiles_its_decode_step_once(single):
    # the prefill's outputs and the request's arrays are placed as a decode call's outputs are
    assert single["decode_compiles"] == 1


def test_teacher_forced_logits_match_torch_in_f32(single):
    assert single["forced_shape"] == [6, 3, 256]  # the prefill's logits, then 5 decode steps, 3 prompts
    assert single["forced_max_abs_diff"] < 1e-4


def test_sampling_follows_the_seed_and_top_p(single):
    assert single["sample_a"] == single["sample_b"]
    assert single["sample_a"] != single["sample_c"]
    assert all(0 <= t < 256 and len(row) == 6 for row in single["sample_a"] for t in row)
    assert single["nucleus_of_one"] == single["torch_greedy"]  # a nucleus of one token is greedy


def test_generation_stops_at_eos(single):
    first = single["torch_greedy"][0]
    assert single["eos_tokens"][0] == first[: first.index(single["eos"]) + 1]
    assert single["eos_finish"][0] == "eos"
    assert single["free_blocks_after"] == single["num_blocks"] - 1  # every block back but the reserved one


def test_a_cache_with_room_for_one_batch_serves_two_in_turn(single):
    assert single["reuse"][0] == single["torch_greedy"]
    assert single["reuse"][1] == single["reuse_torch_second"]
    assert single["reuse_free_blocks"] == single["reuse_needed"] - 1


def test_q_k_v_and_gate_up_weights_are_one_tensor_torch_views_and_jax_reads_in_place(single):
    merged = single["merged_qkv"]
    assert merged["params"] == ["o_proj.weight", "qkv_proj.weight"]  # no q_proj, k_proj, v_proj of their own
    q_rows, k_rows, _ = merged["rows"]
    assert merged["torch_offsets"] == [0, q_rows * merged["row_bytes"], (q_rows + k_rows) * merged["row_bytes"]]
    mlp = single["merged_gate_up"]
    assert mlp["params"] == ["down_proj.weight", "gate_up_proj.weight"]
    assert mlp["torch_offsets"] == [0, mlp["rows"][0] * mlp["row_bytes"]]
    assert single["reuse_merged_qkv"]["address"] == merged["address"]  # a second Engine on the model merges nothing again
    assert single["greedy"] == single["torch_greedy"]  # torch, reading the views, computes as before


def test_the_ragged_path_takes_one_attention_function_for_prefill_and_decode(single):
    assert single["ragged_forced_max_abs_diff"] < 1e-4
    assert single["ragged_greedy"] == single["torch_greedy"]


def test_the_cache_is_written_by_a_paged_kv_write_op_when_given(single):
    assert single["kv_write_op"] == "kvw"
    assert single["kv_write_greedy"] == single["torch_greedy"]
    assert single["kv_write_custom_calls"] == ["kvw", "pa"]


def test_qwen2_and_mistral_match_torch(single):
    assert single["qwen2_forced_max_abs_diff"] < 1e-4
    assert single["mistral_forced_max_abs_diff"] < 1e-4


def test_bad_input_is_refused_before_any_compile(single):
    errors = single["errors"]
    assert errors["head_size"] == "ModelPathError: head size 16 is not one pa supports (64, 128, 256)"
    assert "multi-head latent attention" in errors["mla"]
    assert "cross-attention" in errors["cross_attention"]
    assert errors["dtype"].startswith("ModelPathError: the model is bf16; pa is built for f32")
    assert "sliding-window" in errors["sliding_window"]
    assert "need 5 blocks of 16 tokens" in errors["cache_too_small"] and "has 3 free of 4" in errors["cache_too_small"]
    assert "longer than the context, 48 tokens" in errors["prompt_too_long"]
    assert "5 sequences do not fit" in errors["too_many_sequences"]
    assert errors["compiled_before_errors"] == 0
    assert errors["free_blocks_after_errors"] == 3  # a refused request holds no block


def test_tensor_parallel_over_two_devices_needs_only_all_reduces(projects):
    result = _child(projects, "tp", XLA_FLAGS="--xla_force_host_platform_device_count=2")
    assert result["devices"] == 2
    assert result["greedy"] == result["torch_greedy"]
    assert result["decode_compiles"] == 1
    assert result["nucleus_of_one"] == result["greedy"]  # sampling over the vocabulary-split head: its nucleus gathers the logits
    assert result["request_arrays_on_devices"] == [2]  # placed on both devices once, not copied there every call
    for step in ("decode", "prefill"):
        collectives = result[f"{step}_collectives"]
        assert collectives["all-reduce"] > 0, step
        assert {name: n for name, n in collectives.items() if name != "all-reduce" and n} == {}, step
    assert result["qkv_proj_sharding"] == ["tp", None]  # column-parallel: output rows, q/k/v held as one tensor
    assert result["qkv_shards_hold_their_rows"] == [True, True]  # each device: its own q, k and v rows, adjacent
    assert result["o_proj_sharding"] == [None, "tp"]  # row-parallel: input columns
    assert result["head_sharding"] == ["tp", None]  # the output head by vocabulary rows; greedy needs all-reduces only
    assert not result["tied_head_split"] and result["tied_greedy"] == result["tied_torch_greedy"]  # tied to the embedding: whole
    assert result["cache_sharding"] == [None, None, "tp", None]  # over KV heads


def test_serve_script_summarizes_a_run_and_refuses_bad_input_in_one_line(projects, tmp_path):
    serve = [sys.executable, "serve_pa.py"]
    ok = subprocess.run([*serve, "--model-config", "tiny", "--batch", "2", "--prompt-len", "20", "--new-tokens", "4"], cwd=projects[0],
                        env=_env(), capture_output=True, text=True, timeout=600, check=False)
    assert ok.returncode == 0, ok.stderr[-3000:]
    summary = json.loads(ok.stdout.strip().splitlines()[-1])
    assert summary["batch"] == 2 and summary["new_tokens"] == 4 and summary["decode_tokens_per_s"] > 0 and summary["ttft_s"] > 0
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "head_dim": 16}))
    bad = subprocess.run([*serve, "--model-config", str(config)], cwd=projects[0], env=_env(), capture_output=True, text=True, timeout=600, check=False)
    assert bad.returncode == 2
    assert bad.stderr.strip() == "error: head size 16 is not one pa supports (64, 128, 256)"


def test_data_parallel_splits_sequences_and_their_blocks(projects):
    result = _child(projects, "dp", XLA_FLAGS="--xla_force_host_platform_device_count=4")
    assert result["devices"] == 4
    for name, cache_spec in (("dp2_tp1", ["dp", None, None, None]), ("dp2_tp2", ["dp", None, "tp", None])):
        assert result[name] == result["torch_greedy"], name
        assert result[f"{name}_shards_of_blocks"] == [[0], [0], [1], [1]]  # rows 0-1 on shard 0, 2-3 on shard 1
        assert result[f"{name}_prefill_calls"] == [[0, 2], [1, 3]]  # each call's rows split over dp as the batch's
        assert result[f"{name}_cache_sharding"] == cache_spec
        for step in ("decode", "prefill"):
            found = {c: n for c, n in result[f"{name}_{step}_collectives"].items() if n and c != "all-reduce"}
            assert found == {}, (name, step)
        assert result[f"{name}_odd_batch"] == "ModelPathError: 3 prompts do not split evenly over 2 data-parallel shards"
    assert result["dp2_tp1_decode_collectives"]["all-reduce"] == 0  # the weights whole on every device: nothing to add up


def test_a_ragged_projects_model_path_calls_the_op_for_both_steps(tmp_path):
    """[model] attention = "ragged": the op in the ragged paged attention signature, no XLA prefill."""
    from xlacc.commands.new.project import render, template_meta

    request = NewRequest(name="rpa", template="ragged-paged-attention", platform="cpu", frameworks=["jax"], directory=tmp_path / "rpa")
    spec, _ = spec_for(request)
    adapter = render(spec, template_meta("ragged-paged-attention"))["rpa/model_adapter.py"]
    assert "DEFAULT_PREFILL = DEFAULT_DECODE = _op" in adapter
    assert "prefill_attention" not in adapter and "_decode_attention" not in adapter
    assert 'OP_KIND = "ragged"' in adapter


def test_the_ragged_op_serves_prefill_and_decode_and_a_sliding_window(projects):
    result = _child(projects, "ragged")
    assert result["op_kind"] == "ragged"
    assert result["greedy"] == result["torch_greedy"]
    assert result["forced_max_abs_diff"] < 1e-4
    assert result["decode_custom_calls"] == ["rpa"] and result["prefill_custom_calls"] == ["rpa"]  # no XLA attention beside it
    assert result["sliding_window_forced_max_abs_diff"] < 1e-4  # Mistral, window 8, contexts up to 25 tokens
