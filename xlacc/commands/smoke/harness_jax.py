"""The JAX harness: ``python -m xlacc.commands.smoke.harness_jax --project DIR --records FILE [...]``.

Runs in a child process (xlacc starts it through ``xlacc.commands.smoke.runner``) because registering or
calling a broken custom call can kill the process. Checks, each recorded as it finishes:
registration, lowering (and compiling), numerics against the reference, then vmap, grad and
sharding (``harness_transform_checks``). ``run-smoke --bench`` times the op afterwards through ``xlacc
bench`` (its own child); ``--bench`` here adds only the sharded timing.

Exit codes: 0 passed; 1 a check failed; 3 (``xlacc.ground.report.EXIT_NEEDS_GPU``) a cuda project on a
machine where jax sees no GPU: registration and lowering ran and passed, execution needs a GPU.
"""

from __future__ import annotations

import functools
import os
import sys
from typing import Any

import numpy as np

from xlacc.commands.smoke.harness import Harness, Project, as_tuple, first_line, leave, load_project, parse_args
from xlacc.commands.smoke.harness_transform_checks import TransformChecks
from xlacc.commands.smoke.records import RecordWriter
from xlacc.commands.doctor.rules import custom_call, environment, registration
from xlacc.readers import hlo

# Where XLA looks a target up, by project platform (the legacy registry matches this exactly).
XLA_PLATFORM = {"cpu": "Host", "cuda": "CUDA"}
LOWERING_SIZE = 10_007


