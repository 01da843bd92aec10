#!/usr/bin/env python3
"""Draws one or more `actorps simulate --metrics RUN.jsonl` files into one PNG.

Usage: scripts/plot_metrics.py RUN.jsonl [RUN2.jsonl ...] -o OUT.png
                               [--label NAME]... [--title T] [--smooth N] [--no-worker-lines]

Panels: test accuracy vs wall time, test accuracy vs global clock, test loss vs wall time,
train loss vs clock (moving average; thin line per worker, bold mean), staleness histogram
(dashed line at each run's bound), and a legend/summary panel. CTR runs (eval events with
test_auc: lr, dlrm, wdl, deepfm) plot test AUC and logloss instead of accuracy and loss, and
their summary shows GAUC and calibration where the run measured them. Several runs are
overlaid, one colour per run, each labelled with the settings it does not share with the
others (the shared ones go under the title). Failure and recovery events, when present, are
drawn as vertical lines.

Exit status: 0 on success; 2 for bad input (missing file, a line that is not a JSON object, a
file without eval events, bad flags); 1 when matplotlib cannot be imported. A torn last line
(no newline, not JSON: a run killed while writing it) is skipped with a warning.
Needs only the standard library and matplotlib (Debian: apt-get install python3-matplotlib).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
from dataclasses import dataclass, field

PROG = "plot_metrics"
DEBIAN_PYTHON = "/usr/bin/python3"


class InputError(Exception):
    """Bad input: reported as `plot_metrics: error: ...` with exit status 2."""


@dataclass
class Run:
    path: str
    start: dict = field(default_factory=dict)
    summary: dict | None = None
    evals: list[dict] = field(default_factory=list)
    train: list[dict] = field(default_factory=list)
    incidents: list[dict] = field(default_factory=list)  # failure / recovery events
    label: str = ""

    # --- derived values -------------------------------------------------------------------
    def get(self, key, default=None):
        """A run-level setting, from the start event, else the summary."""
        if key in self.start:
            return self.start[key]
        if self.summary and key in self.summary:
            return self.summary[key]
        return default

    @property
    def final_accuracy(self) -> float:
        if self.summary and _is_number(self.summary.get("final_test_accuracy")):
            return float(self.summary["final_test_accuracy"])
        return float(self.evals[-1]["test_accuracy"])

    @property
    def ctr(self) -> bool:
        """A binary (CTR) model's run: its evaluations carry an AUC."""
        return all(_is_number(e.get("test_auc")) for e in self.evals)

    def final(self, key: str):
        """The summary's final_<key>, else the last evaluation's <key>; None if neither."""
        if self.summary and _is_number(self.summary.get("final_" + key)):
            return float(self.summary["final_" + key])
        value = self.evals[-1].get(key)
        return float(value) if _is_number(value) else None

    def settings(self) -> dict[str, str]:
        """The run's own training settings, from its start event, as they are shown."""
        s = self.start
        out = {}
        if "model" in s:
            out["model"] = f"model {s['model']}"
        if _is_number(s.get("learning_rate")):
            out["optimizer"] = (f"{s.get('optimizer')} lr {s['learning_rate']:.3g}"
                                f" ({s.get('lr_schedule', '?')})")
        if _is_number(s.get("table_learning_rate")):
            out["table"] = f"table {s.get('table_optimizer')} lr {s['table_learning_rate']:.3g}"
        for key in ("batch", "epochs", "seed"):
            if _is_number(s.get(key)):
                out[key] = f"{key} {s[key]:g}"
        return out

    @property
    def staleness_bound(self):
        bound = self.get("staleness_bound")
        return int(bound) if _is_number(bound) else None

    def default_label(self) -> str:
        if self.get("mode") is None:  # no start/summary event: name it after the file
            return os.path.splitext(os.path.basename(self.path))[0]
        mode = str(self.get("mode"))
        bound = self.staleness_bound
        name = f"ssp s={bound}" if mode == "ssp" and bound is not None else mode
        workers, shards = self.get("workers"), self.get("shards")
        if workers is not None and shards is not None:
            name += f", {workers}w/{shards}ps"
        return name


