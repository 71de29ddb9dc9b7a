//! The console on a real embedded evaluator, driven by keys, drawn on ratatui's TestBackend.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ale_client::Client;
use ale_client::policy::PolicyKind;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

use super::app::{App, Connection};
use super::eval::Agent;
use super::message::{Effect, HarnessEvent, HarnessExit, Msg, Reply};
use super::seeds::Seeds;
use super::view::View;
use super::{Console, screen, theme};

struct Fixture {
    console: Console,
    endpoint: String,
    _server: ale_server::RunningServer,
    _dir: tempfile::TempDir,
}

/// The `ale` executable next to this test binary (`target/<profile>/ale`).
fn ale_exe() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().join("ale")
}

async fn fixture() -> Fixture {
    fixture_with_seeds(Box::new(ale_server::seeds::OsSeeds)).await
}

/// Hidden seeds 1, 2, 3, …: the random policy then plays the same rollouts every time, so a
/// screen showing its run can be a snapshot.
#[derive(Default)]
struct CountingSeeds(std::sync::atomic::AtomicU64);

impl ale_server::seeds::SeedSource for CountingSeeds {
    fn draw(&self) -> ale_server::seeds::HiddenSeed {
        let n = self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        ale_server::seeds::HiddenSeed::new(n + 1)
    }
}

async fn fixture_with_seeds(seeds: Box<dyn ale_server::seeds::SeedSource>) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let evaluator = ale_server::Evaluator::with_seed_source(
        ale_server::TaskRegistry::builtin(crate::sim_catalog()).unwrap(),
        &state,
        seeds,
        ale_server::Limits::default(),
    )
    .unwrap();
    let server = ale_server::serve::start(Arc::new(evaluator), "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let endpoint = server.agent_endpoint();
    let app = App::new(
        theme::load_all(None).unwrap(),
        0,
        super::bindings::KeyMap::bundled(),
        "embedded (test)".into(),
        Seeds::new(1),
    );
    let mut console = Console::new(app, endpoint.clone(), state, ale_exe());
    assert!(
        console
            .settle(Duration::from_secs(10), |a| !a.tasks.list.is_empty())
            .await
    );
    Fixture {
        console,
        endpoint,
        _server: server,
        _dir: dir,
    }
}

fn key(code: KeyCode) -> Msg {
    Msg::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

impl Fixture {
    async fn press(&mut self, codes: &[KeyCode]) {
        for code in codes {
            self.console.handle(key(*code));
            assert!(
                self.console.settle(Duration::from_secs(10), |_| true).await,
                "no answer to {code:?}"
            );
        }
    }

    fn screen(&self, width: u16, height: u16) -> String {
        render(&self.console.app, width, height)
    }

    /// Starts the official run set up in the eval view and waits for its report.
    async fn run_official(&mut self) -> ale_harness::Report {
        self.press(&[KeyCode::Enter]).await;
        let finished = self
            .console
            .settle(Duration::from_secs(60), |a| {
                a.eval.run.as_ref().is_some_and(|r| r.finished.is_some())
            })
            .await;
        assert!(finished, "the harness did not finish");
        let run = self.console.app.eval.run.as_ref().unwrap();
        run.report
            .as_deref()
            .cloned()
            .unwrap_or_else(|| panic!("no report; harness said: {:?}", run.output))
    }
}

/// `app` drawn on a `width` × `height` TestBackend, as text with ids and timings masked.
fn render(app: &App, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|f| screen::draw(f, app)).unwrap();
    let buffer = terminal.backend().buffer().clone();
    let mut out = String::new();
    for y in 0..height {
        for x in 0..width {
            out.push_str(buffer[(x, y)].symbol());
        }
        out.push('\n');
    }
    mask_ids(&out)
}

/// Replaces runs of 8+ hex digits (run ids, hashes, commitments) and timings, which differ per
/// run, so snapshots compare what is stable.
fn mask_ids(text: &str) -> String {
    let mut out = String::new();
    let mut run = String::new();
    let flush = |run: &mut String, out: &mut String| {
        if run.len() >= 8 {
            out.push_str(&"#".repeat(run.len()));
        } else {
            out.push_str(run);
        }
        run.clear();
    };
    for c in text.chars() {
        if c.is_ascii_hexdigit() && !c.is_ascii_uppercase() {
            run.push(c);
        } else {
            flush(&mut run, &mut out);
            out.push(c);
        }
    }
    flush(&mut run, &mut out);
    // A run's agent uid (six digits in the default range 200000-265535), which depends on
    // which uids other runs hold at the time; wrapped, it may start a line.
    let out: String = {
        let chars: Vec<char> = out.chars().collect();
        let mut masked = chars.clone();
        let mut k = 0;
        while k < chars.len() {
            let end = (k..chars.len())
                .find(|&i| !chars[i].is_ascii_digit())
                .unwrap_or(chars.len());
            let boundary = k == 0 || !(chars[k - 1].is_ascii_digit() || chars[k - 1] == '.');
            if end - k == 6 && chars[k] == '2' && boundary && chars.get(end) != Some(&'.') {
                masked[k..end].fill('#');
            }
            k = end.max(k + 1);
        }
        masked.into_iter().collect()
    };
    // Elapsed times in titles: "·   1.6 s".
    let mut masked = String::new();
    for line in out.lines() {
        let mut chars: Vec<char> = line.chars().collect();
        let mut k = 0;
        while k + 2 < chars.len() {
            if chars[k] == '·' && chars[k + 1] == ' ' {
                let start = k + 2;
                let mut end = start;
                while end < chars.len()
                    && (chars[end] == ' ' || chars[end].is_ascii_digit() || chars[end] == '.')
                {
                    end += 1;
                }
                let number: String = chars[start..end].iter().collect();
                if end + 1 < chars.len()
                    && chars[end] == 's'
                    && number.trim().contains('.')
                    && number.ends_with(' ')
                {
                    for c in &mut chars[start..end - 1] {
                        *c = '~';
                    }
                }
            }
            k += 1;
        }
        // Bootstrap intervals "[1.234, 3.456]" on the lines that show them: resampled with a
        // seed drawn from the run ids.
        let line_text: String = chars.iter().collect();
        let shows_intervals = line_text.contains("95%") || line_text.contains("IQM");
        let mut k = if shows_intervals { 0 } else { chars.len() };
        while k < chars.len() {
            if chars[k] == '['
                && let Some(len) = chars[k + 1..].iter().position(|&c| c == ']')
            {
                let inner = &chars[k + 1..k + 1 + len];
                // Both ends with 3 or more decimals, as intervals are shown (a space's bounds,
                // "[-4.8, 4.8]", stay).
                let text: String = inner.iter().collect();
                let precise = |n: &str| {
                    n.trim()
                        .trim_start_matches(['+', '-'])
                        .split_once('.')
                        .is_some_and(|(i, d)| {
                            !i.is_empty()
                                && i.chars().all(|c| c.is_ascii_digit())
                                && d.len() >= 3
                                && d.chars().all(|c| c.is_ascii_digit())
                        })
                };
                let numeric = text
                    .split_once(", ")
                    .is_some_and(|(a, b)| precise(a) && precise(b));
                if numeric {
                    for c in &mut chars[k + 1..k + 1 + len] {
                        if c.is_ascii_digit() {
                            *c = '~';
                        }
                    }
                }
                k += len + 1;
            } else {
                k += 1;
            }
        }
        masked.extend(chars);
        masked.push('\n');
    }
    masked
}

