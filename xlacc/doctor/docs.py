"""Keep docs/doctor.md's list of finding codes equal to the catalogue.

    python -m xlacc.doctor.docs [docs/doctor.md]     rewrite the generated part
"""

from __future__ import annotations

import sys
from pathlib import Path

from xlacc.doctor.findings import CATALOGUE, GROUPS

START = "<!-- finding codes: generated from xlacc/doctor/findings.py by `python -m xlacc.doctor.docs` -->"
END = "<!-- end of finding codes -->"
DEFAULT_PATH = Path(__file__).resolve().parents[2] / "docs" / "doctor.md"


def render_catalogue() -> str:
    lines = [START, ""]
    for group, heading in GROUPS.items():
        lines += [f"### {heading}", ""]
        for entry in (e for e in CATALOGUE if e.group == group):
            lines += [
                f"#### `{entry.code}` ({entry.severity})",
                "",
                f"**{entry.title[0].upper() + entry.title[1:]}.** {entry.explanation}",
                "",
                f"- Example: {entry.example}",
                f"- Fix: {entry.fix}",
                "",
            ]
    lines.append(END)
    return "\n".join(lines)


def generated_part(text: str) -> str | None:
    start, end = text.find(START), text.find(END)
    if start < 0 or end < start:
        return None
    return text[start : end + len(END)]


def update(path: Path) -> bool:
    """Rewrite the generated part of ``path``; True when it changed."""
    text = path.read_text(encoding="utf-8")
    current = generated_part(text)
    if current is None:
        raise SystemExit(f"{path}: no '{START}' ... '{END}' block to update")
    fresh = render_catalogue()
    if current == fresh:
        return False
    path.write_text(text.replace(current, fresh), encoding="utf-8")
    return True


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_PATH
    print(f"{target}: {'updated' if update(target) else 'already up to date'}")
