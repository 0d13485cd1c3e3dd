//! The plots of `batchlin tune`'s report, as SVG files beside report.md (plain text, no
//! plotting crate): which kernel wins where (a heatmap per variant and type, a panel per
//! aspect), each kernel's time against size with its spread, the table's predictions
//! against the times measured at held-out shapes, and the regret's distribution.

use batchlin::table::Point;
use batchlin::{DType, Variant};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Kernel colours, in the order of the kernels' names (colour-blind safe first).
const PALETTE: [&str; 8] = [
    "#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#f0e442", "#000000",
];

/// A winner whose runner-up is within this factor is drawn pale: a close call.
pub const CLOSE: f64 = 1.3;

struct Svg {
    s: String,
}

impl Svg {
    fn new(w: f64, h: f64) -> Svg {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" \
             viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\" font-size=\"11\">"
        );
        let _ = writeln!(s, "<rect width=\"{w}\" height=\"{h}\" fill=\"white\"/>");
        Svg { s }
    }
    fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, fill: &str, opacity: f64) {
        let _ = writeln!(
            self.s,
            "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{h:.1}\" fill=\"{fill}\" \
             fill-opacity=\"{opacity}\"/>"
        );
    }
    fn line(&mut self, (x0, y0): (f64, f64), (x1, y1): (f64, f64), stroke: &str, dash: bool) {
        let d = if dash {
            " stroke-dasharray=\"4 3\""
        } else {
            ""
        };
        let _ = writeln!(
            self.s,
            "<line x1=\"{x0:.1}\" y1=\"{y0:.1}\" x2=\"{x1:.1}\" y2=\"{y1:.1}\" stroke=\"{stroke}\"{d}/>"
        );
    }
    fn polyline(&mut self, pts: &[(f64, f64)], stroke: &str) {
        let p: Vec<String> = pts.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
        let _ = writeln!(
            self.s,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"{stroke}\" stroke-width=\"1.5\"/>",
            p.join(" ")
        );
    }
    fn dot(&mut self, (x, y): (f64, f64), fill: &str) {
        let _ = writeln!(
            self.s,
            "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"2.5\" fill=\"{fill}\" fill-opacity=\"0.7\"/>"
        );
    }
    fn text(&mut self, (x, y): (f64, f64), anchor: &str, t: &str) {
        let t = t
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;");
        let _ = writeln!(
            self.s,
            "<text x=\"{x:.1}\" y=\"{y:.1}\" text-anchor=\"{anchor}\">{t}</text>"
        );
    }
    fn finish(mut self) -> String {
        self.s.push_str("</svg>\n");
        self.s
    }
}

/// A log10 axis over [lo, hi] onto pixels [p0, p1], with its decade ticks.
struct LogAxis {
    lo: f64,
    hi: f64,
    p0: f64,
    p1: f64,
}

impl LogAxis {
    fn new(lo: f64, hi: f64, p0: f64, p1: f64) -> LogAxis {
        let (lo, hi) = (
            lo.log10().floor(),
            hi.log10().ceil().max(lo.log10().floor() + 1.0),
        );
        LogAxis { lo, hi, p0, p1 }
    }
    fn at(&self, v: f64) -> f64 {
        self.p0 + (v.log10() - self.lo) / (self.hi - self.lo) * (self.p1 - self.p0)
    }
    fn decades(&self) -> impl Iterator<Item = f64> {
        (self.lo as i32..=self.hi as i32).map(|e| 10f64.powi(e))
    }
}

fn label(v: f64) -> String {
    if (1e-2..1e5).contains(&v) {
        format!("{v}")
    } else {
        format!("1e{}", v.log10().round())
    }
}

/// Every kernel in `points`, sorted: its index is its colour.
fn kernel_names(points: &[&Point]) -> Vec<String> {
    let mut k: Vec<String> = points.iter().map(|p| p.kernel.clone()).collect();
    k.sort();
    k.dedup();
    k
}

