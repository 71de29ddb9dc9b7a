//! A small sim host written in Rust: `PointMass-v0`, a unit mass on a line pushed toward the
//! origin, served over the sim-host protocol on stdin and stdout. It shows what a host in a
//! language other than Python takes, and the evaluator's tests use it.
//!
//! ```text
//! ale-rust-host [--fault KIND --at-step N]
//! ```
//!
//! `--fault` makes the host misbehave at its N-th step (counted over all its envs), as the
//! fault tests need: `crash` (abort), `exit` (exit status 3), `hang`, `garbage` (a frame that
//! is not a reply), `wrong-shape` (an observation of 3 values), `nan` (a NaN observation),
//! `memory` (allocates until its memory limit stops it), `fail` (answers Failure);
//! `fail-reset` answers Failure to every reset (N is not used).

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};

use ale_sim::{
    BoxSpace, Counter, DType, EpisodeClock, Rng, Sim, SimError, Space, Tensor, Transition,
};

const DT: f32 = 0.05;
const LIMIT: f32 = 10.0;

struct PointMass {
    observation_space: Space,
    action_space: Space,
    observation: Tensor,
    clock: EpisodeClock,
    x: f32,
    v: f32,
    counters: [Counter; 1],
    fault: Option<(Fault, u64)>,
}

#[derive(Clone, Copy, PartialEq)]
enum Fault {
    Crash,
    Exit,
    Hang,
    Garbage,
    WrongShape,
    Nan,
    Memory,
    Fail,
    FailReset,
}

/// Steps taken by every env of this host.
static STEPS: AtomicU64 = AtomicU64::new(0);

impl PointMass {
    fn new(fault: Option<(Fault, u64)>) -> PointMass {
        PointMass {
            observation_space: Space::Box(BoxSpace::vector(
                DType::F32,
                vec![-f64::from(LIMIT); 2],
                vec![f64::from(LIMIT); 2],
            )),
            action_space: Space::Box(BoxSpace::vector(DType::F32, vec![-1.0], vec![1.0])),
            observation: Tensor::vector_f32(vec![0.0, 0.0]),
            clock: EpisodeClock::new(200),
            x: 0.0,
            v: 0.0,
            counters: [Counter {
                name: "near_origin",
                value: 0.0,
            }],
            fault,
        }
    }

    fn observe(&mut self) {
        self.observation = Tensor::vector_f32(vec![self.x, self.v]);
    }

    /// Misbehaves if this is the step the fault is set for.
    fn misbehave(&mut self) -> Result<(), SimError> {
        let n = STEPS.fetch_add(1, Ordering::SeqCst) + 1;
        let Some((fault, at)) = self.fault else {
            return Ok(());
        };
        if n != at {
            return Ok(());
        }
        eprintln!("ale-rust-host: misbehaving now ({n} steps)");
        match fault {
            Fault::Crash => std::process::abort(),
            Fault::Exit => std::process::exit(3),
            Fault::Hang => loop {
                std::thread::sleep(std::time::Duration::from_secs(3600));
            },
            Fault::Garbage => {
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(&[5, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff]);
                let _ = out.flush();
                loop {
                    std::thread::sleep(std::time::Duration::from_secs(3600));
                }
            }
            Fault::WrongShape => {
                self.observation = Tensor::vector_f32(vec![0.0; 3]);
                Err(SimError::State("wrong-shape".into()))
            }
            Fault::Nan => {
                self.observation = Tensor::vector_f32(vec![f32::NAN, 0.0]);
                Err(SimError::State("nan".into()))
            }
            Fault::Memory => {
                let mut hog: Vec<Vec<u8>> = Vec::new();
                loop {
                    hog.push(vec![1u8; 64 << 20]);
                    eprintln!("ale-rust-host: holding {} MiB", hog.len() * 64);
                }
            }
            Fault::Fail => Err(SimError::Backend("asked to fail".into())),
            Fault::FailReset => Ok(()),
        }
    }
}

impl Sim for PointMass {
    ale_sim::sim_accessors!("PointMass-v0");

    fn reset(&mut self, seed: u64) -> Result<(), SimError> {
        if matches!(self.fault, Some((Fault::FailReset, _))) {
            return Err(SimError::Backend("asked to fail every reset".into()));
        }
        let mut rng = Rng::new(seed);
        self.x = rng.uniform(-5.0, 5.0) as f32;
        self.v = 0.0;
        self.counters[0].value = 0.0;
        self.clock.reset();
        self.observe();
        Ok(())
    }

    fn step(&mut self, action: &Tensor) -> Result<Transition, SimError> {
        self.clock.check_can_step()?;
        let force = ale_sim::action::box_f32_slice(&self.action_space, action, 1)?[0];
        self.v += force.clamp(-1.0, 1.0) * DT;
        self.x = (self.x + self.v * DT).clamp(-LIMIT, LIMIT);
        self.v = self.v.clamp(-LIMIT, LIMIT);
        self.observe();
        match self.misbehave() {
            Ok(()) => {}
            // A wrong observation goes out as if nothing were wrong.
            Err(SimError::State(_)) => {}
            Err(e) => return Err(e),
        }
        if self.x.abs() < 0.1 {
            self.counters[0].value += 1.0;
        }
        let terminated = self.x.abs() >= LIMIT - 0.01;
        let truncated = self.clock.tick(terminated);
        Ok(Transition {
            reward: -f64::from(self.x * self.x),
            terminated,
            truncated,
        })
    }

    fn reset_to_state(&mut self, state: &[f64]) -> Result<(), SimError> {
        let [x, v] = ale_sim::state_array::<2>(state)?;
        (self.x, self.v) = (x as f32, v as f32);
        self.clock.reset();
        self.observe();
        Ok(())
    }

    fn counters(&self) -> &[Counter] {
        &self.counters
    }
}

fn parse_args() -> Result<Option<(Fault, u64)>, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match &args[..] {
        [] => Ok(None),
        [f, kind, a, n] if f == "--fault" && a == "--at-step" => {
            let fault = match kind.as_str() {
                "crash" => Fault::Crash,
                "exit" => Fault::Exit,
                "hang" => Fault::Hang,
                "garbage" => Fault::Garbage,
                "wrong-shape" => Fault::WrongShape,
                "nan" => Fault::Nan,
                "memory" => Fault::Memory,
                "fail" => Fault::Fail,
                "fail-reset" => Fault::FailReset,
                other => return Err(format!("unknown fault {other:?}")),
            };
            let n = n.parse().map_err(|e| format!("--at-step {n:?}: {e}"))?;
            Ok(Some((fault, n)))
        }
        _ => Err("usage: ale-rust-host [--fault KIND --at-step N]".into()),
    }
}

fn main() -> std::process::ExitCode {
    let fault = match parse_args() {
        Ok(fault) => fault,
        Err(e) => {
            eprintln!("ale-rust-host: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let name = concat!("ale-rust-host ", env!("CARGO_PKG_VERSION"));
    let served = ale_sims_remote::host::serve(
        &mut std::io::stdin().lock(),
        &mut std::io::stdout().lock(),
        name,
        || Box::new(PointMass::new(fault)),
    );
    match served {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ale-rust-host: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
