#!/usr/bin/env python3
"""Draws the course's plots from the measured data in docs/data/ (docs/refresh_data.sh wrote it).

    plot_data.py --data DIR --out DIR [--pages ROOT] [--require-all] [--compare DIR]

Every plot below reads one data file, draws one SVG, NN_name.svg, and writes its caption next to
it, NN_name.txt: what the plot shows, then the data file and where it came from (device, driver,
date, commit: the provenance fields of the file). A plot whose data file is missing is left out
and named on stderr. Nothing in a plot is typed here: every number comes from a data file.

--pages ROOT: then every plot link ![...](.../images/plots/NAME.svg) of ROOT/samples/*/README.md
and ROOT/docs/samples/*.md must name a plot that was drawn; each one that does not is named and
the exit status is 1. (assemble_pages.cmake shows each on the course with its caption.)
--require-all: exit 1 unless every plot was drawn (the plotting tests run on fixtures).
--compare DIR: exit 1 unless DIR holds exactly the files drawn, byte for byte (the committed
plots, docs/images/plots: the docs.plots.committed test keeps them in step with docs/data).

The committed plots are drawn with
    python3 docs/plots/plot_data.py --data docs/data --out docs/images/plots
and a README shows one as ![what it shows](../../docs/images/plots/NAME.svg). The SVG is the
same bytes on every run (a fixed svg.hashsalt, no date, no creator); another matplotlib version
may lay it out differently.

Needs matplotlib (Debian: python3-matplotlib); without it the exit status is 3 and the docs build
leaves the plots out.
"""
import argparse
import json
import os
import re
import statistics
import sys

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import ticker
except ImportError:  # the docs build checks this at configure time and says so
    print("plot_data.py: matplotlib is not installed (python3-matplotlib)", file=sys.stderr)
    sys.exit(3)

# Reproducible SVG: no date in the file, stable element ids, text kept as text.
matplotlib.rcParams.update({
    "svg.hashsalt": "cuda-memory-samples",
    "svg.fonttype": "none",
    "font.size": 10,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
})
COLORS = ["#1f5fa8", "#d9822b", "#3a9a50", "#b03a48", "#7a5ba6", "#6b6b6b"]
MIB = 1024 * 1024


class DataError(Exception):
    """A data file lacks what a plot needs."""


# ------------------------------------------------------------------------------------ data access

def load(data_dir, name):
    path = os.path.join(data_dir, name)
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    data["_file"] = name
    return data


def passed_results(data):
    """The `results` objects of the runs that passed, in run order."""
    results = [run["result"]["results"] for run in data.get("runs", [])
               if run.get("exitCode") == 0 and isinstance(run.get("result"), dict)
               and run["result"].get("verdict") == "PASS"]
    if not results:
        raise DataError(f"{data['_file']}: no run passed")
    return results


def field(obj, key, where):
    if key not in obj or obj[key] is None:
        raise DataError(f"{where}: no '{key}'")
    return obj[key]


def source_line(data):
    """The caption's last sentence: which file, which machine, when."""
    commit = str(data.get("commit", "unknown"))
    short = commit[:10] + ("-dirty" if commit.endswith("-dirty") else "")
    date = str(data.get("date", "unknown"))[:10]
    text = (f"Data: docs/data/{data['_file']} ({data.get('device', 'unknown device')}, "
            f"driver {data.get('driver', 'unknown')}, {date}, commit {short})")
    if data.get("fixture"):
        text += " FIXTURE: made-up numbers, not a measurement"
    return text + "."


def size_label(nbytes):
    if nbytes >= 1024 * MIB:
        return f"{nbytes / (1024 * MIB):g} GiB"
    if nbytes >= MIB:
        return f"{nbytes / MIB:g} MiB"
    if nbytes >= 1024:
        return f"{nbytes / 1024:g} KiB"
    return f"{nbytes:g} B"


def log2_size_axis(axis, sizes):
    axis.set_xscale("log", base=2)
    axis.set_xticks(sizes)
    axis.set_xticklabels([size_label(s) for s in sizes], rotation=45, ha="right")
    axis.minorticks_off()


