#!/usr/bin/env python3
"""Merge the output folders of leaderboard shards into one, for one helm-summarize over all of them.

Usage: scripts/merge_shards.py --suite SUITE --into DEST/benchmark_output SHARD/benchmark_output [SHARD ...]

Each shard is the ``-o`` folder of a helm-run that ran a disjoint part of the leaderboard (another machine,
another time). The merge copies, into DEST (which may already hold runs of the suite; they count as a shard):

- every completed run folder ``runs/SUITE/<run>/`` (run_spec, scenario, scenario_state, stats,
  per_instance_stats: HELM's completion test). A run held by two shards must have the same stats
  (``stats.json`` and ``per_instance_stats.json``, HELM's timing stats aside): the first copy is kept; different
  stats stop the merge. Shard summaries (``groups/``, ``runs.json``, ...) are not copied: summarize DEST.
- the media under ``scenarios/roboreward/``: content-addressed, so one name holds the same bytes in every shard;
  different bytes (or a different dataset provenance file) stop the merge. Verification stamps
  (``verified.json``, ``*.verified.json``: inode and times of the shard's files) and writers' temporary files
  are left out; the next run re-verifies the copied files and stamps them again.

Nothing is written until every check passed, and the checks refuse (naming the path and the fix): a folder in
``runs/SUITE/`` that looks like a run (its name has HELM's ``:``, or it holds a run file) but lacks one of the five
files, in a shard or in DEST (a killed helm-run's leftover, which the merge would otherwise drop or trip over);
a leftover ``.tmp-merge-*`` folder of an interrupted merge in DEST; and any symbolic link (or other non-regular
file) in a run folder, the suite folder or the media tree, so no byte from outside a shard is ever copied. Then
the media files are copied under a temporary name and renamed (a frame folder's manifest, ``frames.json``, last,
so a concurrent reader never sees a partial folder as complete), every run is copied into one temporary folder
in ``runs/SUITE/``, and only then is each renamed into place: a failure while writing removes the temporary
folder and adds no run (media files already renamed are complete, content-addressed copies).

Media locations are recorded in ``scenario_state.json`` relative to the folder helm-run ran in
(``benchmark_output/scenarios/roboreward/...`` with the default ``-o``). The merge checks that every one
resolves from DEST's parent folder, where helm-summarize and helm-server must then run; runs whose media do not
resolve still count in the leaderboard, but the RoboReward summarizer skips their predictions pages (one warning
per run). Standard library only: any Python 3.10+ runs it.
"""

import argparse
import filecmp
import json
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any

MEDIA = os.path.join("scenarios", "roboreward")
RUN_FILES = ("run_spec.json", "scenario.json", "scenario_state.json", "stats.json", "per_instance_stats.json")
STATS_FILES = ("stats.json", "per_instance_stats.json")
TIMING_STATS = frozenset({"inference_runtime", "inference_denoised_runtime", "inference_idealized_runtime",
                          "batch_size"})
"""HELM's efficiency stats that measure time (they differ between two runs of the same requests). The
RoboReward metrics record none of them; a run spec that adds HELM's efficiency metric would."""
STAMP_FILE = "verified.json"
STAMP_SUFFIX = ".verified.json"
MANIFEST_FILE = "frames.json"
STAGING_PREFIX = ".tmp-merge-"
"""The temporary folder (in ``runs/SUITE/``) and files a merge writes before renaming them into place."""


class MergeError(Exception):
    """A reason to refuse the merge (nothing has been written)."""


@dataclass
class Plan:
    runs: dict[str, str] = field(default_factory=dict)
    """run name -> the run folder to copy (not yet in DEST)."""
    duplicates: list[str] = field(default_factory=list)
    media: dict[str, str] = field(default_factory=dict)
    """path relative to scenarios/roboreward -> source file (not yet in DEST)."""
    unresolved: dict[str, list[str]] = field(default_factory=dict)
    """run name -> media locations that will not resolve from DEST's parent."""


def without_timing(stats: Any) -> Any:
    """``stats.json`` / ``per_instance_stats.json`` content without HELM's timing stats."""
    if isinstance(stats, list):
        return [without_timing(item) for item in stats
                if not (isinstance(item, dict) and isinstance(item.get("name"), dict)
                        and item["name"].get("name") in TIMING_STATS)]
    if isinstance(stats, dict):
        return {key: without_timing(value) for key, value in stats.items()}
    return stats


def read_json(path: str) -> Any:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def refuse_link(path: str, what: str) -> None:
    """Refuse ``path`` when it is a symbolic link (its bytes would come from wherever it points)."""
    if os.path.islink(path):
        raise MergeError(f"{what} {path} is a symbolic link (to {os.readlink(path)}); a merge copies only files that "
                         "are in the shard: replace the link with the file or folder itself")


