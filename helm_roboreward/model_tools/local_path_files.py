"""A ``--local-path``'s ``model_metadata.yaml`` and ``model_deployments.yaml``, read, merged and written safely.

What ``roboreward add-model`` (:mod:`helm_roboreward.model_tools.add_model`) writes with: the entries of a file
(refusing the package's own configuration and files HELM could not read), the merge rules (``--force`` replaces a
model's entries, ``--take-deployment`` another model's deployment name), and an exclusive ``flock`` on a lock file
next to each YAML file that a read-modify-write holds from its read to its (atomic) write.
"""

import contextlib
import fcntl
import os
from collections.abc import Iterator
from typing import Any

import cattrs
import dacite
import yaml
from helm.benchmark.model_deployment_registry import DEPLOYMENT_NAME_TO_MODEL_DEPLOYMENT, ModelDeployments
from helm.benchmark.model_metadata_registry import ModelMetadataList

from helm_roboreward.config import MODEL_DEPLOYMENTS_FILE, MODEL_METADATA_FILE, config_dir


class AddModelError(ValueError):
    """A bad ``add-model`` request; the message names the input and the fix."""


def refuse_package_config(path: str) -> None:
    """Refuse a file that is (a link into) the package's own configuration; the message names the two ways out."""
    package = os.path.realpath(config_dir())
    real = os.path.realpath(path)
    if os.path.islink(path) or os.path.dirname(real) == package:
        folder = os.path.dirname(path) or "."
        raise AddModelError(
            f"{path} is the package's own configuration (a link to {real}); writing there would change the package "
            f"for every run. Either pass --local-path DIR, a folder of your own (the new files hold your models; "
            f"use the same --local-path for helm-run and helm-summarize), or make {folder}'s files your own "
            f"copies first: cp --remove-destination {os.path.join(package, MODEL_METADATA_FILE)} "
            f"{os.path.join(package, MODEL_DEPLOYMENTS_FILE)} {folder}/ and run add-model again."
        )


def read_entries(path: str, key: str) -> tuple[list[dict[str, Any]], bool]:
    """The entries under ``key`` of an existing file (none when absent) and whether it has comments."""
    if not os.path.exists(path):
        return [], False
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        content = yaml.safe_load(text)
    except (OSError, UnicodeDecodeError) as error:
        raise AddModelError(f"{path}: cannot read it ({error}); fix its permissions or pass another "
                            "--local-path") from None
    except yaml.YAMLError as error:
        raise AddModelError(f"{path}: not valid YAML ({' '.join(str(error).split())}); fix the file (HELM's "
                            "format) or pass another --local-path") from None
    if content is None:
        return [], False
    entries = content.get(key) if isinstance(content, dict) else None
    if not isinstance(entries, list) or not all(isinstance(item, dict) and item.get("name") for item in entries):
        raise AddModelError(f"{path}: expected a mapping with a '{key}:' list of entries that each have a name "
                            f"(HELM's {os.path.basename(path)} format); fix the file or pass another --local-path")
    has_comments = any(line.lstrip().startswith("#") or " #" in line for line in text.splitlines())
    return entries, has_comments


def merged_entries(entries: list[dict[str, Any]], new: dict[str, Any], path: str, force: bool,
                   registered: bool) -> list[dict[str, Any]]:
    """``entries`` with ``new`` (replacing an entry of its name only with ``force``; a name HELM knows refused)."""
    names = [str(item["name"]) for item in entries]
    name = str(new["name"])
    if name in names:
        if not force:
            raise AddModelError(f"{path} already has an entry named {name}; pass --force to replace it")
        return [new if str(item["name"]) == name else item for item in entries]
    if registered:
        raise AddModelError(f"{name} is already known to HELM (a built-in or this package's); run it by name "
                            "(model=... or model_deployment=...), or add it under another name")
    return entries + [new]


def merged_deployments(entries: list[dict[str, Any]], new: dict[str, Any], path: str, force: bool,
                       take_deployment: bool, notes: list[str]) -> list[dict[str, Any]]:
    """The file's deployments with the model's one deployment: ``new``.

    ``force`` replaces every deployment of the model in the file (whatever its name: another ``--client`` gives
    another name, and HELM would keep using the first); ``take_deployment`` replaces a deployment of that name that
    belongs to another model (never ``force``: that would silently take another model's deployment).
    """
    name, model = str(new["name"]), str(new["model_name"])
    same_name = [item for item in entries if str(item["name"]) == name]
    owner = str(same_name[0].get("model_name")) if same_name else None
    if owner is not None and owner != model:
        if not take_deployment:
            raise AddModelError(
                f"{path}: deployment {name} already belongs to {owner} (a deployment is named <client>/<the name after "
                f"'/'>, so {model} and {owner} would share it); pass --take-deployment to give it to {model} ({owner} "
                f"then has no deployment there), or add {model} under another name")
        notes.append(f"  note: deployment {name} was {owner}'s: {owner} has no deployment in {path} now (add one "
                     f"with roboreward add-model {owner} --client <client> --force)")
    elif owner is not None and not force:
        raise AddModelError(f"{path} already has an entry named {name}; pass --force to replace it")
    if owner is None:
        known = DEPLOYMENT_NAME_TO_MODEL_DEPLOYMENT.get(name)
        if known is not None:
            raise AddModelError(f"{name} is already known to HELM (a built-in or this package's deployment of "
                                f"{known.model_name}); run it by name (model_deployment={name}), or add {model} "
                                "under another name")
    others = [str(item["name"]) for item in entries
              if str(item.get("model_name")) == model and str(item["name"]) != name]
    if others and not force:
        raise AddModelError(f"{path} already has a deployment of {model} ({', '.join(others)}); pass --force to "
                            "replace it")
    notes += [f"  replaced deployment {other} of {model} (--force: one deployment per added model)" for other in others]
    replaced = {name, *others}
    merged: list[dict[str, Any]] = []
    for item in entries:  # the new entry where the first replaced one was; other entries in their order
        if str(item["name"]) not in replaced:
            merged.append(item)
        elif new not in merged:
            merged.append(new)
    return merged if new in merged else merged + [new]


def check_helm_reads(metadata: list[dict[str, Any]], deployments: list[dict[str, Any]], local_path: str) -> None:
    """Refuse merged entries that HELM's own loaders would not read."""
    try:
        dacite.from_dict(ModelMetadataList, {"models": metadata})
        cattrs.structure({"model_deployments": deployments}, ModelDeployments)
    except Exception as error:  # dacite and cattrs raise their own error types
        raise AddModelError(f"{local_path}: HELM could not read the merged files ({type(error).__name__}: "
                            f"{error}); fix the existing entries first") from None


def dump_entries(key: str, entries: list[dict[str, Any]], header: str) -> bytes:
    """The file's new bytes: ``header`` and the entries in HELM's YAML format."""
    body = yaml.safe_dump({key: entries}, sort_keys=False, allow_unicode=True, default_flow_style=False, width=120)
    return (header + body).encode("utf-8")


def lock_path(path: str) -> str:
    """The lock file that guards read-modify-write of ``path``: ``.<name>.lock`` next to it."""
    return os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.lock")


@contextlib.contextmanager
def locked(paths: list[str]) -> Iterator[None]:
    """Hold an exclusive ``flock`` on the lock file of every path, taken in the given order (always the same)."""
    with contextlib.ExitStack() as stack:
        for path in paths:
            handle = stack.enter_context(open(lock_path(path), "a+b"))
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)  # released when the file is closed
        yield
