"""The report's text outputs: ``report.md`` (every section) and, through :mod:`.csv_tables`, the CSV tables.

Rendering is pure (strings from :class:`ReportData`); :func:`write_report` writes the files.
"""

from collections.abc import Sequence

from helm_roboreward.protocol.published import PUBLISHED_LEADERBOARD
from helm_roboreward.protocol.rules import (
    EXPECTED,
    LEADERBOARD_URL,
    OFFICIAL_SUBSET_IDS,
    RUBRIC_SCORES,
    SAMPLE_SUBSET_IDS,
    subset_info,
)
from helm_roboreward.protocol.safe_files import write_inside
from helm_roboreward.results.report.analysis import ModelSummary, ReportData
from helm_roboreward.results.report.bootstrap import Interval
from helm_roboreward.results.report.csv_tables import (
    CALIBRATION_FILE,
    LEADERBOARD_FILE,
    PEER_FILE,
    REWARD_MODEL_FILE,
    SUBSET_FILE,
    csv_texts,
    leaderboard_rows,
)
from helm_roboreward.results.report.csv_tables import number as _number
from helm_roboreward.results.report.markdown import markdown_code, markdown_text
from helm_roboreward.results.report.plots import (
    HEATMAP_FILE,
    MACRO_FILE,
    OUT_FIX,
    RELIABILITY_PLOT,
    REWARD_MODEL_PLOT,
    confusion_file,
)
from helm_roboreward.results.report.published_rows import PUBLISHED_MARK, Placement
from helm_roboreward.results.report.reward_model import RewardModelSummary

REPORT_FILE = "report.md"


def _interval(interval: Interval | None) -> str:
    return "-" if interval is None else f"[{_number(interval.low)}, {_number(interval.high)}]"


def _rate(count: int, total: int) -> str:
    return f"{count} ({count / total:.1%})" if total else f"{count} (-)"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A Markdown table; every cell escaped (:func:`markdown_text`), so a cell never splits or ends its row."""
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(markdown_text(cell) for cell in cells) + " |"

    return [line(header), "|" + "|".join("---" for _ in header) + "|"] + [line(row) for row in rows]


def _names(subsets: Sequence[str]) -> str:
    return ", ".join(markdown_text(subset_info(subset).display_name) for subset in subsets)


def _intro(data: ReportData) -> list[str]:
    settings = data.settings
    lines = [f"# RoboRewardBench report: suite {markdown_code(data.suite)}", "",
             f"{len(data.models)} model(s), {len(data.subsets)} subset(s). MAE is on the 1..5 scale (lower is "
             "better); the mean over subsets is unweighted (macro), as on the official leaderboard.",
             "",
             f"Confidence intervals: {settings.confidence:.0%} clustered percentile bootstrap, "
             f"**{settings.resamples} resamples, seed {settings.seed}** (see [Method](#method))."]
    ids = [subset.id for subset in data.subsets]
    official = [subset for subset in OFFICIAL_SUBSET_IDS if subset in ids]
    if all(subset in SAMPLE_SUBSET_IDS for subset in ids):
        lines += ["", "These are the bundled sample's simulated subsets: not comparable with the official "
                  "leaderboard."]
    elif official and len(official) < len(OFFICIAL_SUBSET_IDS):
        absent = [subset for subset in OFFICIAL_SUBSET_IDS if subset not in ids]
        lines += ["", f"The suite covers {len(official)} of the {len(OFFICIAL_SUBSET_IDS)} official subsets; "
                  f"absent from every model: {_names(absent)}. Means are over the subsets present."]
    if data.warnings:
        lines += ["", "## Warnings", ""] + [f"- {markdown_text(warning)}" for warning in data.warnings]
    return lines


ALL_FAILED = "every request failed"
"""What a model's cell says where its run left every failed request out (``failed=skip``): no error to average."""


def _macro_cell(model: ModelSummary) -> str:
    if model.macro is None and model.failed_subsets:
        return f"{ALL_FAILED} (failed=skip)"
    return _number(model.macro.estimate if model.macro else None)


