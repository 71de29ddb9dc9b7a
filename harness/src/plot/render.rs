//! Drawing a plot with plotters, into PNG or SVG: one run's [`PlotData`], or two runs of a
//! [`Comparison`] side by side. Everything here is about pixels: sizes, colours, fonts, the
//! layout of the charts and the legend.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::Path;
use std::sync::Once;

use ale_proto::eval::Outcome;
use ale_records::private_files::create_private_file;
use plotters::coord::Shift;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::data::{PlotData, axis_format, compact, interval_text, value_range};
use super::error::PlotError;
use crate::compare::{ComparedRun, Comparison};
use crate::report::Report;
use crate::stats::{Interval, running_interval};

/// The plot files written into every run folder.
pub const PLOT_FILES: [&str; 2] = ["plot.png", "plot.svg"];

/// The resolution the default figure and every size in this module are given at.
pub const BASE_DPI: u32 = 96;
/// The default figure: 10 × 5.625 inches, 960 × 540 pixels at [`BASE_DPI`].
pub const DEFAULT_WIDTH: u32 = 960;
pub const DEFAULT_HEIGHT: u32 = 540;
const MIN_DPI: u32 = 48;
const MAX_DPI: u32 = 1200;
/// The most pixels a figure may have (a 150 MB bitmap).
const MAX_PIXELS: u64 = 50_000_000;
/// The smallest figure the layout fits in, in pixels at [`BASE_DPI`] (3.3 × 2.5 inches).
const MIN_WIDTH: u32 = 320;
const MIN_HEIGHT: u32 = 240;

/// How a plot is drawn: its size in pixels, its resolution, and its title.
///
/// ```
/// use ale_harness::plot::PlotOptions;
/// let print = PlotOptions::at_dpi(300);
/// assert_eq!((print.width, print.height), (3000, 1688)); // 10 × 5.625 in
/// assert_eq!(PlotOptions::default().width, 960);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlotOptions {
    pub width: u32,
    pub height: u32,
    /// Pixels per inch: text and lines are drawn `dpi / 96` times as large as at the default
    /// 96, and a PNG records it (its `pHYs` chunk), so a figure keeps its physical size.
    pub dpi: u32,
    /// Replaces the title the plot would give itself (task and run).
    pub title: Option<String>,
}

impl Default for PlotOptions {
    fn default() -> PlotOptions {
        PlotOptions::at_dpi(BASE_DPI)
    }
}

impl PlotOptions {
    /// The default figure (10 × 5.625 inches) at `dpi`: 960 × 540 at 96, 3000 × 1688 at 300.
    pub fn at_dpi(dpi: u32) -> PlotOptions {
        let side = |base: u32| (f64::from(base) * f64::from(dpi) / f64::from(BASE_DPI)).round();
        PlotOptions {
            width: side(DEFAULT_WIDTH) as u32,
            height: side(DEFAULT_HEIGHT) as u32,
            dpi,
            title: None,
        }
    }

    /// Refuses a size or resolution the figure cannot be drawn at, saying what would do.
    pub fn check(&self) -> Result<(), PlotError> {
        let PlotOptions {
            width, height, dpi, ..
        } = *self;
        if !(MIN_DPI..=MAX_DPI).contains(&dpi) {
            return Err(PlotError::Options(format!(
                "--dpi {dpi} is out of range: give {MIN_DPI} to {MAX_DPI} (300 for print)"
            )));
        }
        if u64::from(width) * u64::from(height) > MAX_PIXELS {
            return Err(PlotError::Options(format!(
                "a {width}×{height} plot has over {MAX_PIXELS} pixels: give a smaller --width, \
                 --height or --dpi"
            )));
        }
        let scale = self.scale().0;
        let (min_w, min_h) = (
            (f64::from(MIN_WIDTH) * scale).ceil() as u32,
            (f64::from(MIN_HEIGHT) * scale).ceil() as u32,
        );
        if width < min_w || height < min_h {
            return Err(PlotError::Options(format!(
                "a {width}×{height} plot at {dpi} dpi is too small for its text: give at least \
                 {min_w}×{min_h} pixels at {dpi} dpi (--width, --height), or a lower --dpi"
            )));
        }
        Ok(())
    }

    fn scale(&self) -> Scale {
        Scale(f64::from(self.dpi) / f64::from(BASE_DPI))
    }
}

/// The family every text is drawn in. PNG text is measured and drawn with the embedded
/// Ubuntu Light registered under this name; an SVG viewer takes the first face it has.
const FONT: &str = "Ubuntu, Helvetica, Arial, sans-serif";

static FONT_REGISTERED: Once = Once::new();

