#!/usr/bin/env python3
"""A flame graph as SVG from `perf script` output, with no tools beyond Python (bench/hotpath.sh uses it).

    perf script -i perf.data | swift demangle --simplified | python3 scripts/flamegraph.py "title" > graph.svg

Each sample's stack is folded root first; a box's width is its share of the samples, and hovering shows the
function and its share. Boxes narrower than 0.1 % are left out.
"""
import html
import re
import sys
import zlib


def stacks(lines):
    """Yields each sample's frames, root first."""
    frames = []
    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            if frames:
                yield list(reversed(frames))
            frames = []
        elif line.startswith(("\t", " ")):
            match = re.match(r"\s*[0-9a-f]+\s+(.*?)(\+0x[0-9a-f]+)?\s+\(([^)]*)\)$", line)
            name = match.group(1) if match else line.strip()
            if name and name != "[unknown]":
                frames.append(name[:150])
    if frames:
        yield list(reversed(frames))


def main():
    title = sys.argv[1] if len(sys.argv) > 1 else "flame graph"
    root = {"count": 0, "children": {}}
    for frames in stacks(sys.stdin):
        node = root
        node["count"] += 1
        for name in frames:
            node = node["children"].setdefault(name, {"count": 0, "children": {}})
            node["count"] += 1
    total = max(root["count"], 1)
    width, row = 1200.0, 16
    boxes = []

    def place(node, name, x, depth):
        share = node["count"] / total
        if share < 0.001:
            return
        boxes.append((x, depth, share * width, name, share))
        child_x = x
        for child_name, child in sorted(node["children"].items()):
            place(child, child_name, child_x, depth + 1)
            child_x += child["count"] / total * width

    place(root, "all samples", 0.0, 0)
    depth = max(b[1] for b in boxes) + 1
    height = depth * row + 40
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{int(width)}" height="{height}" font-family="monospace" font-size="11">',
           f'<text x="4" y="16" font-size="14">{html.escape(title)} ({total} samples)</text>']
    for x, level, w, name, share in boxes:
        y = height - (level + 1) * row
        hue = zlib.crc32(name.encode()) % 60
        label = html.escape(name[: max(int(w / 7) - 1, 0)])
        out.append(f'<g><title>{html.escape(name)} ({share:.1%})</title>'
                   f'<rect x="{x:.1f}" y="{y}" width="{max(w - 0.5, 0.1):.1f}" height="{row - 1}" fill="hsl({hue},85%,60%)"/>'
                   f'<text x="{x + 2:.1f}" y="{y + 11}">{label}</text></g>')
    out.append("</svg>")
    print("\n".join(out))


if __name__ == "__main__":
    main()
