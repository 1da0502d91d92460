"""The command line as a user meets it: help, version, exit codes, one-line errors, JSON, NO_COLOR."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from xlacc.ground.version import __version__

REPO = Path(__file__).resolve().parent.parent


def xlacc(*args, env=None, cwd=None):
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "xlacc", *args], capture_output=True, text=True, env=full_env, cwd=cwd, timeout=120)


def test_help_lists_the_four_commands_without_importing_frameworks():
    probe = (
        "import sys\n"
        "sys.argv = ['xlacc', '--help']\n"
        "from xlacc.cli import main\n"
        "try:\n    main()\nexcept SystemExit as e:\n    code = e.code\n"
        "heavy = sorted(m for m in ('jax', 'jaxlib', 'torch', 'torch_xla', 'numpy') if m in sys.modules)\n"
        "print('HEAVY', heavy, 'CODE', code)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    for command in ("new", "build", "run-smoke", "doctor"):
        assert command in out.stdout
    assert "HEAVY [] CODE 0" in out.stdout


def test_import_xlacc_modules_imports_no_framework():
    probe = (
        "import sys, xlacc, xlacc.cli, xlacc.spec, xlacc.commands.new.project, xlacc.ground.report\n"
        "print(sorted(m for m in ('jax', 'torch', 'torch_xla') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]"


def test_version():
    out = xlacc("--version")
    assert out.returncode == 0 and out.stdout.strip() == f"xlacc {__version__}"


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["new", "bad-name"], "invalid name 'bad-name'"),
        (["new", "x", "--platform", "rocm"], "invalid platform"),
        (["new"], "Missing argument"),
        (["frobnicate"], "No such command"),
        (["new", "x", "--no-such-flag"], "No such option"),
        (["build", "/nonexistent/dir"], ""),
    ],
)
def test_usage_errors_are_one_line_with_exit_2(args, fragment, tmp_path):
    out = xlacc(*args, cwd=tmp_path)
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr
    assert out.stderr.startswith("error: ") and out.stderr.count("\n") == 1
    assert fragment in out.stderr


def test_new_json_and_no_color(tmp_path):
    out = xlacc("new", "op", "--platform", "cpu", "--json", cwd=tmp_path)
    assert out.returncode == 0
    data = json.loads(out.stdout)
    assert data["exit_code"] == 0 and "kernel.cc" in data["files"]
    assert all(c["ok"] for c in data["checks"])
    plain = xlacc("new", "op2", "--platform", "cpu", env={"NO_COLOR": "1", "TERM": "xterm-256color"}, cwd=tmp_path)
    assert "\x1b[" not in plain.stdout and "op2/kernel.cc" in plain.stdout


def test_refusing_to_overwrite_exits_2_and_keeps_files(tmp_path):
    (tmp_path / "op").mkdir()
    (tmp_path / "op" / "kernel.cc").write_text("mine")
    out = xlacc("new", "op", "--platform", "cpu", cwd=tmp_path)
    assert out.returncode == 2 and "--force" in out.stderr
    assert (tmp_path / "op" / "kernel.cc").read_text() == "mine"


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["run-smoke", "--sizes", "abc"], "--sizes takes comma-separated whole numbers"),
        (["run-smoke"], "not an xlacc project"),
        (["new", "x", "--dir", "/proc/no/such"], "cannot write"),
    ],
)
def test_bad_values_are_one_line_errors_not_tracebacks(args, fragment, tmp_path):
    out = xlacc(*args, cwd=tmp_path)
    assert out.returncode == 2 and fragment in out.stderr and "Traceback" not in out.stderr


# -- help pages a person reads without knowing Typer ----------------------------------------------

COMMANDS = ("new", "update", "build", "run-smoke", "bench", "doctor")
PYTHON_TYPES = ("<str>", "<int>", "<float>", "<path>", "<list", "<bool>", "{", "}", "paths...", "List[", "Optional[")


def click_command(name: str):
    import typer.main

    from xlacc import cli

    return typer.main.get_command(cli.app).commands[name]


def help_page(*args: str) -> str:
    from typer.testing import CliRunner

    from xlacc import cli

    result = CliRunner().invoke(cli.app, [*args, "--help"], prog_name="xlacc")
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("command", ("",) + COMMANDS)
def test_help_names_values_as_the_user_types_them(command):
    page = help_page(*filter(None, [command]))
    for python_type in PYTHON_TYPES:
        assert python_type not in page, f"{python_type!r} in `xlacc {command} --help`:\n{page}"
    assert "Exit codes: 0 success; 1 a problem was found; 2 a usage error" in page
    assert "3 it needs hardware this machine lacks" in page


@pytest.mark.parametrize("command", COMMANDS)
def test_every_value_has_a_metavar(command):
    for param in click_command(command).params:
        takes_value = param.param_type_name == "argument" or not getattr(param, "is_flag", False)
        if takes_value:
            assert param.metavar, f"xlacc {command}: {param.name} has no metavar"


def test_command_summaries_are_not_cut_short():
    page = help_page()
    commands = page.split("Commands:")[1].split("Exit codes")[0]
    assert "..." not in commands
    for command in COMMANDS:
        summary = (click_command(command).help or "").strip().split("\n\n")[0].replace("\n", " ")
        assert " ".join(summary.split()) in " ".join(commands.split())


def test_usage_lines_show_arguments_as_the_readme_does():
    assert "Usage: xlacc new [OPTIONS] NAME\n" in help_page("new")
    assert "Usage: xlacc build [OPTIONS] [DIR | FILE.cu ...]\n" in help_page("build")
    assert "Usage: xlacc run-smoke [OPTIONS] [DIR]\n" in help_page("run-smoke")
    assert "Usage: xlacc bench [OPTIONS] [DIR]\n" in help_page("bench")
    assert "Usage: xlacc doctor [OPTIONS] [PATH ...] [-- COMMAND ...]\n" in help_page("doctor")


def readme_synopsis(command: str) -> str:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    found = re.findall(rf"^`xlacc {re.escape(command)} ([^`]*)`$", readme, re.MULTILINE)
    assert len(found) == 1, f"the README has {len(found)} synopses of xlacc {command}"
    return found[0]


@pytest.mark.parametrize("command", COMMANDS)
def test_readme_synopsis_lists_every_flag_that_exists(command):
    synopsis = readme_synopsis(command)
    params = click_command(command).params
    flags = {opt for p in params if p.param_type_name == "option" for opt in p.opts if opt.startswith("--")}
    assert set(re.findall(r"--[a-z][a-z0-9-]*", synopsis)) == flags
    for argument in (p for p in params if p.param_type_name == "argument"):
        assert synopsis.startswith(argument.metavar), (synopsis, argument.metavar)


def test_build_names_its_file_option_apart_from_new_output():
    build_flags = {opt for p in click_command("build").params for opt in p.opts}
    assert {"-o", "--library"} <= build_flags and "--output" not in build_flags


@pytest.mark.parametrize("args", [["build", "--", "x.cu"], ["new", "op", "--", "--force"], ["run-smoke", "--", "x"]])
def test_arguments_after_a_double_dash_are_refused_where_no_command_is_taken(args, tmp_path):
    out = xlacc(*args, cwd=tmp_path)
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    assert "takes nothing after --" in out.stderr and "xlacc doctor" in out.stderr
    assert not (tmp_path / "op").exists()


# -- a terminal that is not what xlacc expects ------------------------------------------------------


def test_closed_streams_and_an_ascii_console_still_get_answers(tmp_path):
    """`>&-`, `<&-`, `2>&-` and a console whose encoding has no ✓: the answer, never exit 70."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for closing, args, code in ((">&-", ["doctor", str(tmp_path)], 0), ("<&-", ["doctor", "--log", "-"], 0), ("2>&-", ["build", str(tmp_path / "none")], 2)):
        line = f'exec "{sys.executable}" -m xlacc {" ".join(args)} {closing}'
        run = subprocess.run(["sh", "-c", line], capture_output=True, text=True, timeout=60, env=env)
        assert run.returncode == code, (closing, run.stdout, run.stderr)
    ascii_console = xlacc("doctor", str(tmp_path), env={"PYTHONIOENCODING": "ascii"})
    assert ascii_console.returncode == 0 and "directory" in ascii_console.stdout
    (tmp_path / "notes.txt").write_text("nothing to see\n")
    ascii_console = xlacc("doctor", str(tmp_path / "notes.txt"), env={"PYTHONIOENCODING": "ascii"})
    marks = {line.split(" ", 1)[0] for line in ascii_console.stdout.splitlines()[1:] if line}
    assert "ok" in marks and "?" not in marks, ascii_console.stdout  # pass and fail both printed as "?"