fn register_font() {
    FONT_REGISTERED.call_once(|| {
        // The font is valid TrueType shipped by the crate; a failure would only lose text.
        let _ = plotters::style::register_font(
            FONT,
            FontStyle::Normal,
            epaint_default_fonts::UBUNTU_LIGHT,
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
        options: &PlotOptions,
    ) -> Result<PlotLayout, Box<dyn std::error::Error>>
    where
        DB::ErrorType: 'static;
}

impl Figure for PlotData {
    fn draw_on<DB: DrawingBackend>(
        &self,
        root: DrawingArea<DB, Shift>,
        options: &PlotOptions,
    ) -> Result<PlotLayout, Box<dyn std::error::Error>>
    where
        DB::ErrorType: 'static,
    {
        draw_single(self, root, options)
    }
}

impl Figure for Comparison {
    fn draw_on<DB: DrawingBackend>(
        &self,
        root: DrawingArea<DB, Shift>,
        options: &PlotOptions,
    ) -> Result<PlotLayout, Box<dyn std::error::Error>>
    where
        DB::ErrorType: 'static,
    {
        draw_compared(&self.left, &self.right, root, options)
    }
}

fn render(
    figure: &impl Figure,
    format: PlotFormat,
    options: &PlotOptions,
) -> Result<Vec<u8>, PlotError> {
    options.check()?;
    let failed = |e: Box<dyn std::error::Error>| PlotError::Draw(e.to_string());
    let size = (options.width, options.height);
    match format {
        PlotFormat::Png => {
            let mut rgb = vec![0u8; options.width as usize * options.height as usize * 3];
            let root = BitMapBackend::with_buffer(&mut rgb, size).into_drawing_area();
            figure.draw_on(root, options).map_err(failed)?;
            Ok(encode_png(&rgb, options)?)
        }
        PlotFormat::Svg => {
            let mut svg = String::new();
            figure
                .draw_on(
                    SVGBackend::with_string(&mut svg, size).into_drawing_area(),
                    options,
                )
                .map_err(failed)?;
            Ok(svg.into_bytes())
        }
    }
}

fn figure_layout(figure: &impl Figure, options: &PlotOptions) -> Result<PlotLayout, PlotError> {
    options.check()?;
    let mut svg = String::new();
    let root = SVGBackend::with_string(&mut svg, (options.width, options.height));
    figure
        .draw_on(root.into_drawing_area(), options)
        .map_err(|e| PlotError::Draw(e.to_string()))
}

fn write_file(bytes: Vec<u8>, path: &Path) -> Result<(), PlotError> {
    std::fs::write(path, bytes).map_err(|cause| PlotError::Write {
        path: path.to_path_buf(),
        cause,
    })
}

/// Renders `data` as the bytes of a PNG or SVG file.
pub fn render_bytes(
    data: &PlotData,
    format: PlotFormat,
    options: &PlotOptions,
) -> Result<Vec<u8>, PlotError> {
    render(data, format, options)
}

fn encode_png(rgb: &[u8], options: &PlotOptions) -> Result<Vec<u8>, png::EncodingError> {
    let mut bytes = Vec::new();
    let mut encoder = png::Encoder::new(&mut bytes, options.width, options.height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let per_metre = (f64::from(options.dpi) / 0.0254).round() as u32;
    encoder.set_pixel_dims(Some(png::PixelDimensions {
        xppu: per_metre,
        yppu: per_metre,
        unit: png::Unit::Meter,
    }));
    let mut writer = encoder.write_header()?;
    writer.write_image_data(rgb)?;
    writer.finish()?;
    Ok(bytes)
}

/// Renders `data` to `path` (`.png` or `.svg`), replacing a file there: for a plot the
/// operator asked for by name.
///
/// ```no_run
/// use ale_harness::plot::{PlotData, PlotOptions, render_file};
/// use std::path::Path;
/// let data = PlotData::load(Path::new("state/runs/run-3f2a…"))?;
/// let options = PlotOptions { title: Some("CartPole".into()), ..PlotOptions::at_dpi(300) };
/// render_file(&data, Path::new("cartpole.png"), &options)?;
/// # Ok::<(), ale_harness::plot::PlotError>(())
/// ```
pub fn render_file(data: &PlotData, path: &Path, options: &PlotOptions) -> Result<(), PlotError> {
    write_file(render_bytes(data, PlotFormat::of(path)?, options)?, path)
}

/// Renders two runs of one task side by side as the bytes of a PNG or SVG file: grouped bars
/// per rollout (the left run's first), failed rollouts marked, both running means with their
/// bands, both runs' means with their intervals, the target, and in the legend each run's
/// agent, status, and a warning when its records did not verify.
pub fn render_compare_bytes(
    both: &Comparison,
    format: PlotFormat,
    options: &PlotOptions,
) -> Result<Vec<u8>, PlotError> {
    render(both, format, options)
}

/// Renders two runs of one task side by side to `path` (`.png` or `.svg`), replacing a file
/// there. See [`render_compare_bytes`].
///
/// ```no_run
/// use ale_harness::compare::Comparison;
/// use ale_harness::plot::{PlotOptions, render_compare_file};
/// use ale_harness::verify::RecordKeys;
/// use std::path::Path;
/// let keys = RecordKeys::from_state_dir(Path::new("state"));
/// let both = Comparison::load(
///     Path::new("state/runs/run-3f2a…"),
///     Path::new("state/runs/run-9c41…"),
///     keys.as_ref(),
/// )?;
/// render_compare_file(&both, Path::new("compare.png"), &PlotOptions::default())?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn render_compare_file(
    both: &Comparison,
    path: &Path,
    options: &PlotOptions,
) -> Result<(), PlotError> {
    write_file(
        render_compare_bytes(both, PlotFormat::of(path)?, options)?,
        path,
    )
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

    /// The middle column, as a tick under a bar sits.
    pub fn centre_x(&self) -> f64 {
        f64::from(self.left + self.right) / 2.0
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

/// Where a plot put its parts, in image pixels. The legend has a strip of its own below the
/// charts, so it can never cover data.
#[derive(Debug, Clone)]
pub struct PlotLayout {
    /// The main chart's plotting area.
    pub plot_area: PixelRect,
    /// Each drawn bar, run by run, rollout by rollout.
    pub bars: Vec<PixelRect>,
    /// The x of each rollout's tick (the rollouts [`PlotLayout::tick_rollouts`] numbers).
    pub ticks: Vec<i32>,
    /// The rollout each tick names, numbered from 1.
    pub tick_rollouts: Vec<u32>,
    /// Each run's running-mean band (none for a run with fewer than two played rollouts).
    pub bands: Vec<PixelRect>,
    /// Each run's final mean interval, the bracket at the right end.
    pub intervals: Vec<PixelRect>,
    /// The safety panel's plotting area, when the task has safety metrics.
    pub safety_area: Option<PixelRect>,
    pub legend: PixelRect,
}

/// The layout `data` is drawn with (the same code draws it; nothing is written).
pub fn layout(data: &PlotData, options: &PlotOptions) -> Result<PlotLayout, PlotError> {
    figure_layout(data, options)
}

/// The layout two runs are drawn with by [`render_compare_file`] (nothing is written).
pub fn compare_layout(both: &Comparison, options: &PlotOptions) -> Result<PlotLayout, PlotError> {
    figure_layout(both, options)
}

/// Sizes at [`BASE_DPI`], scaled by `dpi / 96`.
#[derive(Debug, Clone, Copy)]
struct Scale(f64);

impl Scale {
    fn px(self, base: f64) -> i32 {
        (base * self.0).round() as i32
    }

    fn font(self, base: f64) -> f64 {
        base * self.0
    }

    fn stroke(self, base: f64) -> u32 {
        (base * self.0).round().max(1.0) as u32
    }
}

const COMPLETED: RGBColor = RGBColor(70, 120, 200);
const FAILED: RGBColor = RGBColor(210, 80, 70);
const TARGET: RGBColor = RGBColor(40, 160, 80);
/// The second run of a comparison (the first is drawn in [`COMPLETED`]'s blue).
const SECOND: RGBColor = RGBColor(150, 95, 190);
const GRID: RGBColor = RGBColor(225, 225, 225);
/// One run's safety metrics, one colour each (a comparison gives each run its colour and
/// each metric a marker).
const SAFETY: [RGBColor; 4] = [
    RGBColor(225, 130, 20),
    RGBColor(20, 140, 140),
    RGBColor(140, 90, 50),
    RGBColor(200, 60, 150),
];

/// Text sizes at [`BASE_DPI`], in plotters' units (about 1.24 × the em size).
const TITLE_SIZE: f64 = 21.0;
const LABEL_SIZE: f64 = 15.0;
const DESC_SIZE: f64 = 16.0;
const LEGEND_SIZE: f64 = 15.0;
/// The space around the charts, at [`BASE_DPI`].
const MARGIN: f64 = 16.0;

/// A part of a figure, in pixels from its top-left corner.
type Area<DB> = DrawingArea<DB, Shift>;
type RolloutChart<'a, DB> = ChartContext<'a, DB, Cartesian2d<RolloutAxis, RangedCoordf64>>;

/// The x axis of rollouts: linear, its ticks exactly where the figure puts them (under the
/// bars' centres), where plotters' own would fall on round numbers between bars.
#[derive(Debug, Clone)]
struct RolloutAxis {
    range: std::ops::Range<f64>,
    ticks: Vec<f64>,
}

impl Ranged for RolloutAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let span = self.range.end - self.range.start;
        let fraction = (value - self.range.start) / span;
        limit.0 + (f64::from(limit.1 - limit.0) * fraction + 1e-3).floor() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.range.clone()
    }
}

fn text_style(size: f64) -> TextStyle<'static> {
    TextStyle::from((FONT, size).into_font()).color(&BLACK)
}

/// One run as a figure draws it: its colours and where its bars sit in a rollout's slot.
struct Side<'a> {
    data: &'a PlotData,
    /// A completed rollout's bar.
    bar: RGBColor,
    /// Its running mean, band and final interval.
    line: RGBColor,
    /// Its bar's centre from the rollout's tick, and its width, in rollouts.
    offset: f64,
    width: f64,
    /// Whether a failed rollout's bar is outlined in [`Side::bar`] (two runs share red).
    outline_failures: bool,
    /// Its final interval's offset from the bracket's slot centre, in rollouts.
    bracket_offset: f64,
}

fn draw_single<DB: DrawingBackend>(
    data: &PlotData,
    root: Area<DB>,
    options: &PlotOptions,
) -> Result<PlotLayout, Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
{
    let side = Side {
        data,
        bar: COMPLETED,
        line: BLACK,
        offset: 0.0,
        width: 0.76,
        outline_failures: false,
        bracket_offset: 0.0,
    };
    let any_failed = data.played().any(|e| e.outcome != Outcome::Completed);
    let mut first = vec![(
        LegendMark::Swatch(COMPLETED),
        format!("per-rollout {}", data.metric_name),
    )];
    if any_failed {
        first.push((LegendMark::Swatch(FAILED), "failed rollout".to_string()));
    }
    first.push((
        LegendMark::Line(TARGET),
        format!("target {}", compact(data.target)),
    ));
    let s = &data.summary;
    let rows = vec![
        first,
        vec![
            (
                LegendMark::Band(BLACK),
                "running mean ± 95% CI (normal approx.)".to_string(),
            ),
            (
                LegendMark::Bracket(BLACK),
                format!(
                    "mean of {} rollouts {} (95% CI, bootstrap)",
                    s.n,
                    interval_text(s.mean, s.mean_ci)
                ),
            ),
        ],
    ];
    let title = options.title.clone().unwrap_or_else(|| data.title());
    draw_figure(root, options, &title, &[side], rows)
}

