"""The offline snippets of docs/rl_rewards.md (TRL, verl) run as written and print what their comments say.

Both run in one fresh interpreter (one HELM import), from a folder laid out like a checkout with the bundled sample.
"""

import re
import subprocess
import sys
from pathlib import Path

import helm_roboreward

ROOT = Path(helm_roboreward.__file__).parent.parent
PAGE = ROOT / "docs" / "rl_rewards.md"
SECTIONS = ("## TRL", "## verl")


def snippet(section: str) -> tuple[str, str]:
    """The first python block after ``section``, and what its one ``print(...)`` line's comment says it prints."""
    text = PAGE.read_text(encoding="utf-8")
    match = re.search(r"```python\n(.*?)```", text[text.index(section):], flags=re.DOTALL)
    assert match, f"no python block under {section!r}"
    printed = [line for line in match.group(1).splitlines() if line.startswith("print(")]
    assert len(printed) == 1 and "#" in printed[0], f"{section}: one print(...) with the expected output as comment"
    return match.group(1), printed[0].split("#", 1)[1].strip()


def test_the_trl_and_verl_snippets_print_what_their_comments_say(tmp_path: Path) -> None:
    snippets = [snippet(section) for section in SECTIONS]
    (tmp_path / "helm_roboreward").mkdir()
    (tmp_path / "helm_roboreward" / "sample").symlink_to(ROOT / "helm_roboreward" / "sample")
    code = "\n".join(code for code, _ in snippets)
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1", "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [line.strip() for line in done.stdout.splitlines() if not line.startswith("Looking in path")]  # HELM's
    assert lines == [expected for _, expected in snippets], done.stdout
