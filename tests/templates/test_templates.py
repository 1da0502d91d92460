"""Every template × platform × api × framework: render, compile, check exports, run.

Projects are rendered with xlacc.commands.new.project and compiled here with fixed compiler lines (not through
xlacc.commands.build.builder), so a template bug shows up as a template failure. CPU projects run their own
generated pytest file through JAX on the CPU against reference.py; CUDA projects compile once per
template and api (sm_90 only) and lower to the custom call.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from xml.etree import ElementTree

import pytest
from elftools.elf.elffile import ELFFile
from locations import REPO_DIR

from xlacc import spec as specmod
from xlacc.commands.build.plan import XLACC_INCLUDE
from xlacc.commands.new import project as scaffold
from xlacc.commands.new import transform_plan as transforms
from xlacc.readers import fatbin

REPO = REPO_DIR
TEMPLATES = scaffold.available_templates()

# (api, frameworks) every template is built and tested with: both entry points in one library
# (what `xlacc new` makes by default) and the legacy one alone, through JAX.
API_FRAMEWORKS = [("ffi", ("jax", "torch-xla")), ("legacy", ("jax",))]
# The other libraries differ only in the entry-point file xlacc generates from the spec (the
# kernel is the same file, and the costly part of a build): one template shows each of them.
ONE_TEMPLATE = "add"
SINGLE_ENTRY_API_FRAMEWORKS = {"cpu": [("ffi", ("jax",)), ("legacy", ("torch-xla",))], "cuda": [("legacy", ("jax", "torch-xla")), ("ffi", ("jax",))]}
# On CUDA, one nvcc compile per template carries both entry points.
CUDA_API_FRAMEWORKS = [("ffi", ("jax", "torch-xla"))]
# A blank op with several inputs, outputs and attributes, generic over two element types.
BLANK_SIGNATURE = {
    "dtypes": ["f32", "bf16"],
    "inputs": ["x", "k:i32"],
    "outputs": ["y", "z:bf16", "w:f32"],
    "attrs": ["scale:f32", "n:i32=3"],
}
SUBPROCESS_TIMEOUT = 300
# A hang guard for one compile, wide: ragged-paged-attention's nvcc compile ran past 300 s on a
# 2-core machine beside two busy processes and the suite's three workers.
COMPILE_TIMEOUT = 1200


@dataclass(frozen=True)
class Combo:
    template: str
    platform: str
    api: str
    frameworks: tuple[str, ...]
    signature: bool = False  # the blank template with BLANK_SIGNATURE instead of its default

    @property
    def name(self) -> str:
        parts = [self.template.replace("-", "_"), self.platform, self.api, *(f.replace("-", "_") for f in self.frameworks)]
        return "_".join(parts + (["sig"] if self.signature else []))

    @property
    def runs_jax(self) -> bool:
        return "jax" in self.frameworks

    def request(self, directory: Path) -> scaffold.NewRequest:
        extra = BLANK_SIGNATURE if self.signature else {}
        return scaffold.NewRequest(
            name=self.name,
            template=self.template,
            platform=self.platform,
            api=self.api,
            frameworks=list(self.frameworks),
            directory=directory,
            **{key: list(value) for key, value in extra.items()},
        )


def _platforms(template: str) -> tuple[str, ...]:
    return tuple(TEMPLATES[template].get("platforms", specmod.PLATFORMS))


def _combos(platform: str, api_frameworks) -> list[Combo]:
    combos = [
        Combo(template, platform, api, frameworks)
        for template in TEMPLATES
        if platform in _platforms(template) and not (platform == "cuda" and template == "blank")  # its signature variant below holds more
        for api, frameworks in api_frameworks
    ]
    combos += [Combo(ONE_TEMPLATE, platform, api, frameworks) for api, frameworks in SINGLE_ENTRY_API_FRAMEWORKS[platform]]
    if "blank" in TEMPLATES:
        # On CUDA the ffi library holds the legacy entry point too (torch-xla asks for it), and add's
        # legacy library shows the legacy-only build.
        apis = ["ffi"] if platform == "cuda" else specmod.APIS
        combos += [Combo("blank", platform, api, ("jax", "torch-xla"), signature=True) for api in apis]
    return combos


CPU_COMBOS = _combos("cpu", API_FRAMEWORKS)
CPU_JAX_COMBOS = [c for c in CPU_COMBOS if c.runs_jax]
CUDA_COMBOS = _combos("cuda", CUDA_API_FRAMEWORKS)


def through_jax(template: str, api: str) -> Combo:
    """The CPU combo whose library JAX calls through `api`'s entry point, for `template`."""
    return next(c for c in CPU_JAX_COMBOS if (c.template, c.api, c.signature) == (template, api, False))