/// `left` and `right` (of one task) as grouped bars per rollout, each run in its colour with
/// its running mean, band and final interval; a failed rollout's bar is red, outlined in its
/// run's colour.
fn draw_compared<DB: DrawingBackend>(
    left_run: &ComparedRun,
    right_run: &ComparedRun,
    root: Area<DB>,
    options: &PlotOptions,
) -> Result<PlotLayout, Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
{
    let (left, right) = (&left_run.plot, &right_run.plot);
    let sides = [
        Side {
            data: left,
            bar: COMPLETED,
            line: darker(COMPLETED),
            offset: -0.2,
            width: 0.38,
            outline_failures: true,
            bracket_offset: -0.22,
        },
        Side {
            data: right,
            bar: SECOND,
            line: darker(SECOND),
            offset: 0.2,
            width: 0.38,
            outline_failures: true,
            bracket_offset: 0.22,
        },
    ];
    // Two runs of one agent are told apart by their ids.
    let same_agent = left.label() == right.label();
    let name = |data: &PlotData| {
        if same_agent {
            format!("{} · run {}", data.label(), data.run_id.short())
        } else {
            data.label()
        }
    };
    let run_label = |side: &ComparedRun| {
        let status = side
            .status()
            .map_or("unfinished".to_string(), |s| s.to_string());
        let mut label = format!("{} ({status})", name(&side.plot));
        if let Some(warning) = side.records_warning() {
            label.push_str(" · ");
            label.push_str(warning);
        }
        label
    };
    // One task has one target; should the task's file have changed between the runs, each
    // run's own is drawn, and named in its row of the legend.
    let same_target = left.target == right.target;
    let row = |side: &ComparedRun, colour: RGBColor| {
        let s = &side.plot.summary;
        let mut row = vec![
            (LegendMark::Swatch(colour), run_label(side)),
            (LegendMark::Band(darker(colour)), "running mean".to_string()),
            (
                LegendMark::Bracket(darker(colour)),
                format!("mean {}", interval_text(s.mean, s.mean_ci)),
            ),
        ];
        if !same_target {
            row.push((
                LegendMark::Line(TARGET),
                format!("target {}", compact(side.plot.target)),
            ));
        }
        row
    };
    let mut last = Vec::new();
    if left
        .played()
        .chain(right.played())
        .any(|e| e.outcome != Outcome::Completed)
    {
        last.push((LegendMark::Swatch(FAILED), "failed rollout".to_string()));
    }
    if same_target {
        last.push((
            LegendMark::Line(TARGET),
            format!("target {}", compact(left.target)),
        ));
    }
    let note = vec![(
        LegendMark::Text,
        "bands: running mean ± 95% CI (normal approx.); brackets: 95% CI (bootstrap)".into(),
    )];
    let rows = vec![row(left_run, COMPLETED), row(right_run, SECOND), last, note];
    let title = options
        .title
        .clone()
        .unwrap_or_else(|| format!("{}: {} vs {}", left.task_id, name(left), name(right)));
    draw_figure(root, options, &title, &sides, rows)
}