def plain_log(axis, which, subs=(1.0, 2.0, 5.0)):
    """A log scale labelled 1, 2, 5, 10, 20 ... (or 1, 10, 100 ...) instead of powers of ten."""
    scale = axis.yaxis if which == "y" else axis.xaxis
    (axis.set_yscale if which == "y" else axis.set_xscale)("log")
    scale.set_major_locator(ticker.LogLocator(base=10, subs=subs))
    scale.set_major_formatter(ticker.FuncFormatter(lambda value, _: f"{value:g}"))
    scale.set_minor_formatter(ticker.NullFormatter())


def legend_below(axis, columns=3, **extra):
    axis.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=columns, fontsize=8,
                frameon=False, **extra)


def bar_labels(axis, bars, fmt="{:.1f}"):
    for bar in bars:
        width = bar.get_width()
        axis.annotate(fmt.format(width), (width, bar.get_y() + bar.get_height() / 2),
                      xytext=(3, 0), textcoords="offset points", va="center", fontsize=8)


# -------------------------------------------------------------------------------------- the plots

def plot_01(data, figure):
    runs = sorted(passed_results(data), key=lambda r: field(r, "bytesPerVector", "01"))
    sizes = [r["bytesPerVector"] for r in runs]
    axis = figure.add_subplot(1, 1, 1)
    axis.plot(sizes, [field(r, "kernelGBps", "01") for r in runs], "o-", color=COLORS[0],
              label="VecAdd kernel (reads A and B, writes C)")
    axis.plot(sizes, [field(r, "copyDtoDGBps", "01") for r in runs], "s-", color=COLORS[1],
              label="cuMemcpyDtoDAsync (read + write)")
    axis.plot(sizes, [field(r, "theoreticalPeakGBps", "01") for r in runs], "--",
              color=COLORS[5], label="theoretical peak")
    log2_size_axis(axis, sizes)
    axis.set_xlabel("bytes per vector (--size)")
    axis.set_ylabel("GB/s (1 GB = 1e9 B)")
    axis.set_ylim(bottom=0)
    axis.legend(loc="lower right")
    return ("The kernel and the device-to-device copy over vector sizes, one run of vectorAddDrv "
            "per size. The smallest vectors are bound by launch and latency; while the buffers "
            "fit in the GPU's L2 cache (three for the kernel, two for the copy), both can beat "
            "memory, so the early peak is the cache; from a few hundred MiB on, both settle at "
            "memory bandwidth, below the theoretical peak, where the sample's default of 256 MiB "
            "per vector already is.")


def plot_02(data, figure):
    runs = passed_results(data)
    cost, bandwidth = figure.add_subplot(1, 2, 1), figure.add_subplot(1, 2, 2)
    # The mapping cost table of every run, pooled: the median per stripe count.
    pooled = {}
    for run in runs:
        for row in field(run, "mappingCost", "02"):
            pooled.setdefault(row["stripes"], []).append(row)
    counts = sorted(pooled)
    median = lambda key: [statistics.median(r[key] for r in pooled[c]) for c in counts]
    cost.plot(counts, median("buildMs"), "o-", color=COLORS[0],
              label="build (granularity, reserve, create, map, release, set access)")
    cost.plot(counts, median("freeMs"), "s-", color=COLORS[1],
              label="free (unmap, address free)")
    reference = [a + f for a, f in zip(median("cuMemAllocMs"), median("cuMemFreeMs"))]
    cost.plot(counts, reference, "--", color=COLORS[5], label="cuMemAlloc + cuMemFree")
    cost.set_xscale("log", base=2)
    plain_log(cost, "y")
    cost.set_xticks(counts)
    cost.set_xticklabels([str(c) for c in counts])
    cost.minorticks_off()
    cost.set_xlabel("stripes per range")
    cost.set_ylabel("host time per range, ms (median)")
    cost.set_title(f"Mapping cost of a {size_label(runs[0]['bytesPerVector'])} range", fontsize=10)
    cost.legend(fontsize=8, loc="upper left")

    runs = sorted(runs, key=lambda r: field(r, "stripes", "02"))
    stripes = [r["stripes"] for r in runs]
    # The two lines lie on each other: the VMM one drawn wide and hollow, the other inside it.
    bandwidth.plot(stripes, [field(r, "vmmKernelGBps", "02") for r in runs], "o-",
                   color=COLORS[0], linewidth=4, markersize=11, markerfacecolor="white",
                   alpha=0.6, label="kernel on the VMM range")
    bandwidth.plot(stripes, [field(r, "cuMemAllocKernelGBps", "02") for r in runs], "s--",
                   color=COLORS[1], markersize=4, label="kernel on cuMemAlloc buffers")
    bandwidth.plot(stripes, [field(r, "theoreticalPeakGBps", "02") for r in runs], ":",
                   color=COLORS[5], label="theoretical peak")
    bandwidth.set_xscale("log", base=2)
    bandwidth.set_xticks(stripes)
    bandwidth.set_xticklabels([str(s) for s in stripes])
    bandwidth.minorticks_off()
    bandwidth.set_ylim(bottom=0)
    bandwidth.set_xlabel("stripes per range (--stripes)")
    bandwidth.set_ylabel("GB/s")
    bandwidth.set_title("VecAdd kernel bandwidth, same run", fontsize=10)
    bandwidth.legend(fontsize=8, loc="lower right")
    return ("Left: what building and freeing a striped range costs against the number of "
            "stripes, next to cuMemAlloc + cuMemFree of the same size (medians of every run's "
            "cost table). Right: the kernel runs as fast on the range as on cuMemAlloc memory, "
            "whatever the stripe count: a mapping costs nothing once built.")


