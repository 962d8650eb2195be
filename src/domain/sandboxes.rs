//! A session's hosted sandbox, made to run when something of the session needs it: a hosted agent's turn
//! (the turn driver), or `land`'s checks and a goal's command criteria when no person's runner of the
//! workspace is online (they run in the session's sandbox, in a fresh checkout of its lane). The container
//! itself is the platform's ([`crate::cx::Sandboxes`]).

use crate::cx::{Env, SandboxBoot};
use crate::rules::harness::Harness;
use crate::rules::ids;
use crate::rules::placement;
use crate::rules::targets::Provider;
use crate::store::{self, sandboxes::Ended, usage::Hold};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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

/// Boots (or wakes) the session's sandbox unless it runs or the workspace is at its cap: settles the
/// session's boot before (asleep now), holds an hour of sandbox time from the wallet like a model call,
/// registers the session's hosted runner with a fresh token (only its hash is kept; the token goes to the
/// sandbox alone), and hands the sandbox what it may reach: the defaults for the harness and the
/// workspace's targets, and the agent's own hosts.
pub async fn ensure(env: &Env, s: For<'_>, now_ms: i64) -> Result<Ensured, String> {
    let (db, sandboxes) = (&env.db, &*env.sandboxes);
    sandboxes.available()?;
    if sandboxes.running(s.session_id).await? {
        return Ok(Ensured::Running);
    }
    let (ws, sid) = (s.workspace_id, s.session_id);
    let cap = env.config.sandboxes_per_workspace.unwrap_or(DEFAULT_PER_WORKSPACE);
    let busy = store::runners::sandboxes_busy(db, ws, sid, now_ms - BUSY_MS).await.map_err(db_err)?;
    if busy >= i64::from(cap) {
        return Ok(Ensured::Full { cap });
    }
    settle(env, Some(sid), Ended::Asleep, now_ms).await?;
    let boot_id = ids::new_id("sbx");
    let price = env.config.sandbox_cents_per_hour;
    if price > 0 {
        let cents = hold_cents(price, placement::MAX_RUN_S);
        if let Hold::Short { balance_cents } =
            store::usage::hold(db, &boot_id, ws, cents, now_ms).await.map_err(db_err)?
        {
            return Err(format!(
                "the wallet holds {balance_cents} cents, and a sandbox is held {cents} before it starts (its time \
                 budget of {} minutes at {price} cents an hour, charged per second); add credit to continue",
                placement::MAX_RUN_S / 60
            ));
        }
    }
    let harness = Harness::from_word(s.harness).unwrap_or(Harness::Runner);
    let connectors = store::connectors::list(db, ws).await.map_err(db_err)?;
    let providers: Vec<Provider> = connectors.iter().filter_map(|c| Provider::from_word(&c.provider)).collect();
    let egress = placement::egress(harness, &providers, s.egress);
    store::sandboxes::started(db, &boot_id, ws, sid, &egress, now_ms).await.map_err(db_err)?;
    let token = ids::new_secret("srt_");
    let name = format!("sandbox of {sid}");
    store::runners::register_hosted(db, &ids::new_id("run"), ws, sid, &name, &ids::hash_secret(&token), now_ms)
        .await
        .map_err(db_err)?;
    let env = placement::ModelApi::of(harness).map(|api| api.cli_env(&token)).unwrap_or_default();
    let boot = SandboxBoot {
        session_id: sid.to_owned(),
        workspace_id: ws.to_owned(),
        runner_token: token,
        egress,
        max_run_s: placement::MAX_RUN_S,
        env,
    };
    match sandboxes.boot(boot).await {
        Ok(()) => Ok(Ensured::Booted),
        Err(why) => {
            // Nothing ran: the boot ends costing nothing, and its hold goes back.
            let open = store::sandboxes::Open { boot_id, workspace_id: ws.to_owned() };
            store::sandboxes::settle(db, &open, Ended::Failed, Some(now_ms), price).await.map_err(db_err)?;
            Err(why)
        }
    }
}

/// What is held before a sandbox starts: its whole time budget at the price, in cents, rounded up.
pub fn hold_cents(cents_per_hour: i64, seconds: i64) -> i64 {
    (cents_per_hour.max(0) * seconds.max(0) + 3599) / 3600
}

/// How long a sandbox's runner may go unheard before its boot counts as over: an idle one calls every 25 s,
/// and one still starting has had minutes.
const GONE_MS: i64 = 5 * 60_000;

/// Ends and charges the open boots of a session (`Some`) now that it is asleep or stopped, or (`None`, the
/// cron) of every sandbox unheard for [`GONE_MS`]: an asleep one ran until its runner's last call.
pub async fn settle(env: &Env, session_id: Option<&str>, ended: Ended, now_ms: i64) -> Result<(), String> {
    // A session's own are all ended now (its runner may have called a moment after this request began).
    let seen_before = if session_id.is_some() { i64::MAX } else { now_ms - GONE_MS };
    let at = (ended != Ended::Asleep).then_some(now_ms);
    for boot in store::sandboxes::open(&env.db, session_id, seen_before).await.map_err(db_err)? {
        store::sandboxes::settle(&env.db, &boot, ended, at, env.config.sandbox_cents_per_hour).await.map_err(db_err)?;
    }
    Ok(())
}

/// A session's sandbox as a person sees it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SandboxView {
    /// `starting` (its runner has not called in yet), `running`, `asleep` (its runner exited after its idle
    /// time, or has not been heard from for a minute), `stopped` (with its session) or `failed` (it did
    /// not start).
    pub state: String,
    /// The hosts it may reach besides this deployment (its newest boot's egress list).
    pub egress: Vec<String>,
    /// Its newest boots, newest first: its log.
    pub boots: Vec<BootLine>,
}

/// One start of a sandbox, as its log shows it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct BootLine {
    pub started_ms: i64,
    /// When its runner first called in; none while it starts (or if it never did).
    pub ready_ms: Option<i64>,
    /// How it ended (`asleep`, `stopped`, `failed`) and its charge; none while it runs.
    pub ended: Option<String>,
    pub cents: Option<i64>,
    /// Its running time: until it ended, or so far (until its runner's last call).
    pub seconds: i64,
}

/// The session's sandbox, or `None` when it never started one.
pub async fn view(db: &dyn store::Sql, session_id: &str, now_ms: i64) -> Result<Option<SandboxView>, store::DbError> {
    let (boots, egress) =
        futures::try_join!(store::sandboxes::recent(db, session_id, 5), store::sandboxes::egress(db, session_id))?;
    let Some(newest) = boots.first() else { return Ok(None) };
    let state = match (&newest.ended, newest.ready_ms) {
        (Some(ended), _) => ended.clone(),
        (None, None) => "starting".to_owned(),
        (None, Some(_)) if now_ms - newest.seen_ms < BUSY_MS => "running".to_owned(),
        (None, Some(_)) => "asleep".to_owned(),
    };
    Ok(Some(SandboxView {
        state,
        egress,
        boots: boots
            .into_iter()
            .map(|b| BootLine {
                started_ms: b.started_ms,
                ready_ms: b.ready_ms,
                ended: b.ended,
                seconds: b.seconds,
                cents: b.cents,
            })
            .collect(),
    }))
}

fn db_err(e: store::DbError) -> String {
    e.to_string()
}