def run_titles(runs: list[Run]) -> tuple[str, list[str]]:
    """The settings every run shares (the subtitle), and each run's own others (its label's
    tail): several runs are told apart by what differs, not titled from the first alone."""
    settings = [r.settings() for r in runs]
    keys = list(dict.fromkeys(k for s in settings for k in s))
    shared = [k for k in keys if all(s.get(k) == settings[0].get(k) for s in settings)
              and k in settings[0]]
    subtitle = ", ".join(settings[0][k] for k in shared)
    own = [", ".join(s[k] for k in keys if k in s and k not in shared) for s in settings]
    return subtitle, own


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def load_run(path: str) -> Run:
    if not os.path.exists(path):
        raise InputError(f"{path}: no such file")
    if os.path.isdir(path):
        raise InputError(f"{path}: is a directory, not a metrics file")
    run = Run(path=path)
    try:
        with open(path, encoding="utf-8") as f:
            lines = list(f)
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: cannot read: {e}") from e

    def need_numbers(event: dict, lineno: int, keys: tuple[str, ...]):
        for k in keys:
            if not _is_number(event.get(k)):
                raise InputError(f"{path}:{lineno}: {event['event']} event lacks a number "
                                 f"'{k}'")

    for lineno, line in enumerate(lines, 1):
        text = line.strip()
        if not text:
            continue
        try:
            event = json.loads(text)
        except json.JSONDecodeError as e:
            if lineno == len(lines) and not line.endswith("\n"):
                # A run killed while writing leaves its last line unfinished: skip it, say so
                # (once: not again from the interpreter import_matplotlib may run us with).
                if not os.environ.get("PLOT_METRICS_REEXEC"):
                        print(f"{PROG}: warning: {path}:{lineno}: skipped a torn last line (the "
                          f"run was stopped while writing it)", file=sys.stderr)
                continue
            shown = text if len(text) <= 60 else text[:57] + "..."
            raise InputError(f"{path}:{lineno}: not valid JSON ({e.msg}): {shown}") from e
        if not isinstance(event, dict):
            raise InputError(f"{path}:{lineno}: expected a JSON object, got "
                             f"{type(event).__name__}")
        kind = event.get("event")
        if kind == "start":
            run.start = event
        elif kind == "summary":
            run.summary = event
        elif kind == "eval":
            need_numbers(event, lineno, ("clock", "test_accuracy", "test_loss", "wall_s"))
            run.evals.append(event)
        elif kind == "train":
            need_numbers(event, lineno, ("clock", "loss"))
            run.train.append(event)
        elif kind in ("failure", "recovery"):
            run.incidents.append(event)
        # any other event (or none) is ignored: newer binaries may write more kinds
    if not run.evals:
        raise InputError(f"{path}: no eval events (was the run cut short, or is this not an "
                         f"`actorps simulate --metrics` file?)")
    run.evals.sort(key=lambda e: (e["wall_s"], e["clock"]))
    return run


# --- numeric helpers -----------------------------------------------------------------------
def moving_average(values: list[float], window: int) -> list[float]:
    """Trailing moving average; the first window-1 points average what exists so far."""
    out, acc = [], 0.0
    for i, v in enumerate(values):
        acc += v
        if i >= window:
            acc -= values[i - window]
        out.append(acc / min(i + 1, window))
    return out


def loss_series(train: list[dict]):
    """Per-worker (clocks, losses) sorted by clock, and the mean over workers per clock."""
    per_worker: dict = {}
    by_clock: dict = {}
    for e in train:
        if not math.isfinite(e["loss"]):
            continue
        per_worker.setdefault(e.get("worker", 0), []).append((e["clock"], e["loss"]))
        by_clock.setdefault(e["clock"], []).append(e["loss"])
    workers = {w: sorted(pts) for w, pts in sorted(per_worker.items(), key=lambda kv: str(kv[0]))}
    mean = sorted((c, sum(v) / len(v)) for c, v in by_clock.items())
    return workers, mean