def plot_03(data, figure):
    run = passed_results(data)[-1]
    kernels, back = figure.add_subplot(1, 2, 1), figure.add_subplot(1, 2, 2)
    rows = [("(a) demand paging", "kernelPagingGBps"),
            ("(d) kept on the host, GPU-mapped", "kernelRemoteGBps"),
            ("(b) managed, prefetched", "kernelPrefetchedGBps"),
            ("(c) cuMemAlloc (reference)", "kernelDeviceGBps")]
    values = [field(run, key, "03") for _, key in rows]
    bars = kernels.barh([label for label, _ in rows], values,
                        color=[COLORS[3], COLORS[1], COLORS[0], COLORS[5]])
    plain_log(kernels, "x", subs=(1.0,))
    kernels.set_xlim(right=max(values) * 8)
    kernels.set_xlabel("GB/s, log scale")
    kernels.set_title(f"VecAdd on {size_label(run['bytesPerVector'])} managed vectors",
                      fontsize=10)
    bar_labels(kernels, bars)
    rows = [("prefetch (cuMemPrefetchAsync)", "prefetchDtoHGBps"),
            ("pageable copy (cuMemcpyDtoH)", "pageableDtoHGBps"),
            ("kernel writes C in place", "inPlaceWriteGBps"),
            ("pinned copy (cuMemcpyDtoHAsync)", "pinnedDtoHGBps")]
    values = [field(run, key, "03") for _, key in rows]
    bars = back.barh([label for label, _ in rows], values,
                     color=[COLORS[0], COLORS[1], COLORS[2], COLORS[5]])
    back.set_xlim(right=max(values) * 1.25)
    back.set_xlabel("GB/s")
    back.set_title("Getting results back, GPU -> host", fontsize=10)
    bar_labels(back, bars)
    figure.subplots_adjust(wspace=0.9)
    return ("Left (log scale): the same kernel under demand paging, on host memory the GPU "
            "maps by advice, after a prefetch, and on cuMemAlloc memory. Right: four ways of "
            "getting a result back to the host; the pinned copy is the link's limit.")


