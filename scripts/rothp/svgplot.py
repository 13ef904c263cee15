# SPDX-License-Identifier: GPL-2.0
"""svgplot: the two plain SVG charts of bench_report.py, with no plotting
library: line panels on a log2 x axis, and grouped bars."""
import math
from xml.sax.saxutils import escape

FONT = 'font-family="sans-serif" font-size="12"'


def _text(x, y, s, anchor='middle', size=12, extra=''):
    return (f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" '
            f'font-family="sans-serif" font-size="{size}" {extra}>{escape(str(s))}</text>')


def line_panels(title, panels, xlabels, xs, xtitle, ytitle, ymin, ymax):
    """panels: [(panel title, [(label, [(x, y)], (colour, dashed))])]."""
    pw, ph, left, top, gap, legend_h = 420, 260, 60, 50, 70, 110
    width = left + len(panels) * (pw + gap)
    height = top + ph + 50 + legend_h
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           _text(width / 2, 22, title, size=15)]
    if not xs:
        out.append(_text(width / 2, height / 2, 'no data'))
        out.append('</svg>')
        return '\n'.join(out) + '\n'
    lx0, lx1 = math.log2(min(xs)), math.log2(max(xs))
    span = (lx1 - lx0) or 1

    def px(x, x0):
        return x0 + (math.log2(x) - lx0) / span * pw

    def py(y):
        return top + ph - (y - ymin) / ((ymax - ymin) or 1) * ph

    for n, (ptitle, series) in enumerate(panels):
        x0 = left + n * (pw + gap)
        out.append(f'<rect x="{x0}" y="{top}" width="{pw}" height="{ph}" fill="none" '
                   'stroke="#444"/>')
        out.append(_text(x0 + pw / 2, top - 8, ptitle, size=13))
        for i in range(5):
            y = ymin + (ymax - ymin) * i / 4
            out.append(f'<line x1="{x0}" x2="{x0 + pw}" y1="{py(y):.1f}" y2="{py(y):.1f}" '
                       'stroke="#ddd"/>')
            out.append(_text(x0 - 6, py(y) + 4, f'{y:g}', anchor='end', size=11))
        for x, lab in zip(xs, xlabels):
            out.append(_text(px(x, x0), top + ph + 16, lab, size=11))
        out.append(_text(x0 + pw / 2, top + ph + 34, xtitle))
        out.append(_text(x0 - 44, top + ph / 2, ytitle,
                         extra=f'transform="rotate(-90 {x0 - 44} {top + ph / 2})"'))
        for k, (label, pts, (colour, dashed)) in enumerate(series):
            dash = ' stroke-dasharray="6 4"' if dashed else ''
            # Overlapping lines stay visible: each series a little offset.
            off = (k - len(series) / 2) * 1.5
            if pts:
                d = ' '.join(f'{px(x, x0):.1f},{py(y) + off:.1f}' for x, y in pts)
                out.append(f'<polyline points="{d}" fill="none" stroke="{colour}" '
                           f'stroke-width="2"{dash}/>')
                for x, y in pts:
                    out.append(f'<circle cx="{px(x, x0):.1f}" cy="{py(y) + off:.1f}" r="3" '
                               f'fill="{colour}"/>')
            ly = top + ph + 52 + k * 18
            out.append(f'<line x1="{x0}" x2="{x0 + 24}" y1="{ly}" y2="{ly}" '
                       f'stroke="{colour}" stroke-width="2"{dash}/>')
            out.append(_text(x0 + 30, ly + 4, label, anchor='start', size=11))
    out.append('</svg>')
    return '\n'.join(out) + '\n'


def bars(title, groups, names):
    """groups: [(label, value of names[0], value of names[1])]; None is missing."""
    colours = ('#ff7f0e', '#1f77b4')
    vals = [v for g in groups for v in g[1:] if v is not None]
    vmax = max(vals) if vals else 1
    gw, bw, left, top, ph = 200, 60, 70, 50, 240
    width = left + len(groups) * gw + 40
    height = top + ph + 80
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           _text(width / 2, 22, title, size=15),
           f'<line x1="{left}" x2="{width - 20}" y1="{top + ph}" y2="{top + ph}" stroke="#444"/>']
    for n, (label, *vs) in enumerate(groups):
        gx = left + n * gw + 20
        for k, v in enumerate(vs):
            x = gx + k * (bw + 10)
            if v is None:
                out.append(_text(x + bw / 2, top + ph - 6, 'missing', size=11))
                continue
            h = v / vmax * (ph - 20)
            out.append(f'<rect x="{x}" y="{top + ph - h:.1f}" width="{bw}" height="{h:.1f}" '
                       f'fill="{colours[k % 2]}"/>')
            out.append(_text(x + bw / 2, top + ph - h - 5, f'{v:.4g}', size=11))
        out.append(_text(gx + bw + 5, top + ph + 18, label))
    for k, name in enumerate(names):
        ly = top + ph + 40 + k * 16
        out.append(f'<rect x="{left}" y="{ly - 9}" width="14" height="10" '
                   f'fill="{colours[k % 2]}"/>')
        out.append(_text(left + 20, ly, name, anchor='start', size=11))
    out.append('</svg>')
    return '\n'.join(out) + '\n'
