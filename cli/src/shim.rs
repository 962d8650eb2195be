//! Provider CLI shims: in a runner's turn the agent just runs `vercel`, `gh`, `aws`, `gcloud`, `supabase`
//! or `ssh`, and the session's grant is used.
//!
//! **How.** [`install`] puts one symlink per provider CLI, named like it and pointing at this `sky`, into
//! the turn's shim directory, which the turn (`turn.rs`) puts first on the agent's `PATH`
//! (`AGENTSKY_SHIM_DIR`). Started under such a name (or as `sky shim <cli> <args…>`), `sky`:
//! 1. finds the real CLI on `PATH` outside the shim directory (none → a clear message, exit 127);
//! 2. classifies the command line with the provider's table below: commands that need no account
//!    (`--help`, `--version`, local-only ones) run at once, without credentials;
//! 3. picks the target from the session's `list_targets`: `AGENTSKY_TARGET` (a name or `provider:env`)
//!    when set; for `ssh`, else the ssh target named like the destination host (`ssh deploy@web-1 uptime`
//!    → the target `web-1`, if there is one); else the provider's one target for the command's env (from
//!    its flags: `vercel --prod` is `prod`, `gh` is always `scm`), else its only target; several → a
//!    message asking for `AGENTSKY_TARGET`, and nothing is run;
//! 4. finds a live grant of this session for that target covering the scopes: grants are remembered (ids
//!    only, no secrets) in the turn's `AGENTSKY_GRANTS_FILE` by the shims and by `sky mcp` (whatever the
//!    agent's own `request_access` got), and checked with `check_grant`; else opens a request with
//!    `request_access` (which counts against the session's access bucket and waits up to 5 minutes);
//! 5. in a runner's turn (`AGENTSKY_RUNNER_SOCKET` set), asks the runner to run the command under the
//!    grant ([`crate::granted`]): the runner fetches the credential, runs the real CLI from its own `PATH`
//!    with the credential in that child's environment only (stdin empty), streams its output back, and
//!    reports the exit status it saw to the audit log (`command_ok` / `command_failed`) — the only proof a
//!    `deploy` `remember_command` accepts, for exactly the command that ran. Elsewhere (a session token
//!    used outside a runner) it fetches the credential (`get_credential`, recorded in the audit log) and
//!    runs the real CLI with the credential's variables added to its environment (an `ssh-agent`
//!    credential: `SSH_AUTH_SOCK` set to its `socketPath`); nothing proves such a run. Nothing is written
//!    to disk or printed. Commands that need no grant are `exec`ed as they are.
//!
//! **Exit codes** when the real CLI is not run: 77 denied; 75 still pending (run the command again to
//! keep waiting on the same request); 69 refused otherwise (no such target, several candidates, not
//! connected, the access bucket is full, no credential); 70 agentsky could not be reached; 127 the real
//! CLI is not installed. Otherwise the real CLI's own status.
//!
//! **Scopes.** Each table is conservative: what it cannot classify asks for every scope (`read write
//! deploy delete`), the widest a command could need.
//!
//! | CLI | read | write | deploy | delete |
//! |---|---|---|---|---|
//! | `vercel` | `ls`, `list`, `inspect`, `logs`, `whoami`, `pull`, `dev`, `build`, `env ls/pull`, `domains/dns/certs/alias/project/teams ls` | `link`, `env add`, `domains/dns/certs add`, `project add`, `git` | bare `vercel`, `deploy`, `promote`, `rollback`, `redeploy`, `alias set` | `remove`/`rm`, `env rm`, `… rm` |
//! | `gh` | `list`, `view`, `status`, `diff`, `checks`, `download`, `watch`, `clone`, `checkout`, `browse`, `search`, `auth`, `api` (GET) | `create`, `edit`, `comment`, `close`, `reopen`, `merge`, `review`, `ready`, `fork`, `sync`, `set`, `upload`, `api` (POST/PUT/PATCH) … | `workflow run`, `run rerun` (also write) | `delete`, `archive`, `api -X DELETE` |
//! | `aws` | `describe-*`, `list-*`, `get-*`, `head-*`, `scan`, `query`, `wait`, `logs tail`, `s3 ls`, `s3 cp s3://… local` | `create-*`, `put-*`, `update-*`, `modify-*`, `set-*`, `start-*`, `run-*`, `invoke`, `tag-*`, `s3 cp/sync …→ s3://`, `s3 mb` … | `cloudformation deploy/create-stack/update-stack/execute-change-set`, `lambda update-function-code/publish-version/update-alias`, `ecs update-service`, `deploy create-deployment`, … | `delete-*`, `remove-*`, `terminate-*`, `deregister-*`, `revoke-*`, `s3 rm/rb`, `s3 mv` (source), `sync --delete` |
//! | `gcloud` | `list`, `describe`, `get-*`, `read`, `tail`, `get-credentials`, `auth`, `storage ls/cat`, `storage cp gs://… local` | `create`, `update`, `set-*`, `add-*`, `patch`, `import`, `start`, `stop`, `ssh`, `scp`, `enable`, `disable`, `storage cp … gs://` | `deploy`, `builds submit`, `update-traffic`, `run/app/functions … update` | `delete`, `destroy`, `storage rm`, `storage mv` (source) |
//! | `supabase` | `projects/orgs/migration/functions/secrets/branches/backups list`, `inspect`, `gen types`, `db diff/dump/lint`, `link`, `functions download` | `projects create`, `secrets set`, `branches create/update`, `migration repair`, `storage cp/mv` | `db push`, `functions deploy`, `migration up`, `config push` | `projects/functions/branches delete`, `secrets unset`, `storage rm`, `db reset --linked` |
//! | `ssh` | — | — | — | every connection asks for all four: a remote shell can do anything |
//!
//! Local, no credentials: `--help`, `--version`, `help`; `vercel login/logout/telemetry/init`;
//! `gh config/alias/completion`; `aws configure`; `gcloud config/components/init/info/version`;
//! `supabase init/start/stop/status/login/logout/completion/migration new/functions new/functions serve`,
//! and `supabase db reset` without `--linked`/`--db-url`; `ssh -V`.
//!
//! **ssh.** Every connection asks for all four scopes. SSH keys are never files: the server hands the
//! granted key to the runner of this turn, which loads it into the turn's own ssh-agent (see
//! `turn.rs`), and `get_credential` answers that agent's socket; the shim runs the real `ssh` with
//! `SSH_AUTH_SOCK` pointing at it. Without ssh targets in the project (git over ssh, say) the real ssh
//! runs untouched.

