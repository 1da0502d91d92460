"""Where the tests find the repository, their own folder and the artifacts they read (no tests here)."""

from pathlib import Path

TESTS_DIR = Path(__file__).resolve().parent
REPO_DIR = TESTS_DIR.parent
ARTIFACTS_DIR = TESTS_DIR / "artifacts"