def run_files(folder: str) -> list[str]:
    """Every file of a run folder (relative paths), refusing links and anything that is not a regular file."""
    files = []
    for directory, subdirs, names in os.walk(folder):
        for name in sorted(subdirs) + sorted(names):
            path = os.path.join(directory, name)
            refuse_link(path, "run file")
            if name in names and not os.path.isfile(path):
                raise MergeError(f"run file {path} is not a regular file; a run folder holds only files and folders")
        subdirs.sort()
        files += [os.path.relpath(os.path.join(directory, name), folder) for name in sorted(names)]
    return files


def looks_like_a_run(folder: str, name: str) -> bool:
    """A run folder, complete or not: HELM's run names hold ':'; a run file inside says so too."""
    return ":" in name or any(os.path.lexists(os.path.join(folder, f)) for f in RUN_FILES)


def completed_runs(output: str, suite: str) -> dict[str, str]:
    """Run name -> folder, for every completed run of ``suite`` in ``output``.

    Refuses (:class:`MergeError`) an incomplete run folder, a leftover of an interrupted merge, and links.
    Summary output (``groups/``, ``runs.json``, ...) and HELM's ``eval_cache/`` are not runs and are skipped.
    """
    suite_dir = os.path.join(output, "runs", suite)
    runs: dict[str, str] = {}
    for path, what in ((os.path.join(output, "runs"), "runs folder"), (suite_dir, "suite folder")):
        refuse_link(path, what)
    if not os.path.isdir(suite_dir):
        return runs
    for name in sorted(os.listdir(suite_dir)):
        folder = os.path.join(suite_dir, name)
        if name.startswith(STAGING_PREFIX):
            raise MergeError(f"{folder} is the leftover of an interrupted merge into {output}: remove it (its runs "
                             "were never renamed into place) and merge again")
        if os.path.islink(folder) and (":" in name or os.path.isdir(folder)):
            refuse_link(folder, "run folder")
        if not os.path.isdir(folder) or not looks_like_a_run(folder, name):
            continue  # summarize output (groups/, runs.json, ...), HELM's eval_cache/
        missing = [f for f in RUN_FILES if not os.path.isfile(os.path.join(folder, f))]
        if missing:
            raise MergeError(f"run {name} in {output} is incomplete (no {', '.join(missing)}): a run that did not "
                             "finish (a killed helm-run?). Finish it (helm-run ... --skip-completed-runs reruns only "
                             f"what is missing) or remove the folder {folder}, then merge again")
        run_files(folder)  # no links in it
        runs[name] = folder
    return runs


def media_files(output: str) -> dict[str, str]:
    """Relative path -> file, for the media and provenance files of ``output`` (stamps, temporaries left out)."""
    root = os.path.join(output, MEDIA)
    for path in (os.path.join(output, "scenarios"), root):
        refuse_link(path, "media folder")
    files: dict[str, str] = {}
    for directory, subdirs, names in os.walk(root):
        for name in subdirs:
            refuse_link(os.path.join(directory, name), "media folder")
        subdirs.sort()
        for name in sorted(names):
            stamp = name == STAMP_FILE or name.endswith(STAMP_SUFFIX)
            if stamp or (name.startswith(".tmp-") and name.endswith(".part")):
                continue
            path = os.path.join(directory, name)
            refuse_link(path, "media file")
            if not os.path.isfile(path):
                raise MergeError(f"{path} is not a regular file; the media cache holds only regular files")
            files[os.path.relpath(path, root).replace(os.sep, "/")] = path
    return files


def recorded_media(run_folder: str) -> list[str]:
    state = read_json(os.path.join(run_folder, "scenario_state.json"))
    locations = []
    for request_state in state.get("request_states", []):
        prompt = (request_state.get("request") or {}).get("multimodal_prompt") or {}
        for media in prompt.get("media_objects", []):
            if media.get("location"):
                locations.append(media["location"])
    return locations