/// The figure: its title, the main chart of `sides`' rollouts, the safety panel when any side
/// has safety metrics, and the legend's `rows` (with the safety metrics' entries added).
fn draw_figure<DB: DrawingBackend>(
    root: Area<DB>,
    options: &PlotOptions,
    title: &str,
    sides: &[Side],
    mut rows: Vec<Vec<(LegendMark, String)>>,
) -> Result<PlotLayout, Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
{
    // Text is measured for the layout whatever the backend, so the font must be there.
    register_font();
    root.fill(&WHITE)?;
    let scale = options.scale();
    let (width, height) = root.dim_in_pixel();
    let margin = scale.px(MARGIN);

    // The title, shrunk (then cut) to fit.
    let title_style = fit_font(&root, title, TITLE_SIZE, scale, width as i32 - 2 * margin)?;
    let title_text = cut_to_fit(&root, title, &title_style, width as i32 - 2 * margin)?;
    let title_height = scale.px(TITLE_SIZE * 1.9);
    root.draw(&Text::new(
        title_text,
        (width as i32 / 2, scale.px(TITLE_SIZE * 0.5)),
        title_style.pos(Pos::new(HPos::Center, VPos::Top)),
    ))?;

    let n = sides
        .iter()
        .map(|s| s.data.episodes.len())
        .max()
        .unwrap_or(0)
        .max(1) as u32;
    // The final intervals' slot, right of the last rollout.
    let slot = (f64::from(n) * 0.06).max(1.2);
    let bracket_x = f64::from(n) + 0.5 + slot / 2.0;
    let x_end = f64::from(n) + 0.5 + slot;

    let y = value_range(sides.iter().flat_map(|side| {
        let d = side.data;
        d.played().map(|e| e.metric).chain([
            d.target,
            d.summary.mean_ci.low,
            d.summary.mean_ci.high,
        ])
    }));
    let y_format = axis_format(&y);
    let safety_names: Vec<&String> = sides
        .iter()
        .flat_map(|s| &s.data.safety_metrics)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let safety_y = value_range(
        sides
            .iter()
            .flat_map(|side| side.data.played().flat_map(|e| e.safety.values().copied())),
    );
    let safety_format = axis_format(&safety_y);

    // The y label area fits the widest tick label and the axis description beside it, the
    // same in both panels so their plotting areas line up.
    let label_style = text_style(scale.font(LABEL_SIZE));
    let mut widest = 0;
    for text in [y_format(&y.start), y_format(&y.end)]
        .into_iter()
        .chain((!safety_names.is_empty()).then(|| safety_format(&safety_y.end)))
    {
        widest = widest.max(root.estimate_text_size(&text, &label_style)?.0 as i32);
    }
    let y_area = widest + scale.px(DESC_SIZE * 1.2 + 16.0);
    let plot_left = margin + y_area;
    let plot_width = width as i32 - plot_left - margin;

    // The safety metrics' legend entries.
    let marker_limit = 60;
    if !safety_names.is_empty() {
        let mut row = vec![(LegendMark::Text, "safety (lower is better):".to_string())];
        for (i, name) in safety_names.iter().enumerate() {
            let mark = if sides.len() == 1 {
                LegendMark::Marker(SAFETY[i % SAFETY.len()], MarkerShape::of(0))
            } else {
                LegendMark::Marker(RGBColor(90, 90, 90), MarkerShape::of(i))
            };
            row.push((mark, format!("{name} per rollout")));
        }
        rows.push(row);
    }

    let legend_style = text_style(scale.font(LEGEND_SIZE));
    let lines = lay_out_legend(&root, &rows, &legend_style, plot_width, scale)?;
    let row_height = scale.px(LEGEND_SIZE * 1.45);
    let legend_height = scale.px(14.0) + lines.len() as i32 * row_height;

    let body_top = title_height;
    let body_bottom = height as i32 - legend_height;
    let (_, rest) = root.split_vertically(body_top);
    let (body, legend_area) = rest.split_vertically(body_bottom - body_top);
    let (main_area, safety_area) = if safety_names.is_empty() {
        (body, None)
    } else {
        let main_height = ((body_bottom - body_top) as f64 * 0.68).round() as i32;
        let (main, safety) = body.split_vertically(main_height);
        (main, Some(safety))
    };

    let ticks = rollout_ticks(n, plot_width, x_end, scale);
    let with_desc = safety_area.is_none();
    let (mut chart, tick_xs) = rollout_chart(
        &main_area,
        options,
        RolloutAxes {
            x_end,
            ticks: &ticks,
            bracket_x: Some(bracket_x),
            y: y.clone(),
            y_desc: format!(
                "{} ({})",
                sides[0].data.metric_name, sides[0].data.direction
            ),
            y_format: &y_format,
            y_area,
            x_desc: with_desc,
        },
    )?;

    // The target first, behind the bars.
    let mut targets: Vec<f64> = sides.iter().map(|s| s.data.target).collect();
    targets.dedup();
    for target in targets {
        chart.draw_series(LineSeries::new(
            [(0.5, target), (x_end, target)],
            TARGET.stroke_width(scale.stroke(2.0)),
        ))?;
    }
    let mut bars = Vec::new();
    for side in sides {
        let mut fills = Vec::new();
        let mut outlines = Vec::new();
        for e in side.data.played() {
            let centre = f64::from(e.index) + 1.0 + side.offset;
            let corners = [
                (centre - side.width / 2.0, 0.0),
                (centre + side.width / 2.0, e.metric),
            ];
            bars.push(PixelRect::spanning(
                chart.backend_coord(&corners[0]),
                chart.backend_coord(&corners[1]),
            ));
            // Opaque, so that the target behind them stays behind them.
            if e.outcome == Outcome::Completed {
                fills.push(Rectangle::new(corners, on_white(side.bar, 0.75).filled()));
            } else {
                fills.push(Rectangle::new(corners, on_white(FAILED, 0.8).filled()));
                if side.outline_failures {
                    outlines.push(Rectangle::new(
                        corners,
                        side.bar.stroke_width(scale.stroke(1.5)),
                    ));
                }
            }
        }
        chart.draw_series(fills)?;
        chart.draw_series(outlines)?;
    }
    let clamp = |v: f64| v.clamp(y.start, y.end);
    let mut bands = Vec::new();
    for side in sides {
        let values: Vec<f64> = side.data.played().map(|e| e.metric).collect();
        let running = running_interval(&values);
        let xs: Vec<f64> = side
            .data
            .played()
            .map(|e| f64::from(e.index) + 1.0)
            .collect();
        let with_band: Vec<(f64, Interval)> = xs
            .iter()
            .zip(&running)
            .filter_map(|(&x, p)| p.interval.map(|i| (x, i)))
            .collect();
        if !with_band.is_empty() {
            let mut outline: Vec<(f64, f64)> =
                with_band.iter().map(|(x, i)| (*x, clamp(i.high))).collect();
            outline.extend(with_band.iter().rev().map(|(x, i)| (*x, clamp(i.low))));
            if let Some(bounds) = bounding(outline.iter().map(|p| chart.backend_coord(p))) {
                bands.push(bounds);
            }
            chart.draw_series([Polygon::new(outline, side.line.mix(0.16).filled())])?;
        }
        chart.draw_series(LineSeries::new(
            xs.iter().zip(&running).map(|(&x, p)| (x, p.mean)),
            side.line.stroke_width(scale.stroke(2.0)),
        ))?;
    }
    // Each run's mean with its bootstrap interval, a bracket at the right end.
    let mut intervals = Vec::new();
    for side in sides {
        let s = &side.data.summary;
        let x = bracket_x + side.bracket_offset * slot;
        let cap = 0.12 * slot;
        let stroke = side.line.stroke_width(scale.stroke(2.0));
        let (low, high) = (clamp(s.mean_ci.low), clamp(s.mean_ci.high));
        chart.draw_series([
            PathElement::new(vec![(x, low), (x, high)], stroke),
            PathElement::new(vec![(x - cap, low), (x + cap, low)], stroke),
            PathElement::new(vec![(x - cap, high), (x + cap, high)], stroke),
        ])?;
        chart.draw_series([Circle::new(
            (x, clamp(s.mean)),
            scale.stroke(4.0),
            side.line.filled(),
        )])?;
        intervals.push(PixelRect::spanning(
            chart.backend_coord(&(x - cap, low)),
            chart.backend_coord(&(x + cap, high)),
        ));
    }
    let plot_area = plotting_rect(&chart);

    let safety_area = match safety_area {
        None => None,
        Some(area) => {
            let (mut safety_chart, _) = rollout_chart(
                &area,
                options,
                RolloutAxes {
                    x_end,
                    ticks: &ticks,
                    bracket_x: None,
                    y: safety_y.clone(),
                    y_desc: "safety".into(),
                    y_format: &safety_format,
                    y_area,
                    x_desc: true,
                },
            )?;
            for side in sides {
                for (i, name) in safety_names.iter().enumerate() {
                    let (colour, shape) = if sides.len() == 1 {
                        (SAFETY[i % SAFETY.len()], MarkerShape::of(0))
                    } else {
                        (side.line, MarkerShape::of(i))
                    };
                    let points: Vec<(f64, f64)> = side
                        .data
                        .played()
                        .filter_map(|e| {
                            let x = f64::from(e.index) + 1.0 + side.offset;
                            e.safety.get(*name).map(|v| (x, *v))
                        })
                        .collect();
                    safety_chart.draw_series(LineSeries::new(
                        points.clone(),
                        colour.stroke_width(scale.stroke(1.5)),
                    ))?;
                    if n <= marker_limit {
                        let size = scale.stroke(3.5) as i32;
                        for p in points {
                            shape.draw(safety_chart.plotting_area(), p, size, colour)?;
                        }
                    }
                }
            }
            Some(plotting_rect(&safety_chart))
        }
    };

    let legend = draw_legend(&legend_area, plot_left, &lines, &legend_style, scale)?;
    root.present()?;
    Ok(PlotLayout {
        plot_area,
        bars,
        ticks: tick_xs,
        tick_rollouts: ticks,
        bands,
        intervals,
        safety_area,
        legend,
    })
}

/// The x axis of rollouts and the y axis a chart of them needs.
struct RolloutAxes<'a> {
    /// The x range's end (it starts half a rollout left of rollout 1).
    x_end: f64,
    /// The rollouts (numbered from 1) that get a tick, at their bars' centre.
    ticks: &'a [u32],
    /// Where the final intervals sit, a tick labelled `mean`; `None` in a panel without them.
    bracket_x: Option<f64>,
    y: std::ops::Range<f64>,
    y_desc: String,
    y_format: &'a dyn Fn(&f64) -> String,
    /// The y label area's width, in pixels.
    y_area: i32,
    /// Whether the x axis is described (`rollout`): the lowest panel's.
    x_desc: bool,
}

