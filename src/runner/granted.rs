//! Granted commands: a provider CLI the runner runs for its turn's shims under a grant, and the proof of a
//! deploy command (issue 13). In a runner's turn a shim does not run the real CLI itself: it asks the
//! runner (over a channel the runner owns for the turn, `cli/src/turn/granted.rs`), which fetches the
//! grant's credential here, runs the real CLI it finds on its own `PATH` with the credential in that
//! child's environment only, and reports the exit status it observed:
//!
//! - `POST /v1/runner/credential {lease_id, grant_id, scopes}` → `{kind: "env", env, scopes}` or
//!   `{kind: "ssh", private_key, ttl_s, scopes}` (for the turn's own ssh-agent): a live grant the leased
//!   session may use, covering the `scopes` the runner worked out for the command; recorded in the audit
//!   log (`get_credential` or `ssh_key_loaded`, by the runner);
//! - `POST /v1/runner/commands {lease_id, grant_id, argv, exit_code}` → `{recorded, proof}`: the command
//!   and its exit in the audit log (`command_ok` / `command_failed`); an exit 0 under a live grant that
//!   covers `deploy` is also a deploy proof for the session and the grant's target, which is all a
//!   `deploy` `remember_command` accepts, for exactly that argv.
//!
//! **What the proof is worth.** It is made only with a runner token, for the session the runner's lease
//! holds, and only for a grant that session may use; the session server has no route that makes one, so
//! an agent speaking with its session token cannot forge it (it once could, with `POST
//! /v1/session/commands`). It says that the runner ran this argv with this grant's credential and saw
//! this exit status. It is not stronger than the separation between the agent and the runner: today the
//! agent, its shims and the runner run as the same OS user, so an agent set on forging can read the
//! runner's token from its registrations file or its memory, or replace a CLI on the runner's `PATH` if
//! that user can write there. Run agents as another user or in a sandbox where that matters; the
//! channel's peer check (the kernel's word that the caller is the runner's own `sky`, descending from
//! it) keeps other users, other programs and other turns off the channel, not an agent set on it, which
//! through the channel can only have the runner run a real CLI under a grant it already holds.
//!
//! The env credential's answer carries `ttl_s`, the grant's time left: the runner ends the command then.
//! A revoked grant is sent to the runners holding it as a `grant_forget` job, which ends its commands.

use super::{body, leased, ok};
use crate::cx::Cx;
use crate::domain::grants::{self, hand_over, ssh_hold_s, visible_to, Handed};
use crate::error::{ApiError, Code};
use crate::http::{HttpRequest, HttpResponse};
use crate::rules::{argv, ids};
use crate::store::{self, audit::Entry, requests::GrantRow, runners::RunnerRow, runners::TurnRow};
use agentsky_wire::runner as wire;

/// The longest command line a report carries, as `remember_command` takes.
const MAX_COMMAND_CHARS: usize = 2_000;

/// The lease's turn and a live grant its session may use.
async fn usable(
    cx: &Cx<'_>,
    runner: &RunnerRow,
    lease_id: &str,
    grant_id: &str,
) -> Result<(TurnRow, GrantRow), ApiError> {
    let turn = leased(cx, runner, lease_id).await?;
    let unknown = || ApiError::not_found(&format!("grant `{grant_id}` of this turn's session"));
    if !ids::is_id(grant_id, "gr") {
        return Err(unknown());
    }
    let g = store::requests::get_grant(cx.db(), grant_id).await?.ok_or_else(unknown)?;
    if g.workspace_id != turn.workspace_id || !visible_to(&g, &turn.session_id, &turn.workspace_id) {
        return Err(unknown());
    }
    if !grants::live(&g, cx.now_ms) {
        return Err(ApiError::new(
            Code::Forbidden,
            format!("grant {grant_id} is not active: it was denied, has expired or was revoked"),
        ));
    }
    Ok((turn, g))
}

