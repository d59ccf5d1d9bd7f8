"""Folders nobody may write to, root included, for the unwritable-output tests.

File modes do not stop root (the CI runs as root), so as root the folders are made immutable with
``chattr +i`` instead (ext4 and most Linux file systems; root then cannot create or remove entries
either). Where neither works the test is skipped with the reason.
"""

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest


@contextlib.contextmanager
def unwritable(folders: Sequence[Path]) -> Iterator[None]:
    """Make ``folders`` unwritable for the duration of the block, then restore them."""
    if os.geteuid() != 0:
        for folder in folders:
            folder.chmod(0o500)
        try:
            yield
        finally:
            for folder in folders:
                folder.chmod(0o700)
        return
    chattr = shutil.which("chattr")
    if chattr is None:
        pytest.skip("running as root without chattr: nothing stops root from writing")
    locked = subprocess.run([chattr, "+i", *map(str, folders)], capture_output=True, text=True)
    if locked.returncode != 0:
        subprocess.run([chattr, "-i", *map(str, folders)], capture_output=True)
        pytest.skip(f"running as root and chattr +i is refused here ({locked.stderr.strip()})")
    probe = folders[0] / ".write-probe"
    try:
        try:
            probe.write_text("x")
        except OSError:
            pass
        else:
            probe.unlink()
            pytest.skip("chattr +i did not stop root from writing on this file system")
        yield
    finally:
        subprocess.run([chattr, "-i", *map(str, folders)], capture_output=True)
