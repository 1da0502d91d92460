"""xlacc.toml: loading, validation messages, name checks, and what is derived from a spec."""

from __future__ import annotations

import pytest

from tools import reserved_names
from xlacc import spec as specmod
from xlacc.commands.new import project as scaffold
from xlacc.ground.errors import SpecError, ToolchainMissing, UsageError
from xlacc.spec import drift, names

VALID = """
[op]
name = "rms"
target = "my.rms_norm"
platform = "cuda"
api = "ffi"
frameworks = ["jax", "torch-xla"]

[[inputs]]
name = "x"
dtype = ["f32", "bf16"]
shape = ["rows", "cols"]

[[inputs]]
name = "weight"
dtype = ["f32", "bf16"]

[[outputs]]
name = "out"
dtype = ["f32", "bf16"]
shape = "x"

[[attrs]]
name = "eps"
type = "f32"
default = 1e-6

[build]
archs = ["sm_80", "sm_90a"]
"""


def write(tmp_path, text):
    path = tmp_path / "xlacc.toml"
    path.write_text(text)
    return path


def test_valid_spec_loads_and_derives_names(tmp_path):
    spec = specmod.load(write(tmp_path, VALID).parent)
    assert spec.name == "rms" and spec.target == "my.rms_norm"
    assert spec.inputs[0].shape == ("rows", "cols") and spec.outputs[0].like == "x"
    assert spec.attrs[0].default == pytest.approx(1e-6) and spec.attrs[0].c_type == "float"
    assert spec.build.archs == ("sm_80", "sm_90a")
    assert spec.op_dtypes == ("f32", "bf16")
    assert spec.entry_points == ("xlacc_rms_ffi", "xlacc_rms_legacy", "xlacc_rms_last_error")
    assert spec.library == tmp_path / "rms" / "librms.so"
    # No [build] kernel: the project brings its own entry points in [build] sources.
    assert spec.source_paths == []
    assert spec.reference_file == "rms/reference.py" and spec.reference_function == "reference"


def test_a_generated_project_compiles_its_entry_points_which_include_the_kernel(tmp_path):
    text = VALID + 'kernel = "my_kernel.cu"\nsources = ["more.cu"]\n'
    spec = specmod.load(write(tmp_path, text))
    assert spec.kernel_file == "my_kernel.cu"
    assert spec.entry_file == "rms/_entry_points.cu"
    assert spec.source_paths == [tmp_path / "rms/_entry_points.cu", tmp_path / "more.cu"]
    with pytest.raises(SpecError, match=r"\[build.sources\] 'more.cu' is listed twice"):  # it was a link error
        specmod.load(write(tmp_path, VALID + 'sources = ["more.cu", "more.cu"]\n'))


@pytest.mark.parametrize(
    "platform, api, frameworks, jax_api, legacy_api, jax_platform, entry_points",
    [
        ("cuda", "ffi", ["jax"], 4, 2, "CUDA", ("xlacc_add_op_ffi",)),
        ("cuda", "legacy", ["jax"], 2, 2, "CUDA", ("xlacc_add_op_legacy", "xlacc_add_op_last_error")),
        ("cpu", "legacy", ["jax"], 3, 3, "cpu", ("xlacc_add_op_legacy", "xlacc_add_op_last_error")),
        ("cpu", "ffi", ["torch-xla"], 4, 3, "cpu", ("xlacc_add_op_legacy", "xlacc_add_op_last_error")),
        # torchax lowers the torch op to the jax function: it needs what jax needs
        ("cuda", "ffi", ["torchax"], 4, 2, "CUDA", ("xlacc_add_op_ffi",)),
        ("cuda", "legacy", ["torchax"], 2, 2, "CUDA", ("xlacc_add_op_legacy", "xlacc_add_op_last_error")),
        ("cuda", "ffi", ["torchax", "torch-xla"], 4, 2, "CUDA", ("xlacc_add_op_ffi", "xlacc_add_op_legacy", "xlacc_add_op_last_error")),
    ],
)
def test_api_versions_follow_platform_and_api(tmp_path, platform, api, frameworks, jax_api, legacy_api, jax_platform, entry_points):
    text = f"""
[op]
name = "add_op"
platform = "{platform}"
api = "{api}"
frameworks = {frameworks!r}
[[inputs]]
name = "x"
dtype = "f32"
[[outputs]]
name = "y"
dtype = "f32"
shape = "x"
""".replace("'", '"')
    spec = specmod.load(write(tmp_path, text))
    assert spec.jax_api_version == jax_api
    assert spec.legacy_api_version == legacy_api
    assert spec.jax_platform == jax_platform
    assert spec.jax_register_api_version == (1 if api == "ffi" else 0)
    assert spec.entry_points == entry_points


