//! Plots of a run: the per-episode metric as bars (failed rollouts marked), the running mean,
//! and the target line; or of two runs of one task side by side ([`render_compare_file`]).
//! PNG or SVG, chosen by the file's extension. PNG text is drawn with a font compiled into the
//! binary, so nothing is needed from the system.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Once;

use ale_proto::RunId;
use ale_proto::private_files::{PrivateFileError, create_private_file};
use ale_proto::records::{Direction, EpisodeRecord, EvalStatus, Outcome, running_mean};
use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use ale_proto::trajectory::TRAJECTORY_FILE;

use crate::compare::{ComparedRun, Comparison};
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
    pub run_id: RunId,
    pub task_id: String,
    /// How the session ended; `None` while it has not.
    pub status: Option<EvalStatus>,
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
            run_id: verified.run.run_id.clone(),
            task_id: verified.run.task_id.clone(),
            status: verified.result.as_ref().map(|r| r.status),
            metric_name: verified.run.metric_name.clone(),
            direction: verified.run.direction,
            target: verified.run.target,
            episodes,
        })
    }

    pub fn from_report(report: &Report) -> PlotData {
        PlotData {
            run_id: report.run_id.clone(),
            task_id: report.task.id.clone(),
            status: Some(report.status),
            metric_name: report.score.metric_name.clone(),
            direction: report.score.direction,
            target: report.score.target,
            episodes: report.episodes.clone(),
        }
    }

    /// The plot's caption: task and run.
    pub fn title(&self) -> String {
        format!("{} · run {}", self.task_id, self.run_id)
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

/// A picture this module draws: one run, or two runs compared. The same code draws it onto a
/// bitmap, into SVG, or only to learn its layout.
trait Figure {
    fn draw_on<DB: DrawingBackend>(
        &self,
        root: DrawingArea<DB, Shift>,
    ) -> Result<PlotLayout, Box<dyn std::error::Error>>
    where
        DB::ErrorType: 'static;
}

impl Figure for PlotData {
    fn draw_on<DB: DrawingBackend>(
        &self,
        root: DrawingArea<DB, Shift>,
    ) -> Result<PlotLayout, Box<dyn std::error::Error>>
    where
        DB::ErrorType: 'static,
    {
        draw(self, root)
    }
}

impl Figure for Comparison {
    fn draw_on<DB: DrawingBackend>(
        &self,
        root: DrawingArea<DB, Shift>,
    ) -> Result<PlotLayout, Box<dyn std::error::Error>>
    where
        DB::ErrorType: 'static,
    {
        draw_compared(&self.left, &self.right, root)
    }
}

fn render(figure: &impl Figure, format: PlotFormat) -> Result<Vec<u8>, PlotError> {
    let failed = |e: Box<dyn std::error::Error>| PlotError::Draw(e.to_string());
    match format {
        PlotFormat::Png => {
            let mut rgb = vec![0u8; (WIDTH * HEIGHT * 3) as usize];
            let root = BitMapBackend::with_buffer(&mut rgb, (WIDTH, HEIGHT)).into_drawing_area();
            figure.draw_on(root).map_err(failed)?;
            Ok(encode_png(&rgb)?)
        }
        PlotFormat::Svg => {
            let mut svg = String::new();
            figure
                .draw_on(SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area())
                .map_err(failed)?;
            Ok(svg.into_bytes())
        }
    }
}

fn figure_layout(figure: &impl Figure) -> Result<PlotLayout, PlotError> {
    let mut svg = String::new();
    figure
        .draw_on(SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area())
        .map_err(|e| PlotError::Draw(e.to_string()))
}

fn write_file(bytes: Vec<u8>, path: &Path) -> Result<(), PlotError> {
    std::fs::write(path, bytes).map_err(|cause| PlotError::Write {
        path: path.to_path_buf(),
        cause,
    })
}

/// Renders `data` as the bytes of a PNG or SVG file.
pub fn render_bytes(data: &PlotData, format: PlotFormat) -> Result<Vec<u8>, PlotError> {
    render(data, format)
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
    write_file(render_bytes(data, PlotFormat::of(path)?)?, path)
}

/// Renders two runs of one task side by side as the bytes of a PNG or SVG file: grouped bars
/// per rollout (the left run's first), failed rollouts marked, both running means, the target,
/// and in the legend each run's id, status, and a warning when its records did not verify.
pub fn render_compare_bytes(both: &Comparison, format: PlotFormat) -> Result<Vec<u8>, PlotError> {
    render(both, format)
}

/// Renders two runs of one task side by side to `path` (`.png` or `.svg`), replacing a file
/// there. See [`render_compare_bytes`].
///
/// ```no_run
/// use ale_harness::compare::Comparison;
/// use ale_harness::plot::render_compare_file;
/// use ale_harness::verify::RecordKeys;
/// use std::path::Path;
/// let keys = RecordKeys::from_state_dir(Path::new("state"));
/// let both = Comparison::load(
///     Path::new("state/runs/run-3f2a…"),
///     Path::new("state/runs/run-9c41…"),
///     keys.as_ref(),
/// )?;
/// render_compare_file(&both, Path::new("compare.png"))?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn render_compare_file(both: &Comparison, path: &Path) -> Result<(), PlotError> {
    write_file(render_compare_bytes(both, PlotFormat::of(path)?)?, path)
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

    /// The rectangle with corners `a` and `b`, in either order.
    fn spanning(a: (i32, i32), b: (i32, i32)) -> PixelRect {
        PixelRect {
            left: a.0.min(b.0),
            top: a.1.min(b.1),
            right: a.0.max(b.0),
            bottom: a.1.max(b.1),
        }
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
    figure_layout(data)
}

/// The layout two runs are drawn with by [`render_compare_file`] (nothing is written).
pub fn compare_layout(both: &Comparison) -> Result<PlotLayout, PlotError> {
    figure_layout(both)
}

/// Height of one row of legend entries, and the strip's padding above and below its rows.
const LEGEND_ROW: u32 = 20;
const LEGEND_PADDING: u32 = 16;

/// Height of the legend's strip at the bottom of the image, for `rows` rows of entries.
fn legend_height(rows: u32) -> u32 {
    LEGEND_PADDING + rows * LEGEND_ROW
}

const COMPLETED: RGBColor = RGBColor(70, 120, 200);
const FAILED: RGBColor = RGBColor(210, 80, 70);
const TARGET: RGBColor = RGBColor(40, 160, 80);
/// The second run of a comparison (the first is drawn in [`COMPLETED`]'s blue).
const SECOND: RGBColor = RGBColor(150, 95, 190);

/// A part of a figure, in pixels from its top-left corner.
type Area<DB> = DrawingArea<DB, Shift>;

/// The white figure split into the chart's area and a legend strip of `legend_rows` rows.
fn canvas<DB: DrawingBackend>(
    root: &Area<DB>,
    legend_rows: u32,
) -> Result<(Area<DB>, Area<DB>), Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
{
    // Text is measured for the legend whatever the backend, so the font must be there.
    register_font();
    root.fill(&WHITE)?;
    Ok(root.split_vertically(HEIGHT - legend_height(legend_rows)))
}

fn draw<DB: DrawingBackend>(
    data: &PlotData,
    root: DrawingArea<DB, Shift>,
) -> Result<PlotLayout, Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
{
    let (chart_area, legend_area) = canvas(&root, 1)?;
    let n = data.episodes.len().max(1) as u32;
    let y = value_range(data.played().map(|e| e.metric).chain([data.target]));
    let arrow = data.direction;
    let y_desc = format!("{} ({arrow})", data.metric_name);
    let mut chart = rollout_chart(&chart_area, data.title(), n, y, y_desc)?;
    let mut bars = Vec::new();
    let mut rects = Vec::new();
    for e in data.played() {
        let colour = if e.outcome == Outcome::Completed {
            COMPLETED
        } else {
            FAILED
        };
        let x = f64::from(e.index);
        let corners = [(x + 0.12, 0.0), (x + 0.88, e.metric)];
        bars.push(PixelRect::spanning(
            chart.backend_coord(&corners[0]),
            chart.backend_coord(&corners[1]),
        ));
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
        TARGET.stroke_width(2),
    ))?;
    let plot_area = plotting_rect(&chart);
    let legend = draw_legend(
        &legend_area,
        plot_area.left,
        &[vec![
            (
                LegendMark::Swatch(COMPLETED),
                "completed rollout".to_string(),
            ),
            (LegendMark::Swatch(FAILED), "failed rollout".to_string()),
            (LegendMark::Line(BLACK), "running mean".to_string()),
            (LegendMark::Line(TARGET), format!("target {}", data.target)),
        ]],
    )?;
    root.present()?;
    Ok(PlotLayout {
        plot_area,
        bars,
        legend,
    })
}