fn legend(svg: &mut Svg, names: &[String], x: f64, y: f64) {
    for (i, k) in names.iter().enumerate() {
        let yy = y + 16.0 * i as f64;
        svg.rect(x, yy - 9.0, 10.0, 10.0, PALETTE[i % PALETTE.len()], 1.0);
        svg.text((x + 14.0, yy), "start", k);
    }
}

/// (batch, m, n).
type At = (usize, usize, usize);

/// The winner at each (batch, m, n) of `points` of one variant and type: (kernel, its
/// time, the runner-up's over it, or infinity when it ran alone).
pub fn winners(points: &[&Point]) -> BTreeMap<At, (String, f64, f64)> {
    let mut by: BTreeMap<At, Vec<(f64, &str)>> = BTreeMap::new();
    for p in points {
        by.entry((p.batch, p.m, p.n))
            .or_default()
            .push((p.median_us, &p.kernel));
    }
    by.into_iter()
        .map(|(key, mut v)| {
            v.sort_by(|a, b| a.0.total_cmp(&b.0));
            let margin = v.get(1).map_or(f64::INFINITY, |r| r.0 / v[0].0);
            (key, (v[0].1.to_string(), v[0].0, margin))
        })
        .collect()
}

/// log2(m / n) rounded: the aspect a grid shape was made with.
fn aspect(m: usize, n: usize) -> i32 {
    ((m as f64) / (n as f64)).log2().round() as i32
}

fn of(points: &[Point], variant: Variant, dtype: DType) -> Vec<&Point> {
    points
        .iter()
        .filter(|p| p.variant == variant && p.dtype == dtype)
        .collect()
}

/// The winning kernel over batch (x) and min(m, n) (y), a panel per aspect m / n; close
/// calls (runner-up within [`CLOSE`]) pale. None without points.
pub fn winner_map(points: &[Point], variant: Variant, dtype: DType) -> Option<String> {
    let pts = of(points, variant, dtype);
    if pts.is_empty() {
        return None;
    }
    let names = kernel_names(&pts);
    let wins = winners(&pts);
    let mut batches: Vec<usize> = wins.keys().map(|k| k.0).collect();
    let mut ks: Vec<usize> = wins.keys().map(|k| k.1.min(k.2)).collect();
    let mut aspects: Vec<i32> = wins.keys().map(|k| aspect(k.1, k.2)).collect();
    for v in [&mut batches, &mut ks] {
        v.sort();
        v.dedup();
    }
    aspects.sort();
    aspects.dedup();
    let (cw, ch) = (14.0, 10.0);
    let (pw, ph) = (cw * batches.len() as f64, ch * ks.len() as f64);
    let (left, top, gap) = (50.0, 40.0, 24.0);
    let width = left + (pw + gap) * aspects.len() as f64 + 200.0;
    let height = top + ph + 60.0;
    let mut svg = Svg::new(width, height.max(top + 16.0 * names.len() as f64 + 20.0));
    svg.text(
        (left, 16.0),
        "start",
        &format!(
            "{} {dtype}: the fastest kernel; pale where the runner-up is within {CLOSE}x",
            variant.name()
        ),
    );
    for (ai, &e) in aspects.iter().enumerate() {
        let x0 = left + ai as f64 * (pw + gap);
        let title = match e {
            0 => "square".to_string(),
            e if e > 0 => format!("m = {}n", 1 << e),
            e => format!("n = {}m", 1 << -e),
        };
        svg.text((x0 + pw / 2.0, top - 6.0), "middle", &title);
        for (&(b, m, n), (k, _, margin)) in &wins {
            if aspect(m, n) != e {
                continue;
            }
            let xi = batches.iter().position(|&x| x == b).unwrap_or(0);
            let yi = ks.iter().position(|&x| x == m.min(n)).unwrap_or(0);
            let ci = names.iter().position(|x| x == k).unwrap_or(0);
            let op = if *margin < CLOSE { 0.35 } else { 1.0 };
            let y = top + ph - (yi + 1) as f64 * ch;
            svg.rect(
                x0 + xi as f64 * cw,
                y,
                cw - 1.0,
                ch - 1.0,
                PALETTE[ci % 8],
                op,
            );
        }
        for (xi, &b) in batches.iter().enumerate() {
            if xi % 2 == 0 {
                let x = x0 + (xi as f64 + 0.5) * cw;
                svg.text((x, top + ph + 12.0), "middle", &format!("{}", b.ilog2()));
            }
        }
        svg.text((x0 + pw / 2.0, top + ph + 26.0), "middle", "log2 batch");
    }
    for (yi, &k) in ks.iter().enumerate() {
        if yi % 2 == 0 {
            let y = top + ph - yi as f64 * ch - 1.0;
            svg.text((left - 4.0, y), "end", &k.to_string());
        }
    }
    svg.text((4.0, top - 6.0), "start", "min(m,n)");
    legend(&mut svg, &names, width - 190.0, top + 10.0);
    Some(svg.finish())
}