def _leaderboard(data: ReportData) -> list[str]:
    header = ["Model", "Mean"] + [subset.display_name for subset in data.subsets]
    rows = []
    for model, row in zip(data.models, leaderboard_rows(data), strict=True):
        cells = [row[0], _macro_cell(model)] + [
            cell or ("failed" if subset.id in model.failed_subsets else "-")
            for subset, cell in zip(data.subsets, row[2:], strict=True)]
        rows.append(cells)
    lines = ["", "## Leaderboard", "", "Official format: the mean is the unweighted mean of the per-subset MAEs "
             f"present for the model. Also in `{LEADERBOARD_FILE}`. *failed*: every request of the model failed "
             "there and its run left them out (`failed=skip`): no error to average, as on HELM's leaderboard.", ""]
    published = data.published
    for name, maes in (published.subset_mae.items() if published and not published.left_out else []):
        present = [maes[subset.id] for subset in data.subsets if subset.id in maes]
        rows.append([f"{name} ({PUBLISHED_MARK})", _number(sum(present) / len(present) if present else None)]
                    + [_number(maes.get(subset.id)) for subset in data.subsets])
        lines[-2] += (f" The row marked *{PUBLISHED_MARK}* is {name}'s published per-subset MAEs (its mean over "
                      "the subsets shown), for reference.")
    lines += _table(header, rows)
    if published is not None and published.left_out:
        lines += ["", f"Published leaderboard rows left out: {markdown_text(published.left_out)}."]
    gaps = [model for model in data.models if model.missing_subsets or model.failed_subsets]
    if gaps:
        lines += ["", "Subsets missing per model (its mean is over the subsets it has):", ""]
        for model in gaps:
            parts = []
            if model.missing_subsets:
                parts.append(f"no errors for {_names(model.missing_subsets)}; mean over {len(model.subset_mae)} of "
                             f"{len(data.subsets)} subsets")
            if model.failed_subsets:
                parts.append(f"{ALL_FAILED} in {_names(model.failed_subsets)} (failed=skip left them out)")
            lines.append(f"- {markdown_text(model.display_name)}: " + "; ".join(parts))
    return lines


def _macro(data: ReportData) -> list[str]:
    level = f"{data.settings.confidence:.0%}"
    rows = [[str(rank), model.display_name, _macro_cell(model),
             _interval(model.macro), str(len(model.subset_mae)), str(sum(model.subset_rows.values()))]
            for rank, model in enumerate(data.models, start=1)]
    return ["", f"## Macro MAE with {level} confidence intervals", ""] + _table(
        ["Rank", "Model", "Macro MAE", f"{level} CI", "Subsets", "Rows scored"], rows
    ) + ["", f"![Macro MAE per model]({MACRO_FILE})"]


def _published(data: ReportData) -> list[str]:
    published = data.published
    if published is None or published.left_out:
        return []  # turned off (--no-published), or left out with the line under the leaderboard
    lines = ["", f"## Published leaderboard ({PUBLISHED_MARK})", "",
             f"The {len(PUBLISHED_LEADERBOARD)} macro MAEs of the official leaderboard ({LEADERBOARD_URL}, read "
             f"2026-11-12), {PUBLISHED_MARK} here, with this suite's models placed by macro MAE (*would rank*: 1 + "
             f"the published models strictly better). A model is placed only when its mean covers all "
             f"{len(OFFICIAL_SUBSET_IDS)} subsets, as the published means do.", ""]
    placed = sorted((p for p in published.placements if p.rank is not None), key=lambda p: p.rank or 0)
    rows = []
    for rank, entry in enumerate(PUBLISHED_LEADERBOARD, start=1):
        rows += [[f"would rank {p.rank}", p.score.display_name, _number(p.score.macro_mae), _this_suite(p)]
                 for p in placed if p.rank == rank]
        rows.append([str(rank), entry.display_name, _number(entry.macro_mae), PUBLISHED_MARK])
    rows += [[f"would rank {p.rank}", p.score.display_name, _number(p.score.macro_mae), _this_suite(p)]
             for p in placed if (p.rank or 0) > len(PUBLISHED_LEADERBOARD)]
    lines += _table(["Rank", "Model", "Macro MAE", "Row"], rows)
    unplaced = [p for p in published.placements if p.rank is None]
    if unplaced:
        lines += ["", "Not placed (the mean covers fewer subsets than the published means):", ""]
        lines += [f"- {markdown_text(p.score.display_name)}: {p.score.official_subsets} of {len(OFFICIAL_SUBSET_IDS)} "
                  "subsets" for p in unplaced]
    return lines