# --- plotting ------------------------------------------------------------------------------
def import_matplotlib():
    try:
        import matplotlib
    except ImportError:
        # e.g. a pyenv/venv python3 first on PATH while Debian's python3-matplotlib lives in
        # /usr/bin/python3's dist-packages: run this script again with that interpreter.
        here = os.path.realpath(sys.executable or "")
        if (os.path.exists(DEBIAN_PYTHON) and here != os.path.realpath(DEBIAN_PYTHON)
                and not os.environ.get("PLOT_METRICS_REEXEC")):
            os.environ["PLOT_METRICS_REEXEC"] = "1"
            sys.stdout.flush()
            sys.stderr.flush()
            os.execv(DEBIAN_PYTHON, [DEBIAN_PYTHON, os.path.abspath(__file__), *sys.argv[1:]])
        print(f"{PROG}: error: matplotlib is not importable by {sys.executable}; install it "
              f"(Debian: apt-get install python3-matplotlib)", file=sys.stderr)
        sys.exit(1)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib import ticker
    return plt, Line2D, ticker


def accuracy_limits(runs: list[Run], key: str = "test_accuracy"):
    """y-range for accuracy (or AUC) panels: zoom on where the runs spend most of their
    evaluations.

    The bottom is the lowest accuracy of any evaluation but each run's first (often near
    random, it would squash the part that tells the runs apart), minus a margin; a first point
    below it leaves through the bottom edge."""
    lows, highs = [], []
    for r in runs:
        accs = [e[key] for e in r.evals]
        highs.append(max(accs))
        lows.append(min(accs[1:] or accs))
    lo, hi = min(lows), max(highs)
    span = max(hi - lo, 0.02)
    bottom = max(0.0, lo - 0.25 * span)
    top = min(1.0, hi + 0.12 * span)
    if top - bottom < 0.02:
        top = min(1.0, bottom + 0.02)
    return bottom, top


def draw_incidents(ax, run: Run, colour, x_key: str):
    for inc in run.incidents:
        x = inc.get(x_key)
        if not _is_number(x):
            continue
        failure = inc.get("event") == "failure"
        ax.axvline(x, color=colour, linestyle=":" if failure else "-.", linewidth=1.2,
                   alpha=0.9)


def staleness_percentages(run: Run) -> dict[int, float]:
    stale = [int(e["staleness"]) for e in run.train if _is_number(e.get("staleness"))]
    counts: dict[int, int] = {}
    for v in stale:
        counts[v] = counts.get(v, 0) + 1
    return {v: 100.0 * n / len(stale) for v, n in sorted(counts.items())}


def shared_dashes(j: int, k: int, length: float = 5.0):
    """Line style of member j of k runs drawn on the very same line: their dashes alternate,
    so each colour shows (a lone run gets a plain dash pattern)."""
    if k == 1:
        return (0, (length, 0.8 * length))
    return (j * length, (length, (k - 1) * length))


LINEAR_STALENESS = 40  # beyond this the staleness axis turns logarithmic past 10 clocks


def staleness_edges(lo: int, hi: int) -> list[float]:
    """Histogram bin edges: one bin per clock, or (for long async tails) one per clock up to
    10 and then bins about 25 % wider each."""
    if hi <= LINEAR_STALENESS:
        return [v - 0.5 for v in range(lo, hi + 2)]
    edges = [v - 0.5 for v in range(lo, 12)]
    while edges[-1] < hi + 0.5:
        edges.append(math.ceil(edges[-1] * 1.25) + 0.5)
    return edges