def plot_03_batch(data, figure):
    run = passed_results(data)[-1]
    rows = sorted(field(run, "batchVsSingle", "03"), key=lambda r: r["ranges"])
    counts = [r["ranges"] for r in rows]
    timing, discard = figure.add_subplot(1, 2, 1), figure.add_subplot(1, 2, 2)
    series = [("batchGpuMs", "one batch: GPU time", "o-", COLORS[0]),
              ("singlesGpuMs", "K single calls: GPU time", "s--", COLORS[1]),
              ("batchHostMs", "one batch: host busy", "o-", COLORS[2]),
              ("singlesHostMs", "K single calls: host busy", "s--", COLORS[3])]
    for key, label, style, color in series:
        timing.plot(counts, [field(r, key, "03") for r in rows], style, color=color, label=label)
    timing.set_xscale("log", base=2)
    timing.set_xticks(counts)
    timing.set_xticklabels([str(c) for c in counts])
    timing.minorticks_off()
    plain_log(timing, "y", subs=(1.0,))
    timing.set_xlabel(f"K ranges of {size_label(field(run, 'batchRangeBytes', '03'))}")
    timing.set_ylabel("ms, median")
    timing.set_title("cuMemPrefetchBatchAsync vs K cuMemPrefetchAsync", fontsize=10)
    legend_below(timing, 2)
    values = [field(run, "prefetchLiveMs", "03"), field(run, "prefetchDiscardedMs", "03")]
    bars = discard.barh(["live data", "after a discard"], values,
                        color=[COLORS[1], COLORS[0]])
    discard.invert_yaxis()
    discard.set_xlim(right=max(values) * 1.3)
    discard.set_xlabel("ms, median")
    discard.set_title(f"Prefetch of C ({size_label(run['bytesPerVector'])}) host -> GPU",
                      fontsize=10)
    bar_labels(discard, bars, "{:.2f}")
    figure.subplots_adjust(wspace=0.6)
    return ("Left (log scales): one batch of K ranges against K single prefetches. The GPU "
            "moves the same bytes either way; the host is busy far longer issuing single calls. "
            "Right: a prefetch of discarded pages need not copy their contents.")


def plot_04(data, figure):
    run = passed_results(data)[-1]
    sources = field(run, "sources", "04")
    axis = figure.add_subplot(1, 1, 1)
    columns = [("host -> device copy", "hostToDeviceGBps"),
               ("device -> host copy", "deviceToHostGBps"),
               ("zero-copy VecAdd (over the bus)", "zeroCopyVecAddGBps")]
    height = 0.8 / len(sources)
    for index, source in enumerate(sources):
        positions = [c + index * height for c in range(len(columns))]
        bars = axis.barh(positions, [field(source, key, "04") for _, key in columns],
                         height=height, color=COLORS[index % len(COLORS)], label=source["name"])
        bar_labels(axis, bars)
    axis.set_yticks([c + height * (len(sources) - 1) / 2 for c in range(len(columns))])
    axis.set_yticklabels([label for label, _ in columns])
    axis.invert_yaxis()
    axis.set_xlabel("GB/s")
    axis.set_xlim(right=max(field(s, k, "04") for s in sources for _, k in columns) * 1.2)
    axis.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
    return ("Host memory bound to the GPU's NUMA node (mbind before first touch, then "
            "registered; and cuMemCreate with a HOST_NUMA location) against cuMemHostAlloc, in "
            "both directions and for a kernel that reads and writes host memory in place.")


def heatmap(axis, matrix, title):
    values = [[float("nan") if v is None else v for v in row] for row in matrix]
    image = axis.imshow(values, cmap="viridis")
    for r, row in enumerate(values):
        for c, value in enumerate(row):
            axis.text(c, r, f"{value:.0f}", ha="center", va="center",
                      color="black" if value > max(max(values)) * 0.6 else "white")
    count = len(values)
    axis.set_xticks(range(count))
    axis.set_xticklabels([f"to {c}" for c in range(count)])
    axis.set_yticks(range(count))
    axis.set_yticklabels([f"from {r}" for r in range(count)])
    axis.grid(False)
    axis.set_title(title, fontsize=10)
    return image


def peer_run(data):
    """05's last passing run between two or more GPUs (not a --loopback run), or None."""
    try:
        runs = passed_results(data)
    except DataError:
        return None
    peers = [r for r in runs if r.get("mode", "peer") == "peer"
             and len(r.get("copyEngineGBps") or []) >= 2]
    return peers[-1] if peers else None


