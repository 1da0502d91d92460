"""A process killed by a signal: the signal's name, the causes the steps that passed leave, and
run-smoke's child that ended with no cause in its output."""

from __future__ import annotations

from xlacc.commands.doctor.rules import crash


def test_signal_names_from_python_and_from_a_shell():
    assert crash.signal_name(-11) == crash.signal_name(139) == "SIGSEGV"
    assert crash.signal_name(0) is None and crash.signal_name(1) is None and crash.signal_name(None) is None


def test_a_crash_after_registration_passed_rules_out_registration_causes():
    fix = crash.crash_fix(passed=["registration"], during="numerics n=1")
    assert fix.startswith("Likely causes, most likely first:\n1. out-of-bounds")
    assert "Ruled out" in fix and "a legacy function registered as typed FFI" in fix.split("Ruled out")[1]


def test_a_child_killed_from_outside_is_most_likely_out_of_memory():
    found = crash.child_crash("the jax harness was killed by SIGKILL", "SIGKILL", "reference.py:3 (in reference)", likelihood=0.9)
    assert found.code == "kernel-crash" and found.evidence.endswith(": most likely out of memory")
    assert found.fix == crash.KILLED_FROM_OUTSIDE_FIX and found.likelihood == 0.9


def test_a_signal_while_the_users_python_ran_points_there():
    found = crash.child_crash("killed by SIGABRT", "SIGABRT", "reference.py:14 (in reference)", likelihood=0.9)
    assert found.evidence == "killed by SIGABRT, in your Python code at reference.py:14 (in reference)"
    assert found.title == "the process was killed by SIGABRT while your Python code ran"
    assert found.fix.startswith("The signal came from reference.py:14 (in reference)")


def test_a_crash_with_no_cause_shown_is_the_catalogues():
    found = crash.child_crash("killed by SIGSEGV", "SIGSEGV", None, likelihood=0.9)
    assert (found.code, found.evidence) == ("kernel-crash", "killed by SIGSEGV")
