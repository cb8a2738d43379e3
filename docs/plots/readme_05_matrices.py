#!/usr/bin/env python3
"""Reads the two-GPU run recorded in samples/05_p2pMemMap/README.md into a data file:

    readme_05_matrices.py ROOT > docs/data/05_p2pMemMap_twoGpu.json

The machines this project measures on have one GPU; 05's peer bandwidth matrices come from the one
two-GPU run there was, which its README shows as printed. This reads that output (the block after
"On two NVIDIA H200s"), so the heatmaps show exactly what was printed, never typed numbers. The
provenance fields say where the text is: `commit` and `date` are those of the commit that put
the run in the README (git log -S), `device` and `driver` the README's words about the machine.
"""
import json
import re
import subprocess
import sys


def matrix_after(text, heading):
    """The square matrix printed under the line starting with @p heading (`from N  a  b ...`)."""
    start = text.index(heading)
    rows = []
    for line in text[start:].splitlines()[2:]:
        match = re.match(r"^\s+from (\d+)\s+(.*)$", line)
        if not match:
            break
        rows.append([None if cell == "-" else float(cell) for cell in match.group(2).split()])
    if not rows or any(len(row) != len(rows) for row in rows):
        raise SystemExit(f"readme_05_matrices.py: no square matrix under '{heading}'")
    return rows


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    readme_path = "samples/05_p2pMemMap/README.md"
    with open(f"{root}/{readme_path}", encoding="utf-8") as handle:
        readme = handle.read()
    intro = re.search(r"^On (two [^\n]*?), same driver:\n\n```\n(.*?)\n```", readme, re.S | re.M)
    if not intro:
        raise SystemExit("readme_05_matrices.py: the README has no two-GPU run ('On two ...')")
    machine, output = intro.group(1), intro.group(2)
    driver = re.search(r"driver (\d+\.\d+\.\d+)", readme)
    engine = matrix_after(output, "Copy engine (")
    sm = matrix_after(output, "SM (Copy_kernel")
    first_row = next(line for line in output.splitlines() if re.match(r"^\s+from 0\s", line))
    log = subprocess.run(["git", "-C", root, "log", "--reverse", "--format=%H %cI",
                          "-S", first_row.strip(), "--", readme_path],
                         capture_output=True, text=True, check=True).stdout.split()
    if len(log) < 2:
        raise SystemExit("readme_05_matrices.py: git log finds no commit that added the run")
    machine = re.sub(r"`", "", machine)
    data = {
        "command": f"docs/plots/readme_05_matrices.py: the two-GPU run of p2pMemMap as "
                   f"recorded in {readme_path}",
        "device": machine,
        "driver": driver.group(1) if driver else "unknown",
        "commit": log[0],
        "date": log[1],
        "runs": [{"args": "", "exitCode": 0, "result": {
            "sample": "p2pMemMap", "verdict": "PASS",
            "results": {"copyEngineGBps": engine, "smCopyGBps": sm}}}],
    }
    json.dump(data, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
