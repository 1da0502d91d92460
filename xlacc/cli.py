"""The command line: parse flags, call one function, render its Report. No logic lives here.

Conventions (help pages a person reads without knowing Typer, checked by tests/test_cli.py):
every option that takes a value names it with ``metavar`` as the user types it (``NAME``, ``DIR``,
``sm_XY[,sm_XY]``); every argument has a ``metavar`` too (``[DIR | FILE.cu ...]``); each command's
first docstring line is its one-line summary; the README's synopsis of a command lists every flag.
"""

import json
import os
import signal
import sys
from pathlib import Path
from typing import List, Optional

import typer
from typer.core import TyperCommand

from xlacc.ground.errors import UsageError, XlaccError
from xlacc.ground.report import (
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_PROBLEM,
    EXIT_USAGE,
    emit,
    error_line,
)
from xlacc.ground.version import __version__

EXIT_CODES_HELP = (
    "Exit codes: 0 success; 1 a problem was found; 2 a usage error (one line on stderr); "
    "3 it needs hardware this machine lacks (run-smoke: a GPU); 130 interrupted (Ctrl-C); 143 terminated (SIGTERM); "
    "70 a bug in xlacc itself."
)
MIN_COLUMNS = 20  # a narrower COLUMNS (0 printed nothing at all) is taken for a mistake
# Commands that take a command line after `--` (run, not parsed), and how their usage shows it.
TRAILING_COMMAND = {"doctor": "[-- COMMAND ...]"}


class Command(TyperCommand):
    """A command's help as the user types it: metavars, not Python types; summaries not cut."""

    def collect_usage_pieces(self, ctx: typer.Context) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument" and param.metavar:
                optional = not param.required and not param.metavar.startswith("[")
                pieces.append(f"[{param.metavar}]" if optional else param.metavar)
        if self.name in TRAILING_COMMAND:
            pieces.append(TRAILING_COMMAND[self.name])
        return pieces

    def format_options(self, ctx: typer.Context, formatter) -> None:
        params = self.get_params(ctx)
        arguments = [(p.metavar or p.name.upper(), p.help or "") for p in params if p.param_type_name == "argument"]
        options = [record for p in params if p.param_type_name == "option" for record in [p.get_help_record(ctx)] if record]
        for title, rows in (("Arguments", arguments), ("Options", options)):
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)

    def get_short_help_str(self, limit: int = 45) -> str:
        return (self.short_help or (self.help or "").strip().split("\n\n")[0]).replace("\n", " ")


