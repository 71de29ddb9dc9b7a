//! Scoring: from a measured metric to a score, with every factor shown.
//!
//! * higher is better: `clamp(m / target, 0, cap)`
//! * lower is better: `clamp(target / max(m, eps), 0, cap)`
//! * each zero-target safety metric above zero multiplies the score by its penalty factor;
//! * a reproduction-genre task scores 0 unless a faithfulness verdict says it passed
//!   (fail-closed: a missing or unreadable verdict is a fail, with the reason);
//! * a measurement that is missing or NaN scores 0, with the reason.

use std::collections::BTreeMap;
use std::path::Path;

use ale_proto::TaskSpec;
use ale_proto::eval::{Direction, Genre};
use ale_records::event_data::RunStarted;
use serde::{Deserialize, Serialize};

/// Floor of the measurement in the lower-is-better ratio, so a perfect 0 scores the cap.
/// (A task that sets no cap gets [`ale_proto::eval::DEFAULT_CAP`].)
pub const EPS: f64 = 1e-9;

/// A safety metric's rule: above zero, the score is multiplied by `penalty_factor`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SafetyRule {
    pub name: String,
    pub penalty_factor: f64,
}

/// Everything about a task that scoring needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoringRules {
    pub metric_name: String,
    pub direction: Direction,
    pub target: f64,
    pub cap: f64,
    pub safety: Vec<SafetyRule>,
    /// Reproduction-genre tasks need a passing faithfulness verdict.
    pub requires_faithfulness: bool,
}

impl ScoringRules {
    /// The rules of a task: its metric, target and cap, its safety metrics as
    /// `(name, penalty factor)`, and its genre (reproduction tasks need a faithfulness verdict).
    pub fn new(
        metric_name: &str,
        direction: Direction,
        target: f64,
        cap: f64,
        safety: impl IntoIterator<Item = (String, f64)>,
        genre: ale_proto::eval::Genre,
    ) -> ScoringRules {
        ScoringRules {
            metric_name: metric_name.to_string(),
            direction,
            target,
            cap,
            safety: safety
                .into_iter()
                .map(|(name, penalty_factor)| SafetyRule {
                    name,
                    penalty_factor,
                })
                .collect(),
            requires_faithfulness: genre == Genre::Reproduction,
        }
    }

    /// The rules a task states (as `ListTasks` and `GetSpec` carry it). (A report restates
    /// its rules: `Report::scoring_rules`.)
    pub fn from_task(task: &TaskSpec) -> ScoringRules {
        let metric = &task.metric;
        ScoringRules::new(
            &metric.name,
            metric.direction,
            metric.target,
            metric.cap,
            task.safety_metrics
                .iter()
                .map(|s| (s.name.clone(), s.penalty_factor)),
            task.genre,
        )
    }

    /// The rules a run was evaluated under, as its `run_started` event records them.
    pub fn from_run(run: &RunStarted) -> ScoringRules {
        ScoringRules::new(
            &run.metric_name,
            run.direction,
            run.target,
            run.cap,
            run.safety
                .iter()
                .map(|s| (s.name.clone(), s.penalty_factor)),
            run.genre,
        )
    }
}

/// A faithfulness judge's verdict file: `{"pass": bool, "reason": str}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub pass: bool,
    #[serde(default)]
    pub reason: String,
}

/// What is known about faithfulness for this run.
#[derive(Debug, Clone, PartialEq)]
pub enum Faithfulness {
    /// No verdict was given.
    Missing,
    /// A verdict was given but could not be read; the reason says why.
    Unreadable(String),
    Verdict(Verdict),
}

impl Faithfulness {
    /// Reads a verdict file; any failure becomes `Unreadable` (and so, a fail).
    pub fn read(path: &Path) -> Faithfulness {
        match std::fs::read_to_string(path) {
            Err(e) => Faithfulness::Unreadable(format!("cannot read {}: {e}", path.display())),
            Ok(text) => match serde_json::from_str::<Verdict>(&text) {
                Ok(v) => Faithfulness::Verdict(v),
                Err(e) => Faithfulness::Unreadable(format!(
                    "{} is not a verdict {{\"pass\": bool, \"reason\": str}}: {e}",
                    path.display()
                )),
            },
        }
    }
}

