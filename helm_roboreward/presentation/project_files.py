"""The files a HELM working folder needs, generated from the package: what ``roboreward files`` writes.

A pip install has no checkout, so the README's commands (``--conf-paths run_specs/...``,
``--schema-path static/...``, ``--local-path prod_env``) need these files written into the folder
helm-run runs from. The repository's copies are the same text (a test keeps them equal):

- ``static/schema_roboreward.yaml``: the leaderboard schema (:mod:`helm_roboreward.presentation.schema`); with ``--data
  <dir>`` it also covers the subsets of that local copy the benchmark does not know;
- ``run_specs/roboreward.conf``: the official leaderboard, one entry per subset, ``model=vlm``;
- ``run_specs/roboreward_sample.conf``: the offline demo on the bundled sample;
- ``prod_env/model_metadata.yaml`` and ``prod_env/model_deployments.yaml``: the package's models
  (display names for helm-summarize, the vLLM and baseline deployments).
"""

import os
from collections.abc import Sequence

from helm_roboreward.config import MODEL_DEPLOYMENTS_FILE, MODEL_METADATA_FILE, config_dir
from helm_roboreward.core.benchmark import METADATA_FILE, OFFICIAL_SUBSETS, SAMPLE_SUBSETS, TEST_SPLIT
from helm_roboreward.data.rows import DataError, metadata_path, read_metadata
from helm_roboreward.media.paths import require_inside, write_inside
from helm_roboreward.presentation.schema import render_schema

SCHEMA_PATH = os.path.join("static", "schema_roboreward.yaml")
LEADERBOARD_CONF = os.path.join("run_specs", "roboreward.conf")
SAMPLE_CONF = os.path.join("run_specs", "roboreward_sample.conf")
BASELINES = ("baseline/constant-3", "baseline/uniform-random")


def _conf(comment: Sequence[str], descriptions: Sequence[str]) -> str:
    lines = [f"# {line}" for line in comment] + ["entries: ["]
    lines += [f'  {{description: "{description}", priority: 1}}' for description in descriptions]
    return "\n".join(lines + ["]"]) + "\n"


def leaderboard_conf() -> str:
    """The run entries of the official leaderboard: one per subset, every vision-language model."""
    return _conf(
        [
            "RoboRewardBench, official leaderboard: one entry per subset, every vision-language model,",
            "official per-model video routing (video=auto). Use with -m 1000 (RoboArena has 1,000 rows).",
            "helm-run --conf-paths run_specs/roboreward.conf --suite v1 -m 1000 --models-to-run <org/model> ...",
        ],
        [f"roboreward:subset={subset.id},model=vlm" for subset in OFFICIAL_SUBSETS],
    )


def sample_conf() -> str:
    """The run entries of the offline demo: the bundled sample with the two baselines."""
    return _conf(
        [
            "Offline demo: the bundled sample with the offline baselines (no network, no GPU).",
            "helm-run --conf-paths run_specs/roboreward_sample.conf --suite demo -m 100",
        ],
        [f"roboreward:subset={subset.id},data=sample,model={model}" for subset in SAMPLE_SUBSETS
         for model in BASELINES],
    )


def generated_texts(extra_subsets: Sequence[str] = ()) -> dict[str, str]:
    """``relative path -> text`` of every generated file.

    Args:
        extra_subsets: Subsets of local copies the schema must also cover
            (:func:`helm_roboreward.presentation.schema.build_schema`).
    """
    texts = {SCHEMA_PATH: render_schema(extra_subsets), LEADERBOARD_CONF: leaderboard_conf(),
             SAMPLE_CONF: sample_conf()}
    for name in (MODEL_METADATA_FILE, MODEL_DEPLOYMENTS_FILE):
        with open(os.path.join(config_dir(), name), encoding="utf-8") as handle:
            texts[os.path.join("prod_env", name)] = handle.read()
    return texts


def subsets_of_local_copy(data: str) -> list[str]:
    """The subset ids of a local copy (``<data>/test/metadata.jsonl``), in order of first appearance.

    Raises:
        DataError: ``data`` is not a folder, or its metadata is missing or invalid (the message says which row).
    """
    if not os.path.isdir(data):
        raise DataError(f"--data {data!r}: not a folder. Give the folder of a local copy holding "
                        f"{TEST_SPLIT}/{METADATA_FILE} (the hub and the bundled sample hold only known subsets).")
    rows = read_metadata(metadata_path(data))
    return list(dict.fromkeys(row.subset for row in rows))


class ExistingFilesError(Exception):
    """Files that would be overwritten; the message lists them."""


def _same_text(path: str, text: str) -> bool:
    if os.path.islink(path):
        return False  # never read through a link (it may lead anywhere); with --force it is replaced by the file
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read() == text
    except (OSError, UnicodeDecodeError):
        return False


_FIX = "remove the link or file, or choose another --out"


def write_project_files(folder: str, force: bool = False, extra_subsets: Sequence[str] = ()) -> tuple[list[str], int]:
    """Write every generated file under ``folder`` that is missing or differs.

    Files that already hold the same text (in a checkout, the repository's own) are left alone. Every file
    is written atomically through a unique temporary file in its folder (a link planted at the file or at a
    temporary name is replaced, never written through), and only inside ``folder``: a folder on the way
    that is a link leading out of it stops the command before anything is written.

    Args:
        folder: The folder helm-run will run from.
        force: Overwrite files that exist with other content.
        extra_subsets: Subsets of local copies the schema must also cover.

    Returns:
        The paths written, and how many files were already up to date.

    Raises:
        ExistingFilesError: Some files exist with other content and ``force`` is not set; nothing is written.
        UnsafePathError: A path would leave ``folder``; nothing is written.
        OSError: A file cannot be written.
    """
    relative_texts = generated_texts(extra_subsets)
    texts = {os.path.join(folder, relative): text for relative, text in relative_texts.items()}
    for path in texts:
        require_inside(os.path.dirname(path), folder, "folder", _FIX)  # before anything is written
    pending = {path: text for path, text in texts.items() if not _same_text(path, text)}
    conflicts = [path + (" (a symbolic link)" if os.path.islink(path) else "")
                 for path in pending if os.path.lexists(path)]
    if conflicts and not force:
        raise ExistingFilesError(
            f"{len(conflicts)} file(s) exist with other content: {', '.join(conflicts)}. Move them away or pass "
            "--force to overwrite them."
        )
    for relative, text in relative_texts.items():
        if os.path.join(folder, relative) in pending:
            write_inside(folder, relative.replace(os.sep, "/"), text.encode("utf-8"), _FIX)
    return list(pending), len(texts) - len(pending)