fn select_task(f: &mut Fixture, id: &str) {
    let i = f
        .console
        .app
        .tasks
        .list
        .iter()
        .position(|t| t.id == id)
        .unwrap();
    f.console.app.tasks.cursor = i;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_view_snapshots() {
    let mut f = fixture().await;
    select_task(&mut f, "cartpole-balance");
    insta::assert_snapshot!("tasks_80x24", f.screen(80, 24));
    insta::assert_snapshot!("tasks_160x48", f.screen(160, 48));
    // Typing filters the list.
    f.press(&[
        KeyCode::Char('/'),
        KeyCode::Char('n'),
        KeyCode::Char('a'),
        KeyCode::Char('v'),
    ])
    .await;
    let visible: Vec<String> = f
        .console
        .app
        .tasks
        .visible()
        .iter()
        .map(|t| t.id.clone())
        .collect();
    assert_eq!(visible, ["nav2d-barn"]);
    assert!(f.screen(80, 24).contains("filter: nav"));
    // A task whose id matches comes before one whose title does ("MountainCar: reach the flag").
    f.press(&[
        KeyCode::Esc,
        KeyCode::Char('/'),
        KeyCode::Char('r'),
        KeyCode::Char('e'),
        KeyCode::Char('a'),
        KeyCode::Enter,
    ])
    .await;
    let visible: Vec<&str> = f
        .console
        .app
        .tasks
        .visible()
        .iter()
        .map(|t| t.id.as_str())
        .collect();
    assert_eq!(
        visible[..2],
        ["reacher-mujoco", "reacher-reach"],
        "{visible:?}"
    );
    assert!(visible.contains(&"mountaincar"), "{visible:?}");
}

/// Every task id can be read whole in the list at 80 columns, and one too long for a narrow
/// list ends in an ellipsis while the spec beside it names it whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tasks_list_shows_whole_ids_and_the_spec_scrolls() {
    let mut f = fixture().await;
    select_task(&mut f, "mountaincar-sarsa-reproduction");
    let screen = f.screen(80, 24);
    for id in [
        "mountaincar-sarsa-reproduction",
        "inverted-double-pendulum",
        "mountaincar-continuous batch",
    ] {
        assert!(screen.contains(id), "{id} cut:\n{screen}");
    }
    let narrow = f.screen(66, 24);
    assert!(narrow.contains("mountaincar-sarsa-reproducti…"), "{narrow}");
    assert!(
        narrow.contains("mountaincar-sarsa-reproduction"),
        "the spec names it whole:\n{narrow}"
    );

    // cartpole's spec does not fit 24 rows: the pane says where it is and how to scroll.
    select_task(&mut f, "cartpole-balance");
    let top = f.screen(80, 24);
    assert!(top.contains("PgUp/PgDn scroll"), "{top}");
    assert!(!top.contains("action space"), "{top}");
    f.press(&[KeyCode::PageDown, KeyCode::PageDown, KeyCode::PageDown])
        .await;
    assert!(f.console.app.tasks.spec_scroll > 0);
    let scrolled = f.screen(80, 24);
    assert!(scrolled.contains("action space"), "{scrolled}");
    assert!(scrolled.contains("push right"), "{scrolled}");
    insta::assert_snapshot!("tasks_spec_scrolled_80x24", scrolled);
    f.press(&[KeyCode::PageUp, KeyCode::PageUp, KeyCode::PageUp])
        .await;
    assert_eq!(f.console.app.tasks.spec_scroll, 0);
    // Another task's spec starts at its top.
    f.press(&[KeyCode::PageDown, KeyCode::Down]).await;
    assert_eq!(f.console.app.tasks.spec_scroll, 0);
}

/// Pendulum played by its heuristic: the action pane shows the torque the policy took, not the
/// manual slider (which stays at 0).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn practice_shows_the_action_the_policy_took() {
    let mut f = fixture().await;
    select_task(&mut f, "pendulum-swingup");
    f.press(&[KeyCode::Enter]).await;
    f.press(&[KeyCode::Char('s'), KeyCode::Char('5'), KeyCode::Enter])
        .await;
    let before = f.console.app.practice.observation.clone().unwrap();
    let spec = f.console.app.practice.spec.clone().unwrap();
    // Manual, random, heuristic; one step.
    f.press(&[KeyCode::Char('p'), KeyCode::Char('p'), KeyCode::Char(' ')])
        .await;
    let p = &f.console.app.practice;
    assert_eq!(p.step, 1, "{:?}", f.console.app.note);
    let mut heuristic = ale_client::policy::build(PolicyKind::Heuristic, &spec, 0).unwrap();
    let expected = heuristic.act(&before);
    assert_eq!(p.last_action.as_ref(), Some(&expected));
    let torque = expected.to_f64_vec()[0];
    assert!(torque.abs() > 1e-3, "the heuristic pushed: {torque}");
    assert_eq!(p.box_action, [0.0]);
    let screen = f.screen(80, 24);
    assert!(screen.contains("the policy's last"), "{screen}");
    assert!(screen.contains(&format!("{torque:>8.3}")), "{screen}");
    // Back to manual: the sliders again.
    f.press(&[KeyCode::Char('p')]).await;
    let screen = f.screen(80, 24);
    assert!(screen.contains("action (yours)"), "{screen}");
    assert!(screen.contains("   0.000"), "{screen}");
}

