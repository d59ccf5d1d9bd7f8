"""The report's figures (PNG): MAE heatmap, macro MAE with intervals, one confusion matrix per model.

matplotlib is optional (extra ``report``) and imported only when a figure is drawn, with the
non-interactive Agg backend.
"""

import io
import re
from typing import Any

import numpy as np

from helm_roboreward.helm_frontend.run_rows import ReportError
from helm_roboreward.protocol.rules import RUBRIC_SCORES
from helm_roboreward.protocol.safe_files import write_inside
from helm_roboreward.results.report.analysis import CONFUSION_COLUMNS, ModelSummary, ReportData

INSTALL_HINT = "pip install matplotlib (from a checkout: pip install '.[report]')"
HEATMAP_FILE = "mae_heatmap.png"
MACRO_FILE = "macro_mae.png"
REWARD_MODEL_PLOT = "reward_model.png"
RELIABILITY_PLOT = "reliability.png"
DPI = 120
OUT_FIX = "remove it, or choose another --out"
"""What to do when a report file's path is refused (a link or file planted in the --out folder)."""


def require_matplotlib() -> Any:
    """The ``matplotlib.pyplot`` module on the Agg backend.

    Raises:
        ReportError: matplotlib is not installed (the message says how to install it).
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as pyplot
    except ImportError as error:
        raise ReportError(f"the report's plots need matplotlib, which is not installed ({error}); "
                          f"install it with {INSTALL_HINT}") from error
    return pyplot


def confusion_file(model: str) -> str:
    """The PNG name of a model's confusion matrix."""
    return "confusion_" + re.sub(r"[^A-Za-z0-9.-]+", "_", model).strip("_") + ".png"


def _save(pyplot: Any, figure: Any, out_dir: str, name: str) -> None:
    """Render the figure as PNG and write it atomically inside ``out_dir`` (never through a planted link)."""
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, dpi=DPI, format="png")
    pyplot.close(figure)
    write_inside(out_dir, name, buffer.getvalue(), OUT_FIX)


def plot_heatmap(data: ReportData, out_dir: str, name: str) -> None:
    """Models (rows, ranked) by subsets (columns) MAE, annotated; blank where a model lacks the subset."""
    pyplot = require_matplotlib()
    matrix = np.array([[model.subset_mae[s.id].estimate if s.id in model.subset_mae else np.nan
                        for s in data.subsets] for model in data.models])
    width = max(6.0, 1.0 + 0.75 * len(data.subsets))
    height = max(2.5, 1.2 + 0.4 * len(data.models))
    figure, axes = pyplot.subplots(figsize=(width, height))
    vmax = max(1.5, float(np.nanmax(matrix))) if np.isfinite(matrix).any() else 1.5
    image = axes.imshow(np.ma.masked_invalid(matrix), cmap="RdYlGn_r", vmin=0.0, vmax=vmax, aspect="auto")
    for (row, column), value in np.ndenumerate(matrix):
        axes.text(column, row, "-" if np.isnan(value) else f"{value:.2f}", ha="center", va="center", fontsize=8)
    axes.set_xticks(range(len(data.subsets)), [s.display_name for s in data.subsets], rotation=45, ha="right",
                    fontsize=8)
    axes.set_yticks(range(len(data.models)), [model.display_name for model in data.models], fontsize=8)
    axes.set_title(f"MAE per subset, suite {data.suite} (lower is better)")
    figure.colorbar(image, ax=axes, label="MAE")
    _save(pyplot, figure, out_dir, name)


def plot_macro(data: ReportData, out_dir: str, name: str) -> None:
    """Macro MAE per model with its bootstrap interval as error bars."""
    pyplot = require_matplotlib()
    models = [model for model in data.models if model.macro is not None]
    estimates = np.array([model.macro.estimate for model in models if model.macro is not None])
    lows = np.array([model.macro.low for model in models if model.macro is not None])
    highs = np.array([model.macro.high for model in models if model.macro is not None])
    figure, axes = pyplot.subplots(figsize=(7.0, max(2.5, 1.2 + 0.4 * len(models))))
    positions = np.arange(len(models))
    errors = np.nan_to_num(np.vstack([estimates - lows, highs - estimates]))
    axes.errorbar(estimates, positions, xerr=errors, fmt="o", capsize=4)
    axes.set_yticks(positions, [model.display_name for model in models])
    axes.invert_yaxis()
    axes.set_xlabel(f"macro MAE ({data.settings.confidence:.0%} clustered bootstrap CI)")
    axes.set_title(f"Macro MAE, suite {data.suite} ({data.settings.resamples} resamples, seed {data.settings.seed})")
    axes.grid(axis="x", alpha=0.3)
    _save(pyplot, figure, out_dir, name)


REWARD_PANELS = (("preference_accuracy", "Same-task preference accuracy"), ("ladder_accuracy", "Ladder accuracy"),
                 ("clip_accuracy", "Clip monotonicity"), ("success_auroc", "Success AUROC"),
                 ("ladder_tau_b", "Ladder Kendall tau-b"), ("success_mcc", "Success MCC"))


