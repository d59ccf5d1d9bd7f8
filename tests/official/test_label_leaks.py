"""No gold score, file name, subset folder or label check reaches a model: the whole sample via helm-run, all scanned.

The run is the shared session suite's ``leaks`` suite (tests/helpers/suite.py): one ``helm-run`` subprocess
evaluates the whole bundled sample (``subset=all``), as a local copy whose every video carries its file name and
stem (``..._score_<k>``, the gold score) in its ``title`` and ``comment`` tags, with

- a frames model: ``meta/llama-4-scout-17b-16e-instruct`` (deployment ``vllm/...``, JPEG frames),
- a native-video model: ``teetone/roboreward-8b`` (deployment ``vllm/roboreward-8b``, the mp4),

both against the loopback fake OpenAI-compatible server, and the two offline baselines. Then it scans

- every request the fake received: the raw bytes (base64 payloads removed, and in full for the strings that
  cannot occur inside base64), every key and string of the decoded JSON (of a data URL only the part before
  the payload), the URL path, query and headers, and the decoded media bytes themselves (an mp4 or JPEG could
  carry a file name in its metadata; container and stream metadata of every mp4 are read too);
- every media location and text part of every request in every run's ``scenario_state.json`` (what the
  baselines' client receives, and what any client could forward);

for the gold-score patterns (``score_<k>``, ``_score_``), every original file name, base name and stem from
the metadata, every subset folder name as a path component (and anywhere in media paths and request JSON),
every ``gpt5_mini_check`` text and the field name itself: zero hits. Every text part must be exactly the
rubric prompt of PROTOCOL section 3 (copied in tests/helpers/protocol.py, not imported) with one of the
sample's tasks, once per row.

All forbidden strings are derived from the sample's metadata.jsonl at test time.
"""

import collections
import io
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import av
import pytest

from tests.helpers.fakes import CHAT, Recorded, media_parts, without_media_payloads
from tests.helpers.harness import request_states
from tests.helpers.protocol import RUBRIC
from tests.helpers.sample import sample_rows
from tests.helpers.suite import LEAK_MODELS, LEAK_SUITE, LeakModel, SampleSuite, leak_run_name

Model = LeakModel
MODELS = LEAK_MODELS
FAKE_MODELS = [m for m in MODELS if m.served]


@dataclass
class LeakRun:
    workdir: Path
    runs: Path
    requests: list[Recorded]
    data: Path

    def states(self, model: Model) -> list[dict[str, Any]]:
        return request_states(self.runs / leak_run_name(model, self.data))


@pytest.fixture(scope="module")
def leak_run(sample_suite: SampleSuite) -> LeakRun:
    return LeakRun(sample_suite.workdir, sample_suite.runs(LEAK_SUITE), sample_suite.leak_requests,
                   sample_suite.leak_data)


# --------------------------------------------------------------------------------------------- what must not leak


@dataclass(frozen=True)
class Forbidden:
    tokens: tuple[str, ...]
    """Literal strings: file names, base names, stems, label checks, the field name."""
    patterns: tuple["re.Pattern[str]", ...]
    """Gold-score patterns and subset folders as path components."""
    subsets: tuple[str, ...]

    def hits(self, text: str, where: str, subsets_anywhere: bool = False) -> list[str]:
        found = [f"{where}: {token!r}" for token in self.tokens if token in text]
        found += [f"{where}: /{pattern.pattern}/" for pattern in self.patterns if pattern.search(text)]
        if subsets_anywhere:
            found += [f"{where}: subset {subset!r}" for subset in self.subsets if subset in text]
        return found


def forbidden_strings() -> Forbidden:
    rows = sample_rows()
    tasks = [str(row["task"]) for row in rows]
    allowed = RUBRIC + "\n".join(tasks)  # a token that occurs in the prompt itself cannot be a leak

    tokens = set()
    for row in rows:
        name = str(row["file_name"])
        base = name.rsplit("/", 1)[-1]
        tokens.update({name, base, base.rsplit(".", 1)[0]})
        check = str(row.get("gpt5_mini_check") or "").strip()
        if check:
            tokens.add(check)
    tokens.add("gpt5_mini_check")
    tokens = {token for token in tokens if token and token not in allowed}
    subsets = sorted({str(row["file_name"]).split("/", 1)[0] for row in rows})
    patterns = [re.compile(r"score_\d", re.IGNORECASE), re.compile(r"_score_", re.IGNORECASE)]
    patterns += [re.compile(r"(?:^|[/\\])" + re.escape(subset) + r"(?:[/\\]|$)") for subset in subsets]
    return Forbidden(tuple(sorted(tokens)), tuple(patterns),
                     tuple(subset for subset in subsets if subset not in allowed))