/// Selects cartpole, resets with seed 7 and pushes right 10 times: the console must show what a
/// direct client run shows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn practice_matches_a_direct_client_run_and_snapshots() {
    let mut f = fixture().await;
    select_task(&mut f, "cartpole-balance");
    f.press(&[KeyCode::Enter]).await;
    assert_eq!(f.console.app.view, View::Practice);
    f.press(&[KeyCode::Char('s'), KeyCode::Char('7'), KeyCode::Enter])
        .await;
    assert_eq!(f.console.app.practice.seed, Some(7));
    for _ in 0..10 {
        f.press(&[KeyCode::Right]).await;
    }

    let client = Client::connect(&f.endpoint).await.unwrap();
    let mut env = client.create("cartpole-balance").await.unwrap();
    let mut observation = env.reset(Some(7)).await.unwrap().observation;
    let mut rewards = Vec::new();
    for _ in 0..10 {
        let s = env.step(&ale_sim::Tensor::scalar_i64(1)).await.unwrap();
        rewards.push(s.reward);
        observation = s.observation;
    }
    let p = &f.console.app.practice;
    assert_eq!(p.observation.as_ref(), Some(&observation));
    assert_eq!(p.rewards, rewards);
    assert_eq!(p.step, 10);
    let screen = f.screen(80, 24);
    for value in observation.to_f64_vec() {
        assert!(
            screen.contains(&format!("{value:.4}")),
            "{value:.4} not on screen:\n{screen}"
        );
    }
    assert!(screen.contains("reward per step (10 steps)"), "{screen}");
    // Creating the env reset it once (episode 1); the seed-7 reset began episode 2.
    assert!(screen.contains("seed 7 · ep 2 · step 10"), "{screen}");
    insta::assert_snapshot!("practice_80x24", screen);
    insta::assert_snapshot!("practice_160x48", f.screen(160, 48));
    for (w, h) in [(30, 8), (12, 3), (1, 1)] {
        f.screen(w, h);
    }
}

/// A multi-robot sim: its observation is [16, 26] and its action [16, 2]. A manual step sends
/// the sliders in the action's shape, the heuristic plays it, and the view draws at any size.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn practice_plays_the_swarm_manually_and_with_its_heuristic() {
    let mut f = fixture().await;
    select_task(&mut f, "swarm-goals");
    f.press(&[KeyCode::Enter]).await;
    f.press(&[KeyCode::Char('s'), KeyCode::Char('3'), KeyCode::Enter])
        .await;
    f.press(&[KeyCode::Char(' ')]).await;
    assert_eq!(f.console.app.practice.step, 1, "{:?}", f.console.app.note);
    // Manual, random, heuristic.
    f.press(&[KeyCode::Char('p'), KeyCode::Char('p'), KeyCode::Char(' ')])
        .await;
    let p = &f.console.app.practice;
    assert_eq!(p.step, 2, "{:?}", f.console.app.note);
    assert_eq!(p.observation.as_ref().unwrap().shape(), [16, 26]);
    let screen = f.screen(80, 24);
    assert!(screen.contains("more values"), "{screen}");
    // Its rows are named by robot and the documented fields, and so are the action's.
    let screen = f.screen(160, 48);
    assert!(screen.contains("robot 0 x"), "{screen}");
    assert!(screen.contains("robot 0 goal dx"), "{screen}");
    assert!(screen.contains("robot 0 vx"), "{screen}");
    for (w, h) in [(160, 48), (30, 8), (12, 3), (1, 1)] {
        f.screen(w, h);
    }
}

