"""The HELM web viewer in a real browser (headless Chromium through Selenium), on the bundled sample.

The suites are the session's shared ones (tests/helpers/suite.py), built in a temporary working directory with
``-o benchmark_output`` (relative), as a user would run them:

- suite ``demo``: ``helm-run --conf-paths run_specs/roboreward_sample.conf`` (the two offline
  baselines on the three sample subsets), then ``helm-summarize`` with the RoboReward summarizer;
- suite ``demo_native``: the same sample subset sent as native mp4 (``video=native``) and one run
  of a real subset id (``berkeley_fanuc_manipulation``) read from a local copy made of sample
  videos, so the full "RoboReward" leaderboard has a column (its own suite: HELM averages runs of
  the same model and subset in one leaderboard cell, so the native run must not join ``demo``);
- suite ``demo_long``: one run of the subset with the longest id, only summarized (HELM crashed on
  it with "File name too long" until the summarizer shortened table names; see the test at the end).

Then ``helm-server`` serves ``demo`` (default project and ``--project robo-reward-bench``) and
``demo_native``, and the pages are checked in Chromium: leaderboard numbers against
``groups/roboreward_sample.json``, every extra table, the predictions page (prompt, frames that
load, answer, gold score), the native video, the landing page, and ``--export-path`` with and
without ``roboreward export-media`` (exported to a temporary folder: the shared suite is only read).
Screenshots go to ``test-artifacts/`` (gitignored).

The browser never touches the network: Selenium Manager is off (explicit driver and binary,
``SE_OFFLINE``) and Chromium resolves no host but 127.0.0.1 (the HELM frontend asks
crfm.stanford.edu for project metadata; offline that fails fast and changes nothing here).
"""

import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.fakes import unused_port
from tests.helpers.harness import REPO, TIMEOUT, cli, helm_environment
from tests.helpers.suite import MODELS, NATIVE_RUN, NATIVE_SUITE, SUBSETS, SampleSuite, local_copy_rows

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (os.path.isfile(CHROMIUM) and os.path.isfile(CHROMEDRIVER)),
        reason=f"browser test needs {CHROMIUM} and {CHROMEDRIVER} (Debian packages chromium and chromium-driver; "
        ".ci/run installs them)",
    ),
]

from selenium import webdriver  # noqa: E402  (after the skip marker: a clear reason beats an import error)
from selenium.common.exceptions import TimeoutException  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

ARTIFACTS = REPO / "test-artifacts"
PAGE_TIMEOUT = 20.0
HELM_TRUNCATES_HEADERS_AT = 30  # the frontend shows longer column titles as their first 27 characters + "..."

MEDIA_MARKER = "benchmark_output/"
FRAMES_SELECTOR = "/benchmark_output/scenarios/roboreward/frames/"
VIDEOS_SELECTOR = "/benchmark_output/scenarios/roboreward/videos/"
RUBRIC = "Rubric for end-of-episode progress"
PAGE_SIZE = 10  # instances per page of the frontend's run view

# Plain urllib, never through a proxy from the environment: every server here is on 127.0.0.1.
HTTP = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def frames_run(subset: str, model: str) -> str:
    return f"roboreward:subset={subset},data=sample,video=frames,model=baseline_{model}"


PREDICTIONS_RUN = frames_run("sim_kuka", "constant-3")


# --------------------------------------------------------------------------------------------- processes


def http_get(url: str, timeout: float = 10.0) -> tuple[int, str, bytes]:
    """``(status, content type, body)``; HTTP errors are returned, not raised."""
    try:
        with HTTP.open(url, timeout=timeout) as response:
            return response.status, response.headers.get_content_type(), response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get_content_type(), b""