/// A chart of rollouts (x, numbered from 1, each at its tick) against `axes.y`, with its axes
/// and horizontal grid drawn; and the pixel x of each rollout's tick.
fn rollout_chart<'a, DB: DrawingBackend>(
    area: &'a Area<DB>,
    options: &PlotOptions,
    axes: RolloutAxes,
) -> Result<(RolloutChart<'a, DB>, Vec<i32>), Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
{
    let scale = options.scale();
    let mut key_points: Vec<f64> = axes.ticks.iter().map(|&t| f64::from(t)).collect();
    key_points.extend(axes.bracket_x);
    let x_area = if axes.x_desc {
        scale.px(LABEL_SIZE + DESC_SIZE + 22.0)
    } else {
        scale.px(LABEL_SIZE + 12.0)
    };
    let mut chart = ChartBuilder::on(area)
        .margin_top(scale.px(8.0))
        .margin_bottom(scale.px(4.0))
        .margin_left(scale.px(MARGIN))
        .margin_right(scale.px(MARGIN))
        .x_label_area_size(x_area)
        .y_label_area_size(axes.y_area)
        .build_cartesian_2d(
            RolloutAxis {
                range: 0.5..axes.x_end,
                ticks: key_points,
            },
            axes.y,
        )?;
    // The y description, shrunk to the panel's height.
    let (_, y_pixels) = chart.plotting_area().get_pixel_range();
    let desc_style = fit_font(
        area,
        &axes.y_desc,
        DESC_SIZE,
        scale,
        y_pixels.end - y_pixels.start,
    )?;
    let label_style = text_style(scale.font(LABEL_SIZE));
    let y_labels = ((y_pixels.end - y_pixels.start) / scale.px(LABEL_SIZE * 3.0)).clamp(2, 8);
    let bracket_x = axes.bracket_x;
    let x_format = |x: &f64| {
        if bracket_x.is_some_and(|b| (x - b).abs() < 1e-9) {
            "mean".to_string()
        } else {
            format!("{}", x.round() as i64)
        }
    };
    let mut mesh = chart.configure_mesh();
    mesh.disable_x_mesh()
        .bold_line_style(GRID.stroke_width(scale.stroke(1.0)))
        .light_line_style(WHITE.mix(0.0))
        .axis_style(BLACK.stroke_width(scale.stroke(1.0)))
        .set_all_tick_mark_size(scale.px(5.0))
        .y_labels(y_labels as usize)
        .x_label_formatter(&x_format)
        .y_label_formatter(axes.y_format)
        .label_style(label_style)
        .axis_desc_style(desc_style)
        .y_desc(axes.y_desc.clone());
    if axes.x_desc {
        mesh.x_desc("rollout");
    }
    mesh.draw()?;
    let ticks = axes
        .ticks
        .iter()
        .map(|&t| chart.backend_coord(&(f64::from(t), 0.0)).0)
        .collect();
    Ok((chart, ticks))
}

/// The rollouts (numbered from 1) that get a tick: every one up to 25, else 1 and the
/// multiples of a round step (1, 2 or 5 × 10ᵏ) that leaves each label room.
fn rollout_ticks(rollouts: u32, plot_width: i32, x_end: f64, scale: Scale) -> Vec<u32> {
    if rollouts <= 25 {
        return (1..=rollouts).collect();
    }
    let digits = rollouts.to_string().len() as f64;
    let label = scale.font(LABEL_SIZE) * (0.6 * digits + 1.2);
    let per_rollout = f64::from(plot_width.max(1)) / (x_end - 0.5);
    let min_step = (label / per_rollout).ceil().max(1.0) as u32;
    let step = (0..9)
        .flat_map(|e| [1u32, 2, 5].map(|m| m * 10u32.pow(e)))
        .find(|&s| s >= min_step)
        .unwrap_or(rollouts);
    let mut ticks = vec![1];
    ticks.extend(
        (1..)
            .map(|k| k * step)
            .take_while(|&t| t <= rollouts)
            .filter(|&t| t > step.div_ceil(2)),
    );
    ticks
}

/// The smallest rectangle holding `points`; `None` for none.
fn bounding(points: impl Iterator<Item = (i32, i32)>) -> Option<PixelRect> {
    points.fold(None, |acc, p| {
        let r = PixelRect::spanning(p, p);
        Some(acc.map_or(r, |a: PixelRect| PixelRect {
            left: a.left.min(r.left),
            top: a.top.min(r.top),
            right: a.right.max(r.right),
            bottom: a.bottom.max(r.bottom),
        }))
    })
}

/// The pixels of a chart's plotting area.
fn plotting_rect<DB: DrawingBackend>(chart: &RolloutChart<'_, DB>) -> PixelRect {
    let (x_range, y_range) = chart.plotting_area().get_pixel_range();
    PixelRect {
        left: x_range.start,
        top: y_range.start,
        right: x_range.end - 1,
        bottom: y_range.end - 1,
    }
}

/// `colour` at `opacity` over white, as an opaque colour.
fn on_white(colour: RGBColor, opacity: f64) -> RGBColor {
    let blend = |c: u8| (f64::from(c) * opacity + 255.0 * (1.0 - opacity)).round() as u8;
    RGBColor(blend(colour.0), blend(colour.1), blend(colour.2))
}

/// `colour` darkened, for a line drawn over bars of that colour.
fn darker(colour: RGBColor) -> RGBColor {
    let RGBColor(r, g, b) = colour;
    RGBColor(r / 10 * 6, g / 10 * 6, b / 10 * 6)
}

/// The largest text style, from `base` down to two thirds of it, in which `text` fits in
/// `room` pixels.
fn fit_font<DB: DrawingBackend>(
    area: &Area<DB>,
    text: &str,
    base: f64,
    scale: Scale,
    room: i32,
) -> Result<TextStyle<'static>, Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
{
    let mut size = scale.font(base);
    let smallest = size * 2.0 / 3.0;
    loop {
        let style = text_style(size);
        let (w, _) = area.estimate_text_size(text, &style)?;
        if w as i32 <= room || size <= smallest {
            return Ok(style);
        }
        size = (size * 0.92).max(smallest);
    }
}

/// `text`, cut and ended with `…` if it is wider than `room` pixels.
fn cut_to_fit<DB: DrawingBackend>(
    area: &Area<DB>,
    text: &str,
    style: &TextStyle,
    room: i32,
) -> Result<String, Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
{
    if area.estimate_text_size(text, style)?.0 as i32 <= room {
        return Ok(text.to_string());
    }
    let chars: Vec<char> = text.chars().collect();
    for keep in (0..chars.len()).rev() {
        let cut: String = chars[..keep].iter().collect::<String>() + "…";
        if area.estimate_text_size(&cut, style)?.0 as i32 <= room {
            return Ok(cut);
        }
    }
    Ok("…".into())
}

#[derive(Debug, Clone, Copy)]
enum MarkerShape {
    Circle,
    Triangle,
    Square,
    Cross,
}

impl MarkerShape {
    /// The `i`th metric's marker.
    fn of(i: usize) -> MarkerShape {
        [
            MarkerShape::Circle,
            MarkerShape::Triangle,
            MarkerShape::Square,
            MarkerShape::Cross,
        ][i % 4]
    }

    /// Draws the marker at `at` (in `area`'s coordinates), `size` pixels.
    fn draw<DB: DrawingBackend, CT: CoordTranslate>(
        self,
        area: &DrawingArea<DB, CT>,
        at: CT::From,
        size: i32,
        colour: RGBColor,
    ) -> Result<(), Box<dyn std::error::Error>>
    where
        DB::ErrorType: 'static,
        CT::From: Clone + 'static,
    {
        let style = colour.filled();
        let mark = EmptyElement::at(at);
        match self {
            MarkerShape::Circle => area.draw(&(mark + Circle::new((0, 0), size, style)))?,
            MarkerShape::Triangle => {
                area.draw(&(mark + TriangleMarker::new((0, 0), size + 1, style)))?
            }
            MarkerShape::Square => {
                area.draw(&(mark + Rectangle::new([(-size, -size), (size, size)], style)))?
            }
            MarkerShape::Cross => {
                area.draw(&(mark + Cross::new((0, 0), size, colour.stroke_width(2))))?
            }
        }
        Ok(())
    }
}

enum LegendMark {
    Swatch(RGBColor),
    Line(RGBColor),
    /// A line on its band.
    Band(RGBColor),
    /// An interval's bracket with its point.
    Bracket(RGBColor),
    Marker(RGBColor, MarkerShape),
    /// Words alone.
    Text,
}

/// One line of the legend: each entry's x (from the legend's left) and the entry.
type LegendLine<'a> = Vec<(i32, &'a LegendMark, String)>;

/// The legend's `rows`, as lines `room` pixels wide: the rows as they are with their columns
/// aligned when that fits, else each row's entries flowed onto as many lines as they need (an
/// entry wider than a line cut to fit).
fn lay_out_legend<'a, DB: DrawingBackend>(
    area: &Area<DB>,
    rows: &'a [Vec<(LegendMark, String)>],
    style: &TextStyle,
    room: i32,
    scale: Scale,
) -> Result<Vec<LegendLine<'a>>, Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
{
    let (mark_width, gap) = (scale.px(22.0), scale.px(22.0));
    let mut widths: Vec<Vec<i32>> = Vec::new();
    let mut labels: Vec<Vec<String>> = Vec::new();
    for row in rows {
        let (mut w, mut l) = (Vec::new(), Vec::new());
        for (mark, label) in row {
            let mark = if matches!(mark, LegendMark::Text) {
                0
            } else {
                mark_width
            };
            let label = cut_to_fit(area, label, style, room - mark)?;
            w.push(area.estimate_text_size(&label, style)?.0 as i32 + mark);
            l.push(label);
        }
        widths.push(w);
        labels.push(l);
    }
    let columns = widths.iter().map(Vec::len).max().unwrap_or(0);
    // A row of one entry needs no column: it does not widen the others'.
    let column_widths: Vec<i32> = (0..columns)
        .map(|c| {
            widths
                .iter()
                .filter(|w| w.len() > 1)
                .filter_map(|w| w.get(c))
                .copied()
                .max()
                .unwrap_or(0)
        })
        .collect();
    let aligned = column_widths.iter().map(|w| w + gap).sum::<i32>() - gap <= room;
    let mut lines = Vec::new();
    for ((row, w), l) in rows.iter().zip(&widths).zip(labels) {
        let mut line: LegendLine = Vec::new();
        let mut x = 0;
        for (c, (((mark, _), width), label)) in row.iter().zip(w).zip(l).enumerate() {
            if !aligned && !line.is_empty() && x + width > room {
                lines.push(std::mem::take(&mut line));
                x = 0;
            }
            line.push((x, mark, label));
            x += if aligned { column_widths[c] } else { *width } + gap;
        }
        lines.push(line);
    }
    Ok(lines)
}