@pytest.mark.parametrize(
    "edit, key, allowed",
    [
        (("platform = \"cuda\"", "platform = \"gpu\""), "op.platform", "cuda, cpu"),
        (("api = \"ffi\"", "api = \"typed\""), "op.api", "ffi, legacy"),
        (("frameworks = [\"jax\", \"torch-xla\"]", "frameworks = [\"tensorflow\"]"), "op.frameworks", "jax, torchax, torch-xla"),
        (("dtype = [\"f32\", \"bf16\"]\nshape = [\"rows\"", "dtype = \"float32\"\nshape = [\"rows\""), "inputs[0].dtype", "f16, bf16, f32"),
        (("type = \"f32\"", "type = \"string\""), "attrs[0].type", "f32, f64, i32, i64"),
        (("dtype = [\"f32\", \"bf16\"]\nshape = [\"rows\"", "dtype = [\"f32\", \"f32\"]\nshape = [\"rows\""), "inputs[0].dtype", "'f32' is listed twice"),
        (("shape = \"x\"", "shape = \"z\""), "outputs[0].shape", "x, weight"),
        (("archs = [\"sm_80\", \"sm_90a\"]", "archs = [\"ampere\"]"), "build.archs", "sm_XY"),
        (("name = \"rms\"", "name = \"rms-norm\""), "op.name", "C identifier"),
        (("target = \"my.rms_norm\"", "target = \"a\\\"); evil(\""), "op.target", "letters, digits"),
    ],
)
def test_invalid_spec_names_file_key_and_allowed_values(tmp_path, edit, key, allowed):
    assert edit[0] in VALID
    path = write(tmp_path, VALID.replace(edit[0], edit[1], 1))
    with pytest.raises(SpecError) as info:
        specmod.load(path)
    message = str(info.value)
    assert str(path) in message and f"[{key}]" in message and allowed in message
    assert "\n" not in message


def test_ptx_defaults_on_and_must_be_a_boolean(tmp_path):
    assert specmod.load(write(tmp_path, VALID)).build.ptx is True
    assert specmod.load(write(tmp_path, VALID + "ptx = false\n")).build.ptx is False
    with pytest.raises(SpecError, match=r"\[build.ptx\] 'no' is not allowed"):
        specmod.load(write(tmp_path, VALID + 'ptx = "no"\n'))


def test_arch_specific_defaults_off_and_must_be_a_boolean(tmp_path):
    assert specmod.load(write(tmp_path, VALID)).build.arch_specific is False
    assert specmod.load(write(tmp_path, VALID + "arch_specific = true\n")).build.arch_specific is True
    with pytest.raises(SpecError, match=r"\[build.arch_specific\] 'yes' is not allowed"):
        specmod.load(write(tmp_path, VALID + 'arch_specific = "yes"\n'))


def test_not_toml_and_missing_tables(tmp_path):
    with pytest.raises(SpecError, match=r"\[toml\] not valid TOML"):
        specmod.load(write(tmp_path, "[op\nname="))
    with pytest.raises(SpecError, match=r"\[op\] must be a table"):
        specmod.load(write(tmp_path, "[build]\n"))
    with pytest.raises(UsageError, match="no xlacc.toml"):
        specmod.load(tmp_path / "nowhere")