class JaxHarness(Harness):
    context = "run-smoke jax"

    def __init__(self, args: Any, writer: RecordWriter):
        super().__init__(writer)
        self.args = args
        self.project: Project | None = None
        self.jax_ops: Any = None
        self.device: Any = None
        self.started = False
        self.compiled_ok = False
        self.registrations: list[tuple[str, int]] = []  # (platform, api_version) of the target
        self.lowered_text = ""  # the StableHLO the lowering check read

    # -- helpers --------------------------------------------------------------------------------
    @property
    def spec(self):
        return self.project.spec

    def op(self, attrs: dict[str, Any]):
        function = getattr(self.jax_ops, self.spec.name, None)
        if function is None:
            raise AttributeError(f"{self.spec.package}/jax.py defines no function {self.spec.name}()")
        return functools.partial(function, **attrs)

    def put(self, operands: list[Any]) -> list[Any]:
        import jax

        return [jax.device_put(a, self.device) for a in operands]

    # -- the run --------------------------------------------------------------------------------
    def run(self) -> int:
        with self.step("load", "project"):
            self.project = load_project(self.args.project)
        if self.project is None:
            return self.finish()
        with self.step("start jax", "jax"):
            self.start_jax()
        if not self.started:
            return self.finish()
        with self.step("registration"):
            self.check_registration()
        if self.jax_ops is None:
            self.check("lowering", None, f"not run: {self.spec.package}.jax did not load")
            self.check("numerics", None, f"not run: {self.spec.package}.jax did not load")
            return self.finish()
        with self.step("lowering"):
            self.check_lowering()
        if self.device is None:
            self.needs_gpu = True
            self.record(environment.framework_sees_no_gpu(self.spec.name, "jax", self.devices_text(), self.context))
            self.check("numerics", None, "not run: execution needs a GPU")
        elif self.compiled_ok:
            self.check_numerics()
            if self.args.bench:
                with self.step("bench"):
                    self.bench()
            self.check_transforms()
        else:
            self.check("numerics", None, "not run: the op did not compile")
        return self.finish()

    def check_transforms(self) -> None:
        """vmap, grad, and the op sharded over several devices (the jax harness's own checks)."""
        TransformChecks(self).run()

    def start_jax(self) -> None:
        import jax

        dtypes = {d for t in self.spec.inputs + self.spec.outputs for d in t.dtypes}
        if dtypes & {"f64", "i64"}:
            jax.config.update("jax_enable_x64", True)
        self.writer.data("seed", self.args.seed)
        self.pick_device()
        self.writer.data("device", str(self.device) if self.device is not None else None)
        self.spy_on_registration()
        self.started = True

    def spy_on_registration(self) -> None:
        """Wrap jax.ffi.register_ffi_target (before the op's jax module is imported) so every registration of
        the target is checked against the spec and recorded before XLA sees it: a registration that
        crashes the process still leaves its evidence behind."""
        import jax.ffi

        real = jax.ffi.register_ffi_target

        def register_ffi_target(name, fn, platform="cpu", api_version=1, **kwargs):
            if name == self.spec.target and (platform, api_version) not in self.registrations:
                self.registrations.append((platform, api_version))
                self.judge_registration(platform, api_version)
            return real(name, fn, platform, api_version, **kwargs)

        jax.ffi.register_ffi_target = register_ffi_target

    def judge_registration(self, platform: str, api_version: int) -> None:
        self.writer.step(f"registration: register_ffi_target({self.spec.target!r}, platform={platform!r}, api_version={api_version})")
        for finding in registration.jax_registration(self.spec, platform, api_version, self.context):
            self.record(finding)

    def devices_text(self) -> str:
        import jax

        return ", ".join(str(d) for d in jax.devices())

    def pick_device(self) -> None:
        """The device the project's code runs on: the CPU for cpu projects, a GPU for cuda ones.
        Asking creates the backends, so registrations made later apply at once."""
        import jax

        chosen = os.environ.get("JAX_PLATFORMS", "").strip()
        try:
            if self.spec.platform == "cpu":
                self.device = jax.devices("cpu")[0]
                return
            try:
                self.device = jax.devices("gpu")[0]
            except RuntimeError:  # this jax has no GPU backend, or sees no GPU
                self.device = None
        except (AssertionError, RuntimeError) as exc:  # AssertionError: jax's only word for a platform JAX_PLATFORMS names but it lacks
            if not chosen:
                raise
            said = str(exc).split(":")[0].strip()  # its first clause: the rest would read as this project's own failure
            raise RuntimeError(f"jax could not start the platforms JAX_PLATFORMS={chosen!r} names{f' ({said})' if said else ''}; a "
                               f"{self.spec.platform} project needs {'cpu' if self.spec.platform == 'cpu' else 'cuda'} among them (or JAX_PLATFORMS unset)") from None

    # -- 1. registration ------------------------------------------------------------------------
    def check_registration(self) -> None:
        self.jax_ops = self.project.module("jax")
        self.jax_ops.register()
        platform = XLA_PLATFORM[self.spec.platform]
        entry = registered_entry(self.spec.target, platform)
        pending = pending_registrations()
        for queued_platform, name in pending:
            self.record(registration.jax_pending(self.spec.target, queued_platform, name, self.context))
        ours = [p for p, name in pending if name == self.spec.target]
        self.check("registration", *self.registration_verdict(entry, platform, ours))

    def registration_verdict(self, entry: Any, platform: str, queued: list[str]) -> tuple[bool | None, str]:
        target, expected = self.spec.target, registration.REGISTRY_KIND[self.spec.api]
        if entry is _NO_INTROSPECTION:
            return True, "register() ran; this jaxlib cannot list its registry, so the call below is the proof"
        if entry is not None:
            kind = "typed FFI" if isinstance(entry, dict) else "legacy"
            if self.record(registration.registered_kind(self.spec, platform, kind, self.context)):
                return False, f"{target} is registered for {platform} as {kind}; the call expects {expected}"
            return True, f"{target} is registered for {platform} as {kind}"
        if platform in queued and self.device is None:
            return None, f"{target} is queued for {platform}: no {platform} backend in this jax, so XLA never saw it (verifying needs a GPU)"
        handed = self.handed_to_plugin(platform, queued)
        if handed:
            return True, (
                f"{handed} went to jax's {platform} plugin, whose registry cannot be listed from Python; "
                "compiling the call below proves it"
            )
        where = f" (queued for {', '.join(map(repr, queued))})" if queued else ""
        if "platform-name" not in self.reported:  # else that is why
            self.record(registration.not_registered(target, platform, queued, self.context))
        return False, f"{target} is not registered for {platform}{where}"

    def handed_to_plugin(self, platform: str, queued: list[str]) -> str | None:
        """A PJRT plugin (jax's CUDA plugin) keeps its own registry: a registration with the right
        platform and api_version that jax no longer holds back was handed to it."""
        if platform in queued:
            return None
        accepted = registration.JAX_PLATFORMS[self.spec.platform]
        expected = self.spec.jax_register_api_version
        for name, api_version in self.registrations:
            if name in accepted and api_version == expected:
                return f"register_ffi_target({self.spec.target!r}, platform={name!r}, api_version={api_version})"
        return None

    # -- 2. lowering ----------------------------------------------------------------------------
    def check_lowering(self) -> None:
        operands, attrs = self.project.example_inputs(LOWERING_SIZE, np.random.default_rng(self.args.seed), self.project.dtypes()[0])
        if self.device is None:
            self.check("lowering", *self.lower_for_gpu_without_one(operands, attrs))
            return
        import jax

        lowered = jax.jit(self.op(attrs)).lower(*self.put(operands))
        self.lowered_text = lowered.as_text()
        ok, detail = self.verify_calls(hlo.stablehlo_custom_calls(self.lowered_text), "StableHLO")
        if not ok:
            self.check("lowering", False, detail)
            return
        try:
            compiled_text = lowered.compile().as_text()
        except Exception as exc:
            import traceback

            traceback.print_exc(file=sys.stderr)
            self.check("lowering", True, detail)
            self.check("compile", False, first_line(exc))
            return
        compiled_ok, compiled_detail = self.verify_calls(hlo.hlo_custom_calls(compiled_text), "compiled HLO")
        self.compiled_ok = compiled_ok
        self.check("lowering", compiled_ok, f"{detail}; {compiled_detail}")
        if compiled_ok and self.spec.aliases:
            self.check("aliasing", *self.verify_aliasing(self.put(operands), attrs))

    def verify_aliasing(self, args: list[Any], attrs: dict[str, Any]) -> tuple[bool, str]:
        """Results written in place: with their inputs donated, the compiled HLO hands the custom
        call those inputs' own buffers (output_to_operand_aliasing, and no copy in front)."""
        import jax

        aliases = self.spec.aliases
        text = jax.jit(self.op(attrs), donate_argnums=tuple(aliases)).lower(*args).compile().as_text()
        call = hlo.calls_to(hlo.hlo_custom_calls(text), self.spec.target)[0]
        pairs = ", ".join(f"{self.spec.inputs[i].name} -> {self.spec.outputs[o].name}" for i, o in aliases.items())
        missing = [self.spec.inputs[i].name for i, o in aliases.items() if (o, i) not in call.aliases]
        if missing:
            return False, f"compiled HLO: the custom call does not alias {', '.join(missing)} (output_to_operand_aliasing: {list(call.aliases)})"
        producers = hlo.hlo_instructions(text)
        copied = [self.spec.inputs[i].name for i in aliases if getattr(producers.get(call.operands[i]), "opcode", "") == "copy"]
        if copied:
            return False, f"compiled HLO: XLA copies {', '.join(copied)} before the call although donated"
        return True, f"{pairs} in place, donated: output_to_operand_aliasing and no copy in the compiled HLO"

    def lower_for_gpu_without_one(self, operands: list[Any], attrs: dict[str, Any]) -> tuple[bool, str]:
        import jax
        from jax import export

        shapes = [jax.ShapeDtypeStruct(np.shape(a), a.dtype) for a in operands]
        exported = export.export(
            jax.jit(self.op(attrs)),
            platforms=["cuda"],
            disabled_checks=[export.DisabledSafetyCheck.custom_call(self.spec.target)],
        )(*shapes)
        self.lowered_text = exported.mlir_module()
        ok, detail = self.verify_calls(hlo.stablehlo_custom_calls(self.lowered_text), "StableHLO for cuda (jax.export)")
        if ok and self.spec.aliases:
            asked = set(hlo.calls_to(hlo.stablehlo_custom_calls(self.lowered_text), self.spec.target)[0].aliases)
            missing = [self.spec.inputs[i].name for i, o in self.spec.aliases.items() if (o, i) not in asked]
            self.check("aliasing", not missing, f"not aliased: {', '.join(missing)}" if missing else "output_operand_aliases in the StableHLO; compiling it needs a GPU")
        return ok, f"{detail}; not compiled: no GPU here"

    def verify_calls(self, calls: list[hlo.CustomCall], where: str) -> tuple[bool, str]:
        target, expected = self.spec.target, self.spec.jax_api_version
        ours = hlo.calls_to(calls, target)
        if not ours:
            if self.record(custom_call.optimized_away(f"the {where} of {self.spec.name} holds no custom call to {target!r}", calls, self.context)):
                return False, f"no custom call to {target} in the {where}"
            return False, f"{where} calls {', '.join(sorted({c.target for c in calls}))}, not {target}"
        wrong = [c for c in ours if c.api_version != expected]
        if wrong:
            got = hlo.api_version_name(wrong[0].api_version)
            self.record(registration.called_with(wrong[0], expected, self.context, where, shown=300))
            return False, f"{where}: {target} is called with {got}, the project's api is {hlo.api_version_name(expected)}"
        if where.startswith("StableHLO"):
            return True, f"{where}: stablehlo.custom_call @{target} ({hlo.api_version_name(expected)})"
        return True, f'{where}: custom_call_target="{target}", api_version={hlo.api_version_name(expected)}'

    # -- 3. numerics (the loop is Harness.check_numerics) -------------------------------------------
    @property
    def numerics_device(self) -> str:
        return "gpu" if self.spec.platform == "cuda" else "cpu"

    def run_op(self, operands: list[Any], attrs: dict[str, Any]) -> tuple[Any, ...]:
        import jax

        outputs = jax.block_until_ready(jax.jit(self.op(attrs))(*self.put(operands)))
        return tuple(np.asarray(o) for o in as_tuple(outputs))

    # -- 4. bench -------------------------------------------------------------------------------
    def bench(self) -> None:
        """The jax op is timed by `xlacc bench` in a child of its own, which run-smoke --bench
        runs after this harness; the torchax harness overrides this with its own timing."""


