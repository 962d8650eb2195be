//! A session's hosted sandbox, made to run when something of the session needs it: a hosted agent's turn
//! (the turn driver), or `land`'s checks when no runner of the workspace is online (they run in the
//! session's sandbox, in a fresh checkout of its lane). The container itself is the platform's
//! ([`crate::cx::Sandboxes`]).

use crate::cx::{SandboxBoot, Sandboxes};
use crate::rules::harness::Harness;
use crate::rules::ids;
use crate::rules::placement;
use crate::rules::targets::Provider;
use crate::store::{self, Sql};

/// The session a sandbox is for: whose it is, what its agent is, and the hosts its agent added.
pub struct For<'a> {
    pub workspace_id: &'a str,
    pub session_id: &'a str,
    pub harness: &'a str,
    pub egress: &'a [String],
}

/// Boots (or wakes) the session's sandbox unless it runs: registers the session's hosted runner with a
/// fresh token (only its hash is kept; the token goes to the sandbox alone), and hands the sandbox what
/// it may reach: the defaults for the harness and the workspace's targets, and the agent's own hosts.
/// `true` when it booted.
pub async fn ensure(db: &dyn Sql, sandboxes: &dyn Sandboxes, s: For<'_>, now_ms: i64) -> Result<bool, String> {
    sandboxes.available()?;
    if sandboxes.running(s.session_id).await? {
        return Ok(false);
    }
    let token = ids::new_secret("srt_");
    let name = format!("sandbox of {}", s.session_id);
    let (ws, sid) = (s.workspace_id, s.session_id);
    store::runners::register_hosted(db, &ids::new_id("run"), ws, sid, &name, &ids::hash_secret(&token), now_ms)
        .await
        .map_err(|e| e.to_string())?;
    let harness = Harness::from_word(s.harness).unwrap_or(Harness::Runner);
    let connectors = store::connectors::list(db, ws).await.map_err(|e| e.to_string())?;
    let providers: Vec<Provider> = connectors.iter().filter_map(|c| Provider::from_word(&c.provider)).collect();
    let boot = SandboxBoot {
        session_id: sid.to_owned(),
        workspace_id: ws.to_owned(),
        runner_token: token,
        egress: placement::egress(harness, &providers, s.egress),
        max_run_s: placement::MAX_RUN_S,
    };
    sandboxes.boot(boot).await.map(|()| true)
}