def plot_05(data, figure):
    run = peer_run(data)
    if run is None:
        raise DataError(f"{data['_file']}: no passing run between two GPUs")
    engine, sm = figure.add_subplot(1, 2, 1), figure.add_subplot(1, 2, 2)
    heatmap(engine, field(run, "copyEngineGBps", "05"), "copy engine (cuMemcpyPeerAsync), GB/s")
    image = heatmap(sm, field(run, "smCopyGBps", "05"), "SM (Copy_kernel on the accessor), GB/s")
    figure.colorbar(image, ax=[engine, sm], shrink=0.8, label="GB/s")
    figure.suptitle(f"{data.get('device')}, {str(data.get('date'))[:10]}", fontsize=10)
    what = ("Copy bandwidth between GPUs, rows from (the owner), columns to (the accessor, "
            "which runs the copy); the diagonal is a copy inside one device, the reference for "
            "the links.")
    if data["_file"] == "05_p2pMemMap_twoGpu.json":
        what += (" The numbers are the two-GPU run recorded in this README, read from it by "
                 "docs/plots/readme_05_matrices.py.")
    return what


def plot_06(data, figure):
    run = passed_results(data)[-1]
    rows = field(run, "latency", "06")
    alloc, free = figure.add_subplot(1, 2, 1), figure.add_subplot(1, 2, 2)
    kinds = []
    for row in rows:
        if row["resource"] not in kinds:
            kinds.append(row["resource"])
    for index, kind in enumerate(kinds):
        mine = sorted((r for r in rows if r["resource"] == kind), key=lambda r: r["bytes"])
        sizes = [r["bytes"] for r in mine]
        style = dict(color=COLORS[index % len(COLORS)], marker="os^vD*"[index % 6], label=kind)
        alloc.plot(sizes, [field(r, "allocateWithSyncUs", "06") for r in mine], **style)
        free.plot(sizes, [field(r, "freeWithSyncUs", "06") for r in mine], **style)
    sizes = sorted({r["bytes"] for r in rows})
    for axis, title in ((alloc, "allocate + synchronize"), (free, "free + synchronize")):
        log2_size_axis(axis, sizes)
        plain_log(axis, "y")
        axis.set_xlabel("bytes per allocation")
        axis.set_ylabel("microseconds per allocation (median)")
        axis.set_title(title, fontsize=10)
    handles, labels = alloc.get_legend_handles_labels()
    figure.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, -0.06), ncol=3,
                  fontsize=8, frameon=False)
    return ("Host time per allocation and per free, for each kind of resource the registry "
            "hands out, over allocation sizes (log scales). A pool that keeps freed memory hands "
            "it out again without the driver; the other kinds ask the driver each time, and "
            "pinning host memory costs more the larger it is.")


def plot_07(data, figure):
    run = passed_results(data)[-1]
    paths = field(run, "paths", "07")
    handoff, kernel = figure.add_subplot(1, 2, 1), figure.add_subplot(1, 2, 2)
    names = [field(p, "path", "07") for p in paths]
    bars = handoff.barh(names, [field(p, "handoffMedianMs", "07") for p in paths],
                        color=COLORS[:len(paths)])
    handoff.invert_yaxis()
    handoff.set_xlabel("ms, median")
    handoff.set_title("Handoff: export, send, import, map", fontsize=10)
    handoff.set_xlim(right=max(b.get_width() for b in bars) * 1.3)
    bar_labels(handoff, bars, "{:.3f}")
    bars = kernel.barh(names, [field(p, "workerKernelGBps", "07") for p in paths],
                       color=COLORS[:len(paths)])
    kernel.axvline(field(run, "referenceGBps", "07"), color=COLORS[5], linestyle="--",
                   label="the parent's kernel on its own memory")
    kernel.invert_yaxis()
    kernel.set_yticklabels([])
    kernel.set_xlabel("GB/s")
    kernel.set_title("The workers' VecAdd in the shared memory", fontsize=10)
    kernel.set_xlim(right=max(b.get_width() for b in bars) * 1.3)
    legend_below(kernel, 1)
    bar_labels(kernel, bars)
    return ("Left: how long handing the memory to a worker process takes on each path. Right: "
            "once imported, the workers' kernel runs as fast in the shared memory as the "
            "parent's kernel in its own.")


