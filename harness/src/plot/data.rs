//! What a plot shows: a run's rollouts, the running mean, the mean's interval and the names
//! it is labelled with, from a report or a verified trajectory; the range its values need and
//! how its numbers are written. Nothing here draws.

use std::collections::BTreeSet;
use std::path::Path;

use ale_proto::RunId;
use ale_proto::eval::{Direction, EpisodeRecord, EvalStatus};
use ale_records::trajectory::TRAJECTORY_FILE;

use super::error::PlotError;
use crate::report::Report;
use crate::stats::{Interval, Summary, running_interval, seed_for};
use crate::verify::verify_trajectory;

/// What a plot shows.
#[derive(Debug, Clone)]
pub struct PlotData {
    pub run_id: RunId,
    pub task_id: String,
    /// The run's name (`ale harness run --name`), if it was given one.
    pub name: Option<String>,
    /// The agent in a few words ([`Report::agent_label`]: the run's name if it has one);
    /// `None` for a trajectory alone, which does not say who played.
    pub agent: Option<String>,
    /// How the session ended; `None` while it has not.
    pub status: Option<EvalStatus>,
    pub metric_name: String,
    pub direction: Direction,
    pub target: f64,
    pub episodes: Vec<EpisodeRecord>,
    /// The task's safety metrics, by name: none for most tasks.
    pub safety_metrics: Vec<String>,
    /// The metric over every planned rollout (as the run's value counts them): its mean and
    /// the mean's bootstrap interval, from the report or computed as the report would.
    pub summary: Summary,
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
        let run = &verified.run;
        Ok(PlotData {
            safety_metrics: safety_names(run.safety.iter().map(|s| &s.name), &episodes),
            summary: summary_of(&run.run_id, &episodes),
            run_id: run.run_id.clone(),
            task_id: run.task_id.clone(),
            name: None,
            agent: None,
            status: verified.result.as_ref().map(|r| r.status),
            metric_name: run.metric_name.clone(),
            direction: run.direction,
            target: run.target,
            episodes,
        })
    }

    pub fn from_report(report: &Report) -> PlotData {
        let summary = match &report.statistics {
            Some(stats) => stats.metric.clone(),
            None => summary_of(&report.run_id, &report.episodes),
        };
        let rules = report.score.penalties.iter().map(|p| &p.name);
        PlotData {
            run_id: report.run_id.clone(),
            task_id: report.task.id.clone(),
            name: report.name.clone(),
            agent: Some(report.agent_label()),
            status: Some(report.status),
            metric_name: report.score.metric_name.clone(),
            direction: report.score.direction,
            target: report.score.target,
            episodes: report.episodes.clone(),
            safety_metrics: safety_names(rules.chain(report.safety.keys()), &report.episodes),
            summary,
        }
    }

    /// The plot's title: the task and who played (the run's name, else its agent), or the
    /// task alone for a trajectory, which does not say who played.
    pub fn title(&self) -> String {
        match &self.agent {
            Some(agent) => format!("{} · {agent}", self.task_id),
            None => self.task_id.clone(),
        }
    }

    /// How a legend names the run: its agent ([`PlotData::agent`]), or its short id when only
    /// its trajectory says anything.
    pub fn label(&self) -> String {
        self.agent
            .clone()
            .unwrap_or_else(|| format!("run {}", self.run_id.short()))
    }

    /// A file name for the plot, without extension: the run's name, made safe for a file
    /// name, or its short id.
    pub fn file_stem(&self) -> String {
        let name = self.name.as_deref().map(file_safe).unwrap_or_default();
        if name.is_empty() {
            self.run_id.short().to_string()
        } else {
            name
        }
    }

    /// The running mean after each played rollout, counting failures at their metric.
    pub fn running_mean(&self) -> Vec<(u32, f64)> {
        let values: Vec<f64> = self.played().map(|e| e.metric).collect();
        let band = running_interval(&values);
        self.played()
            .map(|e| e.index)
            .zip(band.iter().map(|p| p.mean))
            .collect()
    }

    pub(super) fn played(&self) -> impl Iterator<Item = &EpisodeRecord> {
        self.episodes.iter().filter(|e| e.outcome.is_played())
    }
}

/// The safety metrics `rules` name and the episodes counted, sorted, each once.
fn safety_names<'a>(
    rules: impl Iterator<Item = &'a String>,
    episodes: &[EpisodeRecord],
) -> Vec<String> {
    let mut names: BTreeSet<String> = rules.cloned().collect();
    names.extend(episodes.iter().flat_map(|e| e.safety.keys().cloned()));
    names.into_iter().collect()
}

/// The metric's summary as a report computes it (every planned rollout, seeded by the run).
pub(super) fn summary_of(run_id: &RunId, episodes: &[EpisodeRecord]) -> Summary {
    let metrics: Vec<f64> = episodes.iter().map(|e| e.metric).collect();
    Summary::of(&metrics, seed_for(&[run_id.as_str()]))
}

/// `name` with anything but letters, digits, `.`, `_` and `-` replaced by `-`, runs of them
/// once, and no leading dot or dash (so no hidden file and no option).
fn file_safe(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        let c = if c.is_alphanumeric() || matches!(c, '.' | '_' | '-') {
            c
        } else {
            '-'
        };
        if !(c == '-' && out.ends_with('-')) {
            out.push(c);
        }
    }
    out.trim_matches(|c| c == '-' || c == '.').to_string()
}

/// The y range that shows every value and 0 (bars start there), padded away from 0; a metric
/// that can be negative (pendulum's return) gets room below 0.
pub(super) fn value_range(values: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
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

/// How an axis over `range` writes its numbers: as many decimals as its tick step needs.
pub(super) fn axis_format(range: &std::ops::Range<f64>) -> impl Fn(&f64) -> String + use<> {
    let step = (range.end - range.start) / 8.0;
    let decimals = if step > 0.0 {
        (-step.log10().floor()).clamp(0.0, 6.0) as usize
    } else {
        0
    };
    move |v: &f64| {
        let text = format!("{v:.decimals$}");
        // No "-0" at zero.
        if text
            .trim_start_matches('-')
            .chars()
            .all(|c| c == '0' || c == '.')
        {
            text.trim_start_matches('-').to_string()
        } else {
            text
        }
    }
}

/// A number as a legend shows it: whole numbers as they are, others to at most 4 decimals.
pub(super) fn compact(value: f64) -> String {
    if value.fract() == 0.0 || !value.is_finite() {
        return value.to_string();
    }
    let text = format!("{value:.4}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A mean and its interval, `487.3 [470.1, 500.0]`, to the precision the interval's width
/// warrants (three significant digits of it).
pub(super) fn interval_text(mean: f64, ci: Interval) -> String {
    let width = (ci.high - ci.low).abs();
    let magnitude = if width > 0.0 { width } else { mean.abs() };
    let decimals = if magnitude > 0.0 && magnitude.is_finite() {
        (2.0 - magnitude.log10().floor()).clamp(0.0, 4.0) as usize
    } else {
        0
    };
    format!(
        "{mean:.decimals$} [{:.decimals$}, {:.decimals$}]",
        ci.low, ci.high
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_comparison_of_negative_metrics_makes_room_below_zero() {
        assert_eq!(value_range([500.0, 475.0].into_iter()), 0.0..575.0);
        assert_eq!(value_range([-200.0, -100.0].into_iter()), -230.0..0.0);
        assert_eq!(value_range([].into_iter()), 0.0..1.0);
    }
}
