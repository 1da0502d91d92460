"""How right doctor is on the corpus of real projects: error findings that are real defects, and
real defects found.

    python tests/corpus/accuracy.py                    the corpus kept here (tests/corpus/*)
    python tests/corpus/accuracy.py --json             the same, as one JSON object
    python tests/corpus/accuracy.py --originals DIR    the unmodified originals (originals.json), from a copy in DIR

Each project's expected.json lists the real defects in doctor's scope (code and file:line) and
the codes that must not appear. An error finding is right when it names a listed defect at its
place; a defect is found when a finding of its code (any severity) names its place.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from xlacc.commands.doctor import engine  # noqa: E402

# The projects gathered after doctor was tuned on the others, read fresh (tests/corpus/ACCURACY.md).
SECOND_CORPUS = ("envpool", "exla", "jaxdecomp", "openequivariance", "primus-turbo", "s2fft", "torch2jax")


@dataclass
class ProjectResult:
    name: str
    errors: int = 0
    errors_right: int = 0
    defects: int = 0
    defects_found: int = 0
    wrong_errors: list[str] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)
    unwanted: list[str] = field(default_factory=list)  # a `quiet` code that appeared


def _names(finding, defect: dict) -> bool:
    return finding.code == defect["code"] and re.search(re.escape(defect["at"]) + r"(?!\d)", finding.evidence) is not None


def check_project(folder: Path, expected: dict | None = None) -> ProjectResult:
    expected = expected or json.loads((folder / "expected.json").read_text(encoding="utf-8"))
    expected.setdefault("quiet", [])
    report = engine.run(engine.DoctorRequest([folder], None, [], None, None, False, [], []))
    result = ProjectResult(folder.name, defects=len(expected["defects"]))
    for finding in report.findings:
        if finding.code in expected["quiet"]:
            result.unwanted.append(f"{finding.code}: {finding.evidence.splitlines()[0]}")
        if finding.severity == "error":
            result.errors += 1
            if any(_names(finding, d) for d in expected["defects"]):
                result.errors_right += 1
            else:
                result.wrong_errors.append(f"{finding.code}: {finding.evidence.splitlines()[0]}")
    for defect in expected["defects"]:
        if any(_names(f, defect) for f in report.findings):
            result.defects_found += 1
        else:
            result.missed.append(f"{defect['code']} at {defect['at']}")
    return result


def measure(corpus: Path = HERE) -> list[ProjectResult]:
    return [check_project(folder) for folder in sorted(p.parent for p in corpus.glob("*/expected.json"))]


def measure_originals(directory: Path) -> list[ProjectResult]:
    projects = json.loads((HERE / "originals.json").read_text(encoding="utf-8"))["projects"]
    return [check_project(directory / name, expected) for name, expected in projects.items() if (directory / name).is_dir()]


def totals(results: list[ProjectResult]) -> tuple[float, float]:
    errors = sum(r.errors for r in results)
    defects = sum(r.defects for r in results)
    precision = sum(r.errors_right for r in results) / errors if errors else 1.0
    recall = sum(r.defects_found for r in results) / defects if defects else 1.0
    return precision, recall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--originals", type=Path, help="a folder holding copies of the original projects")
    args = parser.parse_args()
    results = measure_originals(args.originals) if args.originals else measure()
    precision, recall = totals(results)
    if args.json:
        print(json.dumps({"precision": precision, "recall": recall, "projects": [r.__dict__ for r in results]}, indent=2))
        return 0
    print(f"{'project':<24} {'errors':>6} {'right':>6} {'defects':>8} {'found':>6}")
    for r in results:
        print(f"{r.name:<24} {r.errors:>6} {r.errors_right:>6} {r.defects:>8} {r.defects_found:>6}")
        for line in r.wrong_errors + [f"missed {m}" for m in r.missed] + [f"must not appear: {u}" for u in r.unwanted]:
            print(f"    {line}")
    print(f"error findings right: {precision:.1%}; real defects found: {recall:.1%} "
          f"({len(results)} projects, {sum(r.defects for r in results)} defects)")
    second = [r for r in results if r.name in SECOND_CORPUS]
    if second and len(second) < len(results):
        for label, part in (("first corpus", [r for r in results if r.name not in SECOND_CORPUS]), ("second corpus", second)):
            precision, recall = totals(part)
            print(f"  {label}: error findings right {precision:.1%}, real defects found {recall:.1%} ({len(part)} projects)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
