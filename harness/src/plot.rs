//! Plots of a run: the per-episode metric as bars (failed rollouts marked), the running mean,
//! and the target line. PNG or SVG, chosen by the file's extension. PNG text is drawn with a
//! font compiled into the binary, so nothing is needed from the system.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Once;

use ale_proto::private_files::{PrivateFileError, create_private_file};
use ale_proto::records::{Direction, EpisodeRecord, Outcome, running_mean};
use plotters::prelude::*;

use ale_proto::trajectory::TRAJECTORY_FILE;

use crate::report::Report;
use crate::verify::{VerifyError, verify_trajectory};

/// Why a plot could not be read, drawn or written.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    #[error("cannot read {}: {cause}", .path.display())]
    Read {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("{}: {cause}", .path.display())]
    Unverified { path: PathBuf, cause: VerifyError },
    #[error("{}: the plot file must end in .png or .svg", .path.display())]
    Format { path: PathBuf },
    #[error("cannot draw the plot: {0}")]
    Draw(String),
    #[error("cannot encode the plot as PNG: {0}")]
    EncodePng(#[from] png::EncodingError),
    #[error("cannot create {}: {cause}", .path.display())]
    Create {
        path: PathBuf,
        cause: PrivateFileError,
    },
    #[error("cannot write {}: {cause}", .path.display())]
    Write {
        path: PathBuf,
        cause: std::io::Error,
    },
}

/// The plot files written into every run folder.
pub const PLOT_FILES: [&str; 2] = ["plot.png", "plot.svg"];

const WIDTH: u32 = 960;
const HEIGHT: u32 = 540;

/// What a plot shows.
#[derive(Debug, Clone)]
pub struct PlotData {
    pub title: String,
    pub metric_name: String,
    pub direction: Direction,
    pub target: f64,
    pub episodes: Vec<EpisodeRecord>,
}

impl PlotData {
    /// The plot of a run folder (from its report, or its trajectory when it has none) or of a
    /// trajectory file.
    pub fn load(path: &Path) -> Result<PlotData, PlotError> {
        if path.is_dir()
            && let Ok(report) = Report::read(path)
        {
            return Ok(PlotData::from_report(&report));
        }
        let trajectory = if path.is_dir() {
            path.join(TRAJECTORY_FILE)
        } else {
            path.to_path_buf()
        };
        let text = match std::fs::read_to_string(&trajectory) {
            Ok(text) => text,
            Err(cause) => {
                return Err(PlotError::Read {
                    path: trajectory,
                    cause,
                });
            }
        };
        let verified = match verify_trajectory(&text) {
            Ok(verified) => verified,
            Err(cause) => {
                return Err(PlotError::Unverified {
                    path: trajectory,
                    cause,
                });
            }
        };
        let episodes = verified
            .result
            .as_ref()
            .map(|r| r.episodes.clone())
            .unwrap_or_default();
        Ok(PlotData {
            title: format!("{} · run {}", verified.run.task_id, verified.run.run_id),
            metric_name: verified.run.metric_name.clone(),
            direction: verified.run.direction,
            target: verified.run.target,
            episodes,
        })
    }

    pub fn from_report(report: &Report) -> PlotData {
        PlotData {
            title: format!("{} · run {}", report.task.id, report.run_id),
            metric_name: report.score.metric_name.clone(),
            direction: report.score.direction,
            target: report.score.target,
            episodes: report.episodes.clone(),
        }
    }

    /// The running mean after each played rollout, counting failures at their metric.
    pub fn running_mean(&self) -> Vec<(u32, f64)> {
        let means = running_mean(self.played().map(|e| e.metric));
        self.played().map(|e| e.index).zip(means).collect()
    }

    fn played(&self) -> impl Iterator<Item = &EpisodeRecord> {
        self.episodes.iter().filter(|e| e.outcome.is_played())
    }
}

static FONT: Once = Once::new();

fn register_font() {
    FONT.call_once(|| {
        // The font is valid TrueType shipped by the crate; a failure would only lose text.
        let _ = plotters::style::register_font(
            "sans-serif",
            FontStyle::Normal,
            epaint_default_fonts::HACK_REGULAR,
        );
    });
}

