//! `ale bench console`: auto-play through the real gRPC client while the event loop redraws
//! the practice view.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::bail;

pub(super) fn bench_console(seconds: f64) -> anyhow::Result<ExitCode> {
    use crate::console::app::App;
    use crate::console::message::Msg;
    use crate::console::practice::{Player, SPEEDS};
    use crate::console::seeds::Seeds;
    use crate::console::{Console, event_loop, theme};
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async {
        let dir = std::env::temp_dir().join(format!("ale-bench-console-{}", std::process::id()));
        let evaluator = ale_server::Evaluator::new(ale_server::TaskRegistry::builtin(crate::sim_catalog())?, &dir)?;
        let server = ale_server::serve::start(std::sync::Arc::new(evaluator), "127.0.0.1:0".parse()?).await?;
        let app = App::new(theme::load_all(None)?, 0, crate::console::bindings::KeyMap::bundled(), "bench".into(), Seeds::from_clock());
        let mut console = Console::new(app, server.agent_endpoint(), dir.clone(), std::env::current_exe()?);
        // Tasks view → cartpole-balance → practice.
        let cartpole = loop {
            if let Some(i) = console.app.tasks.list.iter().position(|t| t.id == "cartpole-balance") {
                break i;
            }
            match console.next_message().await {
                Some(msg) => console.handle(msg),
                None => bail!("the console's worker stopped"),
            }
        };
        console.app.tasks.cursor = cartpole;
        console.handle(Msg::Key(crossterm::event::KeyEvent::from(crossterm::event::KeyCode::Enter)));
        while console.app.practice.observation.is_none() {
            match console.next_message().await {
                Some(msg) => console.handle(msg),
                None => bail!("the console's worker stopped"),
            }
        }
        console.app.practice.player = Player::Policy(ale_client::policy::PolicyKind::Heuristic);
        console.app.practice.speed = *SPEEDS.last().unwrap_or(&5000);
        console.app.practice.playing = true;
        let mut terminal = Terminal::new(TestBackend::new(160, 48))?;
        let steps_before = console.app.practice.rewards.len();
        let started = Instant::now();
        let duration = Duration::from_secs_f64(seconds);
        let _ = tokio::time::timeout(duration, event_loop(&mut terminal, &mut console, futures::stream::pending())).await;
        let elapsed = started.elapsed().as_secs_f64();
        let steps = console.app.practice.rewards.len() - steps_before;
        println!("| auto-play speed setting | steps/s through gRPC | frames/s (160×48) | mean draw time | episodes |");
        println!("|---:|---:|---:|---:|---:|");
        println!(
            "| {} | {:.0} | {:.1} | {:.2} ms | {} |",
            console.app.practice.speed,
            steps as f64 / elapsed,
            console.frames as f64 / elapsed,
            console.draw_time.as_secs_f64() * 1e3 / console.frames.max(1) as f64,
            console.app.practice.history.len()
        );
        server.shutdown().await;
        let _ = std::fs::remove_dir_all(&dir);
        Ok(ExitCode::SUCCESS)
    })
}
