"""Keep docs/doctor.md's list of finding codes, and the README's table of them, equal to the catalogue.

    python tools/doctor_docs.py          rewrite the generated parts of both
"""

from __future__ import annotations

from pathlib import Path

from xlacc.ground import resources
from xlacc.ground.catalogue import CATALOGUE, GROUPS

START = "<!-- finding codes: generated from xlacc/ground/catalogue.py by `python tools/doctor_docs.py` -->"
END = "<!-- end of finding codes -->"
DEFAULT_PATH = resources.CHECKOUT_DIR / "docs" / "doctor.md"
TABLE_START = "<!-- finding code table: generated from xlacc/ground/catalogue.py by `python tools/doctor_docs.py` -->"
TABLE_END = "<!-- end of finding code table -->"
README_PATH = resources.CHECKOUT_DIR / "README.md"


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
                f"- Detected in: `{entry.home}`",
                "",
            ]
    lines.append(END)
    return "\n".join(lines)


def render_table() -> str:
    """One row per code: the README's summary, with docs/doctor.md holding the explanations."""
    lines = [TABLE_START, "", "| code | severity | example |", "|---|---|---|"]
    for group in GROUPS:
        for entry in (e for e in CATALOGUE if e.group == group):
            lines.append(f"| `{entry.code}` | {entry.severity} | {entry.example.replace('|', '&#124;')} |")
    lines += ["", TABLE_END]
    return "\n".join(lines)


def generated_part(text: str, start_marker: str = START, end_marker: str = END) -> str | None:
    start, end = text.find(start_marker), text.find(end_marker)
    if start < 0 or end < start:
        return None
    return text[start : end + len(end_marker)]


def update(path: Path, start_marker: str = START, end_marker: str = END, render=render_catalogue) -> bool:
    """Rewrite the generated part of ``path``; True when it changed."""
    text = path.read_text(encoding="utf-8")
    current = generated_part(text, start_marker, end_marker)
    if current is None:
        raise SystemExit(f"{path}: no '{start_marker}' ... '{end_marker}' block to update")
    fresh = render()
    if current == fresh:
        return False
    path.write_text(text.replace(current, fresh), encoding="utf-8")
    return True


if __name__ == "__main__":
    for target, markers, render in ((DEFAULT_PATH, (START, END), render_catalogue), (README_PATH, (TABLE_START, TABLE_END), render_table)):
        print(f"{target}: {'updated' if update(target, *markers, render=render) else 'already up to date'}")
