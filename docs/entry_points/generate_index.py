#!/usr/bin/env python3
"""Writes docs/entry_points.md: every entry point of cuda.h's memory groups, and where a lesson
calls it, or why none does.

The groups are CUDA_MEM, CUDA_VA, CUDA_MALLOC_ASYNC, CUDA_MULTICAST, CUDA_UNIFIED and
CUDA_PEER_ACCESS (arrays and mipmapped arrays, and the copies to and from arrays, are left
aside: no lesson teaches them). An entry point is a declaration `CUresult CUDAAPI cuName(`
between a group's `\\defgroup NAME` and its `/* END NAME */`. A call is `cuName(` in a sample's or
Common's .cpp, .hpp or .cu file, outside comments and strings; the index gives the first one of
each lesson, as file:line. The sentence for an entry point no lesson calls comes from the
hand-written table docs/entry_points/not_called.txt.

    python3 docs/entry_points/generate_index.py            # rewrites docs/entry_points.md
    python3 docs/entry_points/generate_index.py --check    # fails if it is stale (the CTest)

Options: --root (the repository, default: two folders up), --cuda-h (default: the CUDA toolkit's,
found from $CUDA_PATH, /usr/local/cuda), --reasons, --out. Exit status: 0 written or up to date,
1 stale or inconsistent (each problem named, with the command that refreshes the index), 2 bad
usage or unreadable input.
"""
import argparse
import os
import re
import sys

GROUPS = ["CUDA_MEM", "CUDA_VA", "CUDA_MALLOC_ASYNC", "CUDA_MULTICAST", "CUDA_UNIFIED",
          "CUDA_PEER_ACCESS"]
LEFT_ASIDE = re.compile(r"Array|Mipmap|^cuMemcpy(AtoD|AtoH|AtoA|DtoA|HtoA)")
REFRESH = "python3 docs/entry_points/generate_index.py"
CODE_SUFFIXES = (".cpp", ".hpp", ".cu")


def fail_usage(message):
    print(f"generate_index.py: {message}", file=sys.stderr)
    sys.exit(2)