def _this_suite(placement: Placement) -> str:
    if placement.published_mae is None:
        return "this suite"
    return f"this suite (published for this model: {_number(placement.published_mae)})"


def _peers(data: ReportData) -> list[str]:
    lines = ["", "## Peer metrics", "",
             "What other evaluations of RoboRewardBench report (docs/reward_metrics.md, \"Peer metrics\"): the "
             "instance-weighted (micro) MAE beside the macro, exact and within-1 accuracy (the answer at most 1 from "
             "the gold score), each macro over subsets and micro over rows, and the mean parsed score per gold score "
             "(pooled over subsets; the parsed answers behind it in parentheses). The rows are the MAE's: an "
             "unparseable answer is neither exact nor within 1 and has no prediction; a failed request is charged as "
             f"the run's `failed=` policy charges it in the MAE. Also in `{PEER_FILE}`.", ""]
    header = ["Model", "MAE macro", "MAE micro", "Exact macro", "Exact micro", "Within 1 macro", "Within 1 micro"]
    header += [f"Mean pred. gold {gold_score}" for gold_score in RUBRIC_SCORES]
    rows = []
    for model in data.models:
        peer = model.peer
        if peer is None:
            continue
        rows.append([model.display_name] + [_number(value) for value in (
            peer.macro_mae, peer.micro_mae, peer.exact_macro, peer.exact_micro, peer.within_one_macro,
            peer.within_one_micro)] + [
                f"{_number(peer.mean_prediction[gold_score], 2)} ({peer.prediction_rows[gold_score]})"
                for gold_score in RUBRIC_SCORES])
    return lines + _table(header, rows)


def _pairwise(data: ReportData) -> list[str]:
    lines = ["", "## Pairwise comparisons", ""]
    if len(data.models) < 2:
        return lines + ["Only one model in the suite: there is no pair to compare."]
    level = f"{data.settings.confidence:.0%}"
    lines += [f"For every pair, over the instances both models have an error for: the macro-MAE difference "
              f"(first minus second; negative means the first is better) with a paired {level} clustered bootstrap "
              "CI (the same resampled clusters for both). *Separated* means the CI excludes 0.", ""]
    rows = [[pair.first, pair.second, _number(pair.difference.interval.estimate),
             _interval(pair.difference.interval), "yes" if pair.difference.interval.excludes_zero else "no",
             str(pair.difference.num_rows), str(pair.difference.num_subsets)] for pair in data.pairs]
    lines += _table(["Model A", "Model B", "A - B", f"{level} CI", "Separated", "Shared rows", "Subsets"], rows)
    expected = len(data.models) * (len(data.models) - 1) // 2
    if len(data.pairs) < expected:
        lines += ["", f"{expected - len(data.pairs)} pair(s) share no instance and are not compared."]
    return lines


REWARD_HEADERS = {"preference_accuracy": "Preference acc.", "ladder_accuracy": "Ladder acc.",
                  "ladder_tau_b": "Ladder tau-b", "clip_accuracy": "Clip acc.", "success_auroc": "Success AUROC",
                  "success_f1": "Success F1", "success_mcc": "Success MCC"}


def _reward_cell(summary: RewardModelSummary, name: str) -> str:
    interval, support = summary.macro.get(name), summary.support.get(name)
    if interval is None or support is None:
        return "-"
    flag = "; too small" if support.too_small else ""
    return f"{_number(interval.estimate)} {_interval(interval)} ({support.clusters} clusters{flag})"


