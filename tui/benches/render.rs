//! Frame render time of the practice view with a long history.
//!
//!     cargo bench -p ale-tui --bench render
//!
//! The practice view for CartPole after 100,000 steps and 5,000 episodes (a long auto-play
//! session), drawn into ratatui's TestBackend at 80×24 and 160×48.

use std::hint::black_box;

use ale_client::EnvSpec;
use ale_tui::console::app::App;
use ale_tui::console::practice::EpisodeEntry;
use ale_tui::console::seeds::Seeds;
use ale_tui::console::view::View;
use ale_tui::console::{screen, theme};
use criterion::{Criterion, criterion_group, criterion_main};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

fn practice_app(steps: usize) -> App {
    let task = ale_server::TaskRegistry::builtin(&ale_sims::catalog())
        .unwrap()
        .get("cartpole-balance")
        .unwrap()
        .spec()
        .unwrap();
    let mut sim: Box<dyn ale_sim::Sim> = ale_sims::catalog()
        .find("CartPole-v1")
        .unwrap()
        .build_plain(500)
        .unwrap();
    sim.reset(7).unwrap();
    let mut app = App::new(
        theme::load_all(None).unwrap(),
        0,
        ale_tui::console::bindings::KeyMap::bundled(),
        "embedded 127.0.0.1:50051".into(),
        Seeds::new(7),
    );
    app.view = View::Practice;
    let p = &mut app.practice;
    p.spec = Some(EnvSpec {
        observation_space: sim.observation_space().clone(),
        action_space: sim.action_space().clone(),
        task,
        official: false,
    });
    p.observation = Some(sim.observation().clone());
    p.seed = Some(7);
    p.episode = (steps / 20) as u32;
    p.step = 17;
    // Rewards with some structure, so downsampling has work to do.
    p.rewards = (0..steps)
        .map(|i| {
            if i % 20 == 19 {
                0.0
            } else {
                1.0 + (i % 7) as f64 * 0.01
            }
        })
        .collect();
    p.history = (0..steps / 20)
        .map(|i| EpisodeEntry {
            number: i as u32 + 1,
            seed: i as u64,
            steps: 20,
            episode_return: 20.0 + (i % 13) as f64,
            terminated: true,
        })
        .collect();
    app
}

fn render(c: &mut Criterion) {
    let app = practice_app(100_000);
    for (w, h) in [(80u16, 24u16), (160, 48)] {
        let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
        c.bench_function(&format!("practice view, 100k steps, {w}x{h}"), |b| {
            b.iter(|| {
                terminal.draw(|f| screen::draw(f, black_box(&app))).unwrap();
            })
        });
    }
}

criterion_group!(benches, render);
criterion_main!(benches);