/// Each kernel's time a matrix against min(m, n) on square shapes, log-log, a panel per
/// batch (every other one measured), the quartiles as bars. None without square points.
pub fn time_curves(points: &[Point], variant: Variant, dtype: DType) -> Option<String> {
    let pts: Vec<&Point> = of(points, variant, dtype)
        .into_iter()
        .filter(|p| p.m == p.n)
        .collect();
    if pts.is_empty() {
        return None;
    }
    let names = kernel_names(&pts);
    let mut batches: Vec<usize> = pts.iter().map(|p| p.batch).collect();
    batches.sort();
    batches.dedup();
    let batches: Vec<usize> = batches.into_iter().step_by(2).collect();
    let per = |p: &Point, t: f64| t / p.batch as f64;
    let shown = || pts.iter().filter(|p| batches.contains(&p.batch));
    let (tmin, tmax) = shown().fold((f64::INFINITY, 0f64), |(a, b), p| {
        (a.min(per(p, p.p25_us)), b.max(per(p, p.p75_us)))
    });
    let kmax = pts.iter().map(|p| p.n).max().unwrap_or(2) as f64;
    let (pw, ph, left, top, gap) = (220.0, 200.0, 60.0, 40.0, 30.0);
    let width = left + (pw + gap) * batches.len() as f64 + 200.0;
    let mut svg = Svg::new(width, top + ph + 50.0);
    svg.text(
        (left, 16.0),
        "start",
        &format!(
            "{} {dtype}, square: us a matrix (median, quartiles) against n",
            variant.name()
        ),
    );
    let ya = LogAxis::new(tmin.max(1e-6), tmax.max(tmin * 10.0), top + ph, top);
    for (bi, &b) in batches.iter().enumerate() {
        let x0 = left + bi as f64 * (pw + gap);
        let xa = LogAxis::new(2.0, kmax, x0, x0 + pw);
        svg.text((x0 + pw / 2.0, top - 6.0), "middle", &format!("batch {b}"));
        svg.line((x0, top + ph), (x0 + pw, top + ph), "#888", false);
        svg.line((x0, top), (x0, top + ph), "#888", false);
        for d in xa.decades().filter(|&d| d >= 1.0) {
            let x = xa.at(d);
            if x >= x0 - 0.5 && x <= x0 + pw + 0.5 {
                svg.line((x, top), (x, top + ph), "#eee", false);
                svg.text((x, top + ph + 12.0), "middle", &label(d));
            }
        }
        for d in ya.decades() {
            let y = ya.at(d);
            svg.line((x0, y), (x0 + pw, y), "#eee", false);
            if bi == 0 {
                svg.text((x0 - 4.0, y + 4.0), "end", &label(d));
            }
        }
        svg.text((x0 + pw / 2.0, top + ph + 26.0), "middle", "n");
        for (ci, k) in names.iter().enumerate() {
            let mut line: Vec<&&Point> = pts
                .iter()
                .filter(|p| p.batch == b && &p.kernel == k)
                .collect();
            line.sort_by_key(|p| p.n);
            let colour = PALETTE[ci % 8];
            let xy: Vec<(f64, f64)> = line
                .iter()
                .map(|p| (xa.at(p.n as f64), ya.at(per(p, p.median_us))))
                .collect();
            svg.polyline(&xy, colour);
            for p in &line {
                let x = xa.at(p.n as f64);
                svg.line(
                    (x, ya.at(per(p, p.p25_us))),
                    (x, ya.at(per(p, p.p75_us))),
                    colour,
                    false,
                );
            }
        }
    }
    legend(&mut svg, &names, width - 190.0, top + 10.0);
    Some(svg.finish())
}