/// `POST /v1/runner/credential`
pub async fn credential(cx: &Cx<'_>, runner: &RunnerRow, req: &HttpRequest) -> Result<HttpResponse, ApiError> {
    let p: wire::CredentialAsk = body(req)?;
    let (turn, g) = usable(cx, runner, &p.lease_id, &p.grant_id).await?;
    if let Some(missing) = p.scopes.iter().find(|s| !grants::covers(&g, &[s.as_str()])) {
        return Err(ApiError::new(
            Code::Forbidden,
            format!("grant {} covers {}, not `{}`, which this command needs", g.grant_id, g.scopes, missing.as_str()),
        ));
    }
    let cred = hand_over(cx, &g, &turn.session_id)
        .await?
        .ok_or_else(|| ApiError::new(Code::Forbidden, "the target's credentials cannot be opened; reconnect it"))?;
    let scopes: Vec<String> = g.scopes.split(' ').map(str::to_owned).collect();
    // `ttl_s`: the grant's time left; the runner ends the command when it runs out.
    let seconds = |s: i64| u64::try_from(s.max(1)).unwrap_or(1);
    let (action, answer) = match cred {
        Handed::Env { env, expires_ms, .. } => (
            "get_credential",
            wire::Credential::Env {
                // A target's variables are text; anything else is no variable of a command.
                env: env.into_iter().filter_map(|(k, v)| Some((k, v.as_str()?.to_owned()))).collect(),
                scopes,
                ttl_s: expires_ms.map(|e| seconds((e - cx.now_ms) / 1000)),
            },
        ),
        Handed::Ssh { private_key } => (
            "ssh_key_loaded",
            wire::Credential::Ssh { private_key, ttl_s: Some(seconds(ssh_hold_s(&g, cx.now_ms))), scopes },
        ),
    };
    let detail = format!("by runner {}, to run a command", runner.name);
    store::audit::record(cx.db(), &Entry::grant(&g, &turn.session_id, action, &detail, cx.now_ms)).await?;
    Ok(ok(&answer))
}

/// `POST /v1/runner/commands`
pub async fn report(cx: &Cx<'_>, runner: &RunnerRow, req: &HttpRequest) -> Result<HttpResponse, ApiError> {
    let p: wire::CommandReport = body(req)?;
    let line = argv::show(&p.argv);
    if p.argv.is_empty() || p.argv[0].is_empty() || line.chars().count() > MAX_COMMAND_CHARS {
        return Err(ApiError::invalid(format!(
            "`argv` is the command as run: its program, then its arguments, {MAX_COMMAND_CHARS} characters at most in all"
        )));
    }
    let exit_code = i32::try_from(p.exit_code)
        .map_err(|_| ApiError::invalid("`exit_code` is a process's exit status (128 + N for a signal)"))?;
    let (turn, g) = usable(cx, runner, &p.lease_id, &p.grant_id).await?;
    let action = if exit_code == 0 { "command_ok" } else { "command_failed" };
    // Kept for the operator to read; the audit log replaces any secret in it.
    let detail = format!("exit {exit_code}: {line} (run by runner {})", runner.name);
    let mut stmts = vec![store::audit::insert(&Entry::grant(&g, &turn.session_id, action, &detail, cx.now_ms))];
    let proof = exit_code == 0 && grants::covers(&g, &["deploy"]);
    let fingerprint = argv::fingerprint(&p.argv);
    if proof {
        stmts.push(store::proofs::insert(&store::proofs::Proof {
            workspace_id: &g.workspace_id,
            session_id: &turn.session_id,
            connector_id: &g.connector_id,
            grant_id: &g.grant_id,
            runner_id: &runner.runner_id,
            argv_sha256: &fingerprint,
            now_ms: cx.now_ms,
        }));
    }
    cx.db().batch(stmts).await?;
    Ok(ok(&wire::CommandRecorded { recorded: action.to_owned(), proof }))
}