# -- toolchain --------------------------------------------------------------------------------------


def _ffi_include() -> Path | None:
    """jaxlib's bundled XLA FFI headers, found without importing jax."""
    found = importlib.util.find_spec("jaxlib")
    if found is None or not found.submodule_search_locations:
        return None
    include = Path(list(found.submodule_search_locations)[0]) / "include"
    return include if (include / "xla" / "ffi" / "api" / "ffi.h").is_file() else None


def _nvcc() -> str | None:
    candidates = [os.environ.get("CUDACXX"), shutil.which("nvcc")]
    if os.environ.get("CUDA_HOME"):
        candidates.append(str(Path(os.environ["CUDA_HOME"]) / "bin" / "nvcc"))
    return next((c for c in candidates if c and Path(c).is_file()), None)


def _compile_command(platform: str, include: Path, source: Path, library: Path) -> list[str]:
    """Warnings are errors for the generated code (XLA's headers are system headers here). Host code
    at -O1: the warnings that need data flow appear from -O1 on, and -O3 only costs time (a third
    more); device code as `xlacc build` compiles it."""
    includes = [f"-I{XLACC_INCLUDE}", "-I.", "-isystem", str(include)]
    if platform == "cpu":
        warnings = ["-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter"]
        return ["g++", "-O1", "-std=c++17", "-shared", "-fPIC", "-fvisibility=hidden", *warnings, *includes, "-o", str(library), str(source)]
    return [
        _nvcc() or "nvcc", "-O1", "-std=c++17", "-shared", "-Xcompiler", "-fPIC,-fvisibility=hidden,-Wall",
        "-Werror", "all-warnings", "-gencode", "arch=compute_90,code=[sm_90,compute_90]", *includes, "-o", str(library), str(source),
    ]  # fmt: skip


@dataclass
class Project:
    combo: Combo
    spec: specmod.Spec
    compile_error: str | None

    @property
    def root(self) -> Path:
        return self.spec.root

    def require_built(self) -> None:
        if self.compile_error is not None:
            pytest.fail(f"{self.combo.name} does not compile:\n{self.compile_error}")


def _create_and_compile(combo: Combo, base: Path, include: Path) -> Project:
    directory = base / combo.name
    scaffold.create(combo.request(directory))
    spec = specmod.load(directory)
    spec.library.parent.mkdir(parents=True, exist_ok=True)
    command = _compile_command(combo.platform, include, spec.source_paths[0], spec.library)
    result = subprocess.run(command, capture_output=True, text=True, cwd=directory, timeout=COMPILE_TIMEOUT)
    error = None if result.returncode == 0 else _compiler_errors(result.stderr)
    return Project(combo, spec, error)


def _compiler_errors(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if "error" in line]
    return "\n".join(lines[:20]) or stderr[-3000:]


def _build_all(combos: list[Combo], base: Path, include: Path) -> dict[Combo, Project]:
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        projects = pool.map(lambda c: _create_and_compile(c, base, include), combos)
        return {p.combo: p for p in projects}


@pytest.fixture(scope="module")
def ffi_include() -> Path:
    include = _ffi_include()
    if include is None:
        pytest.skip("jaxlib's XLA FFI headers are not installed (pip install jax)")
    return include


@pytest.fixture(scope="module")
def cpu_projects(tmp_path_factory, ffi_include) -> dict[Combo, Project]:
    if shutil.which("g++") is None:
        pytest.skip("g++ is not installed")
    return _build_all(CPU_COMBOS, tmp_path_factory.mktemp("cpu"), ffi_include)


