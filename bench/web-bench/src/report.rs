//! How results leave the tool: a progress line while it runs, tables, JSON, SVG charts.

use std::io::{self, IsTerminal, Write};
use std::path::Path;
use std::time::Instant;

use plotters::prelude::*;

/// One line on standard error that says how far a long run is (rewritten in place on a
/// terminal; at most one line every 5 s otherwise).
pub struct Progress {
    tty: bool,
    last: Option<Instant>,
    shown: bool,
}

impl Progress {
    pub fn new() -> Progress {
        Progress {
            tty: io::stderr().is_terminal(),
            last: None,
            shown: false,
        }
    }

    /// The state now, shown if the last was not too recent.
    pub fn line(&mut self, what: &str) {
        let due = self.tty || self.last.is_none_or(|t| t.elapsed().as_secs() >= 5);
        if !due {
            return;
        }
        self.last = Some(Instant::now());
        let mut err = io::stderr();
        if self.tty {
            let _ = write!(err, "\r\x1b[2K{what}");
            self.shown = true;
        } else {
            let _ = writeln!(err, "{what}");
        }
        let _ = err.flush();
    }

    /// A message on a line of its own.
    pub fn say(&mut self, what: &str) {
        self.done();
        eprintln!("{what}");
    }

    /// Ends the progress line.
    pub fn done(&mut self) {
        if self.shown {
            eprintln!();
            self.shown = false;
        }
    }
}

/// Writes `value` as JSON to `path` (its directory made if needed).
pub fn write_json(path: &Path, value: &serde_json::Value) -> io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let text = serde_json::to_string_pretty(value).map_err(io::Error::other)?;
    std::fs::write(path, text + "\n")
}

/// A Markdown table: `head`, then `rows`.
pub fn table(head: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = format!("| {} |\n|{}\n", head.join(" | "), "---|".repeat(head.len()));
    for row in rows {
        out.push_str(&format!("| {} |\n", row.join(" | ")));
    }
    out
}

/// One group of bars of a chart (on a logarithmic axis: bytes from tens to hundreds of
/// thousands, ratios from a tenth to twice): a title, its unit, and the bars (label, value).
pub struct Panel {
    pub title: String,
    pub unit: String,
    pub bars: Vec<(String, f64)>,
}

/// Draws `panels` one under the other as horizontal bars into the SVG file `path`.
pub fn svg(path: &Path, title: &str, panels: &[Panel]) -> io::Result<()> {
    let height = 80
        + panels
            .iter()
            .map(|p| 70 + 28 * p.bars.len() as u32)
            .sum::<u32>();
    let root = SVGBackend::new(path, (900, height)).into_drawing_area();
    let fail = |e: &dyn std::fmt::Display| io::Error::other(format!("drawing {path:?}: {e}"));
    root.fill(&WHITE).map_err(|e| fail(&e))?;
    let root = root
        .titled(title, ("sans-serif", 22))
        .map_err(|e| fail(&e))?;
    let heights: Vec<u32> = panels
        .iter()
        .map(|p| 70 + 28 * p.bars.len() as u32)
        .collect();
    let mut area = root;
    for (panel, h) in panels.iter().zip(heights) {
        let (this, rest) = area.split_vertically(h);
        area = rest;
        draw_panel(&this, panel).map_err(|e| fail(&e))?;
    }
    Ok(())
}

fn draw_panel(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    panel: &Panel,
) -> Result<(), Box<dyn std::error::Error>> {
    let n = panel.bars.len().max(1);
    let max = panel
        .bars
        .iter()
        .map(|(_, v)| *v)
        .fold(f64::MIN_POSITIVE, f64::max);
    let labels: Vec<String> = panel.bars.iter().map(|(l, _)| l.clone()).collect();
    let caption = format!("{} ({}, log scale)", panel.title, panel.unit);
    let mut builder = ChartBuilder::on(area);
    builder
        .caption(caption, ("sans-serif", 16))
        .margin(8)
        .x_label_area_size(28)
        .y_label_area_size(170);
    let bar = |chart_y: usize| SegmentValue::CenterOf(chart_y);
    let label_of = move |v: &SegmentValue<usize>| match v {
        SegmentValue::CenterOf(i) | SegmentValue::Exact(i) => {
            labels.get(*i).cloned().unwrap_or_default()
        }
        SegmentValue::Last => String::new(),
    };
    let lo = panel
        .bars
        .iter()
        .map(|(_, v)| *v)
        .filter(|v| *v > 0.0)
        .fold(max, f64::min)
        / 2.0;
    let mut chart =
        builder.build_cartesian_2d((lo..max * 3.0).log_scale(), (0..n).into_segmented())?;
    chart
        .configure_mesh()
        .y_label_formatter(&label_of)
        .x_desc(panel.unit.as_str())
        .draw()?;
    chart.draw_series(panel.bars.iter().enumerate().map(|(i, (label, v))| {
        let mut r = Rectangle::new(
            [(lo, bar(i)), (v.max(lo), SegmentValue::Exact(i + 1))],
            colour(label).filled(),
        );
        r.set_margin(3, 3, 0, 0);
        r
    }))?;
    Ok(())
}

/// `web`'s bars stand out.
fn colour(label: &str) -> RGBAColor {
    if label == "web" {
        RGBColor(232, 89, 12).mix(0.85)
    } else {
        RGBColor(47, 111, 237).mix(0.55)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_markdown() {
        let t = table(&["a", "b"], &[vec!["1".into(), "2".into()]]);
        assert_eq!(t, "| a | b |\n|---|---|\n| 1 | 2 |\n");
    }

    #[test]
    fn a_chart_is_drawn_as_svg() {
        let dir = std::env::temp_dir().join(format!("web-bench-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("chart.svg");
        let panels = [
            Panel {
                title: "idle".into(),
                unit: "bytes".into(),
                bars: vec![("web".into(), 55.0), ("hyper".into(), 10_700.0)],
            },
            Panel {
                title: "speed".into(),
                unit: "× best".into(),
                bars: vec![("web".into(), 1.02)],
            },
        ];
        svg(&path, "test", &panels).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.starts_with("<svg") && text.contains("hyper"),
            "{}",
            &text[..200.min(text.len())]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