def plot_09(data, figure):
    run = passed_results(data)[-1]
    ways = figure.add_subplot(1, 3, 1)
    rows = field(run, "ways", "09")
    names = [f"{field(w, 'direction', '09').split()[0]} -> {w['direction'].split()[-1]}: "
             f"{field(w, 'name', '09')}" for w in rows]
    bars = ways.barh(names, [field(w, "gbps", "09") for w in rows],
                     color=[COLORS[0] if w["direction"].startswith("Host") else COLORS[1]
                            for w in rows])
    ways.invert_yaxis()
    ways.tick_params(axis="y", labelsize=7)
    ways.set_xlabel("GB/s")
    ways.set_xlim(right=max(b.get_width() for b in bars) * 1.25)
    ways.set_title(f"{field(run, 'blocks', '09')} blocks of "
                   f"{size_label(field(run, 'blockBytes', '09'))}", fontsize=10)
    bar_labels(ways, bars)
    # The sweep: each way as a share of the contiguous copy, one panel per direction, with the
    # goal (0.9) and the block size where the batch catches up with the SMs.
    points = field(run, "sweep", "09 (run with --sweep)")
    crossover = field(run, "crossover", "09 (run with --sweep)")
    for index, (direction, key, sm_label) in enumerate((
            ("Host to device", "hostToDevice", "SM gather, every SM"),
            ("Device to host", "deviceToHost", "SM scatter, every SM"))):
        axis = figure.add_subplot(1, 3, 2 + index)
        side = sorted((p for p in points if field(p, "direction", "09 sweep") == direction),
                      key=lambda p: p["blockBytes"])
        if not side:
            raise DataError(f"09 sweep: no {direction} points")
        sizes = [p["blockBytes"] for p in side]
        for way, (name, label) in enumerate((("loopGBps", "a loop of copies"),
                                             ("batchGBps", "one cuMemcpyBatchAsync"),
                                             ("smGBps", sm_label))):
            axis.plot(sizes, [field(p, name, "09 sweep") / field(p, "contiguousGBps", "09 sweep")
                              for p in side],
                      marker="os^"[way], color=COLORS[way], label=label)
        axis.axhline(0.9, color=COLORS[3], linestyle="--", linewidth=1, label="0.9 (the goal)")
        catches_up = field(crossover, key, "09 crossover").get("batchCatchesUpAtBytes")
        if catches_up is not None:
            axis.axvline(catches_up, color=COLORS[5], linestyle=":", linewidth=1.5,
                         label=f"the batch catches up: {size_label(catches_up)}")
        log2_size_axis(axis, sizes)
        axis.set_xlabel("bytes per block")
        axis.set_ylabel("share of one contiguous copy")
        axis.set_ylim(0, 1.1)
        axis.set_title(direction, fontsize=10)
        legend_below(axis, 2)
    return ("Left: every way of moving the scattered blocks, each checked, in both directions "
            "(host to device in the first colour). Middle and right: the sweep over block "
            "sizes as shares of one contiguous copy of the same bytes; the batch climbs with "
            "the block size while the SMs copy near the link at every size, and the dotted line "
            "marks where the batch catches up with them on this machine.")