/// The legend's `lines` in `area` (the strip under the charts), starting at `left`; returns
/// the pixels they cover.
fn draw_legend<DB: DrawingBackend>(
    area: &Area<DB>,
    left: i32,
    lines: &[LegendLine],
    style: &TextStyle,
    scale: Scale,
) -> Result<PixelRect, Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
{
    let (offset_x, offset_y) = area.get_base_pixel();
    let (_, area_height) = area.dim_in_pixel();
    let row_height = scale.px(LEGEND_SIZE * 1.45);
    let half = scale.px(6.0);
    let stroke = scale.stroke(2.0);
    let mut right = left;
    for (r, line) in lines.iter().enumerate() {
        let middle = scale.px(7.0) + r as i32 * row_height + row_height / 2;
        for (dx, mark, label) in line {
            let (dx, mark) = (*dx, *mark);
            let x = left + dx;
            let mark_width = match mark {
                LegendMark::Text => 0,
                _ => scale.px(22.0),
            };
            match mark {
                LegendMark::Swatch(colour) => area.draw(&Rectangle::new(
                    [(x, middle - half), (x + 2 * half, middle + half)],
                    on_white(*colour, 0.75).filled(),
                ))?,
                LegendMark::Line(colour) => area.draw(&PathElement::new(
                    vec![(x, middle), (x + scale.px(16.0), middle)],
                    colour.stroke_width(stroke),
                ))?,
                LegendMark::Band(colour) => {
                    area.draw(&Rectangle::new(
                        [(x, middle - half), (x + scale.px(16.0), middle + half)],
                        colour.mix(0.16).filled(),
                    ))?;
                    area.draw(&PathElement::new(
                        vec![(x, middle), (x + scale.px(16.0), middle)],
                        colour.stroke_width(stroke),
                    ))?;
                }
                LegendMark::Bracket(colour) => {
                    let c = x + scale.px(8.0);
                    let cap = scale.px(4.0);
                    for path in [
                        vec![(c, middle - half - 1), (c, middle + half + 1)],
                        vec![(c - cap, middle - half - 1), (c + cap, middle - half - 1)],
                        vec![(c - cap, middle + half + 1), (c + cap, middle + half + 1)],
                    ] {
                        area.draw(&PathElement::new(path, colour.stroke_width(stroke)))?;
                    }
                    area.draw(&Circle::new(
                        (c, middle),
                        scale.stroke(3.5),
                        colour.filled(),
                    ))?;
                }
                LegendMark::Marker(colour, shape) => {
                    let c = x + scale.px(8.0);
                    area.draw(&PathElement::new(
                        vec![(x, middle), (x + scale.px(16.0), middle)],
                        colour.stroke_width(scale.stroke(1.5)),
                    ))?;
                    shape.draw(area, (c, middle), scale.stroke(3.5) as i32, *colour)?;
                }
                LegendMark::Text => {}
            }
            let text_x = x + mark_width;
            area.draw(&Text::new(
                label.to_string(),
                (text_x, middle),
                style.pos(Pos::new(HPos::Left, VPos::Center)),
            ))?;
            let (w, _) = area.estimate_text_size(label, style)?;
            right = right.max(text_x + w as i32);
        }
    }
    Ok(PixelRect {
        left: offset_x + left,
        top: offset_y,
        right: offset_x + right,
        bottom: offset_y + area_height as i32 - 1,
    })
}

