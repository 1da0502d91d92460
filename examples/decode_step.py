"""A decode step of a transformer's attention layers on two xlacc ops over a paged KV cache.

Per layer, the new token's key and value are written into that layer's cache in place (template
`paged-kv-write`, vLLM's reshape_and_cache_flash), then each sequence's query attends over its
cache (template `paged-attention`). The step runs under jax.jit with the caches donated, so XLA
hands both kernels the caches' own buffers and copies nothing. The two ops are two projects, two
packages imported side by side.

    python examples/decode_step.py [--dir DIR] [--platform cuda|cpu] [--steps N]

makes both projects in DIR with `xlacc new` (once), builds them with `xlacc build`, runs a few
steps of a small model and checks every step against the same step in jax.numpy. DIR defaults to
build/examples/decode_step-PLATFORM in the checkout, a folder git ignores (/build/).
"""

from __future__ import annotations

import argparse
import functools
import importlib
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ATTEND, WRITE = "paged_attend", "paged_write"  # the two projects' names
OUTPUT_DIR = Path(__file__).resolve().parent.parent / "build" / "examples"  # ignored by git, not the current folder
BLOCK_SIZE = 16


def make_step(write, attend, *, scale):
    """One decode step over every layer, jitted with the caches (argument 3) donated.

    write(keys, values, key_cache, value_cache, slot_mapping) -> (key_cache, value_cache)
    attend(queries, key_cache, value_cache, block_tables, seq_lens, *, scale) -> out
    """
    import jax
    import jax.numpy as jnp

    def step(queries, new_keys, new_values, caches, block_tables, seq_lens, slot_mapping):
        outputs, updated = [], []
        for layer, (key_cache, value_cache) in enumerate(caches):
            key_cache, value_cache = write(new_keys[layer], new_values[layer], key_cache, value_cache, slot_mapping)
            outputs.append(attend(queries[layer], key_cache, value_cache, block_tables, seq_lens, scale=scale))
            updated.append((key_cache, value_cache))
        return jnp.stack(outputs), tuple(updated)

    return jax.jit(step, donate_argnums=3)


@dataclass
class Model:
    """The shapes of a small model and its batch."""

    layers: int = 2
    seqs: int = 3
    num_heads: int = 8
    num_kv_heads: int = 2
    head_size: int = 64
    max_context: int = 96