def plan_merge(dest: str, shards: list[str], suite: str) -> Plan:
    plan = Plan()
    held: dict[str, str] = dict(completed_runs(dest, suite)) if os.path.isdir(dest) else {}
    media_held: dict[str, str] = media_files(dest) if os.path.isdir(dest) else {}
    for shard in shards:
        if not os.path.isdir(os.path.join(shard, "runs", suite)):
            raise MergeError(f"{shard} has no runs/{suite}/ (is it a helm-run -o folder of suite {suite}?)")
        for name, folder in completed_runs(shard, suite).items():
            if name in held:
                for stats_file in STATS_FILES:
                    ours = without_timing(read_json(os.path.join(held[name], stats_file)))
                    theirs = without_timing(read_json(os.path.join(folder, stats_file)))
                    if ours != theirs:
                        raise MergeError(f"run {name} is in {held[name]} and {folder} with different {stats_file}: "
                                         "the shards did not compute the same thing (data, package version, "
                                         "model answers); keep one of them out of the merge")
                plan.duplicates.append(name)
                continue
            held[name] = folder
            plan.runs[name] = folder
        for relative, path in media_files(shard).items():
            if relative in media_held:
                if not filecmp.cmp(media_held[relative], path, shallow=False):
                    raise MergeError(f"{MEDIA}/{relative} differs between {media_held[relative]} and {path}: "
                                     "the shards prepared media differently (package versions or data revisions "
                                     "differ); merge only shards made by the same setup")
                continue
            media_held[relative] = path
            plan.media[relative] = path
    parent = os.path.dirname(os.path.abspath(dest))
    dest_media = os.path.realpath(os.path.join(dest, MEDIA))
    for name, folder in plan.runs.items():
        bad = []
        for location in recorded_media(folder):
            if os.path.isabs(location):
                bad.append(location)
                continue
            resolved = os.path.realpath(os.path.join(parent, location))
            relative = os.path.relpath(resolved, dest_media).replace(os.sep, "/")
            if relative.startswith("..") or relative not in media_held:
                bad.append(location)
        if bad:
            plan.unresolved[name] = bad
    return plan


def copy_file(source: str, target: str) -> None:
    os.makedirs(os.path.dirname(target), exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=STAGING_PREFIX, suffix=".part", dir=os.path.dirname(target))
    os.close(handle)
    try:
        shutil.copyfile(source, temporary)
        os.replace(temporary, target)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def apply(plan: Plan, dest: str, suite: str) -> None:
    """Write the merge: media first (manifests last), then every run staged in one folder and renamed into place."""
    media_root = os.path.join(dest, MEDIA)
    for relative in sorted(plan.media, key=lambda r: (r.rsplit("/", 1)[-1] == MANIFEST_FILE, r)):
        copy_file(plan.media[relative], os.path.join(media_root, *relative.split("/")))
    suite_dir = os.path.join(dest, "runs", suite)
    os.makedirs(suite_dir, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=suite_dir)
    try:
        staged = []
        for index, (name, folder) in enumerate(plan.runs.items()):
            target = os.path.join(staging, str(index))
            for relative in run_files(folder):  # checked again: regular files only, no link followed
                os.makedirs(os.path.join(target, os.path.dirname(relative)), exist_ok=True)
                shutil.copyfile(os.path.join(folder, relative), os.path.join(target, relative))
            os.makedirs(target, exist_ok=True)
            staged.append((target, os.path.join(suite_dir, name)))
        for target, final in staged:
            if os.path.lexists(final):
                raise MergeError(f"{final} appeared while merging (another merge or helm-run into {dest}?)")
            os.rename(target, final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", required=True, help="the helm-run --suite every shard used")
    parser.add_argument("--into", required=True, help="the merged -o folder (name it benchmark_output)")
    parser.add_argument("--dry-run", action="store_true", help="check and report, copy nothing")
    parser.add_argument("shards", nargs="+", help="each shard's helm-run -o folder")
    args = parser.parse_args(argv)
    dest = os.path.abspath(args.into)
    shards = [os.path.abspath(shard) for shard in args.shards]
    if dest in shards:
        print("merge_shards: --into must not be one of the shards (it already counts as one)", file=sys.stderr)
        return 2
    try:
        plan = plan_merge(dest, shards, args.suite)
    except MergeError as error:
        print(f"merge_shards: refusing to merge: {error}", file=sys.stderr)
        return 1
    if not args.dry_run:
        try:
            apply(plan, dest, args.suite)
        except (OSError, MergeError) as error:
            print(f"merge_shards: the merge stopped while writing into {dest}: {error}. Every run it had renamed into "
                  "place is complete and the others were not added (their temporary folder is removed); media files "
                  "already copied are complete copies. Fix the cause and merge again (it skips what is there).",
                  file=sys.stderr)
            return 1
    verb = "would copy" if args.dry_run else "copied"
    print(f"merge_shards: {verb} {len(plan.runs)} run(s) and {len(plan.media)} media file(s) into {dest}; "
          f"{len(plan.duplicates)} run(s) held twice with the same stats kept once")
    for name, bad in sorted(plan.unresolved.items()):
        print(f"merge_shards: warning: run {name}: {len(bad)} media location(s) such as {bad[0]!r} do not resolve "
              f"from {os.path.dirname(dest)}; its predictions pages will be skipped. Run each shard from a folder "
              "holding its benchmark_output with the default -o, and helm-summarize from the merged folder's parent",
              file=sys.stderr)
    print(f"merge_shards: next: cd {os.path.dirname(dest)} && helm-summarize --suite {args.suite} "
          f"-o {os.path.basename(dest)} ...")
    return 0


if __name__ == "__main__":
    sys.exit(main())