def draw_staleness(ax, runs: list[Run], colours, ticker):
    """Overlaid histograms of the train events' staleness (% of each run's steps per bin).

    Runs with identical histograms (sync and ssp s=0 both put every step at 0) are drawn once,
    the outline in alternating dashes of their colours; bounds likewise."""
    import bisect

    pcts = [staleness_percentages(r) for r in runs]
    bounds = [r.staleness_bound for r in runs if r.staleness_bound is not None]
    values = [v for p in pcts for v in p]
    if not values:
        ax.text(0.5, 0.5, "no staleness in the train events", transform=ax.transAxes,
                ha="center", va="center", color="0.4")
        ax.set(title="Staleness of the parameters each step trained on", xticks=[], yticks=[])
        return
    lo = min(min(values), 0)
    hi = max(values + [b for b in bounds if b >= 0])
    edges = staleness_edges(lo, hi)
    groups: dict = {}
    for i, pct in enumerate(pcts):
        if not pct:
            continue
        heights = [0.0] * (len(edges) - 1)
        for v, p in pct.items():
            heights[bisect.bisect_right(edges, v) - 1] += p
        groups.setdefault(tuple(round(h, 3) for h in heights), []).append(i)
    for heights, members in groups.items():
        first = colours[members[0] % len(colours)]
        ax.stairs(heights, edges, fill=True, color=first, alpha=0.2, zorder=1)
        for j, i in enumerate(members):
            ax.stairs(heights, edges, color=colours[i % len(colours)], linewidth=1.8,
                      linestyle="-" if len(members) == 1 else shared_dashes(j, len(members)),
                      zorder=3)
    nonzero = [h for key in groups for h in key if h > 0]
    ax.set_ylim(min(nonzero) / 1.8, max(nonzero) * 3.0)  # headroom for the S= labels

    by_bound: dict = {}
    for i, run in enumerate(runs):
        if run.staleness_bound is not None and run.staleness_bound >= 0:
            by_bound.setdefault(run.staleness_bound, []).append(i)
    for k, (bound, members) in enumerate(sorted(by_bound.items())):
        for j, i in enumerate(members):
            ax.axvline(bound + 0.5, color=colours[i % len(colours)], linewidth=2,
                       linestyle=shared_dashes(j, len(members)), zorder=4)
        ax.annotate(f"S={bound}", xy=(bound + 0.5, 1.0), xycoords=("data", "axes fraction"),
                    xytext=(3, -3 - 11 * (k % 2)), textcoords="offset points", ha="left",
                    va="top", fontsize=8.5, color=colours[members[0] % len(colours)])

    ax.set_yscale("log")
    xlabel = "staleness (clocks behind)"
    if hi <= LINEAR_STALENESS:
        ax.xaxis.set_major_locator(ticker.MaxNLocator(integer=True))
        ax.set_xlim(lo - 0.7, hi + 1.3)
    else:
        ax.set_xscale("symlog", linthresh=10, linscale=1.0)
        ticks = [t for t in (0, 2, 4, 6, 8, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000,
                             10000, 20000, 50000) if lo <= t <= edges[-1]]
        ax.xaxis.set_major_locator(ticker.FixedLocator(ticks))
        ax.xaxis.set_minor_locator(ticker.NullLocator())
        ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda x, _: f"{x:g}"))
        ax.set_xlim(lo - 0.7, edges[-1] * 1.4)
        xlabel += ", log past 10 (wider bins)"
    ax.set(title="Staleness of the parameters each step trained on",
           xlabel=xlabel + ";  dashed: bound S", ylabel="% of train steps (log scale)")


