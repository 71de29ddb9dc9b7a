//! A small 2-D drawing description a console can render: shapes in world coordinates inside a
//! viewport, each tagged with what it depicts so the renderer picks the colour.
//!
//! Drawings are made from an observation alone (see [`crate::SimEntry::draw`]), so a drawing
//! can never show more of a rollout's scene than the observation already does.
//!
//! The Python client ports every sim's drawing (`client/python/src/ale_client/render.py`);
//! `tests/drawing_fixture.rs` keeps the two in step through a checked-in JSON fixture.

use serde::Serialize;

/// The world rectangle to show.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Viewport {
    pub x_min: f64,
    pub x_max: f64,
    pub y_min: f64,
    pub y_max: f64,
}

/// What a shape depicts; serialised in lowercase (`"ground"`, `"body"`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Floor, track, terrain.
    Ground,
    /// The controlled body (cart, car, link, robot).
    Body,
    /// Something attached to the body that matters (pole, arm segment).
    Limb,
    /// A joint or pivot.
    Joint,
    /// Where the task wants the agent to go.
    Goal,
    /// Something to avoid (obstacle, limit).
    Hazard,
    /// What a sensor reports (lidar rays, hits).
    Sensor,
}

/// One shape of a drawing; serialised as an object whose `kind` is `"line"`, `"circle"`,
/// `"polygon"` or `"label"`, with points as `[x, y]` pairs.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Shape {
    Line {
        from: (f64, f64),
        to: (f64, f64),
        role: Role,
    },
    Circle {
        center: (f64, f64),
        radius: f64,
        role: Role,
    },
    /// A closed outline.
    Polygon { points: Vec<(f64, f64)>, role: Role },
    /// A short label at a point.
    Label {
        at: (f64, f64),
        text: String,
        role: Role,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Drawing {
    pub viewport: Viewport,
    pub shapes: Vec<Shape>,
}

impl Drawing {
    pub fn new(viewport: Viewport) -> Self {
        Drawing {
            viewport,
            shapes: Vec::new(),
        }
    }

    pub fn line(&mut self, from: (f64, f64), to: (f64, f64), role: Role) {
        self.shapes.push(Shape::Line { from, to, role });
    }

    pub fn circle(&mut self, center: (f64, f64), radius: f64, role: Role) {
        self.shapes.push(Shape::Circle {
            center,
            radius,
            role,
        });
    }

    pub fn polygon(&mut self, points: Vec<(f64, f64)>, role: Role) {
        self.shapes.push(Shape::Polygon { points, role });
    }

    /// An axis-aligned rectangle centred on `center`.
    pub fn rect(&mut self, center: (f64, f64), half: (f64, f64), role: Role) {
        let (x, y) = center;
        let (w, h) = half;
        self.polygon(
            vec![
                (x - w, y - h),
                (x + w, y - h),
                (x + w, y + h),
                (x - w, y + h),
            ],
            role,
        );
    }
}

/// Element `i` of an observation as f64 (0 when absent, so a drawing never fails).
pub fn obs(observation: &crate::Tensor, i: usize) -> f64 {
    observation.data().get_f64(i).unwrap_or(0.0)
}