/// nav2d's practice view draws the operator's map beside the robot's own view: a replica kept
/// here follows the env through a reset and the heuristic's steps, and shows the seed's whole
/// field. A replica that parts from the evaluator's env says so instead of drawing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nav2d_practice_draws_the_whole_arena_from_a_replica_that_follows_the_env() {
    let mut f = fixture().await;
    select_task(&mut f, "nav2d-barn");
    f.press(&[KeyCode::Enter]).await;
    f.press(&[KeyCode::Char('s'), KeyCode::Char('4'), KeyCode::Enter])
        .await;
    // Heuristic (manual → random → heuristic), three steps.
    f.press(&[KeyCode::Char('p'), KeyCode::Char('p')]).await;
    for n in 1..=3 {
        f.press(&[KeyCode::Char(' ')]).await;
        let stepped = f
            .console
            .settle(Duration::from_secs(10), |a| {
                a.practice.step == n && !a.practice.busy
            })
            .await;
        assert!(stepped, "step {n}: {:?}", f.console.app.note);
    }
    let p = &f.console.app.practice;
    let map = p.map.as_ref().expect("nav2d has a map");
    let drawing = map.map().expect("the replica follows the env");
    // The map is the seed's field as a sim of this build holds it after the same actions.
    let entry = crate::sim_catalog().find("nav2d").unwrap();
    let mut sim = entry.map_replica(u32::MAX).unwrap();
    sim.reset(4).unwrap();
    let client = Client::connect(&f.endpoint).await.unwrap();
    let mut env = client.create("nav2d-barn").await.unwrap();
    let mut observation = env.reset(Some(4)).await.unwrap().observation;
    let spec = f.console.app.practice.spec.clone().unwrap();
    let mut heuristic = ale_client::policy::build(PolicyKind::Heuristic, &spec, 0).unwrap();
    for _ in 0..3 {
        let action = heuristic.act(&observation);
        sim.step(&action).unwrap();
        observation = env.step(&action).await.unwrap().observation;
    }
    assert_eq!(sim.observation(), &observation);
    assert_eq!(drawing, sim.map());
    let screen = f.screen(160, 48);
    assert!(screen.contains("map · whole arena"), "{screen}");
    // Too narrow for two panes: the robot's view alone.
    assert!(!f.screen(60, 24).contains("map ·"));

    // An observation that is not the replica's (as from an evaluator of another version):
    // the map says so, and a reset follows the env again.
    let p = &mut f.console.app.practice;
    let mut forged = p.observation.clone().unwrap();
    if let Some(values) = forged.as_f32_mut() {
        values[0] += 1.0;
    }
    let action = p.last_action.clone().unwrap();
    p.on_reply(
        Reply::Stepped {
            action,
            observation: forged,
            reward: 0.0,
            terminated: false,
            truncated: false,
            info: Default::default(),
        },
        &mut Seeds::new(1),
    );
    let why = p.map.as_ref().unwrap().map().unwrap_err().to_string();
    assert!(why.contains("parted"), "{why}");
    assert!(
        f.screen(160, 48)
            .contains("no map: the replica here parted")
    );
    f.press(&[KeyCode::Char('r')]).await;
    let reset = f
        .console
        .settle(Duration::from_secs(10), |a| {
            a.practice.step == 0 && !a.practice.busy
        })
        .await;
    assert!(reset, "{:?}", f.console.app.note);
    assert!(f.console.app.practice.map.as_ref().unwrap().map().is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_official_run_from_the_eval_view_shows_the_harness_report() {
    let mut f = fixture().await;
    select_task(&mut f, "cartpole-balance");
    f.press(&[KeyCode::Char('3')]).await;
    assert_eq!(f.console.app.view, View::Eval);
    // The task can be changed from here too.
    f.press(&[KeyCode::Right]).await;
    assert_ne!(
        f.console.app.tasks.selected().unwrap().id,
        "cartpole-balance"
    );
    f.press(&[KeyCode::Left]).await;
    assert_eq!(
        f.console.app.tasks.selected().unwrap().id,
        "cartpole-balance"
    );
    insta::assert_snapshot!("eval_setup_80x24", f.screen(80, 24));
    f.press(&[KeyCode::Enter]).await;
    let finished = f
        .console
        .settle(Duration::from_secs(60), |a| {
            a.eval.run.as_ref().is_some_and(|r| r.finished.is_some())
        })
        .await;
    assert!(finished, "the harness did not finish");
    let run = f.console.app.eval.run.as_ref().unwrap();
    let report = run
        .report
        .as_ref()
        .unwrap_or_else(|| panic!("no report; harness said: {:?}", run.output));
    assert!(report.score.score > 0.0);
    assert!(report.trajectory.verified);
    let screen = f.screen(80, 24);
    assert!(screen.contains("score 1.0526"), "{screen}");
    assert!(screen.contains("trajectory verified"), "{screen}");
    insta::assert_snapshot!("eval_report_80x24", screen);
    insta::assert_snapshot!("eval_report_160x48", f.screen(160, 48));
    for (w, h) in [(30, 8), (12, 3), (1, 1)] {
        f.screen(w, h);
    }

    // The run appears in the runs view; open it and verify its trajectory.
    f.press(&[KeyCode::Char('4')]).await;
    assert!(
        f.console
            .settle(Duration::from_secs(10), |a| a.runs.entries.len() == 1)
            .await
    );
    f.press(&[KeyCode::Enter, KeyCode::Char('v')]).await;
    assert!(
        f.console
            .settle(Duration::from_secs(30), |a| a.runs.verification.is_some())
            .await
    );
    let verified = &f.console.app.runs.verification.as_ref().unwrap().result;
    assert!(verified.is_ok(), "verify failed: {verified:?}");
    insta::assert_snapshot!("runs_80x24", f.screen(80, 24));
    insta::assert_snapshot!("runs_160x48", f.screen(160, 48));
    for (w, h) in [(30, 8), (12, 3), (1, 1)] {
        f.screen(w, h);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_run_from_the_eval_view_submits_a_policy_folder() {
    let mut f = fixture().await;
    select_task(&mut f, "nav2d-barn");
    f.press(&[KeyCode::Char('3')]).await;
    // A batch task offers a policy folder (and an agent command), not the built-in players.
    let screen = f.screen(120, 24);
    assert!(
        screen.contains("policy folder: (s to type one)"),
        "{screen}"
    );
    assert!(!screen.contains("built-in heuristic"), "{screen}");
    // At 80 columns the choice wraps rather than being cut.
    insta::assert_snapshot!("eval_batch_setup_80x24", f.screen(80, 24));
    // Enter with no folder typed asks for one.
    f.press(&[KeyCode::Enter]).await;
    assert!(f.console.app.eval.run.is_none());

    // A zero-weight MLP: 36 lidar and goal values in, speed and turn rate out.
    let dir = tempfile::tempdir().unwrap();
    let zeros = vec![0u8; 36 * 2 * 4];
    let view =
        safetensors::tensor::TensorView::new(safetensors::Dtype::F32, vec![2, 36], &zeros).unwrap();
    let bytes = safetensors::serialize([("0.weight", view)], None).unwrap();
    std::fs::write(dir.path().join("policy.safetensors"), bytes).unwrap();
    let mut keys = vec![KeyCode::Char('s')];
    keys.extend(dir.path().to_str().unwrap().chars().map(KeyCode::Char));
    keys.extend([KeyCode::Enter, KeyCode::Enter]);
    f.press(&keys).await;
    let finished = f
        .console
        .settle(Duration::from_secs(120), |a| {
            a.eval.run.as_ref().is_some_and(|r| r.finished.is_some())
        })
        .await;
    assert!(finished, "the harness did not finish");
    let run = f.console.app.eval.run.as_ref().unwrap();
    assert_eq!(run.agent, Agent::Submission(dir.path().to_path_buf()));
    let report = run
        .report
        .as_ref()
        .unwrap_or_else(|| panic!("no report; harness said: {:?}", run.output));
    // A robot that never moves never reaches the goal: every rollout counts the 50 s limit.
    assert_eq!(report.status, ale_proto::eval::EvalStatus::Completed);
    assert!((report.value - 50.0).abs() < 1e-3, "{}", report.value);
    assert!(report.trajectory.verified);
    let screen = f.screen(120, 24);
    assert!(screen.contains("nav2d-barn · submission"), "{screen}");
    assert!(screen.contains("trajectory verified"), "{screen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn help_overlay_lists_every_key_and_any_key_closes_it() {
    let mut f = fixture().await;
    f.press(&[KeyCode::Char('?')]).await;
    assert!(f.console.app.help);
    let screen = f.screen(80, 60);
    for entry in f.console.app.keymap.help() {
        assert!(
            screen.contains(&entry.keys) && screen.contains(entry.help),
            "{} {} missing from help",
            entry.keys,
            entry.help
        );
        for exception in &entry.exceptions {
            assert!(screen.contains(exception.as_str()), "{exception} missing");
        }
    }
    // The views' digits are actions in practice, and the help says so where it lists them.
    assert!(
        screen.contains("tasks view (in practice, 1 means action; F1 works)"),
        "{screen}"
    );
    insta::assert_snapshot!("help_80x60", screen);
    f.press(&[KeyCode::Char('x')]).await;
    assert!(!f.console.app.help);

    // On a short terminal, from the runs view: its keys come right after the global ones,
    // and the arrows scroll the rest into view; every key is seen on the way down.
    f.press(&[KeyCode::Char('4'), KeyCode::Char('?')]).await;
    let first = f.screen(80, 24);
    insta::assert_snapshot!("help_runs_80x24", first);
    let section = |name: &str| first.find(&format!("│{name} ")).unwrap_or(usize::MAX);
    assert!(section("Everywhere") < section("Runs"), "{first}");
    assert!(section("Runs") < section("Tasks"), "{first}");
    let mut seen = first.clone();
    for _ in 0..80 {
        f.press(&[KeyCode::Down]).await;
        seen.push_str(&f.screen(80, 24));
    }
    assert!(f.console.app.help, "arrows scroll, they do not close");
    for entry in f.console.app.keymap.help() {
        assert!(
            seen.contains(&entry.keys) && seen.contains(entry.help),
            "{} {} never shown",
            entry.keys,
            entry.help
        );
    }
    // Scrolled to the end, one Up moves back at once (the scroll stops at the last line).
    let bottom = f.screen(80, 24);
    f.press(&[KeyCode::Up]).await;
    assert_ne!(f.screen(80, 24), bottom);
    f.press(&[KeyCode::Esc]).await;
    assert!(!f.console.app.help);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_connection_is_shown_and_retried() {
    // An endpoint nobody listens on.
    let dir = tempfile::tempdir().unwrap();
    let app = App::new(
        theme::load_all(None).unwrap(),
        0,
        super::bindings::KeyMap::bundled(),
        "http://127.0.0.1:9".into(),
        Seeds::new(1),
    );
    let mut console = Console::new(
        app,
        "http://127.0.0.1:9".into(),
        dir.path().to_path_buf(),
        ale_exe(),
    );
    assert!(
        console
            .settle(Duration::from_secs(10), |a| matches!(
                a.connection,
                Connection::Lost { .. }
            ))
            .await
    );
    let mut terminal = Terminal::new(TestBackend::new(100, 24)).unwrap();
    terminal.draw(|fr| screen::draw(fr, &console.app)).unwrap();
    let row: String = (0..100)
        .map(|x| terminal.backend().buffer()[(x, 0)].symbol().to_string())
        .collect();
    assert!(row.contains("connection lost, retrying"), "{row}");
    // A tick a second later sends a retry.
    console.handle(Msg::Tick(
        std::time::Instant::now() + Duration::from_secs(2),
    ));
    assert_eq!(console.app.pending, 1, "a reconnect attempt is in flight");
}

#[test]
fn every_theme_renders_every_view() {
    // Colours come only from themes: rendering with each exercises every style path.
    for (i, _) in theme::load_all(None).unwrap().iter().enumerate() {
        let mut app = App::new(
            theme::load_all(None).unwrap(),
            i,
            super::bindings::KeyMap::bundled(),
            "x".into(),
            Seeds::new(1),
        );
        for view in View::ALL {
            app.view = view;
            // Tiny and odd sizes must not panic either.
            for (w, h) in [(80, 24), (30, 8), (12, 3), (1, 1), (200, 60)] {
                let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
                terminal.draw(|f| screen::draw(f, &app)).unwrap();
                app.help = !app.help;
                terminal.draw(|f| screen::draw(f, &app)).unwrap();
            }
        }
    }
}

/// Cancelling an official run stops the harness and its agent's whole process group.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_run_stops_the_harness_and_its_agent() {
    let mut f = fixture().await;
    select_task(&mut f, "cartpole-balance");
    // A typed agent command that would sit there for a long time; the odd duration marks it.
    let marker = format!("sleep 97.{}", std::process::id());
    f.press(&[KeyCode::Char('3'), KeyCode::Char('c')]).await;
    for c in marker.chars() {
        f.press(&[KeyCode::Char(c)]).await;
    }
    f.press(&[KeyCode::Enter, KeyCode::Enter]).await;
    // Whether any process's command line contains `pattern` (what `pgrep -f` does).
    let alive = |pattern: &str| {
        std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
            .any(|cmdline| {
                let text: String = cmdline
                    .iter()
                    .map(|&b| if b == 0 { ' ' } else { b as char })
                    .collect();
                text.contains(pattern)
            })
    };
    let started = std::time::Instant::now();
    while !alive(&marker) {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the agent never started"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    f.press(&[KeyCode::Char('x')]).await;
    let stopped = f
        .console
        .settle(Duration::from_secs(20), |a| {
            a.eval.run.as_ref().is_some_and(|r| r.finished.is_some())
        })
        .await;
    assert!(stopped, "the harness did not exit");
    let run = f.console.app.eval.run.as_ref().unwrap();
    assert!(run.cancelled && run.report.is_none());
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!alive(&marker), "the agent outlived the cancelled harness");
    assert!(f.screen(80, 24).contains("cancelled"));
}

/// What `ale harness run --task cartpole-balance --policy heuristic --progress json` printed
/// (some of its progress lines and its report), recorded.
const RECORDED_PROGRESS: &str = include_str!("testdata/cartpole-heuristic.progress.jsonl");

/// An app with no evaluator behind it, told of cartpole-balance alone, in its eval view.
fn eval_app_on_cartpole() -> App {
    let mut app = App::new(
        theme::load_all(None).unwrap(),
        0,
        super::bindings::KeyMap::bundled(),
        "embedded (test)".into(),
        Seeds::new(1),
    );
    let cartpole = ale_server::TaskRegistry::builtin(crate::sim_catalog())
        .unwrap()
        .get("cartpole-balance")
        .unwrap()
        .spec()
        .unwrap();
    app.update(Msg::Reply(Reply::Tasks(vec![cartpole])));
    app.update(key(KeyCode::Char('3')));
    app
}

/// The eval view follows a run from the harness's progress events alone: each recorded line
/// goes through the parsing the harness child uses and the app's message path.
#[test]
fn the_eval_view_follows_recorded_progress_events() {
    let mut app = eval_app_on_cartpole();
    assert_eq!(app.view, View::Eval);
    let effects = app.update(key(KeyCode::Enter));
    assert_eq!(
        effects,
        [Effect::StartHarness {
            task_id: "cartpole-balance".into(),
            agent: Agent::Policy(PolicyKind::Heuristic),
        }]
    );
    assert!(render(&app, 80, 24).contains("starting the harness…"));

    let mut lines = RECORDED_PROGRESS.lines();
    let mut feed = |app: &mut App, n: usize| -> Vec<Effect> {
        let mut effects = Vec::new();
        for line in lines.by_ref().take(n) {
            let event = HarnessEvent::from_stdout_line(line);
            assert!(
                !matches!(event, HarnessEvent::Output(_)),
                "not a progress event: {line}"
            );
            effects.extend(app.update(Msg::Harness(event)));
        }
        effects
    };
    // The first rollout under way.
    feed(&mut app, 1);
    let screen = render(&app, 80, 24);
    for expected in [
        "0/20 rollouts",
        "running",
        "rollout 1 · step 62 · return 62.00",
    ] {
        assert!(screen.contains(expected), "{expected:?} missing:\n{screen}");
    }
    // Ten rollouts done, and a line the harness printed that is not an event.
    feed(&mut app, 2);
    app.update(Msg::Harness(HarnessEvent::from_stdout_line(
        "agent: heuristic policy on cartpole-balance (20 rollouts)",
    )));
    let screen = render(&app, 80, 24);
    for expected in [
        "10/20 rollouts",
        "running mean 500.000 (target 475)",
        "budgets left 4973 steps",
        "agent: heuristic policy on cartpole-balance",
    ] {
        assert!(screen.contains(expected), "{expected:?} missing:\n{screen}");
    }
    insta::assert_snapshot!("eval_recorded_running_80x24", screen);

    // The last progress, the report, and the harness's exit.
    assert!(feed(&mut app, 2).is_empty());
    assert!(lines.next().is_none(), "every recorded line was fed");
    let effects = app.update(Msg::Harness(HarnessEvent::Exited(HarnessExit {
        success: true,
        description: "exit status: 0".into(),
    })));
    assert_eq!(effects, [Effect::LoadRuns], "the finished run is listed");
    let run = app.eval.run.as_ref().unwrap();
    assert_eq!(run.progress.as_ref().unwrap().done, 20);
    assert_eq!(run.report.as_ref().unwrap().score.score, 1.0526315789473684);
    let screen = render(&app, 80, 24);
    for expected in [
        "cartpole-balance · heuristic · finished",
        "20/20 rollouts",
        "score 1.0526   status completed",
        "trajectory verified · 43 events",
    ] {
        assert!(screen.contains(expected), "{expected:?} missing:\n{screen}");
    }
    insta::assert_snapshot!("eval_recorded_report_80x24", screen);
}

/// A state dir whose runs cannot be listed says so, on the status line and in the runs view,
/// instead of showing no runs.
#[test]
fn a_runs_dir_that_cannot_be_read_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    // A file where the runs folder should be.
    std::fs::write(dir.path().join("runs"), "").unwrap();
    let mut app = App::new(
        theme::load_all(None).unwrap(),
        0,
        super::bindings::KeyMap::bundled(),
        "x".into(),
        Seeds::new(1),
    );
    assert_eq!(app.update(key(KeyCode::Char('4'))), [Effect::LoadRuns]);
    app.update(super::effects::list_runs(dir.path()));
    let note = app.note.as_ref().expect("a note on the status line");
    assert!(note.is_error, "{note:?}");
    assert!(note.text.starts_with("cannot list the runs in"), "{note:?}");
    // The runs view keeps showing it after the note is gone.
    app.note = None;
    let screen = render(&app, 120, 24);
    assert!(screen.contains("cannot list the runs in"), "{screen}");
    assert!(!screen.contains("No runs yet"), "{screen}");
}

#[test]
fn the_header_says_each_connection_state() {
    let mut app = App::new(
        theme::load_all(None).unwrap(),
        0,
        super::bindings::KeyMap::bundled(),
        "http://127.0.0.1:50051".into(),
        Seeds::new(1),
    );
    let mut rows = String::new();
    for state in [
        Connection::Connecting,
        Connection::Connected,
        Connection::Lost {
            error: "connection refused".into(),
        },
        Connection::Reconnected {
            at: std::time::Instant::now(),
        },
    ] {
        app.connection = state;
        rows.push_str(render(&app, 100, 24).lines().next().unwrap());
        rows.push('\n');
    }
    insta::assert_snapshot!("header_connection_states_100", rows);
}

/// `ale serve` as a child process on `listen`; returns it and its agent channel's URL.
fn spawn_evaluator(state: &std::path::Path, listen: &str) -> (std::process::Child, String) {
    use std::io::BufRead;
    let mut child = std::process::Command::new(ale_exe())
        .args(["serve", "--state-dir"])
        .arg(state)
        .args(["--listen", listen])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    for line in stdout.lines() {
        let line = line.unwrap();
        if let Some(url) = line.trim().strip_prefix("agent channel:") {
            return (child, url.trim().to_string());
        }
    }
    let status = child.wait();
    panic!("ale serve ended before it was ready: {status:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_evaluator_shows_as_lost_with_no_key_pressed_and_its_return_restores_practice() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let (mut server, endpoint) = spawn_evaluator(&state, "127.0.0.1:0");
    let app = App::new(
        theme::load_all(None).unwrap(),
        0,
        super::bindings::KeyMap::bundled(),
        endpoint.clone(),
        Seeds::new(1),
    );
    let mut console = Console::new(app, endpoint.clone(), state.clone(), ale_exe());
    assert!(
        console
            .settle(Duration::from_secs(10), |a| !a.tasks.list.is_empty()
                && a.connection == Connection::Connected)
            .await
    );
    // Open a practice env on the first task and note its seed.
    console.handle(key(KeyCode::Enter));
    assert!(
        console
            .settle(Duration::from_secs(10), |a| a
                .practice
                .observation
                .is_some())
            .await
    );
    let task = console.app.practice.spec.as_ref().unwrap().task.id.clone();
    let seed = console.app.practice.seed.unwrap();

    server.kill().unwrap();
    server.wait().unwrap();
    let started = std::time::Instant::now();
    assert!(
        console
            .settle(Duration::from_secs(5), |a| matches!(
                a.connection,
                Connection::Lost { .. }
            ))
            .await,
        "no key pressed, yet the header must change"
    );
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(render(&console.app, 100, 24).contains("connection lost, retrying"));

    // The evaluator comes back on the same address.
    let listen = endpoint.trim_start_matches("http://").to_string();
    let (mut server, _) = spawn_evaluator(&state, &listen);
    assert!(
        console
            .settle(Duration::from_secs(10), |a| matches!(
                a.connection,
                Connection::Reconnected { .. }
            ) && a
                .practice
                .observation
                .is_some())
            .await
    );
    let practice = &console.app.practice;
    assert!(practice.recreated, "marked as a new env");
    assert_eq!(practice.spec.as_ref().unwrap().task.id, task);
    assert_eq!(practice.seed, Some(seed), "reset on the last seed");
    let screen = render(&console.app, 100, 24);
    assert!(screen.contains("reconnected"), "{screen}");
    assert!(screen.contains("new env after reconnect"), "{screen}");
    server.kill().unwrap();
    server.wait().unwrap();
}

/// Two real runs of cartpole-balance, the heuristic's and the random policy's, marked in the
/// runs view and compared side by side.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_runs_of_one_task_compare_side_by_side() {
    let mut f = fixture_with_seeds(Box::new(CountingSeeds::default())).await;
    select_task(&mut f, "cartpole-balance");
    f.press(&[KeyCode::Char('3')]).await;
    let heuristic = f.run_official().await;
    // The agent below the heuristic is the random policy.
    f.press(&[KeyCode::Down]).await;
    let random = f.run_official().await;
    assert!(random.score.score < heuristic.score.score);

    f.press(&[KeyCode::Char('4')]).await;
    assert!(
        f.console
            .settle(Duration::from_secs(10), |a| a.runs.entries.len() == 2)
            .await
    );
    // Newest first: mark the heuristic's run (below) first, so it is shown on the left.
    f.press(&[KeyCode::Down, KeyCode::Char('m'), KeyCode::Up])
        .await;
    f.press(&[KeyCode::Char('c')]).await;
    let note = f.console.app.note.clone().unwrap();
    assert!(
        note.is_error && note.text.contains("1 of 2 runs marked"),
        "{note:?}"
    );
    f.press(&[KeyCode::Char('m')]).await;
    let list = f.screen(120, 24);
    assert!(list.contains("│  1 "), "{list}");
    assert!(list.contains("│▸ 2 "), "{list}");
    f.press(&[KeyCode::Char('c')]).await;
    assert!(
        f.console
            .settle(Duration::from_secs(30), |a| a.runs.comparison.is_some())
            .await
    );
    let both = f.console.app.runs.comparison.as_deref().unwrap();
    let (left, right) = (both.left.path.clone(), both.right.path.clone());
    assert_eq!(both.left.run_id(), &heuristic.run_id);
    assert_eq!(both.right.run_id(), &random.run_id);
    assert!(both.left.is_verified() && both.right.is_verified());
    assert_eq!(f.console.app.context(), super::bindings::Context::Compare);
    let note = f.console.app.note.clone().unwrap();
    assert_eq!(note.text, "two runs of cartpole-balance: both verified");
    // The footer then shows the comparison's keys.
    f.console.app.note = None;

    let screen = f.screen(160, 48);
    for expected in [
        &format!("score {:.4}", heuristic.score.score),
        &format!("score {:.4}", random.score.score),
        "ale agent --policy heuristic",
        "ale agent --policy random",
        "sandbox sandboxed",
        "verify  ok",
        "evaluator signature ok",
        "harness signature ok",
        "unpaired (each run drew its own seeds)",
        "Esc back",
    ] {
        assert!(screen.contains(expected), "{expected:?} missing:\n{screen}");
    }
    // Both charts on one scale: the y axis's top label appears once per chart.
    let top = screen
        .lines()
        .find(|l| l.contains("│550│"))
        .unwrap_or_else(|| panic!("no shared axis top:\n{screen}"));
    assert_eq!(top.matches("│550│").count(), 2, "{top}");
    insta::assert_snapshot!("compare_160x48", screen);
    insta::assert_snapshot!("compare_80x24", f.screen(80, 24));
    for (w, h) in [(30, 8), (12, 3), (1, 1)] {
        f.screen(w, h);
    }

    // The comparison plot, as `ale plot --compare` draws it.
    let out = tempfile::tempdir().unwrap();
    match super::effects::export_compare_plot(both, ale_harness::plot::PlotFormat::Svg, out.path())
    {
        Msg::Exported { path, result } => {
            result.unwrap();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            let ids = [heuristic.run_id.short(), random.run_id.short()];
            assert_eq!(name, format!("compare-{}-{}.svg", ids[0], ids[1]));
            let svg = std::fs::read_to_string(&path).unwrap();
            for agent in ["policy heuristic (", "policy random ("] {
                assert!(svg.contains(agent), "{agent} not in {name}");
            }
        }
        other => panic!("{other:?}"),
    }

    // Esc goes back to the list, marks kept.
    f.press(&[KeyCode::Esc]).await;
    assert!(f.console.app.runs.comparison.is_none());
    assert_eq!(f.console.app.runs.marked.len(), 2);

    // b: the leaderboard of the selected run's task, each agent's best verified run first.
    f.press(&[KeyCode::Char('b')]).await;
    assert!(
        f.console
            .settle(Duration::from_secs(30), |a| a.runs.leaderboard.is_some())
            .await
    );
    assert_eq!(
        f.console.app.context(),
        super::bindings::Context::Leaderboard
    );
    let board = f.console.app.runs.leaderboard.clone().unwrap();
    let agents: Vec<&str> = board.standings.iter().map(|s| s.agent.as_str()).collect();
    assert_eq!(agents, ["policy heuristic", "policy random"]);
    assert!(board.left_out.is_empty());
    f.console.app.note = None;
    let screen = f.screen(120, 24);
    for expected in [
        "Leaderboard · cartpole-balance (verified runs only)",
        &format!("{:.3} [", heuristic.score.score),
        "Esc back",
    ] {
        assert!(screen.contains(expected), "{expected:?} missing:\n{screen}");
    }
    f.press(&[KeyCode::Esc]).await;
    assert!(f.console.app.runs.leaderboard.is_none());

    // A run without its report still compares on its trajectory, saying what it lacks.
    std::fs::remove_file(right.join("report.json")).unwrap();
    f.press(&[KeyCode::Char('r'), KeyCode::Char('c')]).await;
    assert!(
        f.console
            .settle(Duration::from_secs(30), |a| a.runs.comparison.is_some())
            .await
    );
    let screen = f.screen(160, 48);
    for expected in ["no report.json", "not scored", "verify  ok"] {
        assert!(screen.contains(expected), "{expected:?} missing:\n{screen}");
    }
    insta::assert_snapshot!("compare_without_report_160x48", screen);

    // A run whose records do not verify (here, a line added after the signed head) still
    // compares, on its report, marked beside its score; its sandbox is only the report's word.
    f.press(&[KeyCode::Esc]).await;
    let mut trajectory = std::fs::OpenOptions::new()
        .append(true)
        .open(left.join("trajectory.jsonl"))
        .unwrap();
    std::io::Write::write_all(&mut trajectory, b"{\"forged\":true}\n").unwrap();
    f.press(&[KeyCode::Char('c')]).await;
    assert!(
        f.console
            .settle(Duration::from_secs(30), |a| a.runs.comparison.is_some())
            .await
    );
    let screen = f.screen(120, 40);
    for expected in [
        "score 1.0526 · NOT VERIFIED",
        "(the report says;",
        "verify  BROKEN",
    ] {
        assert!(screen.contains(expected), "{expected:?} missing:\n{screen}");
    }
}

/// Marking runs of two tasks says so at once, and comparing them is refused with a note
/// naming both tasks; nothing is read.
#[test]
fn marking_runs_of_two_tasks_refuses_to_compare_them() {
    use ale_harness::runs::{RunEntry, RunSummary};
    let mut app = App::new(
        theme::load_all(None).unwrap(),
        0,
        super::bindings::KeyMap::bundled(),
        "x".into(),
        Seeds::new(1),
    );
    app.update(key(KeyCode::Char('4')));
    let entry = |id: &str, task: &str| RunEntry {
        dir: PathBuf::from("/nonexistent/runs").join(id),
        run_id: id.into(),
        modified: std::time::SystemTime::UNIX_EPOCH,
        summary: RunSummary::Unreported {
            task_id: task.into(),
            status: "completed (not scored)".into(),
        },
    };
    app.update(Msg::Runs(Ok(vec![
        entry("run-aaaaaaaa", "cartpole-balance"),
        entry("run-bbbbbbbb", "acrobot-swingup"),
        entry("run-cccccccc", "cartpole-balance"),
    ])));
    assert!(app.update(key(KeyCode::Char('m'))).is_empty());
    assert!(!app.note.as_ref().unwrap().is_error);
    app.update(key(KeyCode::Down));
    app.update(key(KeyCode::Char('m')));
    let refusal =
        "only runs of one task compare: run 1 is of cartpole-balance, run 2 of acrobot-swingup";
    let note = app.note.clone().unwrap();
    assert!(note.is_error && note.text.starts_with(refusal), "{note:?}");
    assert_eq!(app.update(key(KeyCode::Char('c'))), []);
    let note = app.note.clone().unwrap();
    assert!(note.is_error && note.text.starts_with(refusal), "{note:?}");
    assert!(app.runs.comparison.is_none());
    let screen = render(&app, 120, 24);
    assert!(
        screen.contains("│  1 ") && screen.contains("│▸ 2 "),
        "{screen}"
    );

    // A third mark replaces the oldest: two runs of cartpole-balance, compared.
    app.update(key(KeyCode::Down));
    app.update(key(KeyCode::Char('m')));
    assert_eq!(
        app.runs.marked,
        [
            PathBuf::from("/nonexistent/runs/run-bbbbbbbb"),
            PathBuf::from("/nonexistent/runs/run-cccccccc")
        ]
    );
    app.update(key(KeyCode::Up));
    app.update(key(KeyCode::Up));
    app.update(key(KeyCode::Char('m')));
    assert_eq!(
        app.note.as_ref().unwrap().text,
        "marked run-aaaaaaaa (run run-bbbbbbbb unmarked: two at most): two runs marked, ready to \
         compare"
    );
    assert_eq!(
        app.update(key(KeyCode::Char('c'))),
        [Effect::CompareRuns {
            left: PathBuf::from("/nonexistent/runs/run-cccccccc"),
            right: PathBuf::from("/nonexistent/runs/run-aaaaaaaa"),
        }]
    );
    // Pressed again while the runs are read, nothing more is asked for.
    assert_eq!(app.update(key(KeyCode::Char('c'))), []);
    // Their folders are not there: the note says what could not be read.
    app.update(super::effects::compare_runs(
        std::path::Path::new("/nonexistent"),
        &PathBuf::from("/nonexistent/runs/run-cccccccc"),
        &PathBuf::from("/nonexistent/runs/run-aaaaaaaa"),
    ));
    let note = app.note.clone().unwrap();
    assert!(
        note.is_error
            && note
                .text
                .contains("/nonexistent/runs/run-cccccccc: No such file"),
        "{note:?}"
    );
    assert!(app.runs.comparison.is_none());

    // An answer for runs no longer asked to compare (Esc pressed, marks changed) is dropped.
    app.update(key(KeyCode::Char('c')));
    app.update(key(KeyCode::Esc));
    app.note = None;
    app.update(super::effects::compare_runs(
        std::path::Path::new("/nonexistent"),
        &PathBuf::from("/nonexistent/runs/run-cccccccc"),
        &PathBuf::from("/nonexistent/runs/run-aaaaaaaa"),
    ));
    assert!(app.note.is_none(), "{:?}", app.note);
}

/// Types `text` as keys, then Enter.
fn typed(text: &str) -> Vec<KeyCode> {
    let mut keys: Vec<KeyCode> = text.chars().map(KeyCode::Char).collect();
    keys.push(KeyCode::Enter);
    keys
}

/// The eval view offers an agent command's `--workdir` and `--expose`; what is typed there is
/// what the harness is started with.
#[test]
fn the_eval_view_takes_a_commands_workdir_and_exposed_folders() {
    let mut app = eval_app_on_cartpole();
    // The command's folders show once a command is chosen.
    assert!(!render(&app, 80, 24).contains("workdir:"));
    app.update(key(KeyCode::Down));
    app.update(key(KeyCode::Down));
    let screen = render(&app, 80, 24);
    assert!(screen.contains("workdir: (w to type one)"), "{screen}");
    let mut keys = vec![KeyCode::Char('w')];
    keys.extend(typed("/srv/agent"));
    keys.push(KeyCode::Char('e'));
    keys.extend(typed("/opt/py /data/set"));
    keys.push(KeyCode::Char('c'));
    keys.extend(typed("python3 agent.py"));
    for code in keys {
        app.update(key(code));
    }
    insta::assert_snapshot!("eval_command_folders_80x24", render(&app, 80, 24));
    let effects = app.update(key(KeyCode::Enter));
    assert_eq!(
        effects,
        [Effect::StartHarness {
            task_id: "cartpole-balance".into(),
            agent: Agent::Command(super::eval::AgentCommand {
                line: "python3 agent.py".into(),
                workdir: Some("/srv/agent".into()),
                expose: vec!["/opt/py".into(), "/data/set".into()],
            }),
        }]
    );
}

/// An agent command that fails: the eval view shows the end of its agent.log, read from the
/// run's folder.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_agent_shows_the_end_of_its_log() {
    let mut f = fixture().await;
    select_task(&mut f, "cartpole-balance");
    f.press(&[KeyCode::Char('3'), KeyCode::Char('c')]).await;
    let mut keys: Vec<KeyCode> = Vec::new();
    keys.extend(typed(
        "echo loading the model; echo 'KeyError: weights' >&2; exit 3",
    ));
    f.press(&keys).await;
    f.press(&[KeyCode::Enter]).await;
    let done = f
        .console
        .settle(Duration::from_secs(60), |a| {
            a.eval
                .run
                .as_ref()
                .is_some_and(|r| r.finished.is_some() && r.agent_log.is_some())
        })
        .await;
    let run = f.console.app.eval.run.as_ref().unwrap();
    assert!(done, "no agent.log read; harness said: {:?}", run.output);
    let tail = run.agent_log.clone().unwrap().unwrap();
    assert_eq!(tail, ["loading the model", "KeyError: weights"], "{tail:?}");
    let screen = f.screen(100, 40);
    assert!(screen.contains("the end of its agent.log"), "{screen}");
    assert!(screen.contains("KeyError: weights"), "{screen}");
}
