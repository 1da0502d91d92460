"""The hatchling build hook a generated project's pyproject.toml names (`hooks.xlacc`): building
its wheel compiles the library as `xlacc build` does and puts it in the wheel, so
`pip install --no-build-isolation ./PROJECT` gives a package that imports and runs.

A failed build ends the hook's process with xlacc's one-line error and the compiler's first error
lines on stderr, which pip shows, and exit status 1: an exception would bury them under a Python
traceback through pip's and hatchling's frames."""

from __future__ import annotations

import sys

from hatchling.builders.hooks.plugin.interface import BuildHookInterface
from hatchling.plugin import hookimpl

COMPILER_LINES = 12  # of the compiler's first error, as `xlacc build` shows them


class XlaccBuildHook(BuildHookInterface):
    PLUGIN_NAME = "xlacc"

    def initialize(self, version: str, build_data: dict) -> None:
        if self.target_name != "wheel":
            return
        from pathlib import Path

        from xlacc import api, spec  # lazy: hatchling loads hooks for every target, xlacc only builds wheels
        from xlacc.ground.errors import XlaccError  # lazy: as above

        try:
            project = spec.load(Path(self.root))
            report = api.build(project.root)
        except XlaccError as exc:
            _fail(f"xlacc build {self.root}: {exc}")
        if report.failed:
            _fail(_failure(report, project.root))
        library = project.library.resolve()
        build_data["pure_python"] = False
        build_data["infer_tag"] = True  # the wheel holds a compiled library: tag it for this platform
        build_data["force_include"][str(library)] = str(library.relative_to(project.root.resolve()))


def _failure(report, root) -> str:
    """``xlacc build ROOT failed: compile: g++ failed: ...`` and the compiler's first error lines."""
    failed = [f"{check.name}: {check.detail}" for check in report.checks if check.ok is False]
    errors = [finding for finding in report.findings if finding.severity == "error"]
    head = "; ".join(failed) or "; ".join(f"{f.code}: {f.title}" for f in errors) or "see `xlacc build`"
    compiler = next((f.evidence for f in errors if f.code == "compile-error"), "")
    return "\n".join([f"xlacc build {root} failed: {head}", *compiler.splitlines()[:COMPILER_LINES]])


def _fail(message: str) -> None:
    sys.stderr.write(f"error: {message}\n")
    sys.stderr.flush()
    raise SystemExit(1)


@hookimpl
def hatch_register_build_hook():
    return XlaccBuildHook