def plot_reward_model(data: ReportData, out_dir: str, name: str) -> None:
    """One panel per reward-model statistic: each model (parsed and expected scores) with its interval."""
    pyplot = require_matplotlib()
    summaries = data.reward_models
    labels = [f"{s.display_name} ({s.score})" for s in summaries]
    figure, axes = pyplot.subplots(2, 3, figsize=(12.0, max(4.0, 1.5 + 0.5 * len(summaries))), sharey=True)
    positions = np.arange(len(summaries))
    for axis, (statistic, title) in zip(axes.flat, REWARD_PANELS, strict=True):
        intervals = [s.macro.get(statistic) for s in summaries]
        estimates = np.array([i.estimate if i is not None else np.nan for i in intervals])
        lows = np.array([i.low if i is not None else np.nan for i in intervals])
        highs = np.array([i.high if i is not None else np.nan for i in intervals])
        errors = np.nan_to_num(np.vstack([estimates - lows, highs - estimates]))
        axis.errorbar(estimates, positions, xerr=errors, fmt="o", capsize=3)
        chance = 0.0 if statistic in ("ladder_tau_b", "success_mcc") else 0.5
        axis.axvline(chance, color="grey", linestyle="--", linewidth=0.8)
        axis.set_title(title, fontsize=10)
        axis.grid(axis="x", alpha=0.3)
    axes[0][0].set_yticks(positions, labels)
    axes[0][0].invert_yaxis()
    figure.suptitle(f"Reward-model metrics, suite {data.suite} (macro over subsets, {data.settings.confidence:.0%} "
                    "clustered bootstrap CIs; dashed: chance)", fontsize=10)
    _save(pyplot, figure, out_dir, name)


def plot_reliability(data: ReportData, out_dir: str, name: str) -> None:
    """Reliability diagram of P(5): per model, each non-empty bin's mean P(5) against its share of gold 5.

    Marker area grows with the bin's row count; the diagonal is perfect calibration.
    """
    pyplot = require_matplotlib()
    figure, axes = pyplot.subplots(figsize=(5.5, 5.0))
    axes.plot([0.0, 1.0], [0.0, 1.0], color="grey", linestyle="--", linewidth=0.8, label="perfectly calibrated")
    for summary in data.calibration:
        xs = [b.mean_probability for b in summary.bins]
        ys = [b.success_rate for b in summary.bins]
        sizes = [20.0 + 180.0 * b.count / summary.with_distribution for b in summary.bins]
        line = axes.plot(xs, ys, linewidth=1.0, label=f"{summary.display_name} (ECE {summary.ece:.3f})")[0]
        axes.scatter(xs, ys, s=sizes, color=line.get_color(), alpha=0.7)
    axes.set_xlim(0.0, 1.0)
    axes.set_ylim(0.0, 1.0)
    axes.set_xlabel("mean predicted P(5) in the bin")
    axes.set_ylabel("share of rows with gold 5")
    axes.set_title(f"Success calibration, suite {data.suite} (score=expected; 10 equal-width bins)", fontsize=10)
    axes.legend(fontsize=8, loc="upper left")
    axes.grid(alpha=0.3)
    _save(pyplot, figure, out_dir, name)


def plot_confusion(model: ModelSummary, out_dir: str, name: str) -> None:
    """Gold 1..5 (rows) by predicted 1..5 / other / invalid (columns); failed requests counted in the title."""
    pyplot = require_matplotlib()
    matrix = model.confusion
    figure, axes = pyplot.subplots(figsize=(6.0, 4.5))
    axes.imshow(matrix, cmap="Blues", aspect="auto")
    peak = matrix.max() if matrix.size else 0
    for (row, column), count in np.ndenumerate(matrix):
        color = "white" if peak and count > peak / 2 else "black"
        axes.text(column, row, str(count), ha="center", va="center", fontsize=9, color=color)
    axes.set_xticks(range(len(CONFUSION_COLUMNS)), CONFUSION_COLUMNS)
    axes.set_yticks(range(len(RUBRIC_SCORES)), [str(score) for score in RUBRIC_SCORES])
    axes.set_xlabel("predicted")
    axes.set_ylabel("gold")
    failed = model.failures.failed_requests
    axes.set_title(f"{model.display_name}\n{int(matrix.sum())} answered; {failed} failed request(s) excluded",
                   fontsize=10)
    _save(pyplot, figure, out_dir, name)


def write_plots(data: ReportData, out_dir: str) -> list[str]:
    """Draw every figure into ``out_dir``.

    Returns:
        The file names written (relative to ``out_dir``).
    """
    names = [HEATMAP_FILE, MACRO_FILE]
    plot_heatmap(data, out_dir, HEATMAP_FILE)
    plot_macro(data, out_dir, MACRO_FILE)
    if data.reward_models:
        names.append(REWARD_MODEL_PLOT)
        plot_reward_model(data, out_dir, REWARD_MODEL_PLOT)
    if data.calibration:
        names.append(RELIABILITY_PLOT)
        plot_reliability(data, out_dir, RELIABILITY_PLOT)
    for model in data.models:
        names.append(confusion_file(model.model))
        plot_confusion(model, out_dir, names[-1])
    return names