def test_a_duplicate_name_is_named_before_the_backward_that_reads_it(tmp_path):
    """A second input `x` was reported as "[backward.grads] 'y' is not a floating-point input"."""
    project = tmp_path / "op"
    scaffold.create(scaffold.NewRequest(name="op", template="add", platform="cpu", frameworks=["jax"], directory=project))
    spec_file = project / "xlacc.toml"
    spec_file.write_text(spec_file.read_text().replace('name = "y"', 'name = "x"', 1))
    with pytest.raises(SpecError, match=r"\[inputs\] the name 'x' is used twice"):
        specmod.load(project)
    spec_file.write_text(spec_file.read_text().replace('name = "x"', 'name = "y"', 1).replace("[[outputs]]", '[[attrs]]\nname = "y"\ntype = "f32"\n\n[[outputs]]', 1))
    with pytest.raises(SpecError, match=r"\[attrs\] the name 'y' is used twice"):
        specmod.load(project)


def test_duplicate_names_and_mixed_dtype_lists_are_refused(tmp_path):
    dup = VALID.replace('name = "weight"', 'name = "x"')
    with pytest.raises(SpecError, match=r"\[inputs\] the name 'x' is used twice"):
        specmod.load(write(tmp_path, dup))
    mixed = VALID.replace('name = "weight"\ndtype = ["f32", "bf16"]', 'name = "weight"\ndtype = ["f16", "f32"]')
    with pytest.raises(SpecError, match="same list"):
        specmod.load(write(tmp_path, mixed))


@pytest.mark.parametrize(
    "name",
    ["", "1abc", "a-b", "a b", "x;system", 'x"', "int", "class", "static_cast", "__x", "_Reserved", "lambda", "match", "a" * 64, "main", "ünï"],
)
def test_identifier_check_refuses_what_cannot_be_a_symbol(name):
    with pytest.raises(UsageError):
        specmod.check_identifier(name)


@pytest.mark.parametrize("name", ["add", "rms_norm", "_private", "PagedAttention2", "a" * 63])
def test_identifier_check_accepts_c_identifiers(name):
    assert specmod.check_identifier(name) == name


@pytest.mark.parametrize("target", ['a"b', "a\nb", "a b", "1x", "x;y", "a/b", "x$y"])
def test_target_check_refuses_injection(target):
    with pytest.raises(UsageError):
        specmod.check_target(target)


def test_parse_archs():
    assert specmod.parse_archs("auto") == ()
    assert specmod.parse_archs("sm_80, sm_90") == ("sm_80", "sm_90")
    assert specmod.parse_archs(["compute_90"]) == ("sm_90",)
    with pytest.raises(UsageError, match="invalid GPU arch"):
        specmod.parse_archs("sm9")


@pytest.mark.parametrize(
    "text, key, says",
    [
        (VALID + "source = [\"k.cu\"]\n", "build.source", "did you mean 'sources'"),
        (VALID.replace("[op]", "[op]\nplatfrom = \"cpu\""), "op.platfrom", "did you mean 'platform'"),
        (VALID.replace('name = "weight"', 'name = "weight"\nshpae = [4]'), "inputs[1].shpae", "did you mean 'shape'"),
        (VALID + "[extras]\n", "extras", "known keys"),
    ],
)
def test_unknown_keys_are_named_with_the_closest_known_one(tmp_path, text, key, says):
    with pytest.raises(SpecError) as info:
        specmod.load(write(tmp_path, text))
    assert f"[{key}]" in str(info.value) and says in str(info.value)