mod classify;
mod exec;
mod targets;
mod tools;

use crate::grants_file::{known_grants, remember_grant, KnownGrant};
pub use classify::{classify, ssh_destination_host, Need};
pub use exec::find_real;
pub use targets::{find_targets, pick_target, Target};
pub use tools::{ToolFailure, Tools};

use classify::positionals;
use exec::{run_granted, run_real};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// The shimmed CLIs and the target provider each uses.
pub const SHIMS: &[(&str, &str)] = &[
    ("vercel", "vercel"),
    ("gh", "github"),
    ("aws", "aws"),
    ("gcloud", "gcp"),
    ("supabase", "supabase"),
    ("ssh", "ssh"),
];

/// Every scope, in the server's order: what an unclassifiable command asks for.
pub const WIDEST: &[&str] = &["read", "write", "deploy", "delete"];

pub const EXIT_DENIED: i32 = 77;
pub const EXIT_PENDING: i32 = 75;
pub const EXIT_REFUSED: i32 = 69;
pub const EXIT_UNREACHABLE: i32 = 70;
pub const EXIT_NOT_INSTALLED: i32 = 127;

/// Puts one shim per provider CLI into `dir`: a symlink to `sky` (Unix; elsewhere there are none yet).
pub fn install(sky: &Path, dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    for (cli, _) in SHIMS {
        let link = dir.join(cli);
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(sky, &link)?;
    }
    #[cfg(not(unix))]
    let _ = (sky, dir);
    Ok(())
}

