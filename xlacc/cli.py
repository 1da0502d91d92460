"""The command line: parse flags, call one function, render its Report. No logic lives here."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import List, Optional

import typer

from xlacc import __version__
from xlacc.errors import UsageError, XlaccError
from xlacc.report import EXIT_USAGE, emit, error_line

app = typer.Typer(
    name="xlacc",
    help="From a CUDA kernel to a working, fast XLA custom call for JAX and torch_xla.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

JSON_OPTION = typer.Option(False, "--json", help="Print one JSON object instead of text.")


def _version(value: bool) -> None:
    if value:
        print(f"xlacc {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit."),
) -> None:
    """xlacc: new, build, run-smoke, doctor."""


def _split(values: Optional[List[str]]) -> list[str]:
    return [part.strip() for value in values or [] for part in value.split(",") if part.strip()]


def _integers(value: Optional[str], flag: str) -> Optional[list[int]]:
    if value is None:
        return None
    try:
        return [int(part) for part in _split([value])]
    except ValueError:
        raise UsageError(f"{flag} takes comma-separated whole numbers, such as 1,1000,16777216; got {value!r}") from None


@app.command()
def new(
    name: str = typer.Argument(..., help="The op's name: a C identifier."),
    template: str = typer.Option("add", "--template", "-t", help="add | rms-norm | blank | paged-attention | paged-kv-write"),
    platform: str = typer.Option("cuda", "--platform", help="cuda | cpu"),
    api: str = typer.Option("ffi", "--api", help="ffi (typed FFI, api_version 4) | legacy (status-returning)"),
    framework: str = typer.Option("jax,torch-xla", "--framework", help="jax, torch-xla, or both (comma-separated)"),
    directory: Optional[Path] = typer.Option(None, "--dir", help="Where to write the project (default: ./NAME)."),
    target: Optional[str] = typer.Option(None, "--target", help="The XLA custom_call_target (default: NAME)."),
    dtype: Optional[str] = typer.Option(None, "--dtype", help="Element types the kernel is built for, e.g. f32 or f32,bf16."),
    inputs: Optional[List[str]] = typer.Option(None, "--input", help="blank: an operand, NAME:DTYPE (repeatable)."),
    outputs: Optional[List[str]] = typer.Option(None, "--output", help="blank: a result, NAME:DTYPE (repeatable)."),
    attrs: Optional[List[str]] = typer.Option(None, "--attr", help="blank: an attribute, NAME:TYPE (repeatable)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="List what would be written; write nothing."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing non-empty directory's files."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Write a new custom-call project from a template."""
    from xlacc import scaffold

    report = scaffold.create(
        scaffold.NewRequest(
            name=name,
            template=template,
            platform=platform,
            api=api,
            frameworks=_split([framework]),
            directory=directory,
            target=target,
            dtypes=_split([dtype]) if dtype else [],
            inputs=list(inputs or []),
            outputs=list(outputs or []),
            attrs=list(attrs or []),
            dry_run=dry_run,
            force=force,
        )
    )
    raise typer.Exit(emit(report, as_json))


