#!/usr/bin/env python3
"""Plots what benches/larger_than_memory.sh printed: wall time and memory against the dump's size,
for one verb, as a self-contained SVG (no plotting library needed).

Usage:
  python3 benches/larger_than_memory_plot.py TABLE.md VERB OUT.svg

TABLE.md holds the script's markdown rows, with or without MEMORY_LIMIT's columns (other lines
are skipped; where every row ran under a limit, the limit is drawn too). Two panels share the x axis
(the dump's size in GB): wall seconds, and peak memory in GiB (the resident set, which counts a
spilled run's file pages while they are resident, and the anonymous part, which is what an
out-of-memory kill counts), each with the straight line through the origin and the largest point
drawn dashed, so that growth faster than linear shows as points above it.
"""
import sys


def rows(path, verb):
    """(GB, wall s, peak RSS GiB, peak anonymous GiB, cgroup limit GiB or None) per row of the
    verb: the script's plain table has 7 cells, the one under MEMORY_LIMIT 10."""
    points = []
    for line in open(path):
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) not in (7, 10) or cells[2] != "`%s`" % verb or "failed" in cells[-1]:
            continue
        size = int(cells[1])
        limit = float(cells[3]) / 1024 if len(cells) == 10 else None
        wall, rss, anon = cells[3:6] if len(cells) == 7 else cells[4:7]
        points.append((size / 1e9, float(wall), float(rss.split()[0]) / 1024,
                       float(anon.split()[0]) / 1024, limit))
    return sorted(points)


def panel(x0, y0, width, height, points, series, y_label, title):
    """One panel: `series` is a list of (index into the point tuples, colour, name)."""
    max_x = max(p[0] for p in points) * 1.05
    max_y = max(p[i] for p in points for i, _, _ in series) * 1.1
    sx = lambda x: x0 + x / max_x * width
    sy = lambda y: y0 + height - y / max_y * height
    out = ['<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#888"/>' % (x0, y0, width, height)]
    out.append('<text x="%d" y="%d" font-size="14" font-weight="bold">%s</text>' % (x0, y0 - 10, title))
    for k in range(5):
        y = max_y * k / 4
        out.append('<text x="%d" y="%d" font-size="11" text-anchor="end">%.0f</text>' % (x0 - 6, sy(y) + 4, y))
        out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/>' % (x0, sy(y), x0 + width, sy(y)))
    for p in points:
        out.append('<text x="%.1f" y="%d" font-size="11" text-anchor="middle">%.1f</text>' % (sx(p[0]), y0 + height + 16, p[0]))
    out.append('<text x="%d" y="%d" font-size="12" text-anchor="middle">dump size, GB</text>' % (x0 + width / 2, y0 + height + 34))
    out.append('<text x="%d" y="%d" font-size="12" transform="rotate(-90 %d %d)" text-anchor="middle">%s</text>' % (
        x0 - 40, y0 + height / 2, x0 - 40, y0 + height / 2, y_label))
    for legend, (index, colour, name) in enumerate(series):
        last = points[-1]
        slope = last[index] / last[0]
        out.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-dasharray="4 4" opacity="0.6"/>' % (
            sx(0), sy(0), sx(max_x), sy(min(slope * max_x, max_y)), colour))
        path = " ".join("%s%.1f,%.1f" % ("M" if i == 0 else "L", sx(p[0]), sy(p[index])) for i, p in enumerate(points))
        out.append('<path d="%s" fill="none" stroke="%s" stroke-width="2"/>' % (path, colour))
        for p in points:
            out.append('<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"/>' % (sx(p[0]), sy(p[index]), colour))
        out.append('<text x="%d" y="%d" font-size="12" fill="%s">%s</text>' % (x0 + 10, y0 + 18 + 16 * legend, colour, name))
    return out


def main():
    table, verb, out_path = sys.argv[1:4]
    points = rows(table, verb)
    if len(points) < 2:
        sys.exit("fewer than two rows of `%s` in %s" % (verb, table))
    svg = ['<svg xmlns="http://www.w3.org/2000/svg" width="900" height="360" font-family="sans-serif">',
           '<rect width="900" height="360" fill="white"/>']
    svg += panel(70, 40, 330, 260, points, [(1, "#1f77b4", "wall seconds")], "seconds",
                 "heapgraph %s: time" % verb)
    memory = [(2, "#d62728", "peak resident set"), (3, "#2ca02c", "peak anonymous memory")]
    if all(point[4] is not None for point in points):
        memory.append((4, "#7f7f7f", "the cgroup's limit"))
    svg += panel(530, 40, 330, 260, points, memory, "GiB", "heapgraph %s: memory" % verb)
    svg.append("</svg>")
    with open(out_path, "w") as out:
        out.write("\n".join(svg) + "\n")


if __name__ == "__main__":
    main()