@pytest.mark.parametrize(
    "text, key",
    [
        (VALID + "sources = 5\n", "build.sources"),
        (VALID.replace('archs = ["sm_80", "sm_90a"]', "archs = 5"), "build.archs"),
        (VALID + "flags = [\"-O3 -g\"]\n", "build.flags"),
        ("attrs = 5\n" + VALID.replace("[[attrs]]\nname = \"eps\"\ntype = \"f32\"\ndefault = 1e-6", ""), "attrs"),
        (VALID.replace("default = 1e-6", "default = nan"), "attrs[0].default"),
        (VALID.replace("default = 1e-6", "default = inf"), "attrs[0].default"),
        (VALID.replace("default = 1e-6", "default = true"), "attrs[0].default"),
        (VALID.replace('frameworks = ["jax", "torch-xla"]', 'frameworks = ["jax", "jax"]'), "op.frameworks"),
        (VALID.replace('target = "my.rms_norm"', "target = 3"), "op.target"),
        (VALID.replace('shape = ["rows", "cols"]', "shape = [true]"), "inputs[0].shape"),
        (VALID.replace('name = "rms"', 'name = "jax"'), "op.name"),
        (VALID.replace('name = "rms"', 'name = "json"'), "op.name"),
        (VALID.replace('name = "x"', 'name = "int64_t"').replace('shape = "x"', 'shape = "int64_t"'), "inputs[0].name"),
        (VALID.replace('name = "x"', 'name = "TARGET"').replace('shape = "x"', 'shape = "TARGET"'), "inputs[0].name"),
        (VALID.replace('name = "eps"', 'name = "backend_config"'), "attrs[0].name"),
        # Accepted once, then failing (or aborting) when the op was lowered:
        (VALID.replace('shape = "x"', 'shape = ["rows", 0, "n"]'), "outputs[0].shape"),
        (VALID.replace('shape = "x"', "shape = [9223372036854775807]"), "outputs[0].shape"),
        (VALID.replace("default = 1e-6", "default = 1e39"), "attrs[0].default"),
        (VALID.replace('type = "f32"\ndefault = 1e-6', 'type = "i32"\ndefault = 99999999999'), "attrs[0].default"),
        (VALID + "[sharding]\nrule = \"a, b -> c\"\n", "sharding.rule"),
        (VALID + 'output = "lib\\u0000.so"\n', "build.output"),
        (VALID + 'defines = ["A=1\\u0000"]\n', "build.defines"),
        (VALID + 'flags = ["-E"]\n', "build.flags"),
        (VALID + 'flags = ["-Wl,-o,/tmp/elsewhere.so"]\n', "build.flags"),
        (VALID + 'kernel = "kernel.cc"\n', "build.kernel"),  # a cuda kernel is a .cu file
        (VALID + 'kernel = "/tmp/k.cu"\n', "build.kernel"),
        (VALID.replace("[build]", '[generated]\n[generated.files]\n"../x.txt" = "sha256:00"\n\n[build]'), "generated.files"),
    ],
)
def test_values_of_the_wrong_type_or_meaning_name_their_key(tmp_path, text, key):
    with pytest.raises(SpecError) as info:
        specmod.load(write(tmp_path, text))
    assert f"[{key}]" in str(info.value) and "\n" not in str(info.value)


def test_a_spec_that_is_not_utf8_is_a_spec_error(tmp_path):
    path = tmp_path / "xlacc.toml"
    path.write_bytes(VALID.encode().replace(b"rms", b"r\xffs", 1))
    with pytest.raises(SpecError, match=r"\[toml\] not UTF-8"):
        specmod.load(path)


@pytest.mark.parametrize(
    "name", ["x", "y", "z", "out", "output", "input", "weight", "bias", "query", "key", "value", "scale", "eps", "mask",
             "a", "b", "q", "k", "v", "data", "lhs", "rhs", "values", "indices", "cache", "positions", "alpha", "beta"],
)
def test_names_people_give_tensors_are_accepted(name):
    assert specmod.check_member_name(name, "name") == name


def test_the_reserved_names_are_derived_from_the_generated_code():
    assert reserved_names.derive() == names.generated_identifiers(), "run `python tools/reserved_names.py` to rewrite xlacc/spec/reserved_names.txt"
    assert {"ins", "outs", "stream", "status", "backend_config", "register", "jax", "TARGET"} <= names.generated_identifiers()


# Each built, then broke run-smoke: the op's functions (NAME, _NAME...) overwrote one of the
# generated module's own names (`op` did too, until jax.py's helper and the tests' fixture were
# renamed); `name`: torch.ops.xlacc.name is torch's namespace's own attribute.
@pytest.mark.parametrize("name", ["reference", "op_to_run", "library", "transformed", "Target", "op_dtype", "TARGET", "ENTRY_POINT", "name"])
def test_op_names_the_generated_package_uses_are_refused(name):
    with pytest.raises(UsageError, match=r"^invalid name '\w+': the generated package uses that name itself; pick another$"):
        specmod.check_op_name(name)