/// A plot file's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlotFormat {
    Png,
    Svg,
}

impl PlotFormat {
    /// The format a file name's extension asks for.
    pub fn of(path: &Path) -> Result<PlotFormat, PlotError> {
        match path.extension().and_then(|e| e.to_str()) {
            Some("png") => Ok(PlotFormat::Png),
            Some("svg") => Ok(PlotFormat::Svg),
            _ => Err(PlotError::Format {
                path: path.to_path_buf(),
            }),
        }
    }
}

/// Renders `data` as the bytes of a PNG or SVG file.
pub fn render_bytes(data: &PlotData, format: PlotFormat) -> Result<Vec<u8>, PlotError> {
    let failed = |e: Box<dyn std::error::Error>| PlotError::Draw(e.to_string());
    match format {
        PlotFormat::Png => {
            register_font();
            let mut rgb = vec![0u8; (WIDTH * HEIGHT * 3) as usize];
            let root = BitMapBackend::with_buffer(&mut rgb, (WIDTH, HEIGHT)).into_drawing_area();
            draw(data, root).map_err(failed)?;
            Ok(encode_png(&rgb)?)
        }
        PlotFormat::Svg => {
            let mut svg = String::new();
            draw(
                data,
                SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area(),
            )
            .map_err(failed)?;
            Ok(svg.into_bytes())
        }
    }
}

fn encode_png(rgb: &[u8]) -> Result<Vec<u8>, png::EncodingError> {
    let mut bytes = Vec::new();
    let mut encoder = png::Encoder::new(&mut bytes, WIDTH, HEIGHT);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header()?;
    writer.write_image_data(rgb)?;
    writer.finish()?;
    Ok(bytes)
}

/// Renders `data` to `path` (`.png` or `.svg`), replacing a file there: for a plot the
/// operator asked for by name.
pub fn render_file(data: &PlotData, path: &Path) -> Result<(), PlotError> {
    let bytes = render_bytes(data, PlotFormat::of(path)?)?;
    std::fs::write(path, bytes).map_err(|cause| PlotError::Write {
        path: path.to_path_buf(),
        cause,
    })
}

/// A rectangle in image pixels, corners inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PixelRect {
    pub left: i32,
    pub top: i32,
    pub right: i32,
    pub bottom: i32,
}

impl PixelRect {
    pub fn overlaps(&self, other: &PixelRect) -> bool {
        self.left <= other.right
            && other.left <= self.right
            && self.top <= other.bottom
            && other.top <= self.bottom
    }
}

/// Where a plot put its parts, in image pixels: the plotting area, each bar, and the legend.
/// The legend has a strip of its own below the chart, so it can never cover data.
#[derive(Debug, Clone)]
pub struct PlotLayout {
    pub plot_area: PixelRect,
    pub bars: Vec<PixelRect>,
    pub legend: PixelRect,
}

/// The layout `data` is drawn with (the same code draws it; nothing is written).
pub fn layout(data: &PlotData) -> Result<PlotLayout, PlotError> {
    let mut svg = String::new();
    draw(
        data,
        SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area(),
    )
    .map_err(|e| PlotError::Draw(e.to_string()))
}

/// Height of the legend's strip at the bottom of the image.
const LEGEND_HEIGHT: u32 = 36;