/// One safety metric's effect.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PenaltyApplied {
    pub name: String,
    pub value: f64,
    pub penalty_factor: f64,
    /// Whether the value was above zero, so the factor applied.
    pub applied: bool,
}

/// The faithfulness gate's outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateOutcome {
    pub required: bool,
    pub passed: bool,
    pub reason: String,
}

/// A score and how it came about.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Breakdown {
    pub metric_name: String,
    pub measured: Option<f64>,
    pub direction: Direction,
    pub target: f64,
    /// The normalized ratio before the cap.
    pub ratio: f64,
    pub cap: f64,
    /// The ratio after clamping to [0, cap].
    pub capped: f64,
    pub penalties: Vec<PenaltyApplied>,
    pub faithfulness: GateOutcome,
    pub score: f64,
    /// Why the score is 0 when a rule forced it, empty otherwise.
    pub zeroed_because: Option<String>,
}

impl Breakdown {
    /// The score these same rules, safety values and faithfulness verdict give another
    /// measurement of the metric: a report's score interval is this at both ends of the
    /// metric's interval.
    pub fn score_at(&self, measured: f64) -> f64 {
        let rules = ScoringRules {
            metric_name: self.metric_name.clone(),
            direction: self.direction,
            target: self.target,
            cap: self.cap,
            safety: self
                .penalties
                .iter()
                .map(|p| SafetyRule {
                    name: p.name.clone(),
                    penalty_factor: p.penalty_factor,
                })
                .collect(),
            requires_faithfulness: self.faithfulness.required,
        };
        let safety = self
            .penalties
            .iter()
            .map(|p| (p.name.clone(), p.value))
            .collect();
        let verdict = Faithfulness::Verdict(Verdict {
            pass: self.faithfulness.passed,
            reason: self.faithfulness.reason.clone(),
        });
        score(&rules, Some(measured), &safety, &verdict).score
    }

    /// The breakdown for people, one `(label, text)` row per factor: metric, ratio, each safety
    /// metric, faithfulness, score.
    pub fn lines(&self) -> Vec<(String, String)> {
        let mut lines = vec![
            (
                "metric".into(),
                format!(
                    "{} = {} (target {}, {})",
                    self.metric_name,
                    self.measured
                        .map_or("missing".into(), |m| format!("{m:.4}")),
                    self.target,
                    self.direction
                ),
            ),
            (
                "ratio".into(),
                format!(
                    "{:.4}, capped to [0, {}] → {:.4}",
                    self.ratio, self.cap, self.capped
                ),
            ),
        ];
        for p in &self.penalties {
            lines.push((format!("safety {}", p.name), p.to_string()));
        }
        lines.push((
            "faithfulness".into(),
            if self.faithfulness.required {
                format!(
                    "{} ({})",
                    if self.faithfulness.passed {
                        "passed"
                    } else {
                        "FAILED"
                    },
                    self.faithfulness.reason
                )
            } else {
                "not required".into()
            },
        ));
        lines.push((
            "score".into(),
            match &self.zeroed_because {
                Some(why) => format!("0 — {why}"),
                None => format!("{:.4}", self.score),
            },
        ));
        lines
    }
}

/// A safety metric's value and its effect: `3 → × 0.5`, or `0 → no penalty`.
impl std::fmt::Display for PenaltyApplied {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.applied {
            write!(f, "{} → × {}", self.value, self.penalty_factor)
        } else {
            write!(f, "{} → no penalty", self.value)
        }
    }
}