@app.command()
def build(
    paths: Optional[List[Path]] = typer.Argument(None, help="A project directory (default: .) or kernel files."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", help="The shared object to write (kernel files)."),
    symbols: Optional[List[str]] = typer.Option(None, "--symbol", help="An entry point to verify (repeatable)."),
    arch: Optional[str] = typer.Option(None, "--arch", help="GPU archs, e.g. sm_80,sm_90 (default: auto)."),
    platform: Optional[str] = typer.Option(None, "--platform", help="cuda | cpu for kernel files (default: by suffix)."),
    nvcc: Optional[Path] = typer.Option(None, "--nvcc", help="The nvcc to use."),
    ffi_include: Optional[Path] = typer.Option(None, "--ffi-include", help="Directory holding xla/ffi/api/ffi.h."),
    no_ptx: bool = typer.Option(False, "--no-ptx", help="Embed SASS only, no PTX for newer GPUs to JIT-compile."),
    include_dirs: Optional[List[Path]] = typer.Option(None, "-I", "--include", help="Kernel files: an include folder (repeatable)."),
    defines: Optional[List[str]] = typer.Option(None, "-D", "--define", help="Kernel files: a macro, NAME or NAME=VALUE (repeatable)."),
    flags: Optional[List[str]] = typer.Option(None, "--flag", help="Kernel files: one more compiler argument (repeatable)."),
    force: bool = typer.Option(False, "--force", help="Rebuild even when the cache is fresh."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Show the command line and every compiler line."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Compile a project (or kernel files) into a verified shared object."""
    from xlacc import build as build_mod

    report = build_mod.run(
        build_mod.BuildRequest(
            paths=list(paths or [Path(".")]),
            output=output,
            symbols=_split(symbols),
            archs=arch,
            platform=platform,
            nvcc=nvcc,
            ffi_include=ffi_include,
            force=force,
            verbose=verbose,
            show_progress=not as_json,
            no_ptx=no_ptx,
            include_dirs=list(include_dirs or []),
            defines=list(defines or []),
            flags=list(flags or []),
        )
    )
    raise typer.Exit(emit(report, as_json))


@app.command()
def update(
    project: Path = typer.Argument(Path("."), help="The project directory."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Show the changes as diffs; write nothing."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Regenerate xlacc's files from xlacc.toml and this xlacc; merge your edits (never lose them)."""
    from xlacc import update as update_mod

    report = update_mod.run(update_mod.UpdateRequest(project=project, dry_run=dry_run))
    raise typer.Exit(emit(report, as_json))


@app.command("run-smoke")
def run_smoke(
    project: Path = typer.Argument(Path("."), help="The project directory."),
    framework: Optional[str] = typer.Option(None, "--framework", help="jax | torch-xla (default: every one the spec names)."),
    sizes: Optional[str] = typer.Option(None, "--sizes", help="Comma-separated problem sizes (default: 1, an odd size, a large one)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the random inputs."),
    rtol: Optional[float] = typer.Option(None, "--rtol", help="Relative tolerance (default: by dtype)."),
    atol: Optional[float] = typer.Option(None, "--atol", help="Absolute tolerance (default: by dtype)."),
    timeout: float = typer.Option(300.0, "--timeout", help="Seconds the child process may run."),
    bench: bool = typer.Option(False, "--bench", help="Also time the custom call against XLA's own op."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Run the custom call in a child process: registration, lowering, numerics, speed."""
    from xlacc import smoke

    report = smoke.run(
        smoke.SmokeRequest(
            project=project,
            framework=framework,
            sizes=_integers(sizes, "--sizes"),
            seed=seed,
            rtol=rtol,
            atol=atol,
            timeout=timeout,
            bench=bench,
        )
    )
    raise typer.Exit(emit(report, as_json))


@app.command()
def doctor(
    ctx: typer.Context,
    paths: Optional[List[Path]] = typer.Argument(None, help="Project directories, sources (.cu .cc .py .sh) or folders of them."),
    so: Optional[Path] = typer.Option(None, "--so", help="A shared object to check."),
    symbols: Optional[List[str]] = typer.Option(None, "--symbol", help="An entry point the .so must export (repeatable)."),
    arch: Optional[str] = typer.Option(None, "--arch", help="The GPU arch the .so must run on, e.g. sm_90."),
    log: Optional[str] = typer.Option(None, "--log", help="An error log or traceback: a file, or - for stdin."),
    list_checks: bool = typer.Option(False, "--list-checks", help="List every finding code and exit."),
    checks: Optional[List[str]] = typer.Option(None, "--check", help="Only report these codes (repeatable)."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Diagnose the environment, a shared object, sources, error text, or a command (after --).

    xlacc doctor [PATH ...] [--so FILE] [--log FILE|-] [--json] [-- COMMAND ...]
    """
    from xlacc.doctor import engine

    report = engine.run(
        engine.DoctorRequest(
            paths=list(paths or []),
            so=so,
            symbols=_split(symbols),
            arch=arch,
            log=log,
            list_checks=list_checks,
            only=_split(checks),
            command=list((ctx.obj or {}).get("command", [])),
        )
    )
    raise typer.Exit(emit(report, as_json))


def _cli_error_type() -> type[Exception]:
    """The base of typer's usage errors (typer vendors click from 0.2x on; older ones use click)."""
    try:
        from typer import TyperException

        return TyperException
    except ImportError:  # pragma: no cover - older typer
        from click import ClickException

        return ClickException


def main() -> None:
    """Entry point: a user-fixable problem is one line on stderr and an exit code, never a traceback."""
    argv = sys.argv[1:]
    command: list[str] = []
    if "--" in argv:  # `xlacc doctor ... -- COMMAND ...`: the command is run, not parsed
        cut = argv.index("--")
        argv, command = argv[:cut], argv[cut + 1 :]
    cli_error = _cli_error_type()
    try:
        # Without standalone mode typer returns a command's exit code instead of exiting.
        code = app(args=argv, standalone_mode=False, prog_name="xlacc", obj={"command": command})
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except XlaccError as exc:
        error_line(str(exc))
        sys.exit(exc.exit_code)
    except (KeyboardInterrupt, typer.Abort):
        error_line("interrupted")
        sys.exit(130)
    except cli_error as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":  # bare `xlacc`: the help is the answer
            print(exc.format_message())
            sys.exit(0)
        error_line(exc.format_message())
        sys.exit(EXIT_USAGE)
    except Exception as exc:  # a bug in xlacc itself: one line, the traceback on request
        if os.environ.get("XLACC_DEBUG"):
            raise
        error_line(f"internal error: {type(exc).__name__}: {exc} (set XLACC_DEBUG=1 for the traceback)")
        sys.exit(70)
    sys.exit(code if isinstance(code, int) else 0)