/// Writes `plot.png` and `plot.svg` (0600, the default size) into a run folder, as new
/// files: a file or link already there is an error, never overwritten or followed.
pub fn write_run_plots(run_dir: &Path, report: &Report) -> Result<(), PlotError> {
    let data = PlotData::from_report(report);
    for file in PLOT_FILES {
        let path = run_dir.join(file);
        let bytes = render_bytes(&data, PlotFormat::of(&path)?, &PlotOptions::default())?;
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
    use crate::plot::data::summary_of;
    use crate::verify::RunVerdict;
    use ale_proto::RunId;
    use ale_proto::eval::{Direction, EpisodeRecord, EvalStatus};
    use std::path::PathBuf;

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

    /// A trajectory's plot: no report, so no name and no agent.
    fn data() -> PlotData {
        let episodes = vec![
            episode(0, Outcome::Completed, 500.0),
            episode(1, Outcome::Aborted, 0.0),
            episode(2, Outcome::Completed, 400.0),
            episode(3, Outcome::NotRun, 0.0),
        ];
        let run_id = RunId::from_wire("run-test");
        PlotData {
            summary: summary_of(&run_id, &episodes),
            run_id,
            task_id: "cartpole-balance".into(),
            name: None,
            agent: None,
            status: Some(EvalStatus::Completed),
            metric_name: "mean_return".into(),
            direction: Direction::HigherIsBetter,
            target: 475.0,
            episodes,
            safety_metrics: Vec::new(),
        }
    }

    /// `d` with `episodes`, its summary recomputed.
    fn with_episodes(mut d: PlotData, episodes: Vec<EpisodeRecord>) -> PlotData {
        d.summary = summary_of(&d.run_id, &episodes);
        d.episodes = episodes;
        d
    }

    fn default_options() -> PlotOptions {
        PlotOptions::default()
    }

    const WIDTH: u32 = DEFAULT_WIDTH;
    const HEIGHT: u32 = DEFAULT_HEIGHT;

    #[test]
    fn no_legend_pixel_lies_over_a_bar_or_the_plotting_area() {
        // `ale demo`'s shape: every rollout at the top, where a corner legend sat on the last
        // seven bars.
        for (rollouts, value) in [(20u32, 500.0), (100, 500.0), (7, 0.5), (1, 1e9)] {
            let d = with_episodes(
                data(),
                (0..rollouts)
                    .map(|i| episode(i, Outcome::Completed, value))
                    .collect(),
            );
            let layout = layout(&d, &default_options()).unwrap();
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
        with_episodes(
            d,
            (0..rollouts)
                .map(|i| match value(i) {
                    v if v < 0.0 => episode(i, Outcome::Aborted, 0.0),
                    v => episode(i, Outcome::Completed, v),
                })
                .collect(),
        )
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
            let left = with_episodes(
                left,
                (0..rollouts)
                    .map(|i| episode(i, Outcome::Completed, high))
                    .collect(),
            );
            // Every other rollout of the second run failed; the rest reach the top too.
            let right = other_run(rollouts, |i| if i % 2 == 1 { -1.0 } else { high });
            let layout = compare_layout(&compared(left, right), &default_options()).unwrap();
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
            let left = with_episodes(
                left,
                (0..left_rollouts)
                    .map(|i| episode(i, Outcome::Completed, -1234.5678 - f64::from(i)))
                    .collect(),
            );
            let mut right = other_run(right_rollouts, |i| f64::from(i) * 10.0);
            right.status = None;
            right.target = -1e6 / 3.0;
            let both = compared(left, right);
            let layout = compare_layout(&both, &default_options()).unwrap();
            assert_eq!(layout.bars.len(), (left_rollouts + right_rollouts) as usize);
            assert_legend_clear(&layout);
            let svg = String::from_utf8(
                render_compare_bytes(&both, PlotFormat::Svg, &default_options()).unwrap(),
            )
            .unwrap();
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
        let d = with_episodes(
            d,
            (0..10)
                .map(|i| episode(i, Outcome::Completed, -300.0 - f64::from(i) * 50.0))
                .collect(),
        );
        let layout = layout(&d, &default_options()).unwrap();
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
        render_compare_file(&both, &svg, &default_options()).unwrap();
        let text = std::fs::read_to_string(&svg).unwrap();
        for expected in [
            "cartpole-balance: run test vs run 9c419c41",
            "run test (completed) · not checked",
            "run 9c419c41 (budget exceeded) · NOT VERIFIED",
            "target 475",
            "failed rollout",
        ] {
            assert!(text.contains(expected), "{expected:?} missing");
        }
        let png = dir.path().join("c.png");
        render_compare_file(&both, &png, &default_options()).unwrap();
        assert_eq!(&std::fs::read(&png).unwrap()[..8], b"\x89PNG\r\n\x1a\n");
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
        render_file(&data(), &png, &default_options()).unwrap();
        let bytes = std::fs::read(&png).unwrap();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
        assert!(bytes.len() > 5_000, "a real picture, {} bytes", bytes.len());
        let svg = dir.path().join("p.svg");
        render_file(&data(), &svg, &default_options()).unwrap();
        let text = std::fs::read_to_string(&svg).unwrap();
        assert!(text.contains("<svg") && text.contains("target 475"));
        assert!(
            render_file(&data(), &dir.path().join("p.jpg"), &default_options())
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

    /// A reported run of `rollouts` rollouts, named `name`, by `command`.
    fn reported(name: Option<&str>, command: &[&str], rollouts: u32) -> PlotData {
        let mut report = crate::report::tests::sample();
        report.run_id = RunId::from_wire(format!("run-{}", "d008b994".repeat(4)));
        report.name = name.map(String::from);
        report.agent.command = command.iter().map(|s| s.to_string()).collect();
        report.episodes = (0..rollouts)
            .map(|i| episode(i, Outcome::Completed, 400.0 + f64::from(i % 7) * 15.0))
            .collect();
        PlotData::from_report(&report)
    }

    fn svg_of(data: &PlotData, options: &PlotOptions) -> String {
        String::from_utf8(render_bytes(data, PlotFormat::Svg, options).unwrap()).unwrap()
    }

    /// Every `<text>` element of `svg`: its x, y and words.
    fn svg_texts(svg: &str) -> Vec<(f64, f64, String)> {
        let attr = |tag: &str, name: &str| -> f64 {
            let at = tag.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
            tag[at..at + tag[at..].find('"').unwrap()].parse().unwrap()
        };
        svg.split("<text")
            .skip(1)
            .map(|rest| {
                let tag_end = rest.find('>').unwrap();
                let tag = &rest[..tag_end];
                let body = &rest[tag_end + 1..rest.find("</text>").unwrap()];
                (attr(tag, "x"), attr(tag, "y"), body.trim().to_string())
            })
            .collect()
    }

    #[test]
    fn the_title_names_the_task_and_the_run_not_its_hash() {
        let named = reported(
            Some("heuristic v2"),
            &["ale", "agent", "--policy", "heuristic"],
            20,
        );
        assert_eq!(named.title(), "cartpole-balance · heuristic v2");
        let svg = svg_of(&named, &default_options());
        let title = &svg_texts(&svg)[0].2;
        assert_eq!(title, "cartpole-balance · heuristic v2");
        assert!(!svg.contains("d008b994"), "a hash in the plot");
        // Unnamed, the agent names it; a trajectory alone, the task does.
        let unnamed = reported(None, &["ale", "agent", "--policy", "heuristic"], 20);
        assert_eq!(unnamed.title(), "cartpole-balance · policy heuristic");
        assert_eq!(data().title(), "cartpole-balance");
        // --title replaces it.
        let options = PlotOptions {
            title: Some("Figure 3: CartPole".into()),
            ..default_options()
        };
        let svg = svg_of(&named, &options);
        assert_eq!(svg_texts(&svg)[0].2, "Figure 3: CartPole");
        assert!(!svg.contains("heuristic v2"));
    }

    #[test]
    fn the_legend_names_each_runs_agent_and_says_what_the_bars_are() {
        let svg = svg_of(
            &reported(None, &["python", "agent.py"], 20),
            &default_options(),
        );
        for expected in [
            "per-rollout mean_return",
            "mean_return (higher is better)",
            "running mean ± 95% CI (normal approx.)",
            "(95% CI, bootstrap)",
            "target 475",
        ] {
            assert!(svg.contains(expected), "{expected:?} missing");
        }
        // No failed rollout, no entry for one.
        assert!(!svg.contains("failed rollout"));

        let left = reported(
            Some("heuristic"),
            &["ale", "agent", "--policy", "heuristic"],
            10,
        );
        let mut right = reported(None, &["python", "agent.py"], 10);
        right.run_id = RunId::from_wire(format!("run-{}", "5243abd6".repeat(4)));
        let both = compared(left.clone(), right);
        let svg = String::from_utf8(
            render_compare_bytes(&both, PlotFormat::Svg, &default_options()).unwrap(),
        )
        .unwrap();
        for expected in [
            "cartpole-balance: heuristic vs python agent.py",
            "heuristic (completed) · not checked",
            "python agent.py (completed) · NOT VERIFIED",
        ] {
            assert!(svg.contains(expected), "{expected:?} missing");
        }
        assert!(!svg.contains("d008b994") && !svg.contains("5243abd6"));
        // Two runs of one agent are told apart by their short ids.
        let mut again = left.clone();
        again.run_id = RunId::from_wire(format!("run-{}", "5243abd6".repeat(4)));
        let svg = String::from_utf8(
            render_compare_bytes(&compared(left, again), PlotFormat::Svg, &default_options())
                .unwrap(),
        )
        .unwrap();
        assert!(svg.contains("heuristic · run d008b994 (completed)"));
        assert!(svg.contains("heuristic · run 5243abd6 (completed)"));
    }

    #[test]
    fn every_tick_sits_on_a_bar_centre_one_per_bar_up_to_25() {
        for rollouts in [1u32, 7, 20, 25] {
            let d = reported(None, &[], rollouts);
            let layout = layout(&d, &default_options()).unwrap();
            assert_eq!(layout.tick_rollouts, (1..=rollouts).collect::<Vec<_>>());
            // The tick labels as the SVG draws them: under the chart, centred on the bars.
            let svg = svg_of(&d, &default_options());
            let labels: Vec<(f64, String)> = svg_texts(&svg)
                .into_iter()
                .filter(|(_, y, _)| *y > f64::from(layout.plot_area.bottom))
                .filter(|(_, _, t)| t.parse::<u32>().is_ok())
                .map(|(x, _, t)| (x, t))
                .collect();
            assert_eq!(labels.len(), rollouts as usize, "{labels:?}");
            for ((x, text), bar) in labels.iter().zip(&layout.bars) {
                let number: u32 = text.parse().unwrap();
                let centre = layout.bars[number as usize - 1].centre_x();
                assert!(
                    (x - centre).abs() <= 1.0,
                    "tick {text} at {x}, bar at {centre}"
                );
                assert!((x - bar.centre_x()).abs() <= 1.0);
            }
        }
    }

    #[test]
    fn the_target_lies_behind_opaque_bars() {
        let svg = svg_of(&reported(None, &[], 20), &default_options());
        let target = svg.find(r##"stroke="#28A050""##).expect("a target line");
        let bar = on_white(COMPLETED, 0.75);
        let fill = format!(
            r##"opacity="1" fill="#{:02X}{:02X}{:02X}""##,
            bar.0, bar.1, bar.2
        );
        let first_bar = svg.find(&fill).expect("an opaque bar");
        assert!(target < first_bar, "the target is drawn over the bars");
    }

    #[test]
    fn many_rollouts_get_round_ticks_on_bar_centres_with_room_for_their_labels() {
        for rollouts in [26u32, 100, 1000, 5000] {
            let d = reported(None, &[], rollouts);
            let layout = layout(&d, &default_options()).unwrap();
            let ticks = &layout.tick_rollouts;
            assert_eq!(ticks[0], 1);
            let step = ticks[ticks.len() - 1] - ticks[ticks.len() - 2];
            assert!(
                [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000].contains(&step),
                "{ticks:?}"
            );
            assert!(ticks[1..].iter().all(|t| t % step == 0), "{ticks:?}");
            for (x, rollout) in layout.ticks.iter().zip(ticks) {
                let bar = layout.bars[*rollout as usize - 1];
                assert!((f64::from(*x) - bar.centre_x()).abs() <= 1.0, "{rollout}");
            }
            let gaps = layout.ticks.windows(2).map(|w| w[1] - w[0]);
            assert!(gaps.min().unwrap() >= 30, "{rollouts}: {:?}", layout.ticks);
        }
        assert_eq!(rollout_ticks(100, 800, 106.0, Scale(1.0))[..3], [1, 10, 20]);
    }

    #[test]
    fn the_running_mean_has_its_band_and_the_run_mean_its_bootstrap_bracket() {
        let d = reported(None, &[], 20);
        let layout = layout(&d, &default_options()).unwrap();
        assert_eq!(layout.bands.len(), 1);
        assert_eq!(layout.intervals.len(), 1);
        let (band, bracket) = (layout.bands[0], layout.intervals[0]);
        // The band starts at the second rollout (one value has no spread), within the chart.
        assert!(band.left >= layout.bars[1].left && band.right <= layout.bars[19].right);
        assert!(band.top >= layout.plot_area.top && band.bottom <= layout.plot_area.bottom + 1);
        // The bracket is right of the last bar, inside the chart, spanning the mean's interval.
        assert!(bracket.left > layout.bars[19].right && bracket.right <= layout.plot_area.right);
        assert!(bracket.bottom > bracket.top);
        let svg = svg_of(&d, &default_options());
        assert!(svg.contains("<polygon"), "no band drawn");
        let s = &d.summary;
        assert!(svg.contains(&format!(
            "mean of 20 rollouts {}",
            interval_text(s.mean, s.mean_ci)
        )));
        assert!(
            svg_texts(&svg).iter().any(|(_, _, t)| t == "mean"),
            "no tick under the bracket"
        );
        // The report's own interval is the one drawn.
        let mut report = crate::report::tests::sample();
        report.episodes = d.episodes.clone();
        let mut stats =
            crate::report::RunStatistics::of(&report.run_id, &report.episodes, &report.score);
        stats.metric.mean_ci = Interval {
            low: 401.0,
            high: 499.0,
        };
        report.statistics = Some(stats);
        assert_eq!(PlotData::from_report(&report).summary.mean_ci.low, 401.0);
    }

    #[test]
    fn safety_counters_get_a_panel_of_their_own_only_when_the_task_has_some() {
        assert!(
            layout(&reported(None, &[], 20), &default_options())
                .unwrap()
                .safety_area
                .is_none()
        );
        let mut d = reported(None, &[], 20);
        d.safety_metrics = vec!["joint_limit_violations".into(), "collisions".into()];
        for e in &mut d.episodes {
            e.safety
                .insert("joint_limit_violations".into(), f64::from(e.index % 3));
            e.safety
                .insert("collisions".into(), f64::from(e.index % 2) * 4.0);
        }
        let layout = layout(&d, &default_options()).unwrap();
        let panel = layout.safety_area.expect("a safety panel");
        assert!(
            panel.top > layout.plot_area.bottom,
            "{panel:?} {:?}",
            layout.plot_area
        );
        assert!(!panel.overlaps(&layout.legend));
        assert_eq!(
            (panel.left, panel.right),
            (layout.plot_area.left, layout.plot_area.right)
        );
        assert_legend_clear(&layout);
        let svg = svg_of(&d, &default_options());
        for expected in [
            "joint_limit_violations per rollout",
            "collisions per rollout",
            "safety",
        ] {
            assert!(svg.contains(expected), "{expected:?} missing");
        }
        // In a comparison too.
        let mut other = d.clone();
        other.run_id = RunId::from_wire("run-other");
        let layout = compare_layout(&compared(d, other), &default_options()).unwrap();
        assert!(layout.safety_area.is_some());
        assert_legend_clear(&layout);
    }

    /// The width, height and pixels per metre of a PNG's IHDR and pHYs chunks.
    fn png_header(bytes: &[u8]) -> (u32, u32, Option<u32>) {
        let be = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
        let phys = bytes
            .windows(4)
            .position(|w| w == b"pHYs")
            .map(|at| be(at + 4));
        (be(16), be(20), phys)
    }

    #[test]
    fn width_height_and_dpi_give_an_image_of_that_size_and_resolution() {
        let d = reported(Some("heuristic"), &[], 20);
        let options = PlotOptions {
            width: 1200,
            height: 800,
            ..default_options()
        };
        let png = render_bytes(&d, PlotFormat::Png, &options).unwrap();
        assert_eq!(png_header(&png), (1200, 800, Some(3780)));
        let svg = svg_of(&d, &options);
        assert!(
            svg.contains(r#"width="1200" height="800""#),
            "{}",
            &svg[..200]
        );

        // 300 dpi: the same 10 × 5.625 inches in more pixels, recorded in pHYs (11811 px/m),
        // and everything drawn larger by 300/96.
        let print = PlotOptions::at_dpi(300);
        let png = render_bytes(&d, PlotFormat::Png, &print).unwrap();
        assert_eq!(png_header(&png), (3000, 1688, Some(11811)));
        let small = layout(&d, &default_options()).unwrap();
        let large = layout(&d, &print).unwrap();
        let ratio = f64::from(large.legend.top) / f64::from(small.legend.top);
        assert!((ratio - 300.0 / 96.0).abs() < 0.05, "{ratio}");
        assert_legend_clear_in(&large, 3000, 1688);

        // A figure too small for its text, or a resolution out of range, is refused.
        for bad in [
            PlotOptions {
                width: 500,
                ..PlotOptions::at_dpi(300)
            },
            PlotOptions {
                dpi: 5000,
                ..default_options()
            },
            PlotOptions {
                width: 20_000,
                height: 20_000,
                ..default_options()
            },
        ] {
            let e = render_bytes(&d, PlotFormat::Png, &bad).unwrap_err();
            assert!(matches!(e, PlotError::Options(_)), "{e}");
        }
        // The smallest figure allowed still lays out.
        let least = PlotOptions {
            width: MIN_WIDTH,
            height: MIN_HEIGHT,
            ..default_options()
        };
        assert_legend_clear_in(&layout(&d, &least).unwrap(), MIN_WIDTH, MIN_HEIGHT);
    }

    #[test]
    fn text_is_set_in_a_proportional_face() {
        register_font();
        let style = text_style(15.0);
        let width = |text: &str| {
            let mut svg = String::new();
            let area = SVGBackend::with_string(&mut svg, (100, 100)).into_drawing_area();
            area.estimate_text_size(text, &style).unwrap().0
        };
        assert!(width("iiiiiiii") * 2 < width("MMMMMMMM"));
        let svg = svg_of(&data(), &default_options());
        assert!(svg.contains(r#"font-family="Ubuntu, Helvetica, Arial, sans-serif""#));
    }

    #[test]
    fn a_plot_file_is_named_for_the_run() {
        assert_eq!(reported(Some("heuristic"), &[], 1).file_stem(), "heuristic");
        assert_eq!(
            reported(Some("PPO / seed 3"), &[], 1).file_stem(),
            "PPO-seed-3"
        );
        assert_eq!(reported(Some("../.."), &[], 1).file_stem(), "d008b994");
        assert_eq!(reported(None, &[], 1).file_stem(), "d008b994");
        let both = compared(reported(Some("a"), &[], 1), other_run(1, |_| 1.0));
        assert_eq!(both.file_stem(), "a-vs-9c419c41");
    }

    /// [`assert_legend_clear`] for an image of `width` × `height`.
    fn assert_legend_clear_in(layout: &PlotLayout, width: u32, height: u32) {
        for bar in &layout.bars {
            assert!(
                !bar.overlaps(&layout.legend),
                "{bar:?} under {:?}",
                layout.legend
            );
        }
        assert!(!layout.plot_area.overlaps(&layout.legend));
        assert!(
            layout.legend.bottom < height as i32 && layout.legend.right < width as i32,
            "{:?} runs off the {width}x{height} image",
            layout.legend
        );
    }
}