/// Applies the scoring rules.
///
/// ```
/// use ale_harness::scoring::{score, Faithfulness, ScoringRules};
/// use ale_proto::eval::Direction;
/// let rules = ScoringRules {
///     metric_name: "mean_return".into(),
///     direction: Direction::HigherIsBetter,
///     target: 475.0,
///     cap: 1.5,
///     safety: vec![],
///     requires_faithfulness: false,
/// };
/// let b = score(&rules, Some(500.0), &Default::default(), &Faithfulness::Missing);
/// assert!((b.score - 500.0 / 475.0).abs() < 1e-12);
/// ```
pub fn score(
    rules: &ScoringRules,
    measured: Option<f64>,
    safety_values: &BTreeMap<String, f64>,
    faithfulness: &Faithfulness,
) -> Breakdown {
    let gate = match (rules.requires_faithfulness, faithfulness) {
        (false, _) => GateOutcome {
            required: false,
            passed: true,
            reason: "not a reproduction-genre task".into(),
        },
        (true, Faithfulness::Missing) => GateOutcome {
            required: true,
            passed: false,
            reason: "no faithfulness verdict was given (pass one with --faithfulness FILE)".into(),
        },
        (true, Faithfulness::Unreadable(why)) => GateOutcome {
            required: true,
            passed: false,
            reason: why.clone(),
        },
        (true, Faithfulness::Verdict(v)) => GateOutcome {
            required: true,
            passed: v.pass,
            reason: if v.reason.is_empty() {
                format!("the verdict says pass = {}", v.pass)
            } else {
                v.reason.clone()
            },
        },
    };
    let penalties: Vec<PenaltyApplied> = rules
        .safety
        .iter()
        .map(|rule| {
            let value = safety_values.get(&rule.name).copied().unwrap_or(0.0);
            PenaltyApplied {
                name: rule.name.clone(),
                value,
                penalty_factor: rule.penalty_factor,
                // NaN counts as a violation: an unmeasurable safety value is not a clean one.
                applied: value > 0.0 || value.is_nan(),
            }
        })
        .collect();

    let usable = measured.filter(|m| !m.is_nan());
    let ratio = match (usable, rules.direction) {
        (None, _) => 0.0,
        (Some(m), Direction::HigherIsBetter) => m / rules.target,
        (Some(m), Direction::LowerIsBetter) => rules.target / m.max(EPS),
    };
    let capped = if ratio.is_nan() {
        0.0
    } else {
        ratio.clamp(0.0, rules.cap)
    };
    let penalty: f64 = penalties
        .iter()
        .filter(|p| p.applied)
        .map(|p| p.penalty_factor)
        .product();
    let zeroed_because = if usable.is_none() {
        Some(match measured {
            None => format!("no measurement of {}", rules.metric_name),
            Some(_) => format!("the measurement of {} is NaN", rules.metric_name),
        })
    } else if !gate.passed {
        Some(format!("faithfulness gate failed: {}", gate.reason))
    } else {
        None
    };
    let score = if zeroed_because.is_some() {
        0.0
    } else {
        capped * penalty
    };
    Breakdown {
        metric_name: rules.metric_name.clone(),
        measured,
        direction: rules.direction,
        target: rules.target,
        ratio,
        cap: rules.cap,
        capped,
        penalties,
        faithfulness: gate,
        score,
        zeroed_because,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(direction: Direction) -> ScoringRules {
        ScoringRules {
            metric_name: "m".into(),
            direction,
            target: 100.0,
            cap: 1.5,
            safety: vec![
                SafetyRule {
                    name: "collisions".into(),
                    penalty_factor: 0.5,
                },
                SafetyRule {
                    name: "limits".into(),
                    penalty_factor: 0.8,
                },
            ],
            requires_faithfulness: false,
        }
    }

    fn none() -> BTreeMap<String, f64> {
        BTreeMap::new()
    }

    fn s(r: &ScoringRules, m: f64) -> f64 {
        score(r, Some(m), &none(), &Faithfulness::Missing).score
    }

    #[test]
    fn higher_is_better_is_a_capped_ratio() {
        let r = rules(Direction::HigherIsBetter);
        assert_eq!(s(&r, 50.0), 0.5);
        assert_eq!(s(&r, 100.0), 1.0);
        assert_eq!(s(&r, 150.0), 1.5);
        assert_eq!(s(&r, 1000.0), 1.5, "capped");
        assert_eq!(s(&r, 0.0), 0.0);
        assert_eq!(s(&r, -20.0), 0.0, "a negative measurement clamps to 0");
        assert_eq!(s(&r, f64::INFINITY), 1.5);
    }

    #[test]
    fn lower_is_better_divides_the_target_and_guards_zero() {
        let r = rules(Direction::LowerIsBetter);
        assert_eq!(s(&r, 200.0), 0.5);
        assert_eq!(s(&r, 100.0), 1.0);
        assert_eq!(s(&r, 80.0), 1.25);
        assert_eq!(s(&r, 10.0), 1.5, "capped");
        assert_eq!(s(&r, 0.0), 1.5, "eps keeps a perfect zero finite");
        let b = score(&r, Some(0.0), &none(), &Faithfulness::Missing);
        assert_eq!(b.ratio, 100.0 / EPS);
        assert_eq!(s(&r, -5.0), 1.5, "a negative cost is treated like zero");
        assert_eq!(s(&r, f64::INFINITY), 0.0);
    }

    #[test]
    fn a_custom_cap_applies() {
        let mut r = rules(Direction::HigherIsBetter);
        r.cap = 1.0;
        assert_eq!(s(&r, 150.0), 1.0);
    }

    #[test]
    fn missing_or_nan_measurements_score_zero_with_the_reason() {
        let r = rules(Direction::HigherIsBetter);
        let b = score(&r, None, &none(), &Faithfulness::Missing);
        assert_eq!(b.score, 0.0);
        assert_eq!(b.zeroed_because.as_deref(), Some("no measurement of m"));
        let b = score(&r, Some(f64::NAN), &none(), &Faithfulness::Missing);
        assert_eq!(b.score, 0.0);
        assert_eq!(
            b.zeroed_because.as_deref(),
            Some("the measurement of m is NaN")
        );
    }

    #[test]
    fn each_violated_safety_metric_multiplies_by_its_factor() {
        let r = rules(Direction::HigherIsBetter);
        let mut safety = none();
        safety.insert("collisions".into(), 0.0);
        safety.insert("limits".into(), 0.0);
        assert_eq!(
            score(&r, Some(100.0), &safety, &Faithfulness::Missing).score,
            1.0
        );
        safety.insert("collisions".into(), 3.0);
        let b = score(&r, Some(100.0), &safety, &Faithfulness::Missing);
        assert_eq!(b.score, 0.5);
        assert!(b.penalties[0].applied && !b.penalties[1].applied);
        safety.insert("limits".into(), 1.0);
        assert_eq!(
            score(&r, Some(100.0), &safety, &Faithfulness::Missing).score,
            0.4
        );
        safety.insert("limits".into(), f64::NAN);
        assert_eq!(
            score(&r, Some(100.0), &safety, &Faithfulness::Missing).score,
            0.4,
            "NaN is a violation"
        );
        // A penalty scales the capped value.
        assert_eq!(
            score(&r, Some(500.0), &safety, &Faithfulness::Missing).score,
            1.5 * 0.4
        );
    }

    #[test]
    fn reproduction_tasks_fail_closed() {
        let mut r = rules(Direction::HigherIsBetter);
        r.requires_faithfulness = true;
        let b = score(&r, Some(100.0), &none(), &Faithfulness::Missing);
        assert_eq!(b.score, 0.0);
        assert!(
            b.zeroed_because
                .unwrap()
                .contains("no faithfulness verdict")
        );
        let b = score(
            &r,
            Some(100.0),
            &none(),
            &Faithfulness::Unreadable("garbled".into()),
        );
        assert_eq!(b.score, 0.0);
        assert_eq!(b.faithfulness.reason, "garbled");
        let fail = Faithfulness::Verdict(Verdict {
            pass: false,
            reason: "used a different method".into(),
        });
        let b = score(&r, Some(100.0), &none(), &fail);
        assert_eq!(b.score, 0.0);
        assert!(
            b.zeroed_because
                .unwrap()
                .contains("used a different method")
        );
        let pass = Faithfulness::Verdict(Verdict {
            pass: true,
            reason: String::new(),
        });
        assert_eq!(score(&r, Some(100.0), &none(), &pass).score, 1.0);
    }

    #[test]
    fn verdict_files_are_read_fail_closed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("verdict.json");
        assert!(matches!(
            Faithfulness::read(&path),
            Faithfulness::Unreadable(_)
        ));
        std::fs::write(&path, "{\"pass\": true").unwrap();
        assert!(matches!(
            Faithfulness::read(&path),
            Faithfulness::Unreadable(_)
        ));
        std::fs::write(&path, "{\"pass\": \"yes\"}").unwrap();
        assert!(matches!(
            Faithfulness::read(&path),
            Faithfulness::Unreadable(_)
        ));
        std::fs::write(&path, "{\"pass\": true, \"reason\": \"ok\"}").unwrap();
        assert_eq!(
            Faithfulness::read(&path),
            Faithfulness::Verdict(Verdict {
                pass: true,
                reason: "ok".into()
            })
        );
    }
}