BASE64_ALPHABET = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-")
MIN_BINARY_TOKEN = 8
"""In decoded media bytes only tokens this long are searched (a shorter one could occur by chance)."""


# --------------------------------------------------------------------------------------------- scanning helpers


def json_strings(value: Any, path: str = "$") -> Iterator[tuple[str, str]]:
    """Every key and string in a decoded JSON value, with where it is."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield f"{path} (key)", str(key)
            yield from json_strings(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from json_strings(item, f"{path}[{index}]")
    elif isinstance(value, str):
        if value.startswith("data:") and ";base64," in value:
            yield f"{path} (data URL header)", value.split(",", 1)[0]
        else:
            yield path, value


def mp4_metadata(data: bytes) -> list[str]:
    """Container, stream and format metadata values of an mp4 (title, comment, handler names ...)."""
    with av.open(io.BytesIO(data)) as container:
        values = [f"{k}={v}" for k, v in container.metadata.items()]
        for stream in container.streams:
            values += [f"{k}={v}" for k, v in stream.metadata.items()]
    return values


# --------------------------------------------------------------------------------------------- tests


def test_every_model_ran_over_the_whole_sample(leak_run: LeakRun) -> None:
    rows = sample_rows()
    for model in MODELS:
        states = leak_run.states(model)
        assert len(states) == len(rows), model.key
        assert all(s["result"]["success"] for s in states), model.key
    for model in FAKE_MODELS:
        sent = [r for r in leak_run.requests if r.model == model.served]
        assert len(sent) == len(rows), model.key
    assert {r.api for r in leak_run.requests} == {CHAT}
    assert len(leak_run.requests) == len(FAKE_MODELS) * len(rows)


def test_request_payloads_carry_no_label_name_subset_or_check(leak_run: LeakRun) -> None:
    forbidden = forbidden_strings()
    raw_tokens = [t for t in forbidden.tokens if set(t) - BASE64_ALPHABET]
    binary_tokens = [t.encode("utf-8") for t in forbidden.tokens if len(t.encode("utf-8")) >= MIN_BINARY_TOKEN]
    hits: list[str] = []
    media_checked = 0
    for recorded in leak_run.requests:
        where = f"request {recorded.index}"
        # Raw bytes: base64 payloads replaced by a marker, then searched for everything.
        hits += forbidden.hits(without_media_payloads(recorded), f"{where} raw (payloads removed)",
                               subsets_anywhere=True)
        # Raw bytes in full, for the strings base64 cannot produce by chance.
        raw = recorded.raw.decode("utf-8")
        hits += [f"{where} raw: {t!r}" for t in raw_tokens if t in raw]
        hits += [f"{where} raw: /{p.pattern}/" for p in forbidden.patterns[:2] if p.search(raw)]
        # URL and headers.
        hits += forbidden.hits(recorded.path + "?" + recorded.query, f"{where} URL", subsets_anywhere=True)
        hits += forbidden.hits(json.dumps(recorded.headers), f"{where} headers", subsets_anywhere=True)
        # Decoded JSON: every key and string (data URLs: the header only).
        for path, text in json_strings(recorded.body):
            hits += forbidden.hits(text, f"{where} {path}", subsets_anywhere=True)
        # The decoded media: no name inside the bytes or in an mp4's metadata.
        for part in media_parts(recorded)[1:]:
            assert part.data, f"{where}: media must be inline bytes"
            hits += [f"{where} {part.mime_type} bytes: {t!r}" for t in binary_tokens if t in part.data]
            if part.mime_type == "video/mp4":
                for value in mp4_metadata(part.data):
                    hits += forbidden.hits(value, f"{where} mp4 metadata", subsets_anywhere=True)
            media_checked += 1
    assert media_checked > len(leak_run.requests) / 2
    assert hits == [], "\n".join(hits[:50])


@pytest.mark.parametrize("model", MODELS, ids=[m.key for m in MODELS])
def test_scenario_state_requests_carry_no_label_name_subset_or_check(leak_run: LeakRun, model: Model) -> None:
    forbidden = forbidden_strings()
    hits: list[str] = []
    media_seen = 0
    for state in leak_run.states(model):
        request = state["request"]
        where = f"{model.key} {state['instance']['id']}"
        hits += forbidden.hits(request.get("prompt", ""), f"{where} prompt", subsets_anywhere=True)
        for media in request["multimodal_prompt"]["media_objects"]:
            if media["content_type"] == "text/plain":
                hits += forbidden.hits(media["text"], f"{where} text", subsets_anywhere=True)
                continue
            location = media["location"]
            media_seen += 1
            hits += forbidden.hits(location, f"{where} media path", subsets_anywhere=True)
            hits += forbidden.hits(Path(location).name, f"{where} media file name", subsets_anywhere=True)
            assert (leak_run.workdir / location).is_file(), location
    assert media_seen >= len(sample_rows())
    assert hits == [], "\n".join(hits[:50])


def _task_of(text: str) -> str:
    assert text.startswith(RUBRIC), f"not the rubric prompt:\n{text[:400]}"
    return text[len(RUBRIC):]


def _assert_prompts(texts: Sequence[Sequence[str]], what: str) -> None:
    """One text part per request, exactly the rubric with a task, each row's task once."""
    expected = collections.Counter(str(row["task"]) for row in sample_rows())
    tasks: collections.Counter[str] = collections.Counter()
    for parts in texts:
        assert len(parts) == 1, f"{what}: {len(parts)} text parts"
        tasks[_task_of(parts[0])] += 1
    assert tasks == expected, f"{what}: tasks sent differ from the metadata's"