@pytest.mark.parametrize("name", ["add", "rms_norm", "paged_attention", "my_op", "DTYPES", "example_inputs", "testing", "EOF", "NULL"])
def test_op_names_only_other_modules_or_cxx_prefixes_use_are_accepted(name):
    assert specmod.check_op_name(name) == name  # in C++ the op's name only prefixes (NAME_launch)


# Each was accepted, then the C++ failed to compile: the preprocessor replaced the parameter.
@pytest.mark.parametrize("name", ["EOF", "NULL", "errno", "INFINITY", "NAN", "M_PI", "stdin", "stdout", "CHAR_BIT", "INT_MAX", "SIZE_MAX"])
@pytest.mark.parametrize("what", ["name", "attribute name"])
def test_operand_and_attribute_names_that_are_macros_are_refused(name, what):
    with pytest.raises(UsageError, match=r"is a macro of the C/C\+\+ headers the generated code includes; pick another$"):
        specmod.check_member_name(name, what)


def test_the_reserved_op_names_are_derived_from_the_generated_code():
    assert reserved_names.derive_op_names() == names.op_names(), "run `python tools/reserved_names.py` to rewrite xlacc/spec/reserved_op_names.txt"


def test_torch_op_namespace_attributes_are_reserved_op_names():
    pytest.importorskip("torch", reason="torch is not installed: its op namespace cannot be checked")
    import torch

    namespace = torch._ops._OpNamespace("xlacc")
    assert {a for a in vars(namespace) if not a.startswith("__")} <= names.TORCH_NAMESPACE_ATTRIBUTES


@pytest.mark.parametrize("platform", ["cpu", "cuda"])
def test_the_reserved_macros_hold_every_macro_of_the_generated_codes_headers(platform):
    """What this machine's compiler defines: the stored file was derived where both g++ and nvcc were."""
    try:
        derived = reserved_names.derive_macros(platform)
    except ToolchainMissing as exc:
        pytest.skip(f"cannot preprocess the {platform} headers here: {exc}")
    missing = sorted(derived - names.macros())
    assert not missing, f"run `python tools/reserved_names.py` to rewrite xlacc/spec/reserved_macros.txt; missing: {missing[:20]}"
    assert {"EOF", "NULL", "errno", "M_PI"} <= derived and not any(n.startswith("__") or n.endswith("_t") for n in derived)


def test_signature_changes_are_noticed_and_build_settings_are_not(tmp_path):
    spec = specmod.load(write(tmp_path, VALID))
    recorded = VALID + f"""
[generated]
xlacc = "0.2.0"
template = "blank"
signature = "{spec.signature_digest}"
"""
    assert drift.signature_changes(specmod.load(write(tmp_path, recorded))) == []
    faster = recorded.replace('archs = ["sm_80", "sm_90a"]', 'archs = ["sm_90"]\nflags = ["-lineinfo"]')
    assert drift.signature_changes(specmod.load(write(tmp_path, faster))) == []
    wider = recorded.replace("[[attrs]]", '[[inputs]]\nname = "bias"\ndtype = "f32"\n\n[[attrs]]')
    assert drift.signature_changes(specmod.load(write(tmp_path, wider))) != []


# -- [sharding] and [backward] --------------------------------------------------------------------

TRANSFORMS = """
[sharding]
rule = "...  c , c ->... c"
whole = ["c"]

[backward]
[[backward.saved]]
name = "rstd"
dtype = "f32"
shape = "x[:-1]"
"""


def test_sharding_and_a_backward_kernel_make_a_second_target(tmp_path):
    spec = specmod.load(write(tmp_path, VALID + TRANSFORMS).parent)
    assert spec.sharding.rule == "... c, c -> ... c"  # kept normalised
    assert spec.backward.kind == "kernel" and spec.backward.grads == ("x", "weight")  # every floating input
    forward, backward = spec.calls
    assert [t.name for t in forward.outputs] == ["out", "rstd"] and forward.rule.text == "... c, c -> ... c, ..."
    assert (backward.name, backward.target, backward.launch) == ("rms_backward", "my.rms_norm_backward", "rms_backward_launch")
    assert [t.name for t in backward.inputs] == ["x", "weight", "rstd", "grad_out"]
    assert [t.name for t in backward.outputs] == ["grad_x", "grad_weight"]
    # The backward's rule: the forward's operands, the saved tensor and the cotangent in; the gradients out.
    assert backward.rule.text == "... c, c, ..., ... c -> ... c, c"
    assert spec.entry_points == (
        "xlacc_rms_ffi", "xlacc_rms_legacy", "xlacc_rms_last_error",
        "xlacc_rms_backward_ffi", "xlacc_rms_backward_legacy", "xlacc_rms_backward_last_error",
    )  # fmt: skip