/// The CLI a shim was started as, from `argv[0]`'s file name.
pub fn provider_of_argv0(argv0: &str) -> Option<&'static str> {
    let name = Path::new(argv0).file_name()?.to_str()?;
    let name = name.strip_suffix(".exe").unwrap_or(name);
    SHIMS.iter().find(|(cli, _)| *cli == name).map(|(cli, _)| *cli)
}

fn say(line: &str) {
    eprintln!("sky shim: {line}");
}

/// Runs the shim of `cli` with `args`; returns the exit code when it does not become the real CLI.
pub fn main(cli: &str, args: &[String]) -> i32 {
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    let me = std::env::current_exe().ok();
    let mut skip: Vec<PathBuf> = var("AGENTSKY_SHIM_DIR").map(PathBuf::from).into_iter().collect();
    if let Some(dir) = std::env::args_os().next().map(PathBuf::from).and_then(|a| a.parent().map(Path::to_owned)) {
        if !dir.as_os_str().is_empty() {
            skip.push(dir);
        }
    }
    let path = std::env::var_os("PATH");
    let Some(real) = find_real(cli, path.as_ref(), &skip, me.as_deref()) else {
        say(&format!(
            "the real `{cli}` is not installed here (not found on PATH outside agentsky's shim directory); install it and run the command again"
        ));
        return EXIT_NOT_INSTALLED;
    };
    let provider = SHIMS.iter().find(|(c, _)| *c == cli).map(|(_, p)| *p).unwrap_or(cli);
    let (scopes, env) = match classify(cli, args) {
        Need::Local => return run_real(&real, args, &[]),
        Need::Access { scopes, env } => (scopes, env),
    };
    let (Some(session_id), Some(token)) = (var("AGENTSKY_SESSION_ID"), var("AGENTSKY_SESSION_TOKEN")) else {
        // Not in an agentsky session: the shim has nothing to add.
        return run_real(&real, args, &[]);
    };
    let server = var("AGENTSKY_SERVER").unwrap_or_else(|| crate::DEFAULT_SERVER.to_owned());
    let tools = Tools::new(&server, &session_id, &token);
    let grants_file = var("AGENTSKY_GRANTS_FILE").map(PathBuf::from);
    let valued = if cli == "ssh" { "-B -b -c -D -E -e -F -I -i -J -L -l -m -O -o -P -p -Q -R -S -W -w" } else { "" };
    let words: Vec<&str> = positionals(args, valued).into_iter().take(2).collect();
    let shown = format!("{cli}{}{}", if words.is_empty() { "" } else { " " }, words.join(" "));
    // The whole command goes with a request, so the person deciding sees what will run (the server masks
    // anything secret-looking in it).
    let whole: String = std::iter::once(cli)
        .chain(args.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .take(2000)
        .collect();
    let targets = match list_targets(&tools) {
        Ok(t) => t,
        Err((code, why)) => {
            say(&format!("{why}; `{cli}` was not run"));
            return code;
        }
    };
    // ssh also serves git and anything else; only the project's ssh targets are agentsky's business.
    if cli == "ssh" && !targets.iter().any(|t| t.provider == "ssh") {
        return run_real(&real, args, &[]);
    }
    let hint = var("AGENTSKY_TARGET");
    let host_target = if cli == "ssh" && hint.is_none() {
        ssh_destination_host(args)
            .and_then(|host| targets.iter().find(|t| t.provider == "ssh" && t.name.eq_ignore_ascii_case(host)))
    } else {
        None
    };
    let picked = match host_target {
        Some(t) => Ok(t),
        None => pick_target(&targets, provider, env, hint.as_deref()),
    };
    let obtained = picked
        .map_err(|why| (EXIT_REFUSED, why))
        .and_then(|target| obtain(&tools, &targets, target, &scopes, grants_file.as_deref(), &shown, &whole));
    #[cfg(unix)]
    if let (Ok(grant_id), Some(socket)) = (&obtained, var(crate::granted::SOCKET_ENV)) {
        // Only where the runner cannot ask the kernel who is calling is there a secret to send.
        let secret = var(crate::granted::SECRET_ENV).unwrap_or_default();
        return through_runner(Path::new(&socket), secret, cli, args, grant_id.clone());
    }
    match obtained.and_then(|grant_id| credential(&tools, &grant_id)) {
        Ok(env) => run_granted(&real, args, &env),
        Err((code, why)) => {
            say(&format!("{why}; `{cli}` was not run"));
            code
        }
    }
}

fn failure(f: ToolFailure, what: &str) -> (i32, String) {
    match f {
        ToolFailure::Refused(m) => (EXIT_REFUSED, format!("agentsky refused {what}: {m}")),
        ToolFailure::Unreachable(m) => (EXIT_UNREACHABLE, format!("{what} failed: {m}")),
    }
}

/// The project's targets (`list_targets`).
fn list_targets(tools: &Tools) -> Result<Vec<Target>, (i32, String)> {
    let listed = tools.call("list_targets", json!({})).map_err(|f| failure(f, "list_targets"))?;
    Ok(listed.as_array().map(|a| a.iter().filter_map(Target::from_json).collect()).unwrap_or_default())
}

/// Finds or asks for a grant on `target` covering `scopes`: the live grant's id.
fn obtain(
    tools: &Tools,
    targets: &[Target],
    target: &Target,
    scopes: &[&str],
    grants_file: Option<&Path>,
    shown: &str,
    whole: &str,
) -> Result<String, (i32, String)> {
    match target.lock_state.as_str() {
        "unconnected" => {
            return Err((
                EXIT_REFUSED,
                format!("{} is not connected yet; ask the operator to connect it in agentsky", target.show()),
            ))
        }
        "expired" => {
            return Err((
                EXIT_REFUSED,
                format!("the credentials of {} have expired; ask the operator to reconnect it", target.show()),
            ))
        }
        _ => {}
    }
    let scope_list = scopes.join(" ");
    let covers = |granted: &[String]| scopes.iter().all(|s| granted.iter().any(|g| g == s));
    // A grant this session already has (or a request still open), newest first.
    let known: Vec<KnownGrant> = grants_file.map(known_grants).unwrap_or_default();
    let mine = known.iter().rev().filter(|k| {
        let same_target = match (&k.target_id, &k.target) {
            (Some(id), _) => id == &target.id,
            (None, Some(named)) => find_targets(targets, named).iter().any(|t| t.id == target.id),
            _ => false,
        };
        same_target && covers(&k.scope)
    });
    let mut grant = None;
    for k in mine {
        match tools.call("check_grant", json!({ "grantId": k.grant_id })) {
            Ok(g) if g["status"] == "active" || g["status"] == "pending" => {
                grant = Some(g);
                break;
            }
            Ok(_) | Err(ToolFailure::Refused(_)) => continue,
            Err(f) => return Err(failure(f, "check_grant")),
        }
    }
    let g = match grant {
        Some(g) => g,
        None => {
            say(&format!(
                "asking for {scope_list} on {} for `{shown}`; waiting for the operator's answer (up to 5 minutes)…",
                target.show()
            ));
            let reason = format!("Run `{shown}` (through agentsky's {} shim).", shown.split(' ').next().unwrap_or(""));
            tools
                .call(
                    "request_access",
                    json!({ "target": target.name, "scope": scopes, "reason": reason, "command": whole }),
                )
                .map_err(|f| failure(f, "the access request"))?
        }
    };
    let grant_id = g["grantId"].as_str().unwrap_or_default().to_owned();
    if let Some(file) = grants_file {
        remember_grant(
            file,
            KnownGrant {
                grant_id: grant_id.clone(),
                target_id: Some(target.id.clone()),
                target: Some(target.name.clone()),
                scope: scopes.iter().map(|s| s.to_string()).collect(),
            },
        );
    }
    match g["status"].as_str() {
        Some("active") => {}
        Some("denied") => {
            return Err((EXIT_DENIED, format!("access to {} for {scope_list} was denied (grant {grant_id})", target.show())))
        }
        _ => {
            return Err((
                EXIT_PENDING,
                format!(
                    "the request for {scope_list} on {} is not answered yet (grant {grant_id}); run the command again to keep waiting for it",
                    target.show()
                ),
            ))
        }
    }
    say(&format!("using grant {grant_id} ({scope_list} on {}) for `{shown}`", target.show()));
    Ok(grant_id)
}

/// A grant's credential as the variables it adds (`get_credential`, recorded in the audit log).
fn credential(tools: &Tools, grant_id: &str) -> Result<Vec<(String, String)>, (i32, String)> {
    let cred =
        tools.call("get_credential", json!({ "grantId": grant_id })).map_err(|f| failure(f, "get_credential"))?;
    credential_env(&cred).ok_or_else(|| {
        (EXIT_REFUSED, format!("the credential of grant {grant_id} is neither environment variables nor an ssh-agent"))
    })
}

/// Has the runner of this turn run the command under `grant_id` ([`crate::granted`]); its exit status.
#[cfg(unix)]
fn through_runner(socket: &Path, secret: String, cli: &str, args: &[String], grant_id: String) -> i32 {
    let cwd = std::env::current_dir().unwrap_or_default();
    let request = crate::granted::Request { secret, cli: cli.to_owned(), args: args.to_vec(), grant_id, cwd };
    crate::granted::run(socket, &request).unwrap_or_else(|why| {
        say(&format!("{why}; the command's end is unknown"));
        EXIT_UNREACHABLE
    })
}

/// The variables a credential adds: an `env` credential's own, or an `ssh-agent`'s socket as
/// `SSH_AUTH_SOCK` (the key stays in the runner's agent).
fn credential_env(cred: &Value) -> Option<Vec<(String, String)>> {
    match cred["kind"].as_str()? {
        "env" => Some(
            cred["env"]
                .as_object()
                .map(|m| m.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned()))).collect())
                .unwrap_or_default(),
        ),
        "ssh-agent" => {
            let socket = cred["socketPath"].as_str().or_else(|| cred["env"]["SSH_AUTH_SOCK"].as_str())?;
            Some(vec![("SSH_AUTH_SOCK".to_owned(), socket.to_owned())])
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ssh_agent_credential_becomes_ssh_auth_sock() {
        let env = credential_env(&json!({"kind": "ssh-agent", "env": {"SSH_AUTH_SOCK": "/t/a.sock"},
            "socketPath": "/t/a.sock", "expiresAt": null, "scoped": true}));
        assert_eq!(env, Some(vec![("SSH_AUTH_SOCK".to_owned(), "/t/a.sock".to_owned())]));
        assert_eq!(credential_env(&json!({"kind": "env", "env": {"A": "1"}})), Some(vec![("A".into(), "1".into())]));
        assert_eq!(credential_env(&json!({"kind": "file"})), None);
    }

    #[test]
    fn shims_are_known_by_their_names() {
        assert_eq!(provider_of_argv0("/tmp/turn/meta/bin/gh"), Some("gh"));
        assert_eq!(provider_of_argv0("vercel.exe"), Some("vercel"));
        assert_eq!(provider_of_argv0("/usr/local/bin/sky"), None);
    }
}