@pytest.mark.parametrize("model", FAKE_MODELS, ids=[m.key for m in FAKE_MODELS])
def test_text_received_by_the_server_is_exactly_the_rubric_prompt(leak_run: LeakRun, model: Model) -> None:
    requests = [r for r in leak_run.requests if r.model == model.served]
    texts = []
    for recorded in requests:
        (message,) = recorded.body["messages"]  # one user message, no system prompt
        assert message["role"] == "user"
        parts = media_parts(recorded)
        assert parts[0].kind == "text", "text first"
        assert all(p.kind != "text" for p in parts[1:]), "no text between or after the media"
        texts.append([p.text or "" for p in parts if p.kind == "text"])
    _assert_prompts(texts, model.key)


@pytest.mark.parametrize("model", MODELS, ids=[m.key for m in MODELS])
def test_text_in_every_recorded_request_is_exactly_the_rubric_prompt(leak_run: LeakRun, model: Model) -> None:
    texts = []
    for state in leak_run.states(model):
        media = state["request"]["multimodal_prompt"]["media_objects"]
        assert media[0]["content_type"] == "text/plain"
        texts.append([m["text"] for m in media if m["content_type"] == "text/plain"])
    _assert_prompts(texts, model.key)


def test_the_scan_would_see_a_leak() -> None:
    """The forbidden strings are real: the metadata's own names and checks hit, the rubric does not."""
    forbidden = forbidden_strings()
    row = sample_rows()[0]
    assert forbidden.hits(json.dumps(row), "metadata row")
    assert forbidden.hits("benchmark_output/" + str(row["file_name"]), "path")
    assert forbidden.hits("x/" + str(row["file_name"]).split("/", 1)[0] + "/y.jpg", "subset folder")
    assert forbidden.hits("clip_attempt_0_score_3.mp4", "label pattern")
    assert forbidden.hits(RUBRIC + str(row["task"]), "prompt", subsets_anywhere=True) == []


def test_the_data_carries_labels_in_its_tags(leak_run: LeakRun) -> None:
    """The scan of mp4 metadata above is not vacuous: every source video the models' native mp4s came from leaks."""
    forbidden = forbidden_strings()
    for row in sample_rows():
        values = mp4_metadata((leak_run.data / "test" / str(row["file_name"])).read_bytes())
        assert forbidden.hits(" ".join(values), str(row["file_name"])), values