def test_projects_without_the_new_tables_keep_their_signature_digest(tmp_path):
    plain = specmod.load(write(tmp_path, VALID).parent)
    assert plain.signature_digest == "sha256:" + plain.signature_digest.split(":")[1]
    assert plain.sharding is None and plain.backward is None and plain.calls == (plain.forward,)
    with_transforms = specmod.load(write(tmp_path, VALID + TRANSFORMS).parent)
    assert with_transforms.signature_digest != plain.signature_digest


@pytest.mark.parametrize(
    "extra, key, message",
    [
        ('[sharding]\nrule = "x -> x"', "sharding.rule", "1 operand entries; the op has 2 inputs"),
        ('[sharding]\nrule = "c ... -> c"', "sharding.rule", "may only come first"),
        ('[sharding]\nrule = "..., c -> ..."\nwhole = ["d"]', "sharding.rule", "'d' is not a factor"),
        ('[sharding]\nrules = "..., c -> ..."', "sharding.rules", "did you mean 'rule'"),
        ('[backward]\nkind = "magic"', "backward.kind", "'magic' is not allowed"),
        ('[backward]\ngrads = ["eps"]', "backward.grads", "'eps' is not a floating-point input"),
        ('[backward]\ngrads = ["x", "x"]', "backward.grads", "'x' is listed twice"),
        ('[backward]\n[[backward.saved]]\nname = "r"\ndtype = "f32"\nshape = "x[1:]"', "backward.saved[0].shape", "its leading dims"),
        ('[sharding]\nrule = "..., c -> ..."\n[backward]\n[[backward.saved]]\nname = "r"\ndtype = "f32"\nshape = "y"', "backward.saved[0].shape", "'y' is not an input"),
        ('[backward]\n[[backward.saved]]\nname = "out"\ndtype = "f32"\nshape = "x"', "backward.saved[0].name", "already an operand"),
        ('[backward]\nkind = "reference"\n[[backward.saved]]\nname = "r"\ndtype = "f32"\nshape = "x"', "backward.saved", "only a kernel"),
        ('[sharding]\nrule = "..., c -> ..."\n[backward]\n[[backward.saved]]\nname = "r"\ndtype = "f32"\nshape = "x[:-1]"',
         "sharding.rule", "no 1 trailing named dims"),
    ],
)
def test_bad_sharding_and_backward_tables_name_the_key(tmp_path, extra, key, message):
    with pytest.raises(SpecError, match=message) as info:
        specmod.load(write(tmp_path, VALID + extra).parent)
    assert info.value.key == key


def test_a_gradient_name_may_not_take_a_users_name(tmp_path):
    text = VALID.replace('name = "weight"', 'name = "grad_x"') + '\n[backward]\n'
    with pytest.raises(SpecError, match="names a gradient 'grad_x'"):
        specmod.load(write(tmp_path, text).parent)


IN_PLACE = """
[op]
name = "kv_write"
frameworks = ["jax", "torch-xla"]

[[inputs]]
name = "rows"
dtype = ["f32", "bf16"]

[[inputs]]
name = "cache"
dtype = ["f32", "bf16"]

[[inputs]]
name = "slots"
dtype = "i32"

[[outputs]]
name = "cache_out"
dtype = ["f32", "bf16"]
alias = "cache"

[[outputs]]
name = "work"
dtype = "f32"
shape = [1024]
scratch = true
"""