/// Predicted (x) against measured (y) time of the kernel the table chose at each
/// held-out shape, log-log, with y = x and the [`CLOSE`] band. None without pairs.
pub fn predicted_vs_measured(pairs: &[(f64, f64)]) -> Option<String> {
    if pairs.is_empty() {
        return None;
    }
    let lo = pairs
        .iter()
        .map(|p| p.0.min(p.1))
        .fold(f64::INFINITY, f64::min);
    let hi = pairs.iter().map(|p| p.0.max(p.1)).fold(0.0, f64::max);
    let (left, top, side) = (60.0, 30.0, 320.0);
    let mut svg = Svg::new(left + side + 20.0, top + side + 40.0);
    svg.text(
        (left, 16.0),
        "start",
        "held out: predicted (x) against measured (y), us",
    );
    let xa = LogAxis::new(lo.max(1e-3), hi.max(lo * 10.0), left, left + side);
    let ya = LogAxis::new(lo.max(1e-3), hi.max(lo * 10.0), top + side, top);
    for d in xa.decades() {
        svg.line((xa.at(d), top), (xa.at(d), top + side), "#eee", false);
        svg.text((xa.at(d), top + side + 12.0), "middle", &label(d));
        svg.line((left, ya.at(d)), (left + side, ya.at(d)), "#eee", false);
        svg.text((left - 4.0, ya.at(d) + 4.0), "end", &label(d));
    }
    let (a, b) = (10f64.powf(xa.lo), 10f64.powf(xa.hi));
    svg.line((xa.at(a), ya.at(a)), (xa.at(b), ya.at(b)), "#444", false);
    for f in [CLOSE, 1.0 / CLOSE] {
        svg.line(
            (xa.at(a), ya.at(a * f)),
            (xa.at(b), ya.at(b * f)),
            "#999",
            true,
        );
    }
    for &(p, m) in pairs {
        svg.dot((xa.at(p), ya.at(m)), PALETTE[0]);
    }
    Some(svg.finish())
}

