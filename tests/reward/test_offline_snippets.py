"""The offline reward snippets of README.md and docs/reward_api.md run as written (issue 36, B2).

Each snippet runs in a fresh interpreter, from a folder laid out like a checkout (the bundled sample where the
snippet names it), so a newcomer who pastes it gets the printed line its comment shows.
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest

import helm_roboreward

ROOT = Path(helm_roboreward.__file__).parent.parent
SNIPPETS = {
    "README.md": "Offline first, with a baseline model",
    "docs/reward_api.md": "Offline, with a baseline model",
}


def offline_snippet(page: str, lead: str) -> str:
    text = (ROOT / page).read_text(encoding="utf-8")
    after = text[text.index(lead):]
    match = re.search(r"```python\n(.*?)```", after, flags=re.DOTALL)
    assert match, f"{page}: no python block after {lead!r}"
    return match.group(1)


@pytest.mark.parametrize("page", sorted(SNIPPETS))
def test_the_offline_snippet_prints_what_its_comment_says(page: str, tmp_path: Path) -> None:
    code = offline_snippet(page, SNIPPETS[page])
    printed = [line for line in code.splitlines() if line.startswith("print(")]
    assert len(printed) == 1 and "#" in printed[0], f"{page}: one print(...) with the expected output as comment"
    expected = printed[0].split("#", 1)[1].strip()
    (tmp_path / "helm_roboreward").mkdir()
    (tmp_path / "helm_roboreward" / "sample").symlink_to(ROOT / "helm_roboreward" / "sample")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1", "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines()[-1].strip() == expected, done.stdout