@pytest.fixture(scope="module")
def cuda_projects(tmp_path_factory, ffi_include) -> dict[Combo, Project]:
    if _nvcc() is None:
        pytest.skip("nvcc is not installed (system CUDA toolkit, or pip install -e '.[cuda]')")
    return _build_all(CUDA_COMBOS, tmp_path_factory.mktemp("cuda"), ffi_include)


def _built(projects: dict[Combo, Project], combos: list[Combo]) -> list[Project]:
    return [projects[c] for c in combos if projects[c].compile_error is None]


@pytest.fixture(scope="module")
def cpu_generated(cpu_projects, tmp_path_factory) -> tuple[dict[str, Outcomes], str]:
    return run_generated_tests(_built(cpu_projects, CPU_JAX_COMBOS), tmp_path_factory.mktemp("cpu-tests"))


@pytest.fixture(scope="module")
def cuda_generated(cuda_projects, tmp_path_factory) -> tuple[dict[str, Outcomes], str]:
    return run_generated_tests(_built(cuda_projects, CUDA_COMBOS), tmp_path_factory.mktemp("cuda-tests"))


# -- checks -------------------------------------------------------------------------------------------


def exported_functions(library: Path) -> set[str]:
    """Defined, global (not weak) functions in .dynsym: the library's own C entry points."""
    with library.open("rb") as handle:
        dynsym = ELFFile(handle).get_section_by_name(".dynsym")
        return {
            symbol.name
            for symbol in dynsym.iter_symbols()
            if symbol["st_shndx"] != "SHN_UNDEF"
            and symbol["st_info"]["bind"] == "STB_GLOBAL"
            and symbol["st_info"]["type"] == "STT_FUNC"
        }


def run_python(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """Two host devices, so that the generated tests' sharding cases run on the CPU."""
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONDONTWRITEBYTECODE": "1", "XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=SUBPROCESS_TIMEOUT)


@dataclass
class Outcomes:
    """One project's generated tests, as the run of them all reported them."""

    passed: int = 0
    skipped: int = 0
    failures: list[str] = field(default_factory=list)


def run_generated_tests(projects: list[Project], base: Path) -> tuple[dict[str, Outcomes], str]:
    """Every project's own pytest file in one pytest process, as a user with several ops runs them
    (each op is a package of its own); the outcomes by project name, and the output."""
    report = base / "generated-tests.xml"
    roots = [str(p.root) for p in projects]
    result = run_python(["-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", f"--junitxml={report}", *roots], base)
    output = result.stdout + result.stderr
    outcomes = {p.combo.name: Outcomes() for p in projects}
    if not report.is_file():
        return outcomes, output
    for case in ElementTree.parse(report).iter("testcase"):
        name = next((n for n in outcomes if f"test_{n}" in case.get("classname", "").split(".")), None)
        if name is None:
            continue
        problem = case.find("failure") if case.find("failure") is not None else case.find("error")
        if problem is not None:
            outcomes[name].failures.append(f"{case.get('name')}: {problem.get('message', '')}\n{problem.text or ''}"[:3000])
        elif case.find("skipped") is not None:
            outcomes[name].skipped += 1
        else:
            outcomes[name].passed += 1
    return outcomes, output


def generated_test_count(spec: specmod.Spec) -> int:
    """The generated file's tests: each dtype at three sizes, the lowering, one sharded case per
    factor the op may be split along, vmap, and grad (its check, or its error without [backward])."""
    return 3 * len(spec.op_dtypes) + 1 + len(transforms.splits(spec)) + 2 + bool(spec.aliases)


def _ids(combos: list[Combo]) -> list[str]:
    return [c.name for c in combos]


# -- CPU ----------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("combo", CPU_COMBOS, ids=_ids(CPU_COMBOS))
def test_cpu_library_exports_exactly_the_entry_points(cpu_projects, combo):
    project = cpu_projects[combo]
    project.require_built()
    assert exported_functions(project.spec.library) == set(project.spec.entry_points)


@pytest.mark.slow
@pytest.mark.parametrize("combo", CPU_JAX_COMBOS, ids=_ids(CPU_JAX_COMBOS))
def test_cpu_project_matches_its_reference_through_jax(cpu_projects, cpu_generated, combo):
    project = cpu_projects[combo]
    project.require_built()
    outcomes, output = cpu_generated
    found = outcomes[combo.name]
    assert not found.failures, "\n".join(found.failures)
    assert (found.passed, found.skipped) == (generated_test_count(project.spec), 0), output[-3000:]