# -- jax's registries -----------------------------------------------------------------------------

_NO_INTROSPECTION = object()


def registered_entry(target: str, platform: str) -> Any:
    """XLA's entry for ``target`` on ``platform``: a dict of FFI stages (typed FFI), a capsule
    (legacy), None when absent, or _NO_INTROSPECTION where this jaxlib cannot list its registry."""
    try:
        from jax._src.lib import _jax
    except ImportError:
        return _NO_INTROSPECTION
    lister = getattr(_jax, "custom_call_targets", None)
    if lister is None:
        return _NO_INTROSPECTION
    return lister(platform).get(target)


def pending_registrations() -> list[tuple[str, str | None]]:
    """(platform, target name) of every registration jax still holds back because no backend for
    that platform exists: ``xla_client._custom_callback`` (targets) and ``_custom_type_id`` (FFI
    type ids, reported with name None)."""
    from jax._src.lib import xla_client

    pending: list[tuple[str, str | None]] = []
    for platform, entries in dict(getattr(xla_client, "_custom_callback", {})).items():
        pending += [(platform, entry[0]) for entry in entries]
    for platform, entries in dict(getattr(xla_client, "_custom_type_id", {})).items():
        pending += [(platform, None) for _ in entries]
    return pending


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv, "Run a project's custom call through JAX and record the checks.")
    return JaxHarness(args, RecordWriter(args.records)).run()


if __name__ == "__main__":
    leave(main())