def _reward_model(data: ReportData) -> list[str]:
    settings = data.settings
    level = f"{settings.confidence:.0%}"
    lines = ["", "## Reward-model metrics", "",
             "How a reward model orders outcomes and detects success (docs/reward_metrics.md has every rule): "
             "same-task preference accuracy (pairs of rows with the same task and different gold scores, ties "
             "half), the counterfactual ladder (the tasks scored on one video: pairwise accuracy and Kendall "
             "tau-b), clip monotonicity (an episode's clips and original), and success detection (gold 5 against "
             "below: AUROC of the score; F1 and Matthews correlation of scoring 5). Unparseable answers and "
             "failed requests count as the lowest score, 1 (a run with `failed=skip` leaves its failed requests out "
             "of these statistics too). Each is computed per subset and averaged over the "
             f"subsets where it is defined, with a {level} clustered bootstrap CI (rows of one episode, video or "
             f"preference pair move together). Also in `{REWARD_MODEL_FILE}`, per subset too.", "",
             f"Each interval names the clusters it was drawn from (those holding a pair, a ladder video or a clip "
             "episode; every cluster for success detection; summed over the subsets of the mean). *Too small*: "
             f"fewer than {settings.min_clusters} clusters or a half-width above {settings.max_half_width:g}, the "
             "rule of the per-subset MAE. Such an interval is too narrow to trust: on the bundled sample (5 to 8 "
             "clusters per subset) a model answering at random got 95% intervals that missed chance (0.5) for about "
             "one seed in ten, not one in twenty.", "",
             f"![Reward-model metrics]({REWARD_MODEL_PLOT})", ""]
    header = ["Model", "Score"] + list(REWARD_HEADERS.values()) + ["Pairs", "Ladder videos", "Clip episodes"]
    rows = [[summary.display_name, summary.score] + [_reward_cell(summary, name) for name in REWARD_HEADERS]
            + [str(summary.counts.get(key, 0)) for key in ("preference_pairs", "ladder_videos", "clip_episodes")]
            for summary in data.reward_models]
    lines += _table(header, rows)
    without = [model.display_name for model in data.models
               if not any(s.model == model.model and s.score == EXPECTED for s in data.reward_models)]
    if len(without) < len(data.models):
        lines += ["", "Models without recorded expected scores (no `score=expected` run, or a client without "
                  "log-probabilities) are shown on their parsed scores only: "
                  f"{', '.join(markdown_text(name) for name in without) or 'none'}."]
    return lines


def _calibration(data: ReportData) -> list[str]:
    if not data.calibration:
        return []
    lines = ["", "## Expected-score calibration", "",
             "Models with recorded expected scores (`score=expected` runs whose client returned the answer token's "
             "probabilities). Expected MAE: |expected score - gold|, averaged per subset, then over subsets; the "
             "parsed MAE beside it is on the same rows. P(5) (the probability of the score 5) against \"gold is "
             "5\", pooled over the model's rows: Brier score and expected calibration error (10 equal-width bins). "
             "Rows without a distribution are left out here and counted in the first columns. Also in "
             f"`{CALIBRATION_FILE}`.", "", f"![Reliability diagram of P(5)]({RELIABILITY_PLOT})", ""]
    rows = [[c.display_name, str(c.rows), str(c.with_distribution), _number(c.expected_mae), _number(c.parsed_mae),
             _number(c.brier), _number(c.ece), _number(c.base_rate)] for c in data.calibration]
    return lines + _table(["Model", "Rows", "With distribution", "Expected MAE", "Parsed MAE (same rows)",
                           "Brier P(5)", "ECE P(5)", "Share gold 5"], rows)


def _subsets(data: ReportData) -> list[str]:
    settings = data.settings
    lines = ["", "## Per-subset MAE", "", f"![MAE per model and subset]({HEATMAP_FILE})", "",
             f"*Too small to separate models*: fewer than {settings.min_clusters} clusters, or some model's "
             f"{settings.confidence:.0%} CI half-width above {settings.max_half_width:g}. Also in `{SUBSET_FILE}`.", ""]
    lines += _table(["Subset", "Rows", "Clusters", "Too small to separate models"],
                    [[s.display_name, str(s.num_rows), str(s.num_clusters), s.too_small or "no"]
                     for s in data.subsets])
    for subset in data.subsets:
        flag = f" - too small to separate models ({subset.too_small})" if subset.too_small else ""
        lines += ["", f"### {markdown_text(subset.display_name)} ({markdown_code(subset.id)}){markdown_text(flag)}", ""]
        rows = [[model.display_name, _number(model.subset_mae[subset.id].estimate),
                 _interval(model.subset_mae[subset.id]), _number(model.subset_mae[subset.id].half_width),
                 str(model.subset_rows[subset.id])]
                for model in data.models if subset.id in model.subset_mae]
        lines += _table(["Model", "MAE", f"{settings.confidence:.0%} CI", "Half-width", "Rows"], rows)
    return lines