def plot_10(data, figure):
    run = passed_results(data)[-1]
    mix = field(run, "variants", "10")
    # The same-size loop came with issue 34; a data file from before it has the mix only.
    same = run.get("sameSizeVariants") or []
    rows = [("same size", v) for v in same] + [("mix", v) for v in mix]
    latency, footprint = figure.add_subplot(1, 2, 1), figure.add_subplot(1, 2, 2)
    names = [f"{loop}: {field(v, 'name', '10')}" for loop, v in rows]
    y = list(range(len(rows)))
    median = latency.barh([i - 0.2 for i in y], [field(v, "medianUs", "10") for _, v in rows],
                          height=0.4, color=COLORS[0], label="median")
    p99 = latency.barh([i + 0.2 for i in y], [field(v, "p99Us", "10") for _, v in rows],
                       height=0.4, color=COLORS[1], label="p99")
    if same:
        latency.axhline(len(same) - 0.5, color=COLORS[5], linewidth=0.8)
    latency.set_yticks(y)
    latency.set_yticklabels(names, fontsize=8)
    latency.invert_yaxis()
    plain_log(latency, "x")
    latency.set_xlabel("microseconds per allocate + free pair (log scale)")
    mix_title = (f"mix: {field(run, 'allocations', '10')} of "
                 f"{size_label(field(run, 'minBytes', '10'))} to "
                 f"{size_label(field(run, 'maxBytes', '10'))}")
    if same:
        same_title = (f"same size: {field(run, 'sameSizeAllocations', '10')} of "
                      f"{size_label(field(run, 'sameSizeBytes', '10'))}")
        if "sameSizePairsPerStep" in run:  # the 8-pair steps came with issue 34
            same_title += f", {run['sameSizePairsPerStep']} pairs per step"
        latency.set_title(f"{same_title} ({field(run, 'sameSizeSpeedUp', '10'):.0f}x); "
                          f"{mix_title} ({field(run, 'poolOverAllocSpeedUp', '10'):.0f}x)",
                          fontsize=9)
    else:
        latency.set_title(mix_title + " (no same-size loop in this data file)", fontsize=9)
    bar_labels(latency, median, "{:.2f}")
    bar_labels(latency, p99, "{:.2f}")
    legend_below(latency, 2)
    pools = [v for v in mix if "reservedHighBytes" in v]
    mib = 1024.0 * 1024.0
    x = list(range(len(pools)))
    for offset, (key, label, color) in enumerate((
            ("reservedHighBytes", "reserved, high-water", COLORS[2]),
            ("usedHighBytes", "used, high-water", COLORS[3]),
            ("reservedAfterSyncBytes", "reserved after a synchronize", COLORS[4]))):
        footprint.bar([i + (offset - 1) * 0.27 for i in x], [v[key] / mib for v in pools],
                      width=0.27, color=color, label=label)
    footprint.axhline(field(run, "liveHighBytes", "10") / mib, color=COLORS[5], linestyle="--",
                      label="live bytes, high-water")
    footprint.set_xticks(x)
    footprint.set_xticklabels([v["name"] for v in pools], fontsize=8)
    footprint.set_ylabel("MiB")
    footprint.set_title("The pool's footprint in the mix", fontsize=10)
    legend_below(footprint, 2)
    loops = ("the same size every step (above the line) and a mix of sizes"
             if same else "a mix of sizes")
    return ("Left: what one allocation and its free cost with cuMemAlloc and cuMemFree against "
            f"the stream-ordered pool, median and 99th percentile, for {loops}; the pool that "
            "keeps its memory pays least where each step asks for the sizes the last one did. "
            "Right: in the mix the pool reserves little more than the loop ever had live; with "
            "a release threshold of 0 it gives everything back at each synchronize, which the "
            "p99 on the left pays for.")


# name, data file, function, figure size in inches
PLOTS = [
    ("01_vectorAddDrv", "01_vectorAddDrv.json", plot_01, (7.5, 4.2)),
    ("02_vectorAddMMAP", "02_vectorAddMMAP.json", plot_02, (11, 4.2)),
    ("03_managedAdvisePrefetch", "03_managedAdvisePrefetch.json", plot_03, (12, 3.4)),
    ("03_managedAdvisePrefetch_batch", "03_managedAdvisePrefetch.json", plot_03_batch, (11, 3.6)),
    ("04_numaHostAlloc", "04_numaHostAlloc.json", plot_04, (8, 4)),
    # A run of refresh_data.sh on two or more GPUs, else the two-GPU run recorded in the README.
    ("05_p2pMemMap", ("05_p2pMemMap.json", "05_p2pMemMap_twoGpu.json"), plot_05, (10, 4)),
    ("06_perDeviceResource", "06_perDeviceResource.json", plot_06, (11, 4.4)),
    ("07_memMapIPC", "07_memMapIPC.json", plot_07, (11, 3)),
    ("09_memcpyBatch", "09_memcpyBatch.json", plot_09, (16, 4.8)),
    ("10_streamOrderedPool", "10_streamOrderedPool.json", plot_10, (12, 4.6)),
]