/// The share of held-out shapes (y) with regret at most x, for each routing: a step
/// line each, x from 1 to the worst. None without regrets.
pub fn regret_cdf(series: &[(&str, Vec<f64>)]) -> Option<String> {
    let worst = series
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .fold(1.0, f64::max);
    if series.iter().all(|(_, v)| v.is_empty()) {
        return None;
    }
    let (left, top, w, h) = (60.0, 30.0, 360.0, 220.0);
    let mut svg = Svg::new(left + w + 160.0, top + h + 40.0);
    svg.text(
        (left, 16.0),
        "start",
        "held out: share of shapes with regret at most x",
    );
    let xmax = worst.max(1.1);
    let xat = |r: f64| left + (r - 1.0) / (xmax - 1.0) * w;
    let yat = |f: f64| top + h - f * h;
    svg.line((left, top + h), (left + w, top + h), "#888", false);
    svg.line((left, top), (left, top + h), "#888", false);
    for i in 0..=4 {
        let f = i as f64 / 4.0;
        svg.line((left, yat(f)), (left + w, yat(f)), "#eee", false);
        svg.text((left - 4.0, yat(f) + 4.0), "end", &format!("{f}"));
    }
    for i in 0..=4 {
        let r = 1.0 + (xmax - 1.0) * i as f64 / 4.0;
        svg.text((xat(r), top + h + 12.0), "middle", &format!("{r:.2}"));
    }
    svg.text((left + w / 2.0, top + h + 26.0), "middle", "regret");
    for (si, (name, v)) in series.iter().enumerate() {
        let mut v = v.clone();
        v.sort_by(f64::total_cmp);
        let n = v.len() as f64;
        let mut pts = vec![(xat(1.0), yat(0.0))];
        for (i, r) in v.iter().enumerate() {
            pts.push((xat(*r), yat(i as f64 / n)));
            pts.push((xat(*r), yat((i + 1) as f64 / n)));
        }
        pts.push((xat(xmax), yat(1.0)));
        let colour = PALETTE[si % 8];
        svg.polyline(&pts, colour);
        svg.rect(
            left + w + 20.0,
            top + 16.0 * si as f64,
            10.0,
            10.0,
            colour,
            1.0,
        );
        svg.text(
            (left + w + 34.0, top + 9.0 + 16.0 * si as f64),
            "start",
            name,
        );
    }
    Some(svg.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pt(kernel: &str, batch: usize, m: usize, n: usize, us: f64) -> Point {
        Point {
            kernel: kernel.into(),
            variant: Variant::QrReduced,
            dtype: DType::F32,
            batch,
            m,
            n,
            median_us: us,
            p25_us: us * 0.9,
            p75_us: us * 1.1,
        }
    }

    #[test]
    fn the_winner_is_the_fastest_and_its_margin_the_runner_ups() {
        let pts = [
            pt("qr/cpu-small/small", 4, 8, 8, 10.0),
            pt("qr/cpu-faer/faer", 4, 8, 8, 12.0),
            pt("qr/cpu-small/small", 4, 64, 64, 90.0),
            pt("qr/cpu-faer/faer", 4, 64, 64, 30.0),
            pt("qr/cpu-faer/faer", 1, 256, 8, 5.0),
        ];
        let refs: Vec<&Point> = pts.iter().collect();
        let w = winners(&refs);
        assert_eq!(w[&(4, 8, 8)].0, "qr/cpu-small/small");
        assert!((w[&(4, 8, 8)].2 - 1.2).abs() < 1e-12);
        assert_eq!(w[&(4, 64, 64)].0, "qr/cpu-faer/faer");
        assert!((w[&(4, 64, 64)].2 - 3.0).abs() < 1e-12);
        assert!(w[&(1, 256, 8)].2.is_infinite(), "alone: no runner-up");
        assert_eq!(aspect(256, 8), 5);
        assert_eq!(aspect(8, 64), -3);
    }

    #[test]
    fn plots_are_whole_svg_and_mark_each_winner_in_its_colour() {
        let pts = [
            pt("qr/cpu-small/small", 1, 8, 8, 10.0),
            pt("qr/cpu-faer/faer", 1, 8, 8, 40.0),
            pt("qr/cpu-small/small", 16, 64, 64, 900.0),
            pt("qr/cpu-faer/faer", 16, 64, 64, 300.0),
            pt("qr/cpu-faer/faer", 16, 64, 8, 30.0),
        ];
        let map = winner_map(&pts, Variant::QrReduced, DType::F32).unwrap();
        assert!(map.starts_with("<svg") && map.trim_end().ends_with("</svg>"));
        // Kernels sorted: faer is colour 0, small colour 1; two cells each won clearly,
        // one alone; the two aspects as panels.
        let cells = |c: &str| {
            map.matches(&format!("fill=\"{c}\" fill-opacity=\"1\""))
                .count()
        };
        assert_eq!(cells(PALETTE[0]), 2 + 1, "faer's two cells and its legend");
        assert_eq!(cells(PALETTE[1]), 1 + 1, "small's cell and its legend");
        assert!(map.contains(">square<") && map.contains(">m = 8n<"));
        assert!(winner_map(&pts, Variant::Eigh, DType::F32).is_none());
        let curves = time_curves(&pts, Variant::QrReduced, DType::F32).unwrap();
        assert_eq!(
            curves.matches("<polyline").count(),
            2,
            "a line a kernel, batch 1"
        );
        let pm = predicted_vs_measured(&[(10.0, 12.0), (100.0, 90.0)]).unwrap();
        assert_eq!(pm.matches("<circle").count(), 2);
        let cdf = regret_cdf(&[("table", vec![1.0, 1.2]), ("rules", vec![1.5])]).unwrap();
        assert_eq!(cdf.matches("<polyline").count(), 2);
        assert!(predicted_vs_measured(&[]).is_none());
        assert!(regret_cdf(&[("table", vec![])]).is_none());
    }
}