fn draw<DB: DrawingBackend>(
    data: &PlotData,
    root: DrawingArea<DB, plotters::coord::Shift>,
) -> Result<PlotLayout, Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
{
    // Text is measured for the legend whatever the backend, so the font must be there.
    register_font();
    root.fill(&WHITE)?;
    let (chart_area, legend_area) = root.split_vertically(HEIGHT - LEGEND_HEIGHT);
    let n = data.episodes.len().max(1) as u32;
    let highest = data
        .played()
        .map(|e| e.metric)
        .chain([data.target])
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    let y_max = if highest > 0.0 { highest * 1.15 } else { 1.0 };
    let arrow = data.direction;
    let mut chart = ChartBuilder::on(&chart_area)
        .caption(&data.title, ("sans-serif", 20))
        .margin(16)
        .margin_bottom(4)
        .x_label_area_size(40)
        .y_label_area_size(64)
        .build_cartesian_2d(0.0..f64::from(n), 0.0..y_max)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_desc("rollout")
        .x_label_formatter(&|x| format!("{}", x.floor() as u32 + 1))
        .y_desc(format!("{} ({arrow})", data.metric_name))
        .label_style(("sans-serif", 14))
        .draw()?;
    let completed = RGBColor(70, 120, 200);
    let failed = RGBColor(210, 80, 70);
    let target = RGBColor(40, 160, 80);
    let mut bars = Vec::new();
    let mut rects = Vec::new();
    for e in data.played() {
        let colour = if e.outcome == Outcome::Completed {
            completed
        } else {
            failed
        };
        let x = f64::from(e.index);
        let corners = [(x + 0.12, 0.0), (x + 0.88, e.metric.max(0.0))];
        let (a, b) = (
            chart.backend_coord(&corners[0]),
            chart.backend_coord(&corners[1]),
        );
        bars.push(PixelRect {
            left: a.0.min(b.0),
            top: a.1.min(b.1),
            right: a.0.max(b.0),
            bottom: a.1.max(b.1),
        });
        rects.push(Rectangle::new(corners, colour.mix(0.75).filled()));
    }
    chart.draw_series(rects)?;
    chart.draw_series(LineSeries::new(
        data.running_mean()
            .into_iter()
            .map(|(i, m)| (f64::from(i) + 0.5, m)),
        BLACK.stroke_width(2),
    ))?;
    chart.draw_series(LineSeries::new(
        [(0.0, data.target), (f64::from(n), data.target)],
        target.stroke_width(2),
    ))?;
    let (x_range, y_range) = chart.plotting_area().get_pixel_range();
    let plot_area = PixelRect {
        left: x_range.start,
        top: y_range.start,
        right: x_range.end - 1,
        bottom: y_range.end - 1,
    };
    let legend = draw_legend(
        &legend_area,
        x_range.start,
        &[
            (
                LegendMark::Swatch(completed),
                "completed rollout".to_string(),
            ),
            (LegendMark::Swatch(failed), "failed rollout".to_string()),
            (LegendMark::Line(BLACK), "running mean".to_string()),
            (LegendMark::Line(target), format!("target {}", data.target)),
        ],
    )?;
    root.present()?;
    Ok(PlotLayout {
        plot_area,
        bars,
        legend,
    })
}

enum LegendMark {
    Swatch(RGBColor),
    Line(RGBColor),
}

/// One row of legend entries in `area` (the strip under the chart), starting at `left`;
/// returns the pixels it covers.
fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    left: i32,
    entries: &[(LegendMark, String)],
) -> Result<PixelRect, Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
{
    let style = TextStyle::from(("sans-serif", 14).into_font()).color(&BLACK);
    let (offset_x, offset_y) = area.get_base_pixel();
    let middle = (LEGEND_HEIGHT / 2) as i32;
    let mut x = left;
    for (mark, label) in entries {
        match mark {
            LegendMark::Swatch(colour) => area.draw(&Rectangle::new(
                [(x, middle - 6), (x + 12, middle + 6)],
                colour.mix(0.75).filled(),
            ))?,
            LegendMark::Line(colour) => area.draw(&PathElement::new(
                vec![(x, middle), (x + 14, middle)],
                colour.stroke_width(2),
            ))?,
        }
        x += 20;
        area.draw(&Text::new(label.clone(), (x, middle - 7), style.clone()))?;
        let (width, _) = area.estimate_text_size(label, &style)?;
        x += width as i32 + 24;
    }
    Ok(PixelRect {
        left: offset_x + left,
        top: offset_y,
        right: offset_x + x,
        bottom: offset_y + LEGEND_HEIGHT as i32 - 1,
    })
}