def read_text(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError as error:
        fail_usage(f"cannot read {path}: {error.strerror}")


def find_cuda_h():
    for root in (os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and os.path.isfile(os.path.join(root, "include", "cuda.h")):
            return os.path.join(root, "include", "cuda.h")
    fail_usage("cannot find cuda.h: pass --cuda-h PATH")


def entry_points(cuda_h_text):
    """{group: (title, [names in cuda.h's order])} and the CUDA_VERSION of the header."""
    groups = {}
    for group in GROUPS:
        start = re.search(r"\\defgroup " + group + r" ([^\n]*)\n", cuda_h_text)
        end = re.search(r"/\* END " + group + r" \*/", cuda_h_text)
        if not start or not end or end.start() < start.end():
            fail_usage(f"cuda.h has no group {group} (\\defgroup ... END {group})")
        body = cuda_h_text[start.end():end.start()]
        names = []
        for name in re.findall(r"CUresult CUDAAPI (cu\w+)\s*\(", body):
            if not LEFT_ASIDE.search(name) and name not in names:
                names.append(name)
        groups[group] = (start.group(1).strip(), names)
    version = re.search(r"#define CUDA_VERSION (\d+)", cuda_h_text)
    return groups, (int(version.group(1)) if version else 0)


def blank_comments_and_strings(text):
    """The text with comments and string and character literals blanked, newlines kept."""
    out = []
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not text[i - 1].isalnum()):
            open_paren = text.find("(", i + 2)
            delimiter = text[i + 2:open_paren]
            j = text.find(")" + delimiter + '"', open_paren)
            j = n if j < 0 else j + len(delimiter) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def code_files(root):
    """(owner, path relative to root) for every code file of the samples and Common, sorted;
    owner is the sample's folder name, or "Common"."""
    found = []
    samples = os.path.join(root, "samples")
    if not os.path.isdir(samples):
        fail_usage(f"{samples} is not a folder")
    for folder in sorted(os.listdir(samples)):
        base = os.path.join(samples, folder)
        if not os.path.isdir(base):
            continue
        for directory, _, files in sorted(os.walk(base)):
            for name in sorted(files):
                if name.endswith(CODE_SUFFIXES):
                    found.append((folder, os.path.relpath(os.path.join(directory, name), root)))
    for directory, _, files in sorted(os.walk(os.path.join(root, "Common"))):
        for name in sorted(files):
            if name.endswith(CODE_SUFFIXES):
                found.append(("Common", os.path.relpath(os.path.join(directory, name), root)))
    return found


def find_calls(root, wanted):
    """{name: {owner: (path, line)}}: the first call of each wanted entry point per owner."""
    pattern = re.compile(r"\b(cu[A-Z]\w*)\s*\(")
    calls = {name: {} for name in wanted}
    for owner, path in code_files(root):
        text = blank_comments_and_strings(read_text(os.path.join(root, path)))
        for number, line in enumerate(text.split("\n"), start=1):
            for name in pattern.findall(line):
                if name in calls and owner not in calls[name]:
                    calls[name][owner] = (path, number)
    return calls


def read_reasons(path):
    reasons = {}
    for number, line in enumerate(read_text(path).split("\n"), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, colon, sentence = line.partition(":")
        if not colon or not re.fullmatch(r"cu\w+", name.strip()) or not sentence.strip():
            fail_usage(f"{path}:{number}: expected `cuName: one sentence`")
        reasons[name.strip()] = sentence.strip()
    return reasons


def where(path, line):
    """A link GitHub follows from docs/entry_points.md, showing file:line."""
    shown = path.split("/", 2)[-1] if path.startswith("samples/") else path
    return f"[{shown}:{line}](../{path}#L{line})"


def build_index(groups, version, calls, reasons):
    """The markdown text, and the problems found (entry points without a call or a reason)."""
    problems = []
    total = sum(len(names) for _, names in groups.values())
    called = sum(1 for _, names in groups.values() for name in names
                 if any(owner != "Common" for owner in calls[name]))
    major, minor = version // 1000, version % 1000 // 10
    lines = [
        "# Every driver memory call, and the lesson that makes it {#entry_points}",
        "",
        f"cuda.h (CUDA {major}.{minor}) declares {total} entry points in its memory groups "
        "(arrays and mipmapped arrays left aside). The lessons call "
        f"**{called} of them**. For each, this page names every lesson that calls it, with the "
        "file and line of its first call there; for the others, why no lesson does.",
        "",
        f"Generated by `{REFRESH}` from cuda.h, the code of the samples and Common, and "
        "[the table of reasons](entry_points/not_called.txt); the test "
        "`docs.entryPoints.committed` fails when this page and the code disagree.",
        "",
    ]
    for group in GROUPS:
        title, names = groups[group]
        lines += [f"## {title} ({group})", "", "| Entry point | Called in |", "|---|---|"]
        for name in names:
            lessons = [(owner, at) for owner, at in sorted(calls[name].items())
                       if owner != "Common"]
            common = calls[name].get("Common")
            cells = [f"{owner[:2]} {where(*at)}" for owner, at in lessons]
            if lessons and common:
                cells.append(f"and Common {where(*common)}")
            if not lessons:
                reason = reasons.get(name)
                if reason is None:
                    problems.append(f"{name}: no lesson calls it, and "
                                    "docs/entry_points/not_called.txt gives no reason")
                    reason = "(no reason given)"
                prefix = f"Common only ({where(*common)}). " if common else "Not called. "
                cells = [prefix + reason]
            lines.append(f"| `{name}` | {', '.join(cells)} |")
        lines.append("")
    for name in sorted(reasons):
        if not any(name in names for _, names in groups.values()):
            problems.append(f"{name}: docs/entry_points/not_called.txt gives a reason, but "
                            "cuda.h's memory groups have no such entry point")
    return "\n".join(lines), problems


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(here)))
    parser.add_argument("--cuda-h")
    parser.add_argument("--reasons")
    parser.add_argument("--out")
    parser.add_argument("--check", action="store_true",
                        help="compare with the committed index instead of writing it")
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    reasons_path = args.reasons or os.path.join(root, "docs", "entry_points", "not_called.txt")
    out_path = args.out or os.path.join(root, "docs", "entry_points.md")

    groups, version = entry_points(read_text(args.cuda_h or find_cuda_h()))
    names = [name for _, group_names in groups.values() for name in group_names]
    calls = find_calls(root, names)
    reasons = read_reasons(reasons_path)
    text, problems = build_index(groups, version, calls, reasons)
    text += "\n"

    stale = [name for name in sorted(reasons)
             if any(owner != "Common" for owner in calls.get(name, {}))]
    for name in stale:
        print(f"note: {name} is called by a lesson now; its line in not_called.txt is unused")

    if args.check:
        committed = read_text(out_path) if os.path.isfile(out_path) else ""
        if committed != text:
            old, new = committed.split("\n"), text.split("\n")
            line = next((i for i, (a, b) in enumerate(zip(old, new)) if a != b),
                        min(len(old), len(new)))
            shown_old = old[line] if line < len(old) else "(end of file)"
            shown_new = new[line] if line < len(new) else "(end of file)"
            problems.append(f"{out_path} is stale from line {line + 1}:\n"
                            f"  committed: {shown_old}\n  generated: {shown_new}")
    else:
        with open(out_path, "w", encoding="utf-8") as handle:
            handle.write(text)

    called = text.split("**")[1] if "**" in text else "?"
    print(f"{len(names)} entry points; the lessons call {called}")
    if problems:
        for problem in problems:
            print(f"FAILED: {problem}")
        print(f"Refresh the index with: {REFRESH} (and give every entry point no lesson calls a "
              "line in docs/entry_points/not_called.txt), then commit docs/entry_points.md")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
