//! The latency-over-time plot (SVG): p99 per scenario and the max of all requests per interval,
//! on a log scale, with the snapshot windows shaded and the phases marked, so a stall during a
//! snapshot is visible.

use std::path::Path;

use plotters::prelude::*;

use crate::report::{Point, Report};
use crate::LoadError;

const COLORS: [RGBColor; 5] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

/// One figure of a timeline point.
type Reading = fn(&Point) -> f64;

pub fn write_svg(report: &Report, path: &Path) -> Result<(), LoadError> {
    draw(report, path).map_err(|e| LoadError::Plot(format!("{}: {e}", path.display())))
}

fn draw(report: &Report, path: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::new(path, (1200, 640)).into_drawing_area();
    root.fill(&WHITE)?;
    let t_max = report.timeline.iter().map(|p| p.t_s).fold(1.0, f64::max) + 1.0;
    let y_max = report.timeline.iter().map(|p| p.max_ms).fold(10.0, f64::max) * 2.0;
    let fastest = report.timeline.iter().map(|p| p.p50_ms).fold(f64::INFINITY, f64::min);
    let y_min = if fastest.is_finite() { (fastest / 2.0).max(0.01) } else { 0.05 };
    let title = format!(
        "gridd latency · {} records × {} columns · mix {}",
        report.records, report.columns, report.mix
    );
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..t_max, (y_min..y_max).log_scale())?;
    chart
        .configure_mesh()
        .x_desc("seconds since the load started (by due time)")
        .y_desc("latency (ms, log)")
        .draw()?;
    let shade = RGBColor(255, 205, 120).mix(0.45).filled();
    chart
        .draw_series(
            report
                .snapshot_windows_s
                .iter()
                .map(|(start, end)| Rectangle::new([(*start, y_min), (*end, y_max)], shade)),
        )?
        .label("snapshot being written")
        .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 16, y + 5)], shade));
    let mut phase_start = 0.0;
    for phase in &report.phases {
        chart.draw_series(LineSeries::new(
            [(phase_start, y_min), (phase_start, y_max)],
            BLACK.mix(0.25).stroke_width(1),
        ))?;
        chart.draw_series(std::iter::once(Text::new(
            format!("{} · {:.0}/s", phase.name, phase.asked_rate),
            (phase_start + 0.2, y_max / 1.6),
            ("sans-serif", 13),
        )))?;
        phase_start += phase.duration_s;
    }
    let mut names: Vec<&str> = report.timeline.iter().map(|p| p.scenario.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    for (i, name) in names.iter().filter(|n| **n != "all").enumerate() {
        let color = COLORS[i % COLORS.len()];
        let points = report
            .timeline
            .iter()
            .filter(|p| p.scenario == *name)
            .map(|p| (p.t_s, p.p99_ms.max(y_min)));
        chart
            .draw_series(LineSeries::new(points, color.stroke_width(2)))?
            .label(format!("{name} p99"))
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
            });
    }
    let overall: [(&str, Reading, RGBAColor); 2] =
        [("max (all)", |p| p.max_ms, RED.mix(0.6)), ("p50 (all)", |p| p.p50_ms, BLACK.mix(0.5))];
    for (label, value, color) in overall {
        let points = report
            .timeline
            .iter()
            .filter(|p| p.scenario == "all")
            .map(|p| (p.t_s, value(p).max(y_min)));
        chart
            .draw_series(LineSeries::new(points, color))?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}