LEGACY_FAILURE_SCRIPT = """\
import jax, jax.numpy as jnp
import {name}.jax as jax_ops
jax_ops.register()
inputs = [jnp.ones((4,), jnp.float32) for _ in range({n_inputs})]
call = jax.ffi.ffi_call(jax_ops.TARGET, jax.ShapeDtypeStruct((4,), jnp.float32),
                        custom_call_api_version=3, legacy_backend_config="{config}")
jax.block_until_ready(call(*inputs))
print("last_error:", jax_ops.last_error())
"""


@pytest.mark.slow
@pytest.mark.parametrize("template", [t for t in ("add", "rms-norm", "blank") if t in TEMPLATES])
def test_cpu_legacy_failure_is_visible_under_jax(cpu_projects, template):
    """XLA's status callback is unreachable under JAX: the failure must reach stderr and last_error()."""
    project = cpu_projects[through_jax(template, "legacy")]
    project.require_built()
    first = project.spec.inputs[0].name
    script = LEGACY_FAILURE_SCRIPT.format(name=project.spec.name, n_inputs=len(project.spec.inputs), config=f"{first}.shape=4")
    result = run_python(["-c", script], project.root)
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"xlacc: {project.spec.target} failed:" in result.stderr
    missing = next(t.name for t in project.spec.inputs + project.spec.outputs if t.name != first)
    assert f"last_error: {project.spec.target}: backend_config lacks '{missing}.shape'" in result.stdout


RMS_NORM_LEADING_DIMS_SCRIPT = """\
import numpy as np, jax.numpy as jnp
import {name}.jax as jax_ops
from {name} import reference
rng = np.random.default_rng(0)
x = rng.standard_normal((2, 3, 37), dtype=np.float32)
w = rng.standard_normal((37,), dtype=np.float32)
got = np.asarray(jax_ops.{name}(jnp.asarray(x), jnp.asarray(w), eps=1e-3))
want = reference.reference(x.astype(np.float64), w.astype(np.float64), eps=1e-3)
assert got.shape == (2, 3, 37), got.shape
np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
print("ok")
"""


@pytest.mark.slow
@pytest.mark.skipif("rms-norm" not in TEMPLATES, reason="no rms-norm template")
@pytest.mark.parametrize("api", specmod.APIS)
def test_cpu_rms_norm_flattens_leading_dims_and_passes_eps(cpu_projects, api):
    project = cpu_projects[through_jax("rms-norm", api)]
    project.require_built()
    result = run_python(["-c", RMS_NORM_LEADING_DIMS_SCRIPT.format(name=project.spec.name)], project.root)
    assert result.returncode == 0 and "ok" in result.stdout, result.stderr[-3000:]


VMAP_SCRIPT = """\
import numpy as np, jax, jax.numpy as jnp
import {name}.jax as jax_ops
x = np.arange(12, dtype=np.float32).reshape(3, 4)
y = np.full((3, 4), 0.5, dtype=np.float32)
got = np.asarray(jax.vmap(jax_ops.{name})(jnp.asarray(x), jnp.asarray(y)))
np.testing.assert_array_equal(got, x + y)
print("ok")
"""


@pytest.mark.slow
@pytest.mark.skipif("add" not in TEMPLATES, reason="no add template")
@pytest.mark.parametrize("api", specmod.APIS)
def test_cpu_add_under_vmap_computes_every_example(cpu_projects, api):
    """A legacy call's backend_config holds unbatched shapes: vmap must not batch the call itself."""
    project = cpu_projects[through_jax("add", api)]
    project.require_built()
    result = run_python(["-c", VMAP_SCRIPT.format(name=project.spec.name)], project.root)
    assert result.returncode == 0 and "ok" in result.stdout, result.stderr[-3000:]


