"""The hatchling build hook a generated project's pyproject.toml names (`hooks.xlacc`): building
its wheel compiles the library as `xlacc build` does and puts it in the wheel, so
`pip install --no-build-isolation ./PROJECT` gives a package that imports and runs."""

from __future__ import annotations

from hatchling.builders.hooks.plugin.interface import BuildHookInterface
from hatchling.plugin import hookimpl


class XlaccBuildHook(BuildHookInterface):
    PLUGIN_NAME = "xlacc"

    def initialize(self, version: str, build_data: dict) -> None:
        if self.target_name != "wheel":
            return
        from pathlib import Path

        from xlacc import api, spec

        project = spec.load(Path(self.root))
        report = api.build(project.root)
        if report.failed:
            problems = "; ".join(f"{f.code}: {f.title}" for f in report.findings if f.severity == "error")
            raise RuntimeError(f"xlacc build {project.root} failed: {problems or 'see `xlacc build`'}")
        library = project.library.resolve()
        build_data["pure_python"] = False
        build_data["infer_tag"] = True  # the wheel holds a compiled library: tag it for this platform
        build_data["force_include"][str(library)] = str(library.relative_to(project.root.resolve()))


@hookimpl
def hatch_register_build_hook():
    return XlaccBuildHook