def test_results_written_in_place_and_scratch_results(tmp_path):
    spec = specmod.load(write(tmp_path, IN_PLACE))
    cache_out, work = spec.outputs
    assert (cache_out.alias, cache_out.like, cache_out.scratch) == ("cache", "cache", False)
    assert (work.scratch, work.shape) == (True, (1024,))
    assert spec.aliases == {1: 0}
    assert spec.results == (cache_out,) and spec.result_indices == (0,)
    unaliased = specmod.load(write(tmp_path, IN_PLACE.replace('alias = "cache"', 'shape = "cache"')))
    assert unaliased.signature_digest != spec.signature_digest


def test_default_alias_and_scratch_keys_leave_the_digest_alone(tmp_path):
    """Projects written before these keys existed keep their recorded signature."""
    plain = specmod.load(write(tmp_path, IN_PLACE.replace("scratch = true", "")))
    spelled_out = specmod.load(write(tmp_path, IN_PLACE.replace("scratch = true", "scratch = false")))
    assert plain.signature_digest == spelled_out.signature_digest


@pytest.mark.parametrize(
    "edit, key, says",
    [
        (('alias = "cache"', 'alias = "nothing"'), "outputs[0].alias", "not an input"),
        (('alias = "cache"', 'alias = "cache"\nshape = [4]'), "outputs[0].shape", "omit shape"),
        (('name = "cache_out"\ndtype = ["f32", "bf16"]', 'name = "cache_out"\ndtype = "i32"'), "outputs[0].dtype", "its input's dtype"),
        (('alias = "cache"', 'alias = "cache"\nscratch = true'), "outputs[0].scratch", "cannot also alias"),
        (("shape = [1024]", 'shape = "new"'), "outputs[1].shape", "fixed shape"),
        (("shape = [1024]", "shape = [0]"), "outputs[1].shape", "ints from 1 to"),
        (("scratch = true", 'scratch = "yes"'), "outputs[1].scratch", "true or false"),
        (('name = "cache_out"\ndtype = ["f32", "bf16"]\nalias = "cache"', 'name = "cache_out"\ndtype = "f32"\nshape = [8]\nscratch = true'), "outputs", "every result is scratch"),
        (('[[outputs]]\nname = "work"', '[[outputs]]\nname = "again"\ndtype = ["f32", "bf16"]\nalias = "cache"\n\n[[outputs]]\nname = "work"'), "outputs[1].alias", "aliased by two"),
    ],
)
def test_bad_aliases_and_scratch_results_name_their_key(tmp_path, edit, key, says):
    assert edit[0] in IN_PLACE
    with pytest.raises(SpecError) as info:
        specmod.load(write(tmp_path, IN_PLACE.replace(edit[0], edit[1], 1)))
    assert f"[{key}]" in str(info.value) and says in str(info.value), str(info.value)


def test_an_output_with_scratch_false_is_an_ordinary_result(tmp_path):
    spec = specmod.load(write(tmp_path, IN_PLACE.replace("scratch = true", "scratch = false")))
    assert spec.outputs[1].scratch is False and spec.results == spec.outputs


def test_a_folder_below_a_project_or_inside_its_record_names_the_project(tmp_path):
    """Inside .xlacc/base, build and update took xlacc's record for a project and wrote into it."""
    project = tmp_path / "op"
    scaffold.create(scaffold.NewRequest(name="op", template="add", platform="cpu", frameworks=["jax"], directory=project))
    with pytest.raises(UsageError, match=rf"inside {project}'s .xlacc/ folder, xlacc's record of that project: run xlacc on {project}"):
        specmod.load(project / ".xlacc" / "base")
    (project / "build").mkdir(exist_ok=True)
    with pytest.raises(UsageError, match=rf"not an xlacc project; the project above is {project}$"):
        specmod.load(project / "build")
    with pytest.raises(UsageError, match=rf"inside {project}'s .xlacc/ folder"):  # nor is a project written there
        scaffold.create(scaffold.NewRequest(name="op", template="add", platform="cpu", frameworks=["jax"], directory=project / ".xlacc" / "base" / "x"))
    elsewhere = tmp_path / ".xlacc" / "op"  # a folder merely named .xlacc holds projects like any other
    scaffold.create(scaffold.NewRequest(name="op", template="add", platform="cpu", frameworks=["jax"], directory=elsewhere))
    assert specmod.load(elsewhere).name == "op"
