"""Inspect's log viewer shows a sample's frames (issue 38: "the Inspect log viewer shows the frames of a sample").

One ``inspect eval`` of the constant baseline on the bundled sample, then ``inspect view`` on loopback in headless
Chromium: a sample's Messages tab shows every frame the request carried as a decoded JPEG. The screenshot is
docs/img/inspect_viewer.png when ``ROBOREWARD_INSPECT_SCREENSHOT`` names that path.
"""

import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"

pytestmark = [
    pytest.mark.slow,  # one inspect eval (about 20 s), the viewer and a browser
    pytest.mark.skipif(
        not (os.path.isfile(CHROMIUM) and os.path.isfile(CHROMEDRIVER)),
        reason=f"viewer test needs {CHROMIUM} and {CHROMEDRIVER} (Debian packages chromium and chromium-driver; "
        ".ci/run installs them)",
    ),
]
pytest.importorskip("inspect_ai")

from selenium import webdriver  # noqa: E402  (after the skip marker: a clear reason beats an import error)
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

from tests.helpers.fakes import unused_port  # noqa: E402
from tests.helpers.harness import TIMEOUT, check_completed, cli, helm_environment  # noqa: E402

SAMPLE = "rr-97aaddc2981ec6f1"
"""A sim_arena row of the bundled sample (its first)."""
WAIT = 30.0


@pytest.fixture(scope="module")
def viewer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    workdir = tmp_path_factory.mktemp("inspect-view")
    done = subprocess.run([cli("inspect"), "eval", "helm_roboreward/roboreward_bench", "--model",
                           "roboreward/baseline/constant-3", "-T", "data=sample", "-T",
                           f"media_dir={workdir / 'media'}", "--log-dir", str(workdir / "logs"), "--display", "none"],
                          cwd=workdir, env=helm_environment(), capture_output=True, text=True, timeout=TIMEOUT)
    check_completed(done, "inspect eval")
    (log,) = (workdir / "logs").glob("*.eval")
    port = unused_port()
    server = subprocess.Popen([cli("inspect"), "view", "start", "--log-dir", str(workdir / "logs"), "--host",
                               "127.0.0.1", "--port", str(port)], cwd=workdir, env=helm_environment(),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + WAIT
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/api/logs", timeout=2).read()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    pytest.fail(f"inspect view did not answer on port {port} within {WAIT:.0f} s")
                time.sleep(0.3)
        yield f"http://127.0.0.1:{port}/#/logs/{quote(log.name)}/samples/sample/{SAMPLE}/1/", log
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.fixture(scope="module")
def browser() -> Iterator[webdriver.Chrome]:
    os.environ["SE_OFFLINE"] = "true"  # Selenium Manager must never download anything
    profile = tempfile.mkdtemp(prefix="chromium-profile-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", f"--user-data-dir={profile}",
                 "--window-size=1400,1150", "--no-proxy-server",
                 "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def frames_in_log(log: Path) -> int:
    with zipfile.ZipFile(log) as archive:
        sample = json.loads(archive.read(f"samples/{SAMPLE}_epoch_1.json"))
    return int(sample["metadata"]["num_frames"])


def shown_frames(driver: webdriver.Chrome) -> list[int]:
    """The natural widths of the decoded JPEG frames on the page (0: not decoded)."""
    return list(driver.execute_script("return Array.from(document.querySelectorAll('img'))"
                                 ".filter(i => i.src.startsWith('data:image/jpeg')).map(i => i.naturalWidth)"))


def test_the_viewer_shows_every_frame_of_a_sample(viewer: tuple[str, Path], browser: webdriver.Chrome,
                                                  tmp_path: Path) -> None:
    url, log = viewer
    browser.get(url)
    wait = WebDriverWait(browser, WAIT, poll_frequency=0.2)
    wait.until(lambda driver: driver.find_elements(By.XPATH, "//*[normalize-space(text())='Messages']"))
    browser.find_element(By.XPATH, "//*[normalize-space(text())='Messages']").click()
    more = wait.until(lambda driver: driver.find_elements(By.XPATH, "//button[contains(., 'more')]"))
    more[0].click()  # the viewer folds a long message: unfold it to show every frame
    expected = frames_in_log(log)
    wait.until(lambda driver: len(shown_frames(driver)) >= expected and all(shown_frames(driver)))
    assert len(shown_frames(browser)) == expected > 1
    assert "Task: place the red cube into the tray" in browser.find_element(By.TAG_NAME, "body").text
    browser.save_screenshot(str(tmp_path / "inspect_viewer.png"))
    target = os.environ.get("ROBOREWARD_INSPECT_SCREENSHOT")
    if target:
        shutil.copyfile(tmp_path / "inspect_viewer.png", target)