class Batch:
    """Sequences, their block tables over one shared pool, and where each one's next token goes."""

    def __init__(self, model: Model, rng: np.random.Generator, dtype):
        self.model, self.dtype = model, dtype
        blocks_per_seq = -(-model.max_context // BLOCK_SIZE)
        self.tables = rng.permutation(model.seqs * blocks_per_seq).astype(np.int32).reshape(model.seqs, blocks_per_seq)
        self.lens = rng.integers(0, model.max_context // 2, size=model.seqs).astype(np.int32)  # tokens cached so far
        shape = (model.seqs * blocks_per_seq, BLOCK_SIZE, model.num_kv_heads, model.head_size)
        self.caches = [tuple(rng.standard_normal(shape, np.float32).astype(dtype) for _ in range(2)) for _ in range(model.layers)]

    def slots(self) -> np.ndarray:
        """Each sequence's next token: block table entry lens // BLOCK_SIZE, row lens % BLOCK_SIZE."""
        rows = np.arange(self.model.seqs)
        return (self.tables[rows, self.lens // BLOCK_SIZE] * BLOCK_SIZE + self.lens % BLOCK_SIZE).astype(np.int32)

    def new_tokens(self, rng: np.random.Generator):
        """Per layer: the new token's query, key and value."""
        m = self.model
        draw = lambda heads: rng.standard_normal((m.layers, m.seqs, heads, m.head_size), np.float32).astype(self.dtype)  # noqa: E731
        return draw(m.num_heads), draw(m.num_kv_heads), draw(m.num_kv_heads)


def xlacc_command(*args: str, cwd: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "xlacc", *args], cwd=cwd, capture_output=True, text=True)
    if run.returncode != 0:
        raise SystemExit(f"xlacc {' '.join(args)} failed:\n{run.stdout[-3000:]}{run.stderr[-2000:]}")


def build_projects(directory: Path, platform: str) -> None:
    """`xlacc new` (once) and `xlacc build` for both ops."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, template in ((ATTEND, "paged-attention"), (WRITE, "paged-kv-write")):
        if not (directory / name / "xlacc.toml").is_file():
            xlacc_command("new", name, "--template", template, "--platform", platform, "--framework", "jax", cwd=directory)
        xlacc_command("build", name, cwd=directory)


def load_ops(directory: Path):
    """Both packages, imported side by side: (write, attend, write reference, attend reference)."""
    for name in (ATTEND, WRITE):
        if str(directory / name) not in sys.path:
            sys.path.insert(0, str(directory / name))
    attend, write = importlib.import_module(f"{ATTEND}.jax"), importlib.import_module(f"{WRITE}.jax")
    attend_ref, write_ref = importlib.import_module(f"{ATTEND}.reference"), importlib.import_module(f"{WRITE}.reference")
    return getattr(write, WRITE), getattr(attend, ATTEND), write_ref.reference, attend_ref.reference


def run_steps(directory: Path, steps: int, model: Model, platform: str, dtype_name: str = "f32", seed: int = 0) -> list[float]:
    """Runs `steps` decode steps with xlacc's ops and with jax.numpy from the same state, on the
    projects' platform; returns each step's largest difference between the two."""
    import jax

    with jax.default_device(jax.devices("gpu" if platform == "cuda" else "cpu")[0]):
        return _run_steps(directory, steps, model, dtype_name, seed)


def _run_steps(directory: Path, steps: int, model: Model, dtype_name: str, seed: int) -> list[float]:
    import jax
    import jax.numpy as jnp

    write, attend, write_ref, attend_ref = load_ops(directory)
    dtype = {"f32": np.float32, "f16": np.float16, "bf16": jnp.bfloat16}[dtype_name]
    rng = np.random.default_rng(seed)
    batch = Batch(model, rng, dtype)
    scale = 1.0 / np.sqrt(model.head_size)
    ours = make_step(write, attend, scale=scale)
    theirs = make_step(functools.partial(write_ref, xp=jnp), functools.partial(attend_ref, xp=jnp), scale=scale)
    caches_ours = tuple(tuple(jnp.asarray(c) for c in layer) for layer in batch.caches)
    caches_theirs = tuple(tuple(jnp.asarray(c) for c in layer) for layer in batch.caches)
    differences = []
    for _ in range(steps):
        queries, keys, values = batch.new_tokens(rng)
        slots, lens = batch.slots(), batch.lens + 1
        fixed = (jnp.asarray(batch.tables), jnp.asarray(lens), jnp.asarray(slots))
        out, caches_ours = ours(queries, keys, values, caches_ours, *fixed)
        want, caches_theirs = theirs(queries, keys, values, caches_theirs, *fixed)
        differences.append(float(jnp.max(jnp.abs(out.astype(jnp.float32) - want.astype(jnp.float32)))))
        batch.lens = lens
    jax.block_until_ready(caches_ours)
    return differences


def default_dir(platform: str) -> Path:
    """Where the projects go without --dir: under the checkout's ignored build/, one folder per platform."""
    return OUTPUT_DIR / f"decode_step-{platform}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=None, help="where the two projects go (default: build/examples/decode_step-PLATFORM in the checkout)")
    parser.add_argument("--platform", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--steps", type=int, default=4)
    args = parser.parse_args(argv)
    args.dir = args.dir or default_dir(args.platform)
    build_projects(args.dir, args.platform)
    differences = run_steps(args.dir.resolve(), args.steps, Model(), args.platform)
    for step, difference in enumerate(differences):
        print(f"step {step}: max |xlacc - jax.numpy| = {difference:.3g}")
    return 0 if max(differences) < 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main())