@dataclass
class Processes:
    """Every background process the module starts, ended (by handle) in teardown."""

    folder: Path
    started: list[tuple[str, "subprocess.Popen[bytes]"]] = field(default_factory=list)

    def start(self, name: str, command: Sequence[str], cwd: Path) -> "subprocess.Popen[bytes]":
        # Output to files, never to a pipe nobody reads (a full pipe stalls the process).
        with open(self.log(name), "wb") as log:
            process = subprocess.Popen(list(command), cwd=cwd, env=helm_environment(), stdout=log,
                                       stderr=subprocess.STDOUT)
        self.started.append((name, process))
        return process

    def log(self, name: str) -> Path:
        return self.folder / f"{name}.log"

    def tail(self, name: str) -> str:
        path = self.log(name)
        return path.read_text(errors="replace")[-4000:] if path.exists() else "(no log)"

    def wait(self, name: str, process: "subprocess.Popen[bytes]") -> int:
        try:
            return process.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            pytest.fail(f"{name} still running after {TIMEOUT} s\n{self.tail(name)}")

    def check(self, name: str, process: "subprocess.Popen[bytes]") -> None:
        code = self.wait(name, process)
        assert code == 0, f"{name} exited with {code}\n--- output (tail)\n{self.tail(name)}"

    def stop_all(self) -> None:
        for _, process in self.started:
            if process.poll() is None:
                process.terminate()
        for _, process in self.started:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def serve(self, name: str, command: Sequence[str], cwd: Path, port: int) -> str:
        """Start an HTTP server and wait for 200 on ``/``; returns its base URL."""
        process = self.start(name, command, cwd)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                pytest.fail(f"{name} exited with {process.returncode} before serving\n{self.tail(name)}")
            try:
                if http_get(url + "/", timeout=2)[0] == 200:
                    return url
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"{name} gave no HTTP 200 on {url}/ within 30 s\n{self.tail(name)}")
            time.sleep(0.1)


def helm_server(suite: str, port: int, *extra: str) -> list[str]:
    return [cli("helm-server"), "--suite", suite, "--port", str(port), "-o", "benchmark_output", *extra]


# --------------------------------------------------------------------------------------------- fixtures


@dataclass
class Site:
    workdir: Path
    runs: Path
    processes: Processes
    demo_url: str
    native_url: str
    landing_url: str
    long_summarize_code: int
    long_summarize_output: str
    exports: Path
    """Where the ``--export-path`` sites go (outside the shared working folder)."""


@pytest.fixture(scope="module", autouse=True)
def wall_time() -> Iterator[None]:
    """The module's wall time, printed at the end (``pytest -s`` shows it) and kept in test-artifacts/."""
    start = time.monotonic()
    yield
    seconds = time.monotonic() - start
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "browser-wall-time.txt").write_text(f"{seconds:.1f}\n")
    print(f"\n[test_browser] module wall time: {seconds:.1f} s")