# -- CUDA ---------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("combo", CUDA_COMBOS, ids=_ids(CUDA_COMBOS))
def test_cuda_library_exports_exactly_the_entry_points(cuda_projects, combo):
    """Nothing else: the kernels stay hidden; and the library carries code for the arch it was built for."""
    project = cuda_projects[combo]
    project.require_built()
    assert exported_functions(project.spec.library) == set(project.spec.entry_points)
    assert fatbin.runs_on(fatbin.read_fatbin(project.spec.library), "sm_90").ok


@pytest.mark.slow
@pytest.mark.parametrize("combo", CUDA_COMBOS, ids=_ids(CUDA_COMBOS))
def test_cuda_project_lowers_to_its_custom_call(cuda_projects, cuda_generated, combo):
    """Without a GPU the generated tests still lower the op for CUDA; with one they run it."""
    project = cuda_projects[combo]
    project.require_built()
    outcomes, output = cuda_generated
    found = outcomes[combo.name]
    assert not found.failures, "\n".join(found.failures)
    assert found.passed >= 1, output[-3000:]
    assert found.passed + found.skipped == generated_test_count(project.spec), output[-3000:]


@pytest.mark.parametrize("template", ["add", "paged-kv-write"])  # paged-kv-write writes in place: its donation test too
def test_a_projects_tests_skip_until_it_is_built(tmp_path, template):
    pytest.importorskip("jax", reason="the generated tests run through jax")
    project = Combo(template, "cpu", "ffi", ("jax",)).request(tmp_path / "op")
    scaffold.create(project)
    result = run_python(["-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-p", "no:xdist", "."], project.directory)
    assert result.returncode == 0 and " skipped" in result.stdout and "passed" not in result.stdout, result.stdout[-2000:]
    assert "is not built: run `xlacc build`" in result.stdout


# -- the generated text -----------------------------------------------------------------------------


@pytest.mark.parametrize("template", list(TEMPLATES))
@pytest.mark.parametrize("platform", specmod.PLATFORMS)
def test_only_the_blank_stub_carries_a_todo(tmp_path, template, platform):
    if platform not in _platforms(template):
        pytest.skip(f"{template} has no {platform} kernel")
    spec, meta = scaffold.spec_for(scaffold.NewRequest(name="op", template=template, platform=platform, directory=tmp_path))
    files = scaffold.render(spec, meta)
    todos = {path: text.count("TODO") for path, text in files.items() if "TODO" in text}
    assert todos == ({spec.kernel_file: 1} if template == "blank" else {})


def test_blank_reference_copies_the_first_input_into_each_output_type(tmp_path):
    if "blank" not in TEMPLATES:
        pytest.skip("no blank template")
    pytest.importorskip("ml_dtypes")
    scaffold.create(Combo("blank", "cpu", "ffi", ("jax",), signature=True).request(tmp_path / "blank_op"))
    script = """
import numpy as np, ml_dtypes
from blank_cpu_ffi_jax_sig import reference
operands, attrs = reference.example_inputs(5, np.random.default_rng(0), "bf16")
assert [a.dtype.name for a in operands] == ["bfloat16", "int32"]
assert attrs == {"scale": 1.0, "n": 3}
y, z, w = reference.reference(*operands, **attrs)
assert [o.dtype.name for o in (y, z, w)] == ["bfloat16", "bfloat16", "float32"]
for out in (y, z, w):
    np.testing.assert_array_equal(out.astype(np.float32), operands[0].astype(np.float32))
print("ok")
"""
    result = run_python(["-c", script], tmp_path / "blank_op")
    assert result.returncode == 0 and "ok" in result.stdout, result.stderr[-3000:]


@pytest.mark.slow
def test_two_ops_import_and_test_side_by_side_in_one_process(cpu_projects, cpu_generated):
    """Each op is a package of its own: pytest ran every CPU project's tests in one process."""
    outcomes, output = cpu_generated
    ran = {name for name, found in outcomes.items() if found.passed}
    assert {"add_cpu_ffi_jax", "rms_norm_cpu_legacy_jax"} <= ran, output[-3000:]
    assert len(ran) == len(_built(cpu_projects, CPU_JAX_COMBOS)) > 2
    expected = sum(generated_test_count(p.spec) for p in _built(cpu_projects, CPU_JAX_COMBOS))
    assert f"{expected} passed" in output, output[-2000:]
