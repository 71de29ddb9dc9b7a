//! The health watcher: asks the evaluator `grpc.health.v1.Health/Check` twice a second, so the
//! console notices a lost evaluator (and its return) with no key pressed and no request in
//! flight. It reports changes only.

use std::time::Duration;

use ale_client::Client;
use tokio::sync::mpsc::UnboundedSender;

use super::message::Msg;

/// How often the evaluator is asked.
pub const EVERY: Duration = Duration::from_millis(500);
/// How long one check (connecting included) may take before the evaluator counts as lost.
const PATIENCE: Duration = Duration::from_secs(1);

pub async fn watch(endpoint: String, messages: UnboundedSender<Msg>) {
    let mut client: Option<Client> = None;
    let mut last: Option<Result<(), String>> = None;
    loop {
        let now = check(&endpoint, &mut client).await;
        if now.is_err() {
            // A fresh connection next time: the old one may point at a dead process.
            client = None;
        }
        if last.as_ref() != Some(&now) {
            if messages.send(Msg::Health(now.clone())).is_err() {
                return; // the console has stopped
            }
            last = Some(now);
        }
        tokio::time::sleep(EVERY).await;
    }
}

async fn check(endpoint: &str, client: &mut Option<Client>) -> Result<(), String> {
    let answered = tokio::time::timeout(PATIENCE, async {
        let c = match client {
            Some(c) => c.clone(),
            None => {
                let c = Client::connect(endpoint).await.map_err(|e| e.to_string())?;
                *client = Some(c.clone());
                c
            }
        };
        c.serving().await.map_err(|e| e.to_string())
    })
    .await;
    match answered {
        Ok(Ok(true)) => Ok(()),
        Ok(Ok(false)) => Err("the evaluator says it is not serving".into()),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(format!("no answer to a health check within {PATIENCE:?}")),
    }
}