/// A chart of `rollouts` rollouts (x, numbered from 1) against `y`, with its caption, axes
/// and horizontal grid drawn: what one run's plot and a comparison share.
fn rollout_chart<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    caption: String,
    rollouts: u32,
    y: std::ops::Range<f64>,
    y_desc: String,
) -> Result<
    ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    Box<dyn std::error::Error>,
>
where
    DB::ErrorType: 'static,
{
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 20))
        .margin(16)
        .margin_bottom(4)
        .x_label_area_size(40)
        .y_label_area_size(64)
        .build_cartesian_2d(0.0..f64::from(rollouts), y)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_desc("rollout")
        .x_label_formatter(&|x| format!("{}", x.floor() as u32 + 1))
        .y_desc(y_desc)
        .label_style(("sans-serif", 14))
        .draw()?;
    Ok(chart)
}

/// The pixels of a chart's plotting area.
fn plotting_rect<DB: DrawingBackend>(
    chart: &ChartContext<'_, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
) -> PixelRect {
    let (x_range, y_range) = chart.plotting_area().get_pixel_range();
    PixelRect {
        left: x_range.start,
        top: y_range.start,
        right: x_range.end - 1,
        bottom: y_range.end - 1,
    }
}

/// The y range that shows every value and 0 (bars start there), padded away from 0; a metric
/// that can be negative (pendulum's return) gets room below 0.
fn value_range(values: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    let (lo, hi) = values
        .filter(|v| v.is_finite())
        .fold((0.0f64, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if hi - lo <= 0.0 {
        return 0.0..1.0;
    }
    let pad = (hi - lo) * 0.15;
    let lo = if lo < 0.0 { lo - pad } else { 0.0 };
    let hi = if hi > 0.0 { hi + pad } else { 0.0 };
    lo..hi
}

/// A number as a legend shows it: whole numbers as they are, others to at most 4 decimals.
fn compact(value: f64) -> String {
    if value.fract() == 0.0 || !value.is_finite() {
        return value.to_string();
    }
    let text = format!("{value:.4}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// `left` and `right` (of one task) as grouped bars per rollout, each run in its colour with
/// its running mean; a failed rollout's bar is red, outlined in its run's colour.
fn draw_compared<DB: DrawingBackend>(
    left_run: &ComparedRun,
    right_run: &ComparedRun,
    root: DrawingArea<DB, Shift>,
) -> Result<PlotLayout, Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
{
    let (left, right) = (&left_run.plot, &right_run.plot);
    let (chart_area, legend_area) = canvas(&root, 2)?;
    let n = left.episodes.len().max(right.episodes.len()).max(1) as u32;
    let y = value_range(
        left.played()
            .chain(right.played())
            .map(|e| e.metric)
            .chain([left.target, right.target]),
    );
    let caption = format!(
        "{} · run {} vs run {}",
        left.task_id,
        left.run_id.short(),
        right.run_id.short()
    );
    let y_desc = format!("{} ({})", left.metric_name, left.direction);
    let mut chart = rollout_chart(&chart_area, caption, n, y, y_desc)?;
    let sides = [(left, COMPLETED, 0.08), (right, SECOND, 0.52)];
    let mut bars = Vec::new();
    for (data, colour, offset) in sides {
        let mut fills = Vec::new();
        let mut outlines = Vec::new();
        for e in data.played() {
            let x = f64::from(e.index) + offset;
            let corners = [(x, 0.0), (x + 0.40, e.metric)];
            bars.push(PixelRect::spanning(
                chart.backend_coord(&corners[0]),
                chart.backend_coord(&corners[1]),
            ));
            if e.outcome == Outcome::Completed {
                fills.push(Rectangle::new(corners, colour.mix(0.8).filled()));
            } else {
                fills.push(Rectangle::new(corners, FAILED.mix(0.8).filled()));
                outlines.push(Rectangle::new(corners, colour.stroke_width(2)));
            }
        }
        chart.draw_series(fills)?;
        chart.draw_series(outlines)?;
    }
    for (data, colour, _) in sides {
        chart.draw_series(LineSeries::new(
            data.running_mean()
                .into_iter()
                .map(|(i, m)| (f64::from(i) + 0.5, m)),
            darker(colour).stroke_width(2),
        ))?;
    }
    // One task has one target; should the task's file have changed between the runs, each
    // run's own is drawn, and named in its row of the legend.
    let same_target = left.target == right.target;
    for data in [left, right] {
        chart.draw_series(LineSeries::new(
            [(0.0, data.target), (f64::from(n), data.target)],
            TARGET.stroke_width(2),
        ))?;
    }
    let plot_area = plotting_rect(&chart);
    let run_label = |side: &ComparedRun| {
        let status = side
            .status()
            .map_or("unfinished".to_string(), |s| s.to_string());
        let mut label = format!("run {} ({status})", side.run_id().short());
        if let Some(warning) = side.records_warning() {
            label.push_str(" · ");
            label.push_str(warning);
        }
        label
    };
    let row = |side: &ComparedRun, colour: RGBColor| {
        let mut row = vec![
            (LegendMark::Swatch(colour), run_label(side)),
            (LegendMark::Line(darker(colour)), "running mean".to_string()),
        ];
        if !same_target {
            row.push((
                LegendMark::Line(TARGET),
                format!("target {}", compact(side.plot.target)),
            ));
        }
        row
    };
    let mut rows = vec![row(left_run, COMPLETED), row(right_run, SECOND)];
    rows[0].push((LegendMark::Swatch(FAILED), "failed rollout".to_string()));
    if same_target {
        rows[1].push((
            LegendMark::Line(TARGET),
            format!("target {}", compact(left.target)),
        ));
    }
    let legend = draw_legend(&legend_area, plot_area.left, &rows)?;
    root.present()?;
    Ok(PlotLayout {
        plot_area,
        bars,
        legend,
    })
}

/// `colour` darkened, for a line drawn over bars of that colour.
fn darker(colour: RGBColor) -> RGBColor {
    let RGBColor(r, g, b) = colour;
    RGBColor(r / 10 * 6, g / 10 * 6, b / 10 * 6)
}

enum LegendMark {
    Swatch(RGBColor),
    Line(RGBColor),
}

/// Rows of legend entries in `area` (the strip under the chart), starting at `left`, the
/// entries of each column aligned; returns the pixels they cover.
fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    left: i32,
    rows: &[Vec<(LegendMark, String)>],
) -> Result<PixelRect, Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
{
    let style = TextStyle::from(("sans-serif", 14).into_font()).color(&BLACK);
    let (offset_x, offset_y) = area.get_base_pixel();
    let mut widths: Vec<i32> = Vec::new();
    for row in rows {
        for (column, (_, label)) in row.iter().enumerate() {
            let (width, _) = area.estimate_text_size(label, &style)?;
            match widths.get_mut(column) {
                Some(w) => *w = (*w).max(width as i32),
                None => widths.push(width as i32),
            }
        }
    }
    let mut right = left;
    for (r, row) in rows.iter().enumerate() {
        let middle = (LEGEND_PADDING / 2 + r as u32 * LEGEND_ROW + LEGEND_ROW / 2) as i32;
        let mut x = left;
        for ((mark, label), width) in row.iter().zip(&widths) {
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
            x += width + 24;
        }
        right = right.max(x);
    }
    Ok(PixelRect {
        left: offset_x + left,
        top: offset_y,
        right: offset_x + right,
        bottom: offset_y + legend_height(rows.len() as u32) as i32 - 1,
    })
}

/// Writes `plot.png` and `plot.svg` (0600) into a run folder, as new files: a file or link
/// already there is an error, never overwritten or followed.
impl PlotError {
    /// Whether the plot could not be written for lack of disk space (or quota).
    pub fn is_out_of_space(&self) -> bool {
        let no_space = |cause: &std::io::Error| {
            matches!(
                cause.kind(),
                std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
            )
        };
        match self {
            PlotError::Create {
                cause: PrivateFileError::Io { cause, .. },
                ..
            }
            | PlotError::Write { cause, .. } => no_space(cause),
            _ => false,
        }
    }
}

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
            // No half-written plot stays behind.
            let _ = std::fs::remove_file(&path);
            return Err(PlotError::Write { path, cause });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::{Checked, RunReport};
    use crate::verify::RunVerdict;

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
            run_id: RunId::from_wire("run-test"),
            task_id: "cartpole-balance".into(),
            status: Some(EvalStatus::Completed),
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

    /// A second run of `data()`'s task, with a real-looking id.
    fn other_run(rollouts: u32, value: impl Fn(u32) -> f64) -> PlotData {
        let mut d = data();
        d.run_id = RunId::from_wire(format!("run-{}", "9c41".repeat(8)));
        d.status = Some(EvalStatus::BudgetExceeded);
        d.episodes = (0..rollouts)
            .map(|i| match value(i) {
                v if v < 0.0 => episode(i, Outcome::Aborted, 0.0),
                v => episode(i, Outcome::Completed, v),
            })
            .collect();
        d
    }

    /// `plot` as one side of a comparison, its records checked as `checked` says.
    fn side(plot: PlotData, checked: Checked) -> ComparedRun {
        ComparedRun {
            path: PathBuf::from(plot.run_id.as_str()),
            plot,
            report: RunReport::Missing("a test's plot alone".into()),
            checked,
            seed_set: None,
        }
    }

    fn unchecked() -> Checked {
        Checked::NoKeys("signatures not checked: a test".into())
    }

    fn broken() -> Checked {
        Checked::Verdict(RunVerdict::Broken(crate::verify::RunVerifyError {
            path: PathBuf::from("trajectory.jsonl"),
            reason: "line 3 was altered".into(),
        }))
    }

    fn compared(left: PlotData, right: PlotData) -> Comparison {
        Comparison::new(side(left, unchecked()), side(right, broken())).unwrap()
    }

    /// Asserts no bar lies under the legend or outside the plotting area, and the legend lies
    /// inside the image.
    fn assert_legend_clear(layout: &PlotLayout) {
        for bar in &layout.bars {
            assert!(
                !bar.overlaps(&layout.legend),
                "{bar:?} under {:?}",
                layout.legend
            );
            assert!(
                bar.left >= layout.plot_area.left && bar.right <= layout.plot_area.right + 1,
                "{bar:?} outside {:?}",
                layout.plot_area
            );
            assert!(
                bar.top >= layout.plot_area.top && bar.bottom <= layout.plot_area.bottom + 1,
                "{bar:?} outside {:?}",
                layout.plot_area
            );
        }
        assert!(!layout.plot_area.overlaps(&layout.legend));
        assert!(
            layout.legend.bottom < HEIGHT as i32 && layout.legend.right < WIDTH as i32,
            "{:?} runs off the {WIDTH}x{HEIGHT} image",
            layout.legend
        );
    }

    #[test]
    fn no_legend_pixel_of_a_comparison_lies_over_a_bar() {
        for (rollouts, high) in [(20u32, 500.0), (100, 500.0), (7, 0.5), (1, 1e9)] {
            let mut left = data();
            left.run_id = RunId::from_wire(format!("run-{}", "3f2a".repeat(8)));
            left.episodes = (0..rollouts)
                .map(|i| episode(i, Outcome::Completed, high))
                .collect();
            // Every other rollout of the second run failed; the rest reach the top too.
            let right = other_run(rollouts, |i| if i % 2 == 1 { -1.0 } else { high });
            let layout = compare_layout(&compared(left, right)).unwrap();
            // Failed rollouts count their metric (0 here): a bar of no height, still placed.
            assert_eq!(layout.bars.len(), 2 * rollouts as usize);
            assert_legend_clear(&layout);
            // The two bars of a rollout sit side by side, the first run's on the left (at 100
            // rollouts the gap between them is under a pixel).
            let (first, second) = (&layout.bars[0], &layout.bars[rollouts as usize]);
            assert!(first.right <= second.left, "{first:?} {second:?}");
        }
    }

    #[test]
    fn a_comparison_legend_fits_with_two_targets_negative_metrics_and_unequal_runs() {
        // The task's file changed between the runs (two targets, each named in its run's row),
        // both runs' records are flagged, the metric is negative (pendulum's return), and the
        // runs played different numbers of rollouts, one none at all.
        for (left_rollouts, right_rollouts) in [(10u32, 3u32), (0, 5), (50, 0)] {
            let mut left = data();
            left.run_id = RunId::from_wire(format!("run-{}", "3f2a".repeat(8)));
            left.status = Some(EvalStatus::BudgetExceeded);
            left.target = -150.25;
            left.episodes = (0..left_rollouts)
                .map(|i| episode(i, Outcome::Completed, -1234.5678 - f64::from(i)))
                .collect();
            let mut right = other_run(right_rollouts, |i| f64::from(i) * 10.0);
            right.status = None;
            right.target = -1e6 / 3.0;
            let both = compared(left, right);
            let layout = compare_layout(&both).unwrap();
            assert_eq!(layout.bars.len(), (left_rollouts + right_rollouts) as usize);
            assert_legend_clear(&layout);
            let svg =
                String::from_utf8(render_compare_bytes(&both, PlotFormat::Svg).unwrap()).unwrap();
            for expected in [
                "run 3f2a3f2a (budget exceeded) · not checked",
                "run 9c419c41 (unfinished) · NOT VERIFIED",
                "target -150.25",
                "target -333333.3333",
            ] {
                assert!(svg.contains(expected), "{expected:?} missing");
            }
        }
    }

    #[test]
    fn a_single_run_of_a_negative_metric_draws_its_bars_below_zero() {
        let mut d = data();
        d.target = -200.0;
        d.episodes = (0..10)
            .map(|i| episode(i, Outcome::Completed, -300.0 - f64::from(i) * 50.0))
            .collect();
        let layout = layout(&d).unwrap();
        assert_legend_clear(&layout);
        for bar in &layout.bars {
            assert!(bar.bottom - bar.top > 10, "a bar of no height: {bar:?}");
        }
    }

    #[test]
    fn a_comparison_renders_both_run_ids_and_warnings() {
        let dir = tempfile::tempdir().unwrap();
        let both = compared(data(), other_run(4, |i| f64::from(i) * 100.0));
        let svg = dir.path().join("c.svg");
        render_compare_file(&both, &svg).unwrap();
        let text = std::fs::read_to_string(&svg).unwrap();
        for expected in [
            "cartpole-balance · run test vs run 9c419c41",
            "run test (completed) · not checked",
            "run 9c419c41 (budget exceeded) · NOT VERIFIED",
            "target 475",
            "failed rollout",
        ] {
            assert!(text.contains(expected), "{expected:?} missing");
        }
        let png = dir.path().join("c.png");
        render_compare_file(&both, &png).unwrap();
        assert_eq!(&std::fs::read(&png).unwrap()[..8], b"\x89PNG\r\n\x1a\n");
    }

    #[test]
    fn a_comparison_of_negative_metrics_makes_room_below_zero() {
        assert_eq!(value_range([500.0, 475.0].into_iter()), 0.0..575.0);
        assert_eq!(value_range([-200.0, -100.0].into_iter()), -230.0..0.0);
        assert_eq!(value_range([].into_iter()), 0.0..1.0);
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
