//! Hosted sandboxes on Cloudflare Containers ([`crate::cx::Sandboxes`]): each hosted session's `Sandbox`
//! object ([`crate::objects::sandbox`]), one small JSON call each.

use crate::cx::{SandboxBoot, Sandboxes};
use crate::rules::placement::SANDBOX_ORIGIN;
use futures::future::LocalBoxFuture;
use serde::{Deserialize, Serialize};
use worker::{Env, Method, ObjectNamespace, Request, RequestInit};

/// A call to a sandbox object ([`crate::objects::sandbox`], as it is sent).
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "call", rename_all = "snake_case")]
pub enum SandboxCall {
    /// Starts the container unless it runs, with these environment variables, and (re)sets its time budget.
    Boot { vars: Vec<(String, String)>, max_run_s: i64 },
    /// Stops the container.
    Stop,
    /// Whether it runs.
    State,
}

/// A sandbox object's answer.
#[derive(Debug, Serialize, Deserialize)]
pub struct SandboxAnswer {
    /// The container was asleep (or never started) and this call started it.
    pub woke: bool,
    pub running: bool,
}

/// How long a sandbox's runner waits for another turn before it exits and the container sleeps, unless
/// `SANDBOX_IDLE_S` says otherwise.
pub const IDLE_EXIT_S: i64 = 120;

pub struct Client {
    ns: Option<ObjectNamespace>,
    /// Why this deployment runs no sandboxes, if it does not: `SANDBOX_UNAVAILABLE` (scripts/server.sh
    /// sets it when the machine has no Docker), or no `SANDBOXES` binding.
    unavailable: Option<String>,
    idle_s: i64,
}

impl Client {
    pub fn new(ns: Option<ObjectNamespace>, env: &Env) -> Client {
        let var = |name: &str| super::var(env, name);
        let unavailable = var("SANDBOX_UNAVAILABLE").or_else(|| {
            ns.is_none().then(|| "this deployment has no SANDBOXES binding (wrangler.toml [[containers]])".into())
        });
        let idle_s = var("SANDBOX_IDLE_S").and_then(|s| s.parse().ok()).filter(|s| *s > 0).unwrap_or(IDLE_EXIT_S);
        Client { ns, unavailable, idle_s }
    }

    async fn call(&self, session_id: &str, call: SandboxCall) -> Result<SandboxAnswer, String> {
        self.available()?;
        let ns = self.ns.as_ref().ok_or("this deployment has no SANDBOXES binding")?;
        let run = async {
            let stub = ns.id_from_name(session_id)?.get_stub()?;
            let mut init = RequestInit::new();
            init.with_method(Method::Post).with_body(Some(serde_json::to_string(&call)?.into()));
            let mut resp = stub.fetch_with_request(Request::new_with_init("https://sandbox/call", &init)?).await?;
            match resp.status_code() {
                200 => resp.json::<SandboxAnswer>().await,
                _ => Err(worker::Error::RustError(resp.text().await?)),
            }
        };
        run.await.map_err(|e: worker::Error| format!("sandbox of {session_id}: {e}"))
    }
}

impl Sandboxes for Client {
    fn available(&self) -> Result<(), String> {
        match &self.unavailable {
            Some(why) => Err(why.clone()),
            None => Ok(()),
        }
    }

    fn running(&self, session_id: &str) -> LocalBoxFuture<'_, Result<bool, String>> {
        let session_id = session_id.to_owned();
        Box::pin(async move { self.call(&session_id, SandboxCall::State).await.map(|a| a.running) })
    }

    fn boot(&self, boot: SandboxBoot) -> LocalBoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            let [server, token, idle] = agentsky_wire::runner::HOSTED_VARS.map(str::to_owned);
            let mut vars =
                vec![(server, SANDBOX_ORIGIN.to_owned()), (token, boot.runner_token), (idle, self.idle_s.to_string())];
            vars.extend(boot.env);
            self.call(&boot.session_id, SandboxCall::Boot { vars, max_run_s: boot.max_run_s }).await.map(drop)
        })
    }

    fn stop(&self, session_id: &str) -> LocalBoxFuture<'_, Result<(), String>> {
        let session_id = session_id.to_owned();
        Box::pin(async move { self.call(&session_id, SandboxCall::Stop).await.map(drop) })
    }
}
