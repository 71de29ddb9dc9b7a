//! The action rule: a Step whose action is not a member of the action space (or not a
//! well-formed tensor) is refused, and the refusal changes nothing: the next valid step
//! continues the same episode, exactly as on a twin env that never saw the bad action.

use ale_client::{Client, Env, Rng, Space, TaskSpec, Tensor};
use ale_proto::info_keys::EPISODE_STEPS;
use ale_proto::pb;
use ale_sim::{DType, TensorData};
use tonic::Code;

use super::Ctx;
use super::check::{During, Outcome, Problem, expect_code, expect_eq};
use super::practice::SEED;

/// Two envs of one task on the same seed, stepped with the same valid actions; the first also
/// receives the requests under test.
struct Twins<'t> {
    task: &'t TaskSpec,
    probe: Env,
    twin: Env,
    rng: Rng,
}

impl<'t> Twins<'t> {
    async fn new(client: &Client, task: &'t TaskSpec) -> Result<Twins<'t>, Problem> {
        let create = || async {
            client
                .create(&task.id)
                .await
                .during(&format!("CreateEnv {}", task.id))
        };
        let mut twins = Twins {
            task,
            probe: create().await?,
            twin: create().await?,
            rng: Rng::new(SEED),
        };
        twins.reset().await?;
        // Mid-episode: a refusal must not end or restart it.
        twins.advance("the first step").await?;
        Ok(twins)
    }

    async fn reset(&mut self) -> Outcome {
        self.probe.reset(Some(SEED)).await.during("Reset")?;
        self.twin.reset(Some(SEED)).await.during("Reset")?;
        Ok(())
    }

    /// Sends `action` (possibly none) to the probe env; the answer must be `code`.
    async fn send(&mut self, what: &str, action: Option<pb::Tensor>, code: Code) -> Outcome {
        let answer = self
            .probe
            .raw_client()
            .step(pb::StepRequest {
                handle: self.probe.handle().to_string(),
                action,
            })
            .await;
        expect_code(&format!("{}: Step with {what}", self.task.id), answer, code)?;
        self.advance(&format!("the valid step after {what}")).await
    }

    /// Steps both envs with the same valid action; they must still agree.
    async fn advance(&mut self, what: &str) -> Outcome {
        let action = self.task.action_space.sample(&mut self.rng);
        let p = self.probe.step(&action).await.during(what)?;
        let t = self.twin.step(&action).await.during(what)?;
        expect_eq(
            &format!(
                "{}: {what} to continue the episode as on a twin env (observation, reward, ended, {EPISODE_STEPS})",
                self.task.id
            ),
            (
                &t.observation,
                t.reward,
                t.is_done(),
                t.info.get(EPISODE_STEPS),
            ),
            (
                &p.observation,
                p.reward,
                p.is_done(),
                p.info.get(EPISODE_STEPS),
            ),
        )?;
        if p.is_done() {
            self.reset().await?;
        }
        Ok(())
    }
}

/// `values` as a tensor of `shape` and `dtype` (booleans: non-zero is true).
fn build(shape: Vec<usize>, dtype: DType, values: Vec<f64>) -> Result<Tensor, Problem> {
    let data = match dtype {
        DType::F32 => TensorData::F32(values.iter().map(|&v| v as f32).collect()),
        DType::F64 => TensorData::F64(values),
        DType::I64 => TensorData::I64(values.iter().map(|&v| v as i64).collect()),
        DType::I32 => TensorData::I32(values.iter().map(|&v| v as i32).collect()),
        DType::U8 => TensorData::U8(values.iter().map(|&v| v as u8).collect()),
        DType::Bool => TensorData::Bool(values.iter().map(|&v| v != 0.0).collect()),
    };
    Tensor::new(shape, data).during("building a test action")
}

/// A dtype the space does not take (float64, or float32 for a float64 space).
fn other_dtype(space: &Space) -> DType {
    if space.dtype() == DType::F64 {
        DType::F32
    } else {
        DType::F64
    }
}

/// `valid` with element `i` set to `value`.
fn with_element(valid: &Tensor, i: usize, value: f64) -> Result<Tensor, Problem> {
    let mut values = valid.to_f64_vec();
    let element = values.get_mut(i).ok_or_else(|| {
        Problem::fail(
            format!("an action with an element {i}"),
            format!("{} elements", valid.len()),
        )
    })?;
    *element = value;
    build(valid.shape().to_vec(), valid.dtype(), values)
}

/// An action outside the space's bounds, and what it is; `None` when every bound is
/// infinite or the space has none that a value of its dtype can cross.
fn outside_bounds(space: &Space, valid: &Tensor) -> Result<Option<(Tensor, String)>, Problem> {
    let (i, value) = match space {
        Space::Box(b) => {
            let above = |high: f64| match b.dtype {
                DType::F32 => {
                    let v = f64::from((high + high.abs().max(1.0)) as f32);
                    (v > high).then_some(v)
                }
                DType::F64 => Some(high + high.abs().max(1.0)),
                _ => (high < 2f64.powi(52)).then_some(high + 1.0),
            };
            let found = b
                .high
                .iter()
                .enumerate()
                .filter(|(_, h)| h.is_finite())
                .find_map(|(i, &h)| above(h).map(|v| (i, v)));
            match found {
                Some(found) => found,
                None => return Ok(None),
            }
        }
        Space::Discrete(d) => (0, d.start as f64 + d.n as f64),
        Space::MultiDiscrete(m) => match (m.start.first(), m.nvec.first()) {
            (Some(&start), Some(&n)) => (0, start as f64 + n as f64),
            _ => return Ok(None),
        },
        Space::MultiBinary(_) if !valid.is_empty() => (0, 2.0),
        Space::MultiBinary(_) | Space::Dict(_) => return Ok(None),
    };
    Ok(Some((
        with_element(valid, i, value)?,
        format!("element {i} = {value}, outside {space}"),
    )))
}

#[derive(Debug, Clone, Copy)]
enum Defect {
    Dtype,
    Shape,
    Bounds,
    NaN,
}

/// The defective action for `task`, and what it is; `None` when the defect cannot be made
/// for its space.
fn defective(defect: Defect, task: &TaskSpec) -> Result<Option<(Tensor, String)>, Problem> {
    let space = &task.action_space;
    let valid = space.sample(&mut Rng::new(SEED));
    match defect {
        Defect::Dtype => {
            let dtype = other_dtype(space);
            let t = build(valid.shape().to_vec(), dtype, valid.to_f64_vec())?;
            Ok(Some((t, format!("a {dtype} action for {space}"))))
        }
        Defect::Shape => {
            let mut values = valid.to_f64_vec();
            values.push(values.first().copied().unwrap_or(0.0));
            let shape = vec![values.len()];
            let t = build(shape.clone(), valid.dtype(), values)?;
            Ok(Some((
                t,
                format!("an action of shape {shape:?} for {space}"),
            )))
        }
        Defect::Bounds => outside_bounds(space, &valid),
        Defect::NaN if space.dtype().is_float() && !valid.is_empty() => Ok(Some((
            with_element(&valid, 0, f64::NAN)?,
            format!("element 0 = NaN for {space}"),
        ))),
        Defect::NaN => Ok(None),
    }
}

async fn refuse(ctx: &Ctx, defect: Defect) -> Outcome {
    let client = ctx.agent().await?;
    let mut checked = 0;
    for task in ctx.tasks()? {
        let Some((action, what)) = defective(defect, task)? else {
            continue;
        };
        let mut twins = Twins::new(&client, task).await?;
        twins
            .send(&what, Some(action.into()), Code::InvalidArgument)
            .await?;
        checked += 1;
    }
    if checked == 0 {
        return Err(Problem::Skip(format!(
            "no task's action space admits a {defect:?} defect"
        )));
    }
    Ok(())
}

pub(crate) async fn wrong_dtype(ctx: &Ctx) -> Outcome {
    refuse(ctx, Defect::Dtype).await
}

pub(crate) async fn wrong_shape(ctx: &Ctx) -> Outcome {
    refuse(ctx, Defect::Shape).await
}

pub(crate) async fn out_of_bounds(ctx: &Ctx) -> Outcome {
    refuse(ctx, Defect::Bounds).await
}

pub(crate) async fn nan(ctx: &Ctx) -> Outcome {
    refuse(ctx, Defect::NaN).await
}

/// Moves every element of `t` into the data field of `dtype`, leaving its own empty.
fn data_in_field(t: &pb::Tensor, dtype: DType) -> pb::Tensor {
    let values: Vec<f64> = pb_values(t);
    let mut out = pb::Tensor {
        dtype: t.dtype,
        shape: t.shape.clone(),
        ..Default::default()
    };
    fill(&mut out, dtype, &values);
    out
}

fn pb_values(t: &pb::Tensor) -> Vec<f64> {
    if !t.f32.is_empty() {
        t.f32.iter().map(|&v| f64::from(v)).collect()
    } else if !t.f64.is_empty() {
        t.f64.clone()
    } else if !t.i64.is_empty() {
        t.i64.iter().map(|&v| v as f64).collect()
    } else if !t.i32.is_empty() {
        t.i32.iter().map(|&v| f64::from(v)).collect()
    } else if !t.u8.is_empty() {
        t.u8.iter().map(|&v| f64::from(v)).collect()
    } else {
        t.bool.iter().map(|&v| f64::from(u8::from(v))).collect()
    }
}

fn fill(t: &mut pb::Tensor, dtype: DType, values: &[f64]) {
    match dtype {
        DType::F32 => t.f32 = values.iter().map(|&v| v as f32).collect(),
        DType::F64 => t.f64 = values.to_vec(),
        DType::I64 => t.i64 = values.iter().map(|&v| v as i64).collect(),
        DType::I32 => t.i32 = values.iter().map(|&v| v as i32).collect(),
        DType::U8 => t.u8 = values.iter().map(|&v| v as u8).collect(),
        DType::Bool => t.bool = values.iter().map(|&v| v != 0.0).collect(),
    }
}

pub(crate) async fn malformed_tensor(ctx: &Ctx) -> Outcome {
    let task = ctx
        .task_where(|_| true)?
        .ok_or_else(|| Problem::fail("a task", "none"))?;
    let space = &task.action_space;
    let valid: pb::Tensor = space.sample(&mut Rng::new(SEED)).into();
    let other = other_dtype(space);
    let mut cases: Vec<(String, Option<pb::Tensor>)> = Vec::new();
    cases.push(("no action".into(), None));
    cases.push((
        "an unspecified dtype".into(),
        Some(pb::Tensor {
            dtype: pb::DType::DtypeUnspecified as i32,
            ..valid.clone()
        }),
    ));
    cases.push((
        format!("its data in the {other} field"),
        Some(data_in_field(&valid, other)),
    ));
    let mut two_fields = valid.clone();
    fill(&mut two_fields, other, &pb_values(&valid));
    cases.push(("two data fields".into(), Some(two_fields)));
    let mut long_shape = valid.clone();
    long_shape.shape = vec![i64::try_from(pb_values(&valid).len() + 1).unwrap_or(i64::MAX)];
    cases.push(("fewer elements than its shape".into(), Some(long_shape)));
    cases.push((
        "a negative shape".into(),
        Some(pb::Tensor {
            shape: vec![-1],
            ..valid.clone()
        }),
    ));
    let client = ctx.agent().await?;
    let mut twins = Twins::new(&client, task).await?;
    for (what, action) in cases {
        twins.send(&what, action, Code::InvalidArgument).await?;
    }
    Ok(())
}

/// Just over the 4 MiB the protocol caps requests at.
const OVERSIZED_ELEMENTS: usize = 1_100_000;

pub(crate) async fn oversized_message(ctx: &Ctx) -> Outcome {
    let task = ctx
        .task_where(|_| true)?
        .ok_or_else(|| Problem::fail("a task", "none"))?;
    let client = ctx.agent().await?;
    let mut twins = Twins::new(&client, task).await?;
    let huge = pb::Tensor {
        dtype: pb::DType::DtypeFloat32 as i32,
        shape: vec![OVERSIZED_ELEMENTS as i64],
        f32: vec![0.0; OVERSIZED_ELEMENTS],
        ..Default::default()
    };
    twins
        .send(
            "a 4.4 MB action (over the 4 MiB cap)",
            Some(huge),
            Code::ResourceExhausted,
        )
        .await
}