app = typer.Typer(
    name="xlacc",
    help="From a CUDA kernel to a working, fast XLA custom call for JAX and PyTorch (torchax, torch_xla).",
    epilog=EXIT_CODES_HELP,
    no_args_is_help=True,
    add_completion=True,  # --install-completion and --show-completion for bash, zsh, fish, PowerShell
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def command(name: str | None = None):
    """``@app.command`` with xlacc's help conventions and the exit codes under every page."""
    return app.command(name, cls=Command, epilog=EXIT_CODES_HELP)


JSON_OPTION = typer.Option(False, "--json", help="Print one JSON object instead of text.")


def _version(value: bool) -> None:
    if value:
        print(f"xlacc {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    ctx: typer.Context,
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit."),
) -> None:
    """xlacc: new, update, build, run-smoke, bench, doctor."""
    trailing = (ctx.obj or {}).get("command")
    if trailing and ctx.invoked_subcommand not in TRAILING_COMMAND:
        takers = " and ".join(f"xlacc {name}" for name in TRAILING_COMMAND)
        raise UsageError(f"xlacc {ctx.invoked_subcommand} takes nothing after --; only {takers} runs a command given there (got: -- {' '.join(trailing)})")


def _split(values: Optional[List[str]]) -> list[str]:
    return [part.strip() for value in values or [] for part in value.split(",") if part.strip()]


def _some(value: str, flag: str) -> list[str]:
    """A comma-separated flag given a value that names nothing is refused, not read as the default."""
    parts = _split([value])
    if not parts:
        raise UsageError(f"{flag} names nothing; got {value!r}")
    return parts


def _named(value: Optional[str], flag: str) -> Optional[str]:
    """A flag given an empty value is refused, not read as if it were absent."""
    if value is not None and not value.strip():
        raise UsageError(f"{flag} names nothing; got {value!r}")
    return value


def _integers(value: Optional[str], flag: str) -> Optional[list[int]]:
    if value is None:
        return None
    try:
        return [int(part) for part in _split([value])]
    except ValueError:
        raise UsageError(f"{flag} takes comma-separated whole numbers, such as 1,1000,16777216; got {value!r}") from None


def _list_templates(value: bool) -> None:
    """``xlacc new --list``: each template's name and what it is for (its template.toml's description)."""
    if not value:
        return
    from xlacc.commands.new import project as scaffold  # lazy: only --list and `new` itself read the templates

    templates = scaffold.available_templates()
    width = max(map(len, templates))
    for name, meta in templates.items():
        print(f"{name:<{width}}  {meta.get('description', '')}")
    raise typer.Exit(0)


@command()
def new(
    name: str = typer.Argument(..., metavar="NAME", help="The op's name: a C identifier."),
    template: str = typer.Option("add", "--template", "-t", metavar="TEMPLATE", help="add, rms-norm, blank, paged-attention, paged-kv-write or ragged-paged-attention."),
    platform: str = typer.Option("cuda", "--platform", metavar="cuda|cpu", help="Where the kernel runs: an NVIDIA GPU or XLA:CPU."),
    api: str = typer.Option("ffi", "--api", metavar="ffi|legacy", help="ffi: typed FFI (api_version 4); legacy: status-returning (2 on cuda, 3 on cpu)."),
    framework: str = typer.Option("jax,torchax,torch-xla", "--framework", metavar="FRAMEWORK[,FRAMEWORK]", help="Any of jax, torchax, torch-xla."),
    directory: Optional[Path] = typer.Option(None, "--dir", metavar="DIR", help="Where to write the project (default: ./NAME)."),
    target: Optional[str] = typer.Option(None, "--target", metavar="TARGET", help="The XLA custom_call_target (default: NAME)."),
    dtype: Optional[str] = typer.Option(None, "--dtype", metavar="DTYPE[,DTYPE]", help="Element types the kernel is built for, such as f32 or f32,bf16."),
    inputs: Optional[List[str]] = typer.Option(None, "--input", metavar="NAME[:DTYPE]", help="blank template: an operand (repeatable)."),
    outputs: Optional[List[str]] = typer.Option(None, "--output", metavar="NAME[:DTYPE]", help="blank template: a result tensor; with --from, NAME:like=INPUT shapes an output (repeatable)."),
    attrs: Optional[List[str]] = typer.Option(None, "--attr", metavar="NAME:TYPE[=DEFAULT]", help="blank template, or --from: an attribute, with its default (repeatable)."),
    from_file: Optional[Path] = typer.Option(None, "--from", metavar="FILE.cu", help="Wrap this kernel file (.cu, or .cc for XLA:CPU), left unchanged."),
    kernel: Optional[str] = typer.Option(None, "--kernel", metavar="FUNC", help="With --from: the function to wrap when the file has several."),
    sizes: Optional[List[str]] = typer.Option(None, "--size", metavar="NAME=EXPR", help="With --from: an integer parameter, NAME=INPUT.size, NAME=INPUT.shape[K] or NAME=N; a text one NAME='TEXT' (repeatable)."),
    include: Optional[List[Path]] = typer.Option(None, "--include", metavar="DIR", help="With --from: a folder the kernel's includes are searched in, kept in [build] include_dirs (repeatable)."),
    accept_guesses: bool = typer.Option(False, "--accept-guesses", help="With --from: take xlacc's guess for every parameter it cannot place from the source alone."),
    dry_run: bool = typer.Option(False, "--dry-run", help="List what would be written; write nothing."),
    force: bool = typer.Option(False, "--force", help="Write into an existing non-empty directory; an edited file it replaces (your kernel too) is first kept under .xlacc/backup/ (`xlacc update` keeps edits)."),
    as_json: bool = JSON_OPTION,
    list_templates: bool = typer.Option(False, "--list", callback=_list_templates, is_eager=True, help="List the templates, a line each, and exit."),
) -> None:
    """Write a new custom-call project from a template."""
    from xlacc.commands.new import project as scaffold

    report = scaffold.create(
        scaffold.NewRequest(
            name=name,
            template=template,
            platform=platform,
            api=api,
            frameworks=_some(framework, "--framework"),
            directory=directory,
            target=target,
            dtypes=_some(dtype, "--dtype") if dtype is not None else [],
            inputs=list(inputs or []),
            outputs=list(outputs or []),
            attrs=list(attrs or []),
            dry_run=dry_run,
            force=force,
            from_file=from_file,
            kernel=kernel,
            sizes=list(sizes or []),
            include_dirs=list(include or []),
            accept_guesses=accept_guesses,
        )
    )
    raise typer.Exit(emit(report, as_json))


@command()
def build(
    paths: Optional[List[Path]] = typer.Argument(None, metavar="[DIR | FILE.cu ...]", help="A project directory (default: .) or kernel files (.cu, .cc)."),
    library: Optional[Path] = typer.Option(None, "-o", "--library", metavar="FILE.so", help="The shared object to write (default: NAME/libNAME.so in a project, build/libFILE.so for kernel files)."),
    symbols: Optional[List[str]] = typer.Option(None, "--symbol", metavar="NAME", help="An entry point to verify (repeatable)."),
    arch: Optional[str] = typer.Option(None, "--arch", metavar="sm_XY[,sm_XY]", help="GPU archs to compile for (default: the visible GPUs, else sm_80,sm_90)."),
    platform: Optional[str] = typer.Option(None, "--platform", metavar="cuda|cpu", help="Kernel files: cuda or cpu (default: by suffix). A project: must match its spec."),
    nvcc: Optional[Path] = typer.Option(None, "--nvcc", metavar="PATH", help="The nvcc to use."),
    ffi_include: Optional[Path] = typer.Option(None, "--ffi-include", metavar="DIR", help="Directory holding xla/ffi/api/ffi.h (default: the installed jaxlib's)."),
    no_ptx: bool = typer.Option(False, "--no-ptx", help="Embed SASS only, no PTX for newer GPUs to JIT-compile."),
    include_dirs: Optional[List[Path]] = typer.Option(None, "-I", "--include", metavar="DIR", help="Kernel files: an include folder (repeatable)."),
    defines: Optional[List[str]] = typer.Option(None, "-D", "--define", metavar="NAME[=VALUE]", help="Kernel files: a macro (repeatable)."),
    flags: Optional[List[str]] = typer.Option(None, "--flag", metavar="ARG", help="Kernel files: one more compiler argument (repeatable)."),
    force: bool = typer.Option(False, "--force", help="Rebuild even when the cache is fresh."),
    timeout: float = typer.Option(600.0, "--timeout", metavar="SECONDS", help="Seconds the compiler may run before it is stopped, with everything it started."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Show the command line and every compiler line."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Compile a project (or kernel files) into a verified shared object.

    $XLACC_CACHE_DIR, if set, is a folder of built libraries shared by every project: a build with
    the same sources, flags and compiler copies from there instead of compiling."""
    from xlacc.commands.build import builder

    report = builder.run(
        builder.BuildRequest(
            paths=list(paths or [Path(".")]),
            output=library,
            symbols=list(symbols or []),  # split by the builder, which refuses a blank one
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
            timeout=timeout,
        )
    )
    raise typer.Exit(emit(report, as_json))


@command()
def update(
    project: Path = typer.Argument(Path("."), metavar="[DIR]", show_default=False, help="The project directory (default: .)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Show the changes as diffs; write nothing."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Regenerate xlacc's files from xlacc.toml and this xlacc; your edits are merged, never lost."""
    from xlacc.commands.new import update as update_mod

    report = update_mod.run(update_mod.UpdateRequest(project=project, dry_run=dry_run))
    raise typer.Exit(emit(report, as_json))


@command("run-smoke")
def run_smoke(
    project: Path = typer.Argument(Path("."), metavar="[DIR]", show_default=False, help="The project directory (default: .)."),
    framework: Optional[str] = typer.Option(None, "--framework", metavar="jax|torchax|torch-xla", help="Run one framework (default: every one the spec names)."),
    sizes: Optional[str] = typer.Option(None, "--sizes", metavar="N[,N]", help="Element counts to check (default: 1, an odd size and a large one)."),
    seed: int = typer.Option(0, "--seed", metavar="N", help="Seed of the random inputs."),
    rtol: Optional[float] = typer.Option(None, "--rtol", metavar="X", help="Relative tolerance, a finite number >= 0 (default: by dtype)."),
    atol: Optional[float] = typer.Option(None, "--atol", metavar="X", help="Absolute tolerance, a finite number >= 0 (default: by dtype)."),
    timeout: float = typer.Option(300.0, "--timeout", metavar="SECONDS", help="Seconds each child process may run (the build before them too)."),
    bench: bool = typer.Option(False, "--bench", help="Then run `xlacc bench` at the largest size: the op, the op under vmap and XLA's own, in turns in one process."),
    devices: Optional[int] = typer.Option(None, "--devices", metavar="N", help="Shard over N devices (default: every GPU when there are several)."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Run the custom call in a child process: registration, lowering, numerics, vmap, grad, sharding, speed."""
    from xlacc.commands.smoke import live as live_checks
    from xlacc.commands.smoke import run_smoke as smoke

    live = None if as_json else live_checks.LiveChecks()  # each check as it finishes, then a summary
    request = smoke.SmokeRequest(
        project=project,
        framework=framework,
        sizes=_integers(sizes, "--sizes"),
        seed=seed,
        rtol=rtol,
        atol=atol,
        timeout=timeout,
        bench=bench,
        devices=devices,
        live=live,
    )
    report = smoke.run(request)
    if bench and framework in (None, "jax"):  # the short form of `xlacc bench`: the same code, at the largest size
        from xlacc.commands.bench import command as bench_command

        bench_command.extend_smoke(report, project, request.sizes, seed, timeout)
    raise typer.Exit(emit(report, as_json) if live is None else live_checks.finish(live, report))


@command()
def bench(
    ctx: typer.Context,
    project: Path = typer.Argument(Path("."), metavar="[DIR]", show_default=False, help="The project directory (default: .)."),
    sizes: Optional[str] = typer.Option(None, "--sizes", metavar="N[,N]", help="Element counts for the reference's example_inputs (default: its BENCH_SHAPES, else run-smoke's sizes)."),
    shapes: Optional[List[str]] = typer.Option(None, "--shape", metavar="AxB[,AxB]", help="Shapes for the reference's bench_inputs, such as 64x2048 (repeatable)."),
    dtype: Optional[str] = typer.Option(None, "--dtype", metavar="DTYPE[,DTYPE]", help="Element types to time (default: the op's first)."),
    rounds: int = typer.Option(5, "--rounds", metavar="N", help="Rounds in which the contenders take turns."),
    samples: int = typer.Option(3, "--samples", metavar="N", help="Samples of each contender per round."),
    cold_l2: bool = typer.Option(False, "--cold-l2", help="Rotate operand copies of at least twice the L2, so no call finds its operands cached."),
    vmap: int = typer.Option(0, "--vmap", metavar="N", help="Also time the op under jax.vmap over N examples of the same total size."),
    trace: Optional[Path] = typer.Option(None, "--trace", metavar="DIR", help="Write a jax.profiler trace of the timed calls here."),
    no_command_buffers: bool = typer.Option(False, "--no-command-buffers", help="Run with XLA's command buffers off (each kernel its own event in a trace)."),
    json_file: Optional[Path] = typer.Option(None, "--json", metavar="FILE", help="Write every figure and sample as JSON."),
    csv_file: Optional[Path] = typer.Option(None, "--csv", metavar="FILE", help="Write the table as CSV."),
    chart_file: Optional[Path] = typer.Option(None, "--chart", metavar="FILE.svg|FILE.html", help="Write a chart of time per call against the problem, with the roofline."),
    seed: int = typer.Option(0, "--seed", metavar="N", help="Seed of the random inputs."),
    timeout: float = typer.Option(600.0, "--timeout", metavar="SECONDS", help="Seconds the build and the bench's child process may each run."),
) -> None:
    """Time the op against XLA's own implementation and the peers its template or project names.

    Every contender runs in one child process, in turns; the table gives the median, the spread
    and the sample count, GB/s and TFLOP/s, and the share of a copy and of the card's peaks."""
    from xlacc.commands.bench import command as bench_command

    run_result = bench_command.run(
        bench_command.BenchRequest(
            project=project,
            sizes=_integers(sizes, "--sizes"),
            shapes=[part for value in shapes for part in _some(value, "--shape")] if shapes else None,
            dtypes=_some(dtype, "--dtype") if dtype is not None else None,
            rounds=rounds,
            samples=samples,
            cold_l2=cold_l2,
            vmap=vmap,
            trace=trace,
            command_buffers=not no_command_buffers,
            json_file=json_file,
            csv_file=csv_file,
            chart_file=chart_file,
            seed=seed,
            timeout=timeout,
            argv=list((ctx.obj or {}).get("argv", [])),
        )
    )
    raise typer.Exit(bench_command.show(run_result, as_json=False))


@command()
def doctor(
    ctx: typer.Context,
    paths: Optional[List[Path]] = typer.Argument(None, metavar="[PATH ...]", help="Project directories, sources (.cu .cc .h .py .sh), notes and logs (.md .txt .log .hlo), or folders of them."),
    so: Optional[Path] = typer.Option(None, "--so", metavar="FILE.so", help="A shared object to check."),
    symbols: Optional[List[str]] = typer.Option(None, "--symbol", metavar="NAME", help="An entry point the .so must export (repeatable)."),
    arch: Optional[str] = typer.Option(None, "--arch", metavar="sm_XY", help="The GPU arch the .so must run on, such as sm_90."),
    log: Optional[str] = typer.Option(None, "--log", metavar="FILE|-", help="An error log or traceback: a file, or - for stdin."),
    list_checks: bool = typer.Option(False, "--list-checks", help="List every finding code and exit."),
    checks: Optional[List[str]] = typer.Option(None, "--check", metavar="CODE", help="Only report these codes (repeatable)."),
    timeout: float = typer.Option(600.0, "--timeout", metavar="SECONDS", help="Seconds the command after -- may run before its process group is stopped."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Diagnose the environment, a shared object, sources, an error log, or a command.

    With nothing named it checks the environment. After --, a command line is run and its output
    diagnosed.
    """
    from xlacc.commands.doctor import engine

    report = engine.run(
        engine.DoctorRequest(
            paths=list(paths or []),
            so=so,
            symbols=_split(symbols) or list(symbols or []),  # a blank --symbol reaches the check that refuses it
            arch=arch,
            log=_named(log, "--log"),
            list_checks=list_checks,
            only=[code for value in checks or [] for code in _some(value, "--check")],
            command=list((ctx.obj or {}).get("command", [])),
            timeout=timeout,
        )
    )
    raise typer.Exit(emit(report, as_json))


def _cli_error_type() -> type[Exception]:
    """The base of typer's usage errors: typer.TyperException from typer 0.28; the ClickException
    of the click that typer 0.27 carries as typer._click; click's own before that."""
    import importlib

    for module, name in (("typer", "TyperException"), ("typer._click.exceptions", "ClickException"), ("click", "ClickException")):
        try:
            return getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            continue
    raise ImportError("typer's usage errors have no known base class in this typer")


def main() -> None:
    """Entry point: a user-fixable problem is one line on stderr and an exit code, never a traceback."""
    signal.signal(signal.SIGTERM, _terminated)
    _usable_terminal()
    try:
        code = run(sys.argv[1:])
    except BrokenPipeError:  # the reader left (`xlacc ... | head`): stop quietly, as typer does
        _stdout_to_devnull()
        code = EXIT_PROBLEM
    _drop_what_stdout_cannot_take()
    if sys.flags.inspect:  # PYTHONINSPECT set: Python would open a prompt after the exit, and read EOF as exit 1
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        os._exit(code)
    sys.exit(code)


def _stdout_to_devnull() -> None:
    """stdout's file descriptor from here on writes to /dev/null (what Python still holds for it too)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _drop_what_stdout_cannot_take() -> None:
    """Output still buffered for a stdout that refuses it (a full disk, already reported on stderr)
    is dropped, so Python's own flush at exit has nothing left to fail on (it would print a
    traceback-like message and exit 120)."""
    try:
        sys.stdout.flush()
    except OSError:
        _stdout_to_devnull()


def _usable_terminal() -> None:
    """A closed stdin, stdout or stderr (`>&-`) reads and writes nothing; a console whose encoding
    lacks ✓ gets a stand-in; a COLUMNS that is no usable width (0, -5, abc) is left to the terminal."""
    for name, mode in (("stdin", "r"), ("stdout", "w"), ("stderr", "w")):
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, mode, encoding="utf-8"))
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="replace")
        except (AttributeError, ValueError):  # not a text stream of the io module
            pass
    if not os.environ.get("COLUMNS", "80").strip().isdigit() or int(os.environ.get("COLUMNS", "80")) < MIN_COLUMNS:
        os.environ.pop("COLUMNS", None)


def _terminated(signum: int, frame) -> None:
    """SIGTERM unwinds like Ctrl-C (children killed, partial writes undone), then exits 143."""
    raise SystemExit(128 + signum)


def run(argv: list[str]) -> int:
    """Run one command line; its exit code."""
    command: list[str] = []
    if "--" in argv:  # `xlacc doctor ... -- COMMAND ...`: the command is run, not parsed
        cut = argv.index("--")
        argv, command = argv[:cut], argv[cut + 1 :]
    cli_error = _cli_error_type()
    try:
        os.getcwd()
    except OSError:
        if not {"--help", "-h"} & set(argv) and argv:  # the help needs no directory
            return _failed("the current directory no longer exists: cd to one that does", EXIT_USAGE, argv)
    repeated = _repeated_option(argv)
    if repeated:
        return _failed(f"{repeated} is given twice; it takes one value (a comma-separated list where it takes several)", EXIT_USAGE, argv)
    try:
        # Without standalone mode typer returns a command's exit code instead of exiting.
        code = app(args=argv, standalone_mode=False, prog_name="xlacc", obj={"command": command, "argv": argv})
        sys.stdout.flush()  # the answer leaves here, where a full disk is one line on stderr, not at Python's exit
    except typer.Exit as exc:
        return exc.exit_code
    except XlaccError as exc:
        return _failed(str(exc), exc.exit_code, argv)
    except (KeyboardInterrupt, typer.Abort):
        code = EXIT_INTERRUPTED
    except cli_error as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":  # bare `xlacc`: the help is the answer
            print(exc.format_message())
            return EXIT_OK
        return _failed(exc.format_message(), EXIT_USAGE, argv)
    except BrokenPipeError:
        raise
    except OSError as exc:  # the system refused (a name too long, no space left...): not xlacc's bug
        where = f": {exc.filename}" if exc.filename else ""
        return _failed(f"{exc.strerror or exc}{where}", EXIT_USAGE, argv)
    except Exception as exc:  # a bug in xlacc itself: one line, the traceback on request
        if os.environ.get("XLACC_DEBUG"):
            raise
        return _failed(f"internal error: {type(exc).__name__}: {exc} (set XLACC_DEBUG=1 for the traceback)", EXIT_INTERNAL, argv)
    if code == EXIT_INTERRUPTED:  # typer turns Ctrl-C in a command into this code, silently
        error_line("interrupted")
    return code if isinstance(code, int) else EXIT_OK


def _repeated_option(argv: list[str]) -> str | None:
    """An option of one value given twice, whose first value the parser would drop silently
    (`--framework jax --framework torchax` ran torchax only), by either of its names and in any
    spelling (`--opt=v`, `-ov`, `-vo v`). Options that repeat, flags, and the values of options
    (`--define --x`) are left to the parser."""
    if len([arg for arg in argv if arg.startswith("-")]) < 2 or not argv:
        return None
    params = [p for p in getattr(typer.main.get_command(app).commands.get(argv[0]), "params", []) if p.param_type_name == "option"]
    by_name = {opt: param for param in params for opt in param.opts}
    seen: set[str] = set()
    takes_value = False
    for arg in argv[1:]:
        if takes_value:  # this is the previous option's value
            takes_value = False
            continue
        for name, attached in _options_in(arg, by_name):
            param = by_name.get(name)
            if param is None or param.is_flag or param.count:
                continue
            if not param.multiple:
                if param.opts[-1] in seen:
                    return param.opts[-1]
                seen.add(param.opts[-1])
            takes_value = not attached
    return None


def _options_in(arg: str, by_name: dict) -> list[tuple[str, bool]]:
    """The options one argument names, each with whether its value is attached to it: `--opt`,
    `--opt=v`, or a cluster of short ones (`-vo`, `-oa.so`)."""
    if arg.startswith("--"):
        return [(arg.split("=", 1)[0], "=" in arg)]
    if not arg.startswith("-") or len(arg) < 2:
        return []
    found = []
    for index, letter in enumerate(arg[1:], start=2):
        param = by_name.get(f"-{letter}")
        takes = param is not None and not param.is_flag and not param.count
        found.append((f"-{letter}", takes and index < len(arg)))
        if takes or param is None:  # the rest of the argument is its value (or not options at all)
            break
    return found


def _failed(message: str, code: int, argv: list[str]) -> int:
    """The error line on stderr; with --json, stdout still holds a JSON object a script can read."""
    error_line(message)
    if "--json" in argv:
        try:
            sys.stdout.write(json.dumps({"exit_code": code, "error": message.strip()}) + "\n")
            sys.stdout.flush()
        except OSError:  # stdout itself failed (a full disk, /dev/full): the line on stderr stands
            _stdout_to_devnull()
    return code