@pytest.fixture(scope="module")
def site(sample_suite: SampleSuite, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """helm-server on the shared suites (read only), three at once."""
    workdir = sample_suite.workdir
    processes = Processes(tmp_path_factory.mktemp("browser-logs"))
    try:
        started = time.monotonic()
        ports = [unused_port() for _ in range(3)]
        served = Site(
            workdir=workdir,
            runs=sample_suite.output / "runs",
            processes=processes,
            demo_url=processes.serve("helm-server-demo", helm_server("demo", ports[0]), workdir, ports[0]),
            native_url=processes.serve("helm-server-native", helm_server(NATIVE_SUITE, ports[1]), workdir,
                                       ports[1]),
            landing_url=processes.serve(
                "helm-server-landing", helm_server("demo", ports[2], "--project", "robo-reward-bench"), workdir,
                ports[2]),
            long_summarize_code=sample_suite.long_summarize_code,
            long_summarize_output=sample_suite.long_summarize_output,
            exports=tmp_path_factory.mktemp("browser-exports"),
        )
        print(f"\n[test_browser] helm-server x3 {time.monotonic() - started:.1f} s")
        yield served
    finally:
        processes.stop_all()


@pytest.fixture(scope="module")
def browser() -> Iterator[webdriver.Chrome]:
    previous = os.environ.get("SE_OFFLINE")
    os.environ["SE_OFFLINE"] = "true"  # Selenium Manager must never download anything
    profile = tempfile.mkdtemp(prefix="chromium-profile-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
                 "--no-first-run", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", f"--user-data-dir={profile}", "--window-size=1600,1200", "--no-proxy-server",
                 "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
        if previous is None:
            os.environ.pop("SE_OFFLINE", None)
        else:
            os.environ["SE_OFFLINE"] = previous


# --------------------------------------------------------------------------------------------- page helpers


def wait_for(driver: webdriver.Chrome, condition: Callable[[webdriver.Chrome], Any], what: str,
             timeout: float = PAGE_TIMEOUT) -> Any:
    try:
        return WebDriverWait(driver, timeout, poll_frequency=0.1).until(condition)
    except TimeoutException:
        text = driver.execute_script("return document.body ? document.body.innerText : ''") or ""
        pytest.fail(f"timed out after {timeout:.0f} s waiting for {what} on {driver.current_url}\n"
                    f"--- page text (head)\n{text[:2500]}")


def screenshot(driver: webdriver.Chrome, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / name
    assert driver.save_screenshot(str(path)), f"screenshot {path} not written"
    return path


def run_url(base: str, run_name: str) -> str:
    return f"{base}/#/runs/{urllib.parse.quote(run_name, safe='')}"


def media_url(base: str, location: str) -> str:
    """Where the frontend fetches a recorded media path (it drops everything up to ``benchmark_output/``)."""
    index = location.find(MEDIA_MARKER)
    assert index >= 0, location
    relative = location[index + len(MEDIA_MARKER):]
    return f"{base}/benchmark_output/" + "/".join(urllib.parse.quote(part, safe="") for part in relative.split("/"))


READ_TABLE = """
const table = document.querySelector('table');
if (!table) return null;
const head = [...table.querySelectorAll('thead th')].map(th => ({text: th.innerText.trim(), title: th.title}));
const rows = [...table.querySelectorAll('tbody tr')].map(tr => [...tr.children].map(td => (
    {text: td.innerText.trim(), bold: td.querySelector('.font-bold') !== null})));
return {head: head, rows: rows};
"""

MEDIA_STATE = """
return [...document.querySelectorAll('img')].filter(img => img.src.includes(arguments[0])).map(img => (
    {src: img.src, complete: img.complete, width: img.naturalWidth}));
"""

VIDEO_STATE = """
return [...document.querySelectorAll('video')].map(video => {
    const source = video.querySelector('source');
    return {src: source ? source.src : null, type: source ? source.type : null, ready: video.readyState,
            width: video.videoWidth, error: video.error ? video.error.code : null};
});
"""


def read_table(driver: webdriver.Chrome) -> dict[str, Any] | None:
    return driver.execute_script(READ_TABLE)  # type: ignore[no-any-return]


def shown_number(value: Any) -> str:
    """What the HELM frontend shows for a cell value: ``String(Math.round(v * 1e3) / 1e3)``, "-" when absent."""
    if value is None:
        return "-"
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(number):
        return str(value)
    rounded = math.floor(number * 1e3 + 0.5) / 1e3
    text = repr(rounded)
    text = text[:-2] if text.endswith(".0") else text
    return "0" if text == "-0" else text


def shown_header(value: str) -> str:
    """What the frontend shows for a column title (it shortens long ones)."""
    if value == "Model/adapter":
        return "Model"
    if len(value) > HELM_TRUNCATES_HEADERS_AT:
        return value[:27] + "..."
    return value


def check_table(shown: dict[str, Any], expected: dict[str, Any]) -> None:
    """A rendered table equals a summarized JSON table: titles, rows (any order), numbers as shown, bold cells."""
    title = expected["title"]
    assert [h["text"] for h in shown["head"]] == [shown_header(h["value"]) for h in expected["header"]], title
    for shown_cell, header in zip(shown["head"], expected["header"], strict=True):
        assert shown_cell["title"] == header.get("description", ""), (title, header["value"])
    expected_rows = {str(row[0]["value"]): row for row in expected["rows"]}
    shown_rows = {row[0]["text"]: row for row in shown["rows"]}
    assert set(shown_rows) == set(expected_rows), title
    for model, row in expected_rows.items():
        cells = shown_rows[model]
        assert len(cells) == len(row), (title, model)
        for column, (cell, expected_cell) in enumerate(zip(cells, row, strict=True)):
            if column == 0:
                continue
            where = (title, model, expected["header"][column]["value"])
            assert cell["text"] == shown_number(expected_cell.get("value")), where
            bold = (expected_cell.get("style") or {}).get("font-weight") == "bold"
            assert cell["bold"] == bold, where


def group_tables(site: Site, suite: str, group: str) -> list[dict[str, Any]]:
    with open(site.runs / suite / "groups" / f"{group}.json", encoding="utf-8") as handle:
        return json.load(handle)  # type: ignore[no-any-return]


def read_run_json(site: Site, suite: str, run_name: str, name: str) -> Any:
    with open(site.runs / suite / run_name / name, encoding="utf-8") as handle:
        return json.load(handle)


def instance_blocks(driver: webdriver.Chrome) -> dict[str, str]:
    """The run page's text, cut per instance card: instance id -> its text (whitespace collapsed)."""
    text = driver.find_element(By.TAG_NAME, "body").text
    blocks = {}
    for chunk in text.split("Instance id: ")[1:]:
        match = re.match(r"(rr-[0-9a-f]{16})", chunk)
        assert match, chunk[:200]
        blocks[match.group(1)] = chunk
    return blocks


def collapse(text: str) -> str:
    return " ".join(text.split())


def show_table(driver: webdriver.Chrome, table: dict[str, Any]) -> dict[str, Any]:
    """Click a leaderboard tab (the page keeps the last tab across routes) and wait for its table."""
    wait_for(driver, lambda d: d.find_elements(By.XPATH, "//div[@role='navigation']/div"), "the table tabs")
    tab = driver.find_element(By.XPATH, f"//div[@role='navigation']/div[normalize-space(.)='{table['title']}']")
    tab.click()
    wanted = [shown_header(h["value"]) for h in table["header"]]
    return wait_for(  # type: ignore[no-any-return]
        driver,
        lambda d: (lambda t: t if t and t["rows"] and [h["text"] for h in t["head"]] == wanted else None)(
            read_table(d)),
        f"the table {table['title']!r}",
    )


def open_run_page(driver: webdriver.Chrome, base: str, run_name: str) -> None:
    # Same origin as an earlier test: only the fragment changes and the document (with its resource
    # timing buffer) stays, so start that buffer afresh for this page's frames.
    driver.execute_script("performance.clearResourceTimings(); performance.setResourceTimingBufferSize(5000);")
    driver.get(run_url(base, run_name))
    wait_for(driver, lambda d: "Instance id: rr-" in d.find_element(By.TAG_NAME, "body").text,
             f"the instances of {run_name}")


def wait_for_frames(driver: webdriver.Chrome, what: str) -> list[dict[str, Any]]:
    """The frame <img>s once all of them finished loading (or failing)."""
    return wait_for(  # type: ignore[no-any-return]
        driver,
        lambda d: (lambda images: images if images and all(i["complete"] for i in images) else None)(
            d.execute_script(MEDIA_STATE, FRAMES_SELECTOR)),
        what,
    )


# --------------------------------------------------------------------------------------------- tests


def test_leaderboard_shows_the_summarized_numbers(site: Site, browser: webdriver.Chrome) -> None:
    tables = group_tables(site, "demo", "roboreward_sample")
    main = next(t for t in tables if t["name"] == "accuracy")
    browser.get(f"{site.demo_url}/#/leaderboard")
    wait_for(browser, lambda d: (lambda t: t and t["rows"])(read_table(d)), "the leaderboard table")
    shown = show_table(browser, main)
    headers = [h["text"] for h in shown["head"]]
    for display_name in SUBSETS.values():
        assert any(display_name in header for header in headers), (display_name, headers)
    assert "Mean MAE (macro)" in headers
    assert headers.index("Mean MAE (macro)") == 1, headers
    models = [row[0]["text"] for row in shown["rows"]]
    assert sorted(models) == sorted(MODELS.values())
    assert models[0] == "Constant 3 (baseline)", "ranked by the mean MAE, lower first"
    check_table(shown, main)
    means = {row[0]["text"]: row[1]["text"] for row in shown["rows"]}
    expected_means = {str(row[0]["value"]): shown_number(row[1]["value"]) for row in main["rows"]}
    assert means == expected_means
    screenshot(browser, "leaderboard.png")

    # Every other table of the group (general information and the summarizer's four breakdowns) is a tab.
    titles = [t["title"] for t in tables]
    for required in ("MAE by robot", "MAE by augmentation kind", "Failure modes", "Cost per instance"):
        assert any(title.startswith(required) for title in titles), (required, titles)
    for table in tables:
        if table is main:
            continue
        check_table(show_table(browser, table), table)
        screenshot(browser, f"leaderboard-{table['name']}.png")


def test_group_page_shows_the_same_leaderboard(site: Site, browser: webdriver.Chrome) -> None:
    main = next(t for t in group_tables(site, "demo", "roboreward_sample") if t["name"] == "accuracy")
    browser.get(f"{site.demo_url}/#/groups/roboreward_sample")
    wait_for(browser, lambda d: (lambda t: t and t["rows"])(read_table(d)), "the group table")
    check_table(show_table(browser, main), main)
    # Each subset cell links to its run page.
    links = browser.execute_script(
        "return [...document.querySelectorAll('table tbody a')].map(a => a.getAttribute('href'))")
    assert f"#/runs/{PREDICTIONS_RUN}" in links, links


def test_predictions_page_shows_prompt_frames_answer_and_gold(site: Site, browser: webdriver.Chrome) -> None:
    requests = read_run_json(site, "demo", PREDICTIONS_RUN, "display_requests.json")
    displayed = read_run_json(site, "demo", PREDICTIONS_RUN, "display_predictions.json")
    predictions = {p["instance_id"]: p["predicted_text"] for p in displayed}
    scores = {p["instance_id"]: (p["stats"].get("predicted_score"), p["stats"].get("gold_score")) for p in displayed}
    instances = read_run_json(site, "demo", PREDICTIONS_RUN, "instances.json")
    gold = {i["id"]: next(r["output"]["text"] for r in i["references"] if "correct" in r["tags"]) for i in instances}
    prompt_of = {r["instance_id"]: r["request"]["multimodal_prompt"]["media_objects"][0]["text"] for r in requests}
    frames_of = {r["instance_id"]: [m["location"] for m in r["request"]["multimodal_prompt"]["media_objects"][1:]]
                 for r in requests}

    open_run_page(browser, site.demo_url, PREDICTIONS_RUN)
    images = wait_for_frames(browser, "the frame images to load")
    blocks = instance_blocks(browser)
    assert len(blocks) == min(PAGE_SIZE, len(instances)), list(blocks)
    assert list(blocks) == [i["id"] for i in instances][:len(blocks)]

    # Frames: exactly the shown instances' frames, each decoded by the browser and served with 200.
    expected_srcs = {media_url(site.demo_url, location) for iid in blocks for location in frames_of[iid]}
    assert expected_srcs, "no frames recorded for the shown instances"
    assert {image["src"] for image in images} == expected_srcs
    not_decoded = [image["src"] for image in images if image["width"] <= 0]
    assert not not_decoded, f"frames the browser could not show: {not_decoded[:5]}"
    for src in sorted(expected_srcs):
        status, content_type, body = http_get(src)
        assert (status, content_type) == (200, "image/jpeg"), src
        assert body[:2] == b"\xff\xd8", src
    statuses = browser.execute_script(
        "return performance.getEntriesByType('resource').filter(e => e.name.includes(arguments[0]))"
        ".map(e => [e.name, e.responseStatus])", FRAMES_SELECTOR)
    assert {name for name, _ in statuses} == expected_srcs
    assert all(status in (200, None) for _, status in statuses), statuses  # responseStatus: Chrome 109+

    # Text: the rubric prompt with the task, the model's answer, and the gold score as the correct reference.
    for instance_id, block in blocks.items():
        assert RUBRIC in block, instance_id
        assert collapse(prompt_of[instance_id]) in collapse(block), instance_id
        assert predictions[instance_id] == "ANSWER: 3"
        assert re.search(r"Prediction raw text\n(?:.*\n){0,3}ANSWER: 3\n", block), block[-800:]
        match = re.search(r"References\n(\S+)\ncorrect\n", block)
        assert match, block[-800:]
        assert match.group(1) == gold[instance_id], instance_id
        # The parsed score and the gold score, as the per-prediction stats the viewer lists.
        assert scores[instance_id] == (3.0, float(gold[instance_id])), instance_id
        assert re.search(r"Predicted score\W+3(\.0+)?\b", block), block[-800:]
        assert re.search(rf"Gold score\W+{gold[instance_id]}(\.0+)?\b", block), block[-800:]

    first = browser.find_element(By.XPATH, "//*[starts-with(normalize-space(.), 'Instance id: rr-')]")
    browser.execute_script("arguments[0].scrollIntoView({block: 'start'}); window.scrollBy(0, -20);", first)
    screenshot(browser, "predictions.png")


def test_native_video_run_shows_a_playable_video(site: Site, browser: webdriver.Chrome) -> None:
    requests = read_run_json(site, "demo_native", NATIVE_RUN, "display_requests.json")
    videos_of = {r["instance_id"]: [m for m in r["request"]["multimodal_prompt"]["media_objects"][1:]]
                 for r in requests}
    assert all(len(v) == 1 and v[0]["content_type"] == "video/mp4" for v in videos_of.values()), videos_of

    open_run_page(browser, site.native_url, NATIVE_RUN)
    videos = wait_for(browser, lambda d: (lambda v: v if v and all(x["ready"] >= 1 or x["error"] for x in v)
                                          else None)(d.execute_script(VIDEO_STATE)),
                      "the videos' metadata to load")
    blocks = instance_blocks(browser)
    expected = {media_url(site.native_url, videos_of[iid][0]["location"]) for iid in blocks}
    assert {v["src"] for v in videos} == expected
    assert all(v["type"] == "video/mp4" for v in videos), videos
    errors = [v for v in videos if v["error"] or v["width"] <= 0]
    assert not errors, f"videos Chromium could not decode: {errors[:3]}"
    assert not browser.execute_script(MEDIA_STATE, FRAMES_SELECTOR), "a native-video run shows no frames"
    for src in sorted(expected):
        status, content_type, body = http_get(src)
        assert (status, content_type) == (200, "video/mp4"), src
        assert body[4:8] == b"ftyp", src
        location = next(v[0]["location"] for v in videos_of.values() if media_url(site.native_url, v[0]["location"])
                        == src)
        assert body == (site.workdir / location).read_bytes(), src
    first = browser.find_element(By.TAG_NAME, "video")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'});", first)
    screenshot(browser, "native-video.png")


def test_landing_page_shows_the_demo_leaderboard(site: Site, browser: webdriver.Chrome) -> None:
    main = next(t for t in group_tables(site, "demo", "roboreward_sample") if t["name"] == "accuracy")
    browser.get(site.landing_url + "/")
    wait_for(browser, lambda d: any("RoboReward" in h.text for h in d.find_elements(By.TAG_NAME, "h1")),
             "the RoboReward title")

    def loaded(d: webdriver.Chrome) -> dict[str, Any] | None:
        table = read_table(d)
        spinning = d.find_elements(By.CSS_SELECTOR, ".loading-spinner")
        return table if table and table["rows"] and not spinning else None

    shown = wait_for(browser, loaded, "the mini leaderboard (without a spinner)")
    title = browser.find_element(By.TAG_NAME, "h1").text
    assert title.startswith("RoboReward"), title
    assert [h["text"] for h in shown["head"]] == ["Model", "Mean MAE (macro)"]
    expected = {str(row[0]["value"]): shown_number(row[1]["value"]) for row in main["rows"]}
    assert {row[0]["text"]: row[1]["text"] for row in shown["rows"]} == expected
    assert set(expected) == set(MODELS.values())
    screenshot(browser, "landing.png")


def test_full_leaderboard_has_a_column_per_subset(site: Site, browser: webdriver.Chrome) -> None:
    """A real subset id (local copy) fills its column of the "RoboReward" leaderboard; the others stay empty."""
    main = next(t for t in group_tables(site, "demo_native", "roboreward") if t["name"] == "accuracy")
    assert len(main["header"]) == 2 + 23
    browser.get(f"{site.native_url}/#/leaderboard/roboreward")
    wait_for(browser, lambda d: (lambda t: t and t["rows"])(read_table(d)), "the RoboReward leaderboard")
    shown = show_table(browser, main)
    check_table(shown, main)
    (row,) = shown["rows"]
    filled = [h["title"].split(" (")[0] for h, cell in zip(shown["head"][2:], row[2:], strict=True)
              if cell["text"] != "-"]
    assert filled == ["Berkeley Fanuc Manipulation"]
    labels = [copied["reward"] for copied in local_copy_rows()]
    assert len(labels) == 3
    assert row[1]["text"] == shown_number(sum(abs(label - 3) for label in labels) / len(labels))  # a constant 3


def test_full_leaderboard_column_titles_are_not_cut(site: Site, browser: webdriver.Chrome) -> None:
    main = next(t for t in group_tables(site, "demo_native", "roboreward") if t["name"] == "accuracy")
    browser.get(f"{site.native_url}/#/leaderboard/roboreward")
    wait_for(browser, lambda d: (lambda t: t and t["rows"])(read_table(d)), "the RoboReward leaderboard")
    shown = show_table(browser, main)  # waits for the titles as the viewer cuts them
    cut = [h["text"] for h in shown["head"] if h["text"].endswith("...")]
    assert [h["text"] for h in shown["head"]] == [h["value"] for h in main["header"]], f"cut titles: {cut}"


def test_export_needs_export_media_for_the_frames(site: Site, browser: webdriver.Chrome) -> None:
    workdir, processes = site.workdir, site.processes
    export, export_plain = site.exports / "export", site.exports / "export_plain"
    for folder in (export_plain, export):
        exported = subprocess.run([cli("helm-server"), "--suite", "demo", "-o", "benchmark_output", "--export-path",
                                   str(folder)], cwd=workdir, env=helm_environment(), capture_output=True, text=True,
                                  timeout=TIMEOUT)
        assert exported.returncode == 0, exported.stdout[-2000:] + exported.stderr[-2000:]
    media = subprocess.run([cli("roboreward"), "export-media", "--suite", "demo", "--export-path", str(export)],
                           cwd=workdir, env=helm_environment(), capture_output=True, text=True, timeout=TIMEOUT)
    assert media.returncode == 0, media.stdout + media.stderr
    locations = set()
    for run in (site.runs / "demo").iterdir():
        if run.name.startswith("roboreward:"):
            for state in read_run_json(site, "demo", run.name, "scenario_state.json")["request_states"]:
                locations |= {m["location"] for m in state["request"]["multimodal_prompt"]["media_objects"][1:]}
    assert re.search(rf"\b{len(locations)} files \(", media.stdout), (len(locations), media.stdout)
    for location in locations:
        assert (export / location).read_bytes() == (workdir / location).read_bytes(), location
    again = subprocess.run([cli("roboreward"), "export-media", "--suite", "demo", "--export-path", str(export)],
                           cwd=workdir, env=helm_environment(), capture_output=True, text=True, timeout=TIMEOUT)
    assert again.returncode == 0 and re.search(r"\b0 files \(", again.stdout), again.stdout + again.stderr

    for folder, loads in ((export, True), (export_plain, False)):
        port = unused_port()
        base = processes.serve(f"http-server-{folder.name}", [sys.executable, "-m", "http.server", str(port),
                                                              "--bind", "127.0.0.1", "--directory", str(folder)],
                               site.exports, port)
        open_run_page(browser, base, PREDICTIONS_RUN)
        images = wait_for_frames(browser, f"the frame images of the {folder.name} site")
        widths = {image["width"] for image in images}
        statuses = {http_get(src)[0] for src in {image["src"] for image in images}}
        if loads:
            assert 0 not in widths and statuses == {200}, (folder.name, widths, statuses)
            screenshot(browser, "export-predictions.png")
        else:  # what export-media is for: helm-server --export-path copies runs/ but not the media
            assert widths == {0} and statuses == {404}, (folder.name, widths, statuses)


class UnexpectedFailureError(Exception):
    """helm-summarize failed for a reason other than the too-long file name this test guards against."""


def test_summarize_survives_long_subset_ids(site: Site) -> None:
    output = site.long_summarize_output
    if site.long_summarize_code != 0 and "File name too long" not in output:
        raise UnexpectedFailureError(f"helm-summarize failed for another reason\n{output}")
    assert site.long_summarize_code == 0, f"helm-summarize exited with {site.long_summarize_code}\n{output}"
