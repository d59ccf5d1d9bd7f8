"""The report's CSV files: the numbers of ``report.md``'s tables at full precision, one file per table.

Pure: :func:`csv_texts` returns each file's text; :func:`helm_roboreward.results.report.writer.write_report`
writes them beside ``report.md``.
"""

import csv
import io

from helm_roboreward.protocol.rules import RUBRIC_SCORES
from helm_roboreward.results.report.analysis import ReportData
from helm_roboreward.results.report.bootstrap import Interval
from helm_roboreward.results.report.reward_model import Support

LEADERBOARD_FILE = "leaderboard.csv"
SUBSET_FILE = "subset_mae.csv"
PAIRWISE_FILE = "pairwise.csv"
REWARD_MODEL_FILE = "reward_model.csv"
CALIBRATION_FILE = "calibration.csv"
PEER_FILE = "peer_metrics.csv"


def number(value: float | None, digits: int = 3) -> str:
    """A value with ``digits`` decimals; ``-`` for none (or NaN)."""
    return "-" if value is None or value != value else f"{value:.{digits}f}"


def leaderboard_rows(data: ReportData, digits: int = 3) -> list[list[str]]:
    """Official-format rows: model, mean, then one MAE per subset in official order ('' when missing)."""
    return [[model.display_name, number(model.macro.estimate, digits) if model.macro else ""]
            + [number(model.subset_mae[s.id].estimate, digits) if s.id in model.subset_mae else ""
               for s in data.subsets]
            for model in data.models]


def _comparability(data: ReportData, model: str) -> list[str]:
    """``yes``/``no`` and the verdict's line ('' when the report was not given one)."""
    comparable, line = data.comparability.get(model, (None, ""))
    return ["" if comparable is None else "yes" if comparable else "no", line]


def _csv_text(header: list[str], rows: list[list[str]]) -> str:
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer)
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue()


def _interval_columns(interval: Interval | None, support: Support | None) -> list[str]:
    if interval is None or support is None:
        return ["", "", "", ""]
    return [number(interval.low, 6), number(interval.high, 6), str(support.clusters),
            "yes" if support.too_small else "no"]


def _reward_model(data: ReportData) -> str:
    """Macro rows, per-subset rows (both with interval, clusters and the too-small flag), then the counts."""
    rows = [[s.model, s.score, "macro", name, number(value, 6), *_interval_columns(s.macro.get(name),
                                                                                    s.support.get(name))]
            for s in data.reward_models for name, value in s.values.items()]
    rows += [[s.model, s.score, subset, name, number(value, 6),
              *_interval_columns(s.subset_intervals.get(subset, {}).get(name),
                                 s.subset_support.get(subset, {}).get(name))]
             for s in data.reward_models for subset, values in s.per_subset.items() for name, value in values.items()]
    rows += [[s.model, s.score, "all", name, str(count), "", "", "", ""]
             for s in data.reward_models for name, count in s.counts.items()]
    return _csv_text(["model", "score", "subset", "statistic", "value", "ci_low", "ci_high", "clusters", "too_small"],
                     rows)


def _peers(data: ReportData) -> str:
    """One row per model and statistic: the value and the rows behind it."""
    rows = []
    for model in data.models:
        peer = model.peer
        if peer is None:
            continue
        for name, value in (("mae_macro", peer.macro_mae), ("mae_micro", peer.micro_mae),
                            ("exact_macro", peer.exact_macro), ("exact_micro", peer.exact_micro),
                            ("within_one_macro", peer.within_one_macro), ("within_one_micro", peer.within_one_micro)):
            rows.append([model.model, name, number(value, 6), str(peer.rows)])
        rows += [[model.model, f"mean_prediction_gold_{gold_score}", number(peer.mean_prediction[gold_score], 6),
                  str(peer.prediction_rows[gold_score])] for gold_score in RUBRIC_SCORES]
    return _csv_text(["model", "statistic", "value", "rows"], rows)


def _calibration(data: ReportData) -> str:
    return _csv_text(
        ["model", "row", "rows", "with_distribution", "expected_mae", "parsed_mae", "brier", "ece",
         "base_rate", "bin_low", "bin_high", "bin_rows", "bin_mean_probability", "bin_success_rate"],
        [[c.model, "summary", str(c.rows), str(c.with_distribution), number(c.expected_mae, 6),
          number(c.parsed_mae, 6), number(c.brier, 6), number(c.ece, 6), number(c.base_rate, 6),
          "", "", "", "", ""] for c in data.calibration]
        + [[c.model, "bin", "", "", "", "", "", "", "", number(b.low, 2), number(b.high, 2), str(b.count),
            number(b.mean_probability, 6), number(b.success_rate, 6)] for c in data.calibration for b in c.bins])


def csv_texts(data: ReportData) -> dict[str, str]:
    """File name -> text of every CSV file (``calibration.csv`` only with expected scores)."""
    ids = [subset.id for subset in data.subsets]
    texts = {
        LEADERBOARD_FILE: _csv_text(
            ["model", "mean"] + ids + ["model_id", "missing_subsets", "failed_subsets", "comparable",
                                       "comparability"],
            [row + [model.model, " ".join(model.missing_subsets), " ".join(model.failed_subsets),
                    *_comparability(data, model.model)]
             for row, model in zip(leaderboard_rows(data, digits=6), data.models, strict=True)]),
        SUBSET_FILE: _csv_text(
            ["model", "subset", "rows", "mae", "ci_low", "ci_high", "too_small"],
            [[model.model, s.id, str(model.subset_rows[s.id]), *(f"{value:.6f}" for value in
              (model.subset_mae[s.id].estimate, model.subset_mae[s.id].low, model.subset_mae[s.id].high)),
              "yes" if s.too_small else "no"]
             for s in data.subsets for model in data.models if s.id in model.subset_mae]),
        REWARD_MODEL_FILE: _reward_model(data),
        PEER_FILE: _peers(data),
        **({CALIBRATION_FILE: _calibration(data)} if data.calibration else {}),
        PAIRWISE_FILE: _csv_text(
            ["model_a", "model_b", "difference", "ci_low", "ci_high", "separated", "shared_rows", "subsets"],
            [[p.first_model, p.second_model, *(f"{value:.6f}" for value in (p.difference.interval.estimate,
              p.difference.interval.low, p.difference.interval.high)),
              "yes" if p.difference.interval.excludes_zero else "no", str(p.difference.num_rows),
              str(p.difference.num_subsets)] for p in data.pairs]),
    }
    return texts