def referenced_plots(root):
    """(page, name) for every plot link ![...](.../images/plots/NAME.svg) of the READMEs and
    docs/samples."""
    found = []
    pattern = re.compile(r"^!\[[^\]]*\]\((?:\.\./)*(?:docs/)?images/plots/([A-Za-z0-9_]+)\.svg\)\s*$",
                         re.M)
    folders = [(os.path.join(root, "samples"), "README.md"), (os.path.join(root, "docs", "samples"), None)]
    for folder, fixed in folders:
        if not os.path.isdir(folder):
            continue
        for entry in sorted(os.listdir(folder)):
            page = os.path.join(folder, entry, fixed) if fixed else os.path.join(folder, entry)
            if not page.endswith(".md") or not os.path.isfile(page):
                continue
            with open(page, encoding="utf-8") as handle:
                found += [(page, name) for name in pattern.findall(handle.read())]
    return found


REFRESH = "python3 docs/plots/plot_data.py --data docs/data --out docs/images/plots"


def compare(out, committed, drawn):
    """What differs between the plots drawn in @p out and those committed in @p committed."""
    problems = []
    expected = sorted(f"{name}{ext}" for name in drawn for ext in (".svg", ".txt"))
    present = sorted(entry for entry in os.listdir(committed)
                     if entry.endswith((".svg", ".txt"))) if os.path.isdir(committed) else []
    how = (f"drawn here with matplotlib {matplotlib.__version__}; to refresh the committed plots "
           f"from docs/data, run from the repository root: {REFRESH} (then commit them)")
    for entry in expected:
        path = os.path.join(committed, entry)
        if entry not in present:
            problems.append(f"{path} is missing: {entry} is drawn from the data ({how})")
            continue
        with open(os.path.join(out, entry), "rb") as new, open(path, "rb") as old:
            if new.read() != old.read():
                problems.append(f"{path} differs from {os.path.join(out, entry)}, {how}")
    for entry in present:
        if entry not in expected:
            problems.append(f"{os.path.join(committed, entry)} is committed, but no plot draws it "
                            f"from the data any more (delete it, or restore its data)")
    if not problems:
        print(f"plot_data.py: the {len(expected)} committed files in {committed} are the ones "
              f"drawn from the data, byte for byte")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--pages")
    parser.add_argument("--require-all", action="store_true")
    parser.add_argument("--compare")
    options = parser.parse_args()
    os.makedirs(options.out, exist_ok=True)
    drawn, problems = [], []
    for name, data_files, draw, size in PLOTS:
        candidates = [data_files] if isinstance(data_files, str) else list(data_files)
        data = None
        for data_file in candidates:
            data = load(options.data, data_file)
            # Of several files, the first that has what the plot needs (05: a two-GPU run).
            if data is not None and (draw is not plot_05 or peer_run(data) is not None):
                break
            data = None
        if data is None:
            print(f"plot_data.py: {name} left out: no usable {' or '.join(candidates)} in "
                  f"{options.data}", file=sys.stderr)
            continue
        figure = plt.figure(figsize=size)
        try:
            what = draw(data, figure)
        except (DataError, KeyError, TypeError, ValueError) as error:
            problems.append(f"{name}: cannot draw it from {data['_file']}: {error!r}")
            plt.close(figure)
            continue
        figure.savefig(os.path.join(options.out, name + ".svg"), bbox_inches="tight",
                       metadata={"Date": None, "Creator": None})
        plt.close(figure)
        with open(os.path.join(options.out, name + ".txt"), "w", encoding="utf-8") as handle:
            handle.write(f"{what} {source_line(data)}\n")
        drawn.append(name)
    if options.require_all:
        problems += [f"{name}: not drawn" for name, *_ in PLOTS if name not in drawn]
    if options.pages:
        for page, name in referenced_plots(options.pages):
            if name not in drawn:
                problems.append(f"{os.path.relpath(page, options.pages)} shows the plot {name}, "
                                f"which was not drawn (no such plot, or its data is missing)")
    if options.compare:
        problems += compare(options.out, options.compare, drawn)
    for problem in problems:
        print("plot_data.py: " + problem, file=sys.stderr)
    print(f"plot_data.py: drew {len(drawn)} plots in {options.out}: {', '.join(drawn) or 'none'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
