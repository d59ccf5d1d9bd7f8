"""Where ``roboreward export-predictions`` writes: checked first, written whole or not at all, pushed in time.

- ``--out`` (parquet) may be new or an earlier parquet file, which is replaced; a folder, or a file that is not
  parquet, is refused. ``--format disk``: new, an empty folder or an earlier ``save_to_disk`` folder (only
  ``data-*.arrow``, ``state.json``, ``dataset_info.json``), which is replaced; anything else is refused. Nothing is
  written under ``<output-path>/runs``: helm-run's run folders.
- The export is written to a temporary sibling and renamed into place: a full disk or a kill leaves the earlier
  file (or nothing), never a truncated one.
- ``--push-to-hub``: every request has a time limit (:mod:`~helm_roboreward.protocol.data_sources`); a refused
  connection, a silent hub or an error reply ends with one message.
"""

import fnmatch
import os
import shutil
import tempfile
from typing import Any

from helm_roboreward.protocol.data_sources import (
    describe_error,
    hub_http_error_types,
    hub_timeout_error_types,
    limit_hub_requests,
)
from helm_roboreward.protocol.rows import DataError
from helm_roboreward.protocol.safe_files import file_mode, is_inside

PARQUET = "parquet"
DISK = "disk"
FORMATS = (PARQUET, DISK)
PARQUET_MAGIC = b"PAR1"
SAVED_DATASET_FILES = ("data-*.arrow", "state.json", "dataset_info.json")
"""What ``datasets.Dataset.save_to_disk`` writes into its folder."""


def _is_saved_dataset(folder: str) -> bool:
    names = os.listdir(folder)
    return ({"state.json", "dataset_info.json"} <= set(names)
            and all(any(fnmatch.fnmatch(name, pattern) for pattern in SAVED_DATASET_FILES) for name in names))


def check_export_target(out: str, output_format: str, output_path: str) -> None:
    """Refuse an ``--out`` the export must not replace (see the module docstring); nothing is read or written.

    Raises:
        DataError: It lies in helm-run's run folders, or holds something other than an earlier export.
    """
    runs = os.path.join(output_path, "runs")
    if is_inside(out, runs):
        raise DataError(f"--out {out} lies in helm-run's run folders ({os.path.realpath(runs)}); an export there "
                        "could replace a run's files. Write it elsewhere, e.g. beside the output folder")
    if not os.path.lexists(out):
        return
    if output_format == PARQUET:
        if os.path.isdir(out):
            raise DataError(f"--out {out} is a folder; --format parquet writes one file (a folder takes --format "
                            "disk): give a file name, e.g. predictions.parquet")
        if os.path.islink(out):
            return  # the link is replaced by the file, never written through
        with open(out, "rb") as handle:
            if handle.read(len(PARQUET_MAGIC)) != PARQUET_MAGIC:
                raise DataError(f"--out {out} exists and is not a parquet file (an earlier export is replaced, "
                                "nothing else): move it away, or choose another --out")
        return
    if os.path.islink(out) or not os.path.isdir(out):
        raise DataError(f"--out {out} exists and is not a folder; --format disk writes a folder (save_to_disk): "
                        "choose another --out")
    if os.listdir(out) and not _is_saved_dataset(out):
        raise DataError(f"--out {out} holds files other than an earlier export (save_to_disk writes "
                        f"{', '.join(SAVED_DATASET_FILES)}); it is replaced only when it holds nothing else. Choose a "
                        "new or empty folder")


def _write_failed(out: str, error: OSError) -> DataError:
    return DataError(f"--out {out}: cannot write the export ({error.strerror or error}); nothing was written and an "
                     "earlier export there is kept. Free space on that disk, or choose another --out")


def write_export(dataset: Any, out: str, output_format: str) -> None:
    """Write ``dataset`` to ``out`` atomically (a temporary sibling renamed into place).

    Raises:
        DataError: The write failed (full disk, no permission); ``out`` is as it was.
    """
    path = os.path.abspath(out)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
    except OSError as error:
        raise _write_failed(out, error) from None
    if output_format == PARQUET:
        _write_parquet(dataset, out, path)
    else:
        _write_disk(dataset, out, path)


def _write_parquet(dataset: Any, out: str, path: str) -> None:
    try:
        handle, temporary = tempfile.mkstemp(dir=os.path.dirname(path), prefix=f".{os.path.basename(path)}.",
                                             suffix=".partial")
    except OSError as error:
        raise _write_failed(out, error) from None
    os.close(handle)
    try:
        dataset.to_parquet(temporary)
        os.chmod(temporary, file_mode())  # as a plain open() would make it (mkstemp makes 0600)
        os.replace(temporary, path)
    except OSError as error:
        _remove(temporary)
        raise _write_failed(out, error) from None
    except BaseException:
        _remove(temporary)
        raise


def _write_disk(dataset: Any, out: str, path: str) -> None:
    temporary, previous = f"{path}.partial-{os.getpid()}", f"{path}.previous-{os.getpid()}"
    try:
        dataset.save_to_disk(temporary)
        if os.path.isdir(path):
            os.rename(path, previous)  # an earlier export or an empty folder (checked)
        os.rename(temporary, path)
    except OSError as error:
        shutil.rmtree(temporary, ignore_errors=True)
        if os.path.isdir(previous) and not os.path.exists(path):
            os.rename(previous, path)
        raise _write_failed(out, error) from None
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise
    shutil.rmtree(previous, ignore_errors=True)


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


def push(dataset: Any, repo_id: str, private: bool, token: str | None, out: str | None) -> None:
    """``dataset.push_to_hub``, every request with a time limit.

    Raises:
        DataError: The hub refused the connection, did not answer in time, or answered an error.
    """
    from huggingface_hub import constants
    from huggingface_hub.errors import HfHubHTTPError

    seconds = limit_hub_requests()
    try:
        dataset.push_to_hub(repo_id, private=private, token=token)
    except (HfHubHTTPError, OSError) + hub_http_error_types() as error:
        kept = f"the export is written to {out}; " if out else ""
        limit = f" (no answer within {seconds:g} s)" if isinstance(error, hub_timeout_error_types()) else ""
        raise DataError(f"--push-to-hub {repo_id}: the push to {constants.ENDPOINT} failed{limit} "
                        f"({describe_error(error, token)}); {kept}the hub dataset changes only when its one commit "
                        "completes: check the connection, HF_ENDPOINT and HF_TOKEN, then rerun") from None