def test_an_answer_stdout_cannot_take_is_one_line_on_stderr(tmp_path):
    buffered = {key: value for key, value in os.environ.items() if key != "PYTHONUNBUFFERED"}  # as in a user's shell
    for json_flag in (["--json"], []):
        with open("/dev/full", "w") as full:
            run = subprocess.run([sys.executable, "-m", "xlacc", "doctor", *json_flag, str(tmp_path)], stdout=full, stderr=subprocess.PIPE,
                                 text=True, timeout=60, env={**buffered, "PYTHONPATH": str(REPO)})
        assert run.returncode == 2 and run.stderr == "error: No space left on device\n", (json_flag, run.stderr)


@pytest.mark.parametrize("columns, kept", [("0", False), ("-5", False), ("abc", False), ("10", False), ("100", True)])
def test_a_width_that_is_no_terminal_width_is_left_to_the_terminal(monkeypatch, columns, kept):
    """On a terminal rich printed nothing at all, errors included, for COLUMNS=0."""
    from xlacc import cli

    monkeypatch.setenv("COLUMNS", columns)
    cli._usable_terminal()
    assert (os.environ.get("COLUMNS") == columns) is kept


def test_what_the_system_refuses_is_one_line_and_exit_2(tmp_path):
    too_long = xlacc("new", "op", "--platform", "cpu", "--dir", str(tmp_path / ("n" * 256)))
    assert too_long.returncode == 2 and too_long.stderr.strip().startswith("error: File name too long")
    gone = tmp_path / "gone"
    gone.mkdir()
    in_gone = subprocess.run(
        ["sh", "-c", f'cd "{gone}" && rmdir "{gone}" && exec "{sys.executable}" -m xlacc build "{tmp_path}"'],
        capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    assert in_gone.returncode == 2 and "the current directory no longer exists" in in_gone.stderr
    gone.mkdir()
    help_in_gone = subprocess.run(
        ["sh", "-c", f'cd "{gone}" && rmdir "{gone}" && exec "{sys.executable}" -m xlacc build --help'],
        capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    assert help_in_gone.returncode == 0 and "Usage: xlacc build" in help_in_gone.stdout  # the help needs no directory


def test_json_output_holds_the_error_of_a_usage_error(tmp_path):
    run = xlacc("build", str(tmp_path / "none"), "--json")
    assert run.returncode == 2 and json.loads(run.stdout) == {"exit_code": 2, "error": f"{tmp_path / 'none'}: no such file or directory"}


def test_the_readme_tours_new_shows_what_new_prints(tmp_path):
    """The tour's first console block is `xlacc new demo --platform cpu` as it prints today."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    shown = re.search(r"\$ xlacc new demo --platform cpu\n(.*?)\n\n\$ xlacc build demo", readme, re.S)
    assert shown, "the README's tour moved: update this test"
    run = xlacc("new", "demo", "--platform", "cpu", cwd=tmp_path, env={"COLUMNS": "200"})
    assert run.returncode == 0 and run.stdout.strip() == shown[1].strip()


@pytest.mark.parametrize("args, repeated", [
    (["run-smoke", ".", "--framework", "jax", "--framework", "torchax"], "--framework"),
    (["run-smoke", ".", "--sizes=1", "--sizes", "2"], "--sizes"),
    (["build", ".", "-o", "a.so", "--library", "b.so"], "--library"),  # two names of one option
    (["build", ".", "-oa.so", "-ob.so"], "--library"),  # short, with the value attached
    (["build", ".", "-vo", "a.so", "-o", "b.so"], "--library"),  # in a cluster after a flag
    (["build", ".", "-o", "-v", "--verbose"], None),  # -o's value is "-v"; then one flag
])
def test_a_one_value_option_given_twice_is_refused(args, repeated):
    """The first value was dropped without a word: `--framework jax --framework torchax` ran torchax only."""
    from xlacc import cli

    assert cli._repeated_option(args) == repeated


def test_options_that_repeat_and_values_that_look_like_options_pass():
    from xlacc import cli

    assert cli._repeated_option(["new", "op", "--input", "a", "--input", "b", "--attr", "eps:f32=-1", "--attr", "k:i32=-2"]) is None
    assert cli._repeated_option(["doctor", "--check", "a", "--check", "b", "--json", "--json"]) is None


def test_pythoninspect_does_not_turn_an_answer_into_a_prompt(tmp_path):
    """PYTHONINSPECT=1 printed `SystemExit: 0` and made every exit 1."""
    run = subprocess.run([sys.executable, "-m", "xlacc", "doctor", str(tmp_path)], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                         timeout=60, env={**os.environ, "PYTHONPATH": str(REPO), "PYTHONINSPECT": "1"})
    assert run.returncode == 0 and "SystemExit" not in run.stderr, run.stderr


# -- help, completion, the list of templates --------------------------------------------------------


@pytest.mark.parametrize("command", [[], ["build"], ["new"], ["doctor"]])
def test_dash_h_is_the_help(command):
    """`xlacc -h` was refused."""
    short, long = xlacc(*command, "-h"), xlacc(*command, "--help")
    assert short.returncode == long.returncode == 0, short.stderr
    assert short.stdout == long.stdout and short.stdout.startswith("Usage: xlacc")


def test_shell_completion_is_offered_and_completes_commands_and_flags():
    """No shell completion: --install-completion and --show-completion are typer's."""
    assert "--install-completion" in xlacc("--help").stdout
    script = xlacc("--show-completion", "bash")
    assert script.returncode == 0 and "_XLACC_COMPLETE=complete_bash" in script.stdout
    commands = xlacc(env={"_XLACC_COMPLETE": "complete_bash", "COMP_WORDS": "xlacc run", "COMP_CWORD": "1"})
    assert commands.stdout.split() == ["run-smoke"]
    flags = xlacc(env={"_XLACC_COMPLETE": "complete_bash", "COMP_WORDS": "xlacc new --tem", "COMP_CWORD": "2"})
    assert flags.stdout.split() == ["--template"]


def test_new_list_names_each_template_with_what_it_is_for():
    from xlacc.commands.new import project as scaffold

    done = xlacc("new", "--list")
    assert done.returncode == 0 and done.stderr == ""
    lines = done.stdout.splitlines()
    templates = scaffold.available_templates()
    assert [line.split()[0] for line in lines] == list(templates)
    for line, meta in zip(lines, templates.values()):
        assert line.endswith("  " + meta["description"]) and len(meta["description"]) > 20


def test_a_report_gives_its_json_as_text_and_as_a_dict():
    """Report.to_json() returned a dict."""
    from xlacc.ground.report import Check, Report

    report = Report(title="t", checks=[Check("build", True, "up to date")], data={"library": "libop.so"})
    assert isinstance(report.to_json(), str)
    assert json.loads(report.to_json()) == report.to_dict() == {
        "checks": [{"name": "build", "ok": True, "detail": "up to date"}], "findings": [], "library": "libop.so", "exit_code": 0,
    }


def test_every_file_a_readme_command_names_is_in_the_repository():
    """`xlacc new seed_add --from minimal_xla_custom_call.cu` and `xlacc doctor --log run.log`
    named files a reader of the README does not have."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    commands = re.findall(r"^\$ (.+)$", readme, re.MULTILINE)
    made = {words[2] for words in map(str.split, commands) if words[:2] == ["xlacc", "new"]}  # projects the tour makes
    named = [
        word for command in commands for word in command.split()[1:]
        if not word.startswith("-") and re.search(r"\.(cu|cc|log|txt|py|toml)$", word)
    ]
    assert named, "the README names no file in a command: update this test"
    missing = [word for word in named if word.split("/")[0] not in made and not (REPO / word).is_file()]
    assert not missing, missing