def plot(runs: list[Run], out: str, title: str | None, smooth: int, worker_lines: bool):
    plt, Line2D, ticker = import_matplotlib()
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    if len(runs) > len(colours):
        cmap = plt.get_cmap("tab20")
        colours = [cmap(i % 20) for i in range(len(runs))]

    fig, axes = plt.subplots(3, 2, figsize=(14, 13.5))
    (ax_acc_t, ax_acc_c), (ax_loss_t, ax_train), (ax_stale, ax_legend) = axes
    markers = "osD^vP*Xh<>p"

    # CTR runs are read by AUC and logloss (accuracy at a 25 % click rate says little)
    ctr = all(r.ctr for r in runs)
    score_key, score_name = ("test_auc", "test AUC") if ctr else ("test_accuracy", "test accuracy")
    loss_name = "test logloss" if ctr else "test loss"
    acc_lo, acc_hi = accuracy_limits(runs, score_key)
    for i, run in enumerate(runs):
        c = colours[i % len(colours)]
        m = markers[i % len(markers)]
        wall = [e["wall_s"] for e in run.evals]
        clock = [e["clock"] for e in run.evals]
        acc = [e[score_key] for e in run.evals]
        loss = [e["test_loss"] for e in run.evals]
        style = dict(color=c, marker=m, markersize=4, linewidth=1.6, alpha=0.9)
        ax_acc_t.plot(wall, acc, **style)
        ax_acc_c.plot(clock, acc, **style)
        ax_loss_t.plot(wall, loss, **style)
        for ax, key in ((ax_acc_t, "wall_s"), (ax_acc_c, "clock"), (ax_loss_t, "wall_s"),
                        (ax_train, "clock")):
            draw_incidents(ax, run, c, key)

        workers, mean = loss_series(run.train)
        if worker_lines and len(workers) > 1:
            for pts in workers.values():
                xs = [p[0] for p in pts]
                ax_train.plot(xs, moving_average([p[1] for p in pts], smooth), color=c,
                              linewidth=0.6, alpha=0.3)
        if mean:
            ax_train.plot([p[0] for p in mean], moving_average([p[1] for p in mean], smooth),
                          color=c, linewidth=1.8)


    draw_staleness(ax_stale, runs, colours, ticker)

    ax_acc_t.set(title=f"{score_name.capitalize()} vs wall time", xlabel="wall time (s)",
                 ylabel=score_name, ylim=(acc_lo, acc_hi))
    ax_acc_c.set(title=f"{score_name.capitalize()} vs global clock", xlabel="global clock",
                 ylabel=score_name, ylim=(acc_lo, acc_hi))
    ax_loss_t.set(title=f"{loss_name.capitalize()} vs wall time", xlabel="wall time (s)",
                  ylabel=f"{loss_name} (log scale)")
    ax_loss_t.set_yscale("log")
    ax_train.set(title=f"Train loss vs clock (moving average, {smooth} clocks)",
                 xlabel="worker clock", ylabel="train loss (log scale)")
    ax_train.text(0.99, 0.97, "thin: each worker, bold: mean over workers" if worker_lines
                  else "mean over workers", transform=ax_train.transAxes, ha="right", va="top",
                  fontsize=8, color="0.3")
    if any(r.train for r in runs):
        ax_train.set_yscale("log")
    else:
        ax_train.text(0.5, 0.5, "no train events", transform=ax_train.transAxes, ha="center",
                      va="center", color="0.4")
    for ax in (ax_loss_t, ax_train, ax_stale):  # log axes: label 0.3, 0.5, 2, not 3e-1
        if ax.get_yscale() != "log":
            continue
        lo, hi = ax.get_ylim()
        subs = ((1.0,) if hi / lo > 300 else (1.0, 2.0, 5.0) if hi / lo > 12
                else (1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0))
        ax.yaxis.set_major_locator(ticker.LogLocator(base=10, subs=subs))
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda y, _: f"{y:g}"))
        ax.yaxis.set_minor_formatter(ticker.NullFormatter())
    for ax in (ax_acc_t, ax_acc_c, ax_loss_t, ax_train, ax_stale):
        ax.grid(True, which="major", alpha=0.3)
    for ax in (ax_acc_t, ax_acc_c, ax_loss_t, ax_train):
        ax.set_xlim(left=0)
    for ax in (ax_loss_t, ax_train):
        ax.grid(True, which="minor", alpha=0.12)
    for ax in (ax_acc_t, ax_acc_c):
        ax.text(0.99, 0.02, "y zoomed: a run's first evaluation may lie below",
                transform=ax.transAxes, ha="right", va="bottom", fontsize=7.5, color="0.45")

    # --- legend / summary panel ------------------------------------------------------------
    ax_legend.axis("off")
    handles = []
    subtitle, own = run_titles(runs)
    for i, run in enumerate(runs):
        c = colours[i % len(colours)]
        final = (f"final auc {run.final('test_auc'):.4f}" if ctr
                 else f"final acc {run.final_accuracy:.4f}")
        settings = f"\n{own[i]}" if own[i] else ""
        handles.append(Line2D([], [], color=c, marker=markers[i % len(markers)], linewidth=2,
                              label=f"{run.label}  ({final}){settings}"))
    if any(r.incidents for r in runs):
        handles.append(Line2D([], [], color="0.3", linestyle=":", label="failure"))
        handles.append(Line2D([], [], color="0.3", linestyle="-.", label="recovery"))
    legend = ax_legend.legend(handles=handles, loc="upper left", fontsize=10.5, frameon=True,
                              title="runs", title_fontsize=11, borderaxespad=0.2)

    fig.tight_layout(rect=(0, 0, 1, 0.95), h_pad=2.5, w_pad=2.5)
    # summary table right under the legend
    width = max(12, min(24, max(len(r.label) for r in runs) + 2))
    rows = [f"{'run':<{width}}{'final':>8}{'test':>7}{'samples':>9}{'wall':>7}{'staleness':>12}",
            f"{'':<{width}}{'auc' if ctr else 'acc':>8}{'loss':>7}{'per s':>9}{'(s)':>7}"
            f"{'max / mean':>12}"]
    for run in runs:
        s = run.summary or {}
        stale = [e["staleness"] for e in run.train if _is_number(e.get("staleness"))]
        max_stale = s.get("max_staleness", max(stale) if stale else None)
        mean_stale = f"{sum(stale) / len(stale):.1f}" if stale else "-"
        final_loss = s.get("final_test_loss", run.evals[-1]["test_loss"])
        wall = s.get("wall_s", run.evals[-1]["wall_s"])
        rate = f"{s['samples_per_s']:.0f}" if _is_number(s.get("samples_per_s")) else "-"
        label = run.label if len(run.label) < width else run.label[:width - 2] + "~"
        stale_text = f"{max_stale if _is_number(max_stale) else '-'} / {mean_stale}"
        score = run.final("test_auc") if ctr else run.final_accuracy
        rows.append(f"{label:<{width}}{score:>8.4f}{final_loss:>7.3f}{rate:>9}"
                    f"{wall:>7.1f}{stale_text:>12}")
        extras = []
        for key, name in (("test_gauc", "gauc"), ("test_calibration", "calibration")):
            if ctr and run.final(key) is not None:
                extras.append(f"{name} {run.final(key):.4f}")
        for key in ("failures", "dropped_messages"):
            if _is_number(s.get(key)) and s[key]:
                extras.append(f"{key.replace('_', ' ')} {s[key]}")
        if not run.summary:
            extras.append("no summary event (run cut short?)")
        if extras:
            rows.append("    " + ", ".join(extras))
    fig.canvas.draw()
    box = legend.get_window_extent().transformed(ax_legend.transAxes.inverted())
    ax_legend.text(0.0, box.y0 - 0.06, "\n".join(rows), transform=ax_legend.transAxes,
                   family="monospace", fontsize=9.5, va="top", ha="left", linespacing=1.5)

    fig.suptitle(title or "actorps training metrics", fontsize=15, fontweight="bold")
    if subtitle:
        fig.text(0.5, 0.955, subtitle + ("" if len(runs) == 1 else "  (every run)"),
                 ha="center", fontsize=10, color="0.3")
    out_dir = os.path.dirname(os.path.abspath(out))
    os.makedirs(out_dir, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="plot_metrics.py",
        description="Plot actorps `simulate --metrics` JSONL files (several runs are overlaid).")
    parser.add_argument("runs", nargs="+", metavar="RUN.jsonl", help="metrics files")
    parser.add_argument("-o", "--output", required=True, metavar="OUT.png",
                        help="image to write (PNG; .svg/.pdf also work)")
    parser.add_argument("--label", action="append", default=[], metavar="NAME",
                        help="legend label of the next run, in order (repeat per run; default "
                             "from the start/summary event, e.g. 'ssp s=2, 4w/2ps')")
    parser.add_argument("--title", help="figure title")
    parser.add_argument("--smooth", type=int, default=20, metavar="N",
                        help="moving-average window of the train-loss panel, in clocks "
                             "(default 20; 1 = raw)")
    parser.add_argument("--no-worker-lines", action="store_true",
                        help="train-loss panel: draw only the mean over workers")
    args = parser.parse_args(argv)
    if args.smooth < 1:
        parser.error("--smooth must be >= 1")
    if len(args.label) > len(args.runs):
        parser.error(f"{len(args.label)} --label values for {len(args.runs)} runs")

    try:
        runs = [load_run(p) for p in args.runs]
    except InputError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    for i, run in enumerate(runs):
        run.label = args.label[i] if i < len(args.label) else run.default_label()
    # identical default labels (say two ssp s=2 runs with different --slow): add the file name
    for i, run in enumerate(runs):
        if i >= len(args.label) and sum(r.label == run.label for r in runs) > 1:
            run.label += f" [{os.path.splitext(os.path.basename(run.path))[0]}]"

    plot(runs, args.output, args.title, args.smooth, not args.no_worker_lines)
    print(f"{PROG}: wrote {args.output} ({len(runs)} run{'s' if len(runs) != 1 else ''})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
