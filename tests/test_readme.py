"""The README stays a short front door, and holds the test command `.ci/run` runs verbatim."""

from __future__ import annotations

from tests.support.paths import ROOT

README = ROOT / "README.md"
CI = ROOT / ".ci" / "run"


def _ci_test_command() -> str:
    lines = CI.read_text(encoding="utf-8").splitlines()
    marker = next(i for i, line in enumerate(lines) if line.startswith('echo "== tests'))
    return lines[marker + 1].strip()


def test_the_readme_is_at_most_250_lines() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 250


def test_the_readme_shows_the_test_command_ci_runs_verbatim() -> None:
    command = _ci_test_command()
    assert "pytest" in command
    assert command in README.read_text(encoding="utf-8").splitlines()


def test_the_readme_links_only_to_docs_pages_that_exist() -> None:
    text = README.read_text(encoding="utf-8")
    targets = {part.split(")")[0].split("#")[0] for part in text.split("](docs/")[1:]}
    assert targets, "the README links into docs/"
    assert sorted(t for t in targets if not (ROOT / "docs" / t).is_file()) == []
