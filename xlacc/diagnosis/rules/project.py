"""A generated project: its spec moved on from its code, or a merge left conflicts in it."""

from __future__ import annotations

import re

from xlacc.diagnosis.findings import make
from xlacc.report import Finding

CONFLICT_MARKER = re.compile(r"^<<<<<<< yours$", re.MULTILINE)


def findings(spec) -> list[Finding]:
    found = [
        make("spec-changed", f"{spec.root / 'xlacc.toml'}: {change} changed since xlacc generated the code")
        for change in spec.signature_changes()
    ]
    for path in sorted(spec.generated.files) if spec.generated else []:
        try:
            text = (spec.root / path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        marker = CONFLICT_MARKER.search(text)
        if marker:
            line = text.count("\n", 0, marker.start()) + 1
            found.append(make("update-conflict", f"{spec.root / path}:{line}: `<<<<<<< yours` left by `xlacc update`"))
    return found