def _failures(data: ReportData) -> list[str]:
    rows = []
    for model in data.models:
        f = model.failures
        rows.append([model.display_name, str(f.rows), _rate(f.failed_requests, f.rows),
                     _rate(f.invalid_outputs, f.answered), _rate(f.exact_matches, f.answered),
                     _rate(f.false_successes, f.answered_gold_score_below_max),
                     _rate(f.missed_successes, f.answered_gold_score_max), _number(f.signed_bias, 2)])
    return ["", "## Failure modes", "",
            "Over all rows of each model (instance-weighted). Failed requests (no completion) are counted over all "
            "rows; they are charged error 4 in the MAE (official) unless the run used `failed=skip`, and are left "
            "out of the other columns here. Invalid output, exact match: over answered rows. False "
            "success (predicted 5, gold < 5): over answered rows with gold < 5. Missed success (gold 5, not "
            "predicted 5; invalid counts): over answered rows with gold 5. Signed bias: mean predicted - gold over "
            "parsed answers (positive = over-rewarding).", ""] + _table(
        ["Model", "Rows", "Failed requests", "Invalid output", "Exact match", "False success", "Missed success",
         "Signed bias"], rows)


def _confusions(data: ReportData) -> list[str]:
    lines = ["", "## Confusion matrices", "",
             "Gold 1..5 (rows) by predicted 1..5, *other* (parsed but not an integer 1..5) and *invalid* "
             "(columns); failed requests excluded (their count is in each title).", ""]
    return lines + [f"![{markdown_text(model.display_name, brackets=True)}]({confusion_file(model.model)})"
                    for model in data.models]


def _method(data: ReportData) -> list[str]:
    settings = data.settings
    lines = []
    if data.comparability:
        lines += ["", "## Comparable with the published leaderboard?", "",
                  "One rule, as `roboreward publish` applies it (docs/publishing.md): the public split at the "
                  "published metadata hash, every row of the 23 subsets, official defaults only.", ""]
        lines += [f"- {markdown_text(model.display_name)}: {markdown_text(data.comparability[model.model][1])}"
                  for model in data.models if model.model in data.comparability]
    if data.notes:
        lines += ["", "## Notes", ""] + [f"- {markdown_text(note)}" for note in data.notes]
    return lines + ["", "## Method", "",
                    "- Clusters: within a subset, rows that share a source episode key (clips of one episode, camera "
                    "views of one RoboArena episode) or a video hash (counterfactual relabels of one video) are "
                    "joined by union-find; a cluster is resampled as a whole.",
                    "- Bootstrap: per subset, draw as many clusters as it has, with replacement; the replicate subset "
                    "MAE is the errors' sum over the drawn clusters divided by their row count; the replicate macro "
                    "MAE is the unweighted mean of the model's subsets. Each subset's draws are seeded by "
                    f"(seed {settings.seed}, subset name), so every model and pair sees the same draws; "
                    f"{settings.resamples} replicates; percentile interval at {settings.confidence:.0%}.",
                    "- Pairwise: per subset, MAE difference on the rows both models have, averaged over the subsets "
                    "where they share rows; paired because both use the same drawn clusters. This can differ from the "
                    "difference of the headline means when the models' rows differ (failed requests, missing "
                    "subsets).",
                    f"- Too small to separate models: fewer than {settings.min_clusters} clusters (too few for a "
                    f"bootstrap to be trusted), or a CI half-width above {settings.max_half_width:g} for some model "
                    "(the interval spans more than most gaps between neighbouring leaderboard models).",
                    "- Failed requests count as error 4 by the official rule (HELM's executor turns them into an "
                    "empty answer); runs with `failed=skip` leave them out of every statistic (MAE, reward-model and "
                    "calibration statistics; the failure-mode table still counts them)."]


def render_markdown(data: ReportData) -> str:
    """The whole ``report.md``."""
    sections = [_intro, _leaderboard, _published, _macro, _peers, _pairwise, _reward_model, _calibration, _subsets,
                _failures, _confusions, _method]
    return "\n".join(line for section in sections for line in section(data)) + "\n"


def write_report(data: ReportData, out_dir: str) -> list[str]:
    """Write ``report.md`` and the CSV tables into ``out_dir`` (created if needed); returns the file names.

    Each file is written atomically inside ``out_dir`` (:func:`helm_roboreward.protocol.safe_files.write_inside`): a
    link planted at a file's name is replaced, never written through.
    """
    texts = {REPORT_FILE: render_markdown(data), **csv_texts(data)}
    for name, text in texts.items():
        write_inside(out_dir, name, text.encode("utf-8"), OUT_FIX)
    return list(texts)