/// Writes `plot.png` and `plot.svg` (0600) into a run folder, as new files: a file or link
/// already there is an error, never overwritten or followed.
pub fn write_run_plots(run_dir: &Path, report: &Report) -> Result<(), PlotError> {
    let data = PlotData::from_report(report);
    for file in PLOT_FILES {
        let path = run_dir.join(file);
        let bytes = render_bytes(&data, PlotFormat::of(&path)?)?;
        let mut out = match create_private_file(&path, 0o600) {
            Ok(out) => out,
            Err(cause) => return Err(PlotError::Create { path, cause }),
        };
        if let Err(cause) = out.write_all(&bytes).and_then(|()| out.sync_all()) {
            return Err(PlotError::Write { path, cause });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn episode(index: u32, outcome: Outcome, metric: f64) -> EpisodeRecord {
        EpisodeRecord {
            index,
            outcome,
            metric,
            steps: 10,
            episode_return: metric,
            seed_commitment: String::new(),
            safety: Default::default(),
        }
    }

    fn data() -> PlotData {
        PlotData {
            title: "cartpole-balance · test".into(),
            metric_name: "mean_return".into(),
            direction: Direction::HigherIsBetter,
            target: 475.0,
            episodes: vec![
                episode(0, Outcome::Completed, 500.0),
                episode(1, Outcome::Aborted, 0.0),
                episode(2, Outcome::Completed, 400.0),
                episode(3, Outcome::NotRun, 0.0),
            ],
        }
    }

    #[test]
    fn no_legend_pixel_lies_over_a_bar_or_the_plotting_area() {
        // `ale demo`'s shape: every rollout at the top, where a corner legend sat on the last
        // seven bars.
        for (rollouts, value) in [(20u32, 500.0), (100, 500.0), (7, 0.5), (1, 1e9)] {
            let mut d = data();
            d.episodes = (0..rollouts)
                .map(|i| episode(i, Outcome::Completed, value))
                .collect();
            let layout = layout(&d).unwrap();
            assert_eq!(layout.bars.len(), rollouts as usize);
            for bar in &layout.bars {
                assert!(
                    !bar.overlaps(&layout.legend),
                    "{bar:?} under {:?}",
                    layout.legend
                );
                assert!(
                    bar.left >= layout.plot_area.left && bar.right <= layout.plot_area.right + 1
                );
            }
            assert!(!layout.plot_area.overlaps(&layout.legend));
            assert!(layout.legend.bottom < HEIGHT as i32 && layout.legend.right < WIDTH as i32);
        }
    }

    #[test]
    fn running_mean_counts_failures_and_skips_unplayed() {
        assert_eq!(
            data().running_mean(),
            vec![(0, 500.0), (1, 250.0), (2, 300.0)]
        );
    }

    #[test]
    fn png_and_svg_render_with_no_system_fonts() {
        let dir = tempfile::tempdir().unwrap();
        let png = dir.path().join("p.png");
        render_file(&data(), &png).unwrap();
        let bytes = std::fs::read(&png).unwrap();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
        assert!(bytes.len() > 5_000, "a real picture, {} bytes", bytes.len());
        let svg = dir.path().join("p.svg");
        render_file(&data(), &svg).unwrap();
        let text = std::fs::read_to_string(&svg).unwrap();
        assert!(text.contains("<svg") && text.contains("target 475"));
        assert!(
            render_file(&data(), &dir.path().join("p.jpg"))
                .unwrap_err()
                .to_string()
                .contains(".png or .svg")
        );
    }

    #[test]
    fn run_plots_are_new_private_files_never_written_through_a_link() {
        use std::os::unix::fs::PermissionsExt;
        let report = crate::report::tests::sample();
        let dir = tempfile::tempdir().unwrap();
        write_run_plots(dir.path(), &report).unwrap();
        for file in PLOT_FILES {
            let path = dir.path().join(file);
            let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{file}");
        }
        assert_eq!(
            &std::fs::read(dir.path().join("plot.png")).unwrap()[..8],
            b"\x89PNG\r\n\x1a\n"
        );

        let other = tempfile::tempdir().unwrap();
        let target = other.path().join("precious");
        std::fs::write(&target, "keep me").unwrap();
        std::os::unix::fs::symlink(&target, other.path().join("plot.png")).unwrap();
        let e = write_run_plots(other.path(), &report).unwrap_err();
        assert!(e.to_string().contains("plot.png already exists"), "{e}");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
    }
}
