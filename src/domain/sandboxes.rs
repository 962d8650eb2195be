//! A session's hosted sandbox, made to run when something of the session needs it: a hosted agent's turn
//! (the turn driver), or `land`'s checks and a goal's command criteria when no person's runner of the
//! workspace is online (they run in the session's sandbox, in a fresh checkout of its lane). The container
//! itself is the platform's ([`crate::cx::Sandboxes`]).

use crate::cx::{Env, SandboxBoot};
use crate::rules::harness::Harness;
use crate::rules::ids;
use crate::rules::placement;
use crate::rules::targets::Provider;
use crate::store;

/// Sandboxes one workspace runs at once unless `SANDBOXES_PER_WORKSPACE` says otherwise.
pub const DEFAULT_PER_WORKSPACE: u32 = 5;

/// How often a hosted turn that waits is looked at again: its sandbox may have gone to sleep just as the
/// turn came, or a place under the cap may have freed.
pub const RECHECK_MS: i64 = 15_000;

/// How long after its last call a sandbox still counts as running, for the cap.
const BUSY_MS: i64 = 60_000;

/// The session a sandbox is for: whose it is, what its agent is, and the hosts its agent added.
pub struct For<'a> {
    pub workspace_id: &'a str,
    pub session_id: &'a str,
    pub harness: &'a str,
    pub egress: &'a [String],
}

/// What [`ensure`] found or did.
#[derive(Debug, PartialEq)]
pub enum Ensured {
    /// It ran already.
    Running,
    /// It was asleep (or never started) and now starts.
    Booted,
    /// The workspace runs as many sandboxes as it may: this one waits for one to stop.
    Full { cap: u32 },
}

impl Ensured {
    /// Why the work waits, for a person, when the workspace is at its cap.
    pub fn full(cap: u32) -> String {
        format!("waiting for a sandbox: the workspace runs its {cap} at once (SANDBOXES_PER_WORKSPACE), and the next one starts when one stops")
    }
}

/// Boots (or wakes) the session's sandbox unless it runs or the workspace is at its cap: registers the
/// session's hosted runner with a fresh token (only its hash is kept; the token goes to the sandbox alone),
/// and hands the sandbox what it may reach: the defaults for the harness and the workspace's targets, and
/// the agent's own hosts.
pub async fn ensure(env: &Env, s: For<'_>, now_ms: i64) -> Result<Ensured, String> {
    let (db, sandboxes) = (&env.db, &*env.sandboxes);
    sandboxes.available()?;
    if sandboxes.running(s.session_id).await? {
        return Ok(Ensured::Running);
    }
    let (ws, sid) = (s.workspace_id, s.session_id);
    let cap = env.config.sandboxes_per_workspace.unwrap_or(DEFAULT_PER_WORKSPACE);
    let busy = store::runners::sandboxes_busy(db, ws, sid, now_ms - BUSY_MS).await.map_err(|e| e.to_string())?;
    if busy >= i64::from(cap) {
        return Ok(Ensured::Full { cap });
    }
    let token = ids::new_secret("srt_");
    let name = format!("sandbox of {sid}");
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
    sandboxes.boot(boot).await.map(|()| Ensured::Booted)
}
