//! `sky auth login | status | logout`. Sign-in is the device flow of RFC 8628 against the server's
//! `POST /v1/device/code` and `POST /v1/device/token`: sky shows a short code and a link, the person
//! approves it in a browser, and the next poll brings a new key named for this device. Scripts skip all
//! that with `--key` or `AGENTSKY_API_KEY`.
//!
//! Which server: `--server`, else `$AGENTSKY_URL`, else the stored one, else [`crate::DEFAULT_SERVER`].
//! Which key: `--key`, else `$AGENTSKY_API_KEY`, else the stored one.

use crate::api::{normalize_server, Api};
use crate::config::{self, Stored};
use crate::context::Context;
use crate::{key_prefix, Error, Result};
use serde_json::json;
use std::io::Write;
use std::time::{Duration, Instant};

/// Where a key came from, for `status` and messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeySource {
    Flag,
    Env,
    Stored,
}

impl KeySource {
    pub fn describe(self) -> &'static str {
        match self {
            KeySource::Flag => "from --key",
            KeySource::Env => "from AGENTSKY_API_KEY",
            KeySource::Stored => "stored by sky auth login",
        }
    }
}

/// The flags the auth and setup commands share.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub server: Option<String>,
    pub key: Option<String>,
    /// What the device's key is called; `sky on <host>` by default.
    pub device_name: Option<String>,
    /// Try to open the approval page in a browser (only when a person is watching the terminal).
    pub open_browser: bool,
}

pub fn server(ctx: &Context, opts: &Options, stored: &Stored) -> String {
    let s = opts.server.clone().or_else(|| ctx.env_server.clone()).or_else(|| stored.server.clone());
    normalize_server(s.as_deref().unwrap_or(crate::DEFAULT_SERVER))
}

/// The key to use, if any. A stored key counts only for the server it was made on.
pub fn key(ctx: &Context, opts: &Options, stored: &Stored, server: &str) -> Option<(String, KeySource)> {
    if let Some(k) = opts.key.clone() {
        return Some((k, KeySource::Flag));
    }
    if let Some(k) = ctx.env_key.clone() {
        return Some((k, KeySource::Env));
    }
    let same_server = stored.server.as_deref().map(normalize_server).as_deref() == Some(server);
    stored.key.clone().filter(|_| same_server).map(|k| (k, KeySource::Stored))
}

/// Who a key belongs to, as the server says: the workspace calls default to.
pub fn check_key(api: &Api, key: &str) -> Result<String> {
    if !key.starts_with("ast_") {
        return Err(Error::new(format!("`{}…` is not an agentsky API key (they start with ast_)", key_prefix(key))));
    }
    let reply = api.get("/v1/workspaces", Some(key))?;
    if reply.status == 401 {
        return Err(Error::new(format!(
            "{} refused the key {}… ({}); sign in again with `sky auth login`",
            api.base,
            key_prefix(key),
            reply.error_message()
        )));
    }
    let body = reply.into_ok("GET /v1/workspaces")?;
    let current = body["workspaces"].as_array().and_then(|ws| ws.iter().find(|w| w["is_current"] == true));
    Ok(current.and_then(|w| w["slug"].as_str()).unwrap_or("?").to_owned())
}

/// `sky auth login`: stores a key for the server, from `--key` or by device sign-in. Returns it.
pub fn login(ctx: &Context, opts: &Options, out: &mut dyn Write) -> Result<String> {
    let mut stored = config::load(ctx)?;
    let server = server(ctx, opts, &stored);
    let api = Api::new(&server);
    let previous = stored.clone();
    if let Some(key) = &opts.key {
        let workspace = check_key(&api, key)?;
        stored = Stored {
            server: Some(server.clone()),
            key: Some(key.clone()),
            workspace: Some(workspace.clone()),
            ..Stored::default()
        };
        config::save(ctx, &stored)?;
        say(out, &format!("Signed in to {server} with key {}… (workspace {workspace}).", key_prefix(key)));
    } else {
        let name = opts.device_name.clone().unwrap_or_else(default_device_name);
        let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
        let token = device_sign_in(&api, &name, out, tty, opts.open_browser && tty, Duration::from_secs(5))?;
        stored = Stored {
            server: Some(server.clone()),
            key: Some(token.key.clone()),
            key_id: Some(token.key_id.clone()),
            email: Some(token.email.clone()),
            workspace: Some(token.workspace.clone()),
            device_name: Some(name),
        };
        config::save(ctx, &stored)?;
        say(
            out,
            &format!(
                "Signed in to {server} as {} (workspace {}), key {}… named for this device.",
                token.email,
                token.workspace,
                key_prefix(&token.key)
            ),
        );
    }
    say(out, &format!("The key is stored in {} (readable by you only).", ctx.show(&config::path(ctx))));
    // A device key this login replaces is of no use any more: revoke it (best effort).
    if let (Some(old), Some(old_id), Some(old_server)) = (&previous.key, &previous.key_id, &previous.server) {
        if Some(old) != stored.key.as_ref() {
            let _ = Api::new(old_server).delete(&format!("/v1/keys/{old_id}"), Some(old));
        }
    }
    if ctx.env_key.is_some() && opts.key.is_none() {
        say(out, "Note: AGENTSKY_API_KEY is set in this shell and is used ahead of the stored key.");
    }
    Ok(stored.key.unwrap_or_default())
}

/// The key the device flow brought.
#[derive(Debug, Clone)]
pub struct Token {
    pub key: String,
    pub key_id: String,
    pub email: String,
    pub workspace: String,
}

/// The device flow: ask for a code, show it, poll until the person decides. `slow_down_step` is what a
/// `slow_down` adds to the interval (RFC 8628 §3.5: five seconds).
pub fn device_sign_in(
    api: &Api,
    device_name: &str,
    out: &mut dyn Write,
    tty: bool,
    open_browser: bool,
    slow_down_step: Duration,
) -> Result<Token> {
    let code = api.post_json("/v1/device/code", None, &json!({ "device_name": device_name }))?;
    let code = code.into_ok(&format!("starting sign-in at {}", api.base))?;
    let s = |k: &str| code[k].as_str().unwrap_or_default().to_owned();
    let (user_code, link) = (s("user_code"), s("verification_uri_complete"));
    let mut interval = Duration::from_secs(code["interval"].as_u64().unwrap_or(5));
    let expires_in = Duration::from_secs(code["expires_in"].as_u64().unwrap_or(900));
    say(out, &format!("Signing in to {} as \"{device_name}\".", api.base));
    say(out, &format!("  1. Open {link}"));
    say(
        out,
        &format!("  2. Check that the page shows the code {user_code}, sign in (or create an account) and approve."),
    );
    if open_browser {
        open_in_browser(&link);
    }
    let started = Instant::now();
    let mut last_note = Instant::now();
    let mut network_failures = 0;
    loop {
        let left = expires_in.saturating_sub(started.elapsed());
        if tty {
            let _ = write!(out, "\r  Waiting for approval… {}:{:02} left ", left.as_secs() / 60, left.as_secs() % 60);
            let _ = out.flush();
        } else if last_note.elapsed() >= Duration::from_secs(30) {
            say(out, &format!("  Still waiting for approval ({} min left)…", left.as_secs().div_ceil(60)));
            last_note = Instant::now();
        }
        std::thread::sleep(interval);
        let reply = match api.post_json("/v1/device/token", None, &json!({ "device_code": code["device_code"] })) {
            Ok(r) => r,
            // A dropped connection is not a refusal: keep polling a little while.
            Err(e) if network_failures < 5 => {
                network_failures += 1;
                if tty {
                    let _ = writeln!(out);
                }
                say(out, &format!("  {e}; retrying"));
                continue;
            }
            Err(e) => return Err(e),
        };
        network_failures = 0;
        if reply.ok() {
            if tty {
                let _ = writeln!(out);
            }
            let b = &reply.body;
            let field = |k: &str| b[k].as_str().map(str::to_owned);
            return match (field("key"), field("key_id")) {
                (Some(key), Some(key_id)) => Ok(Token {
                    key,
                    key_id,
                    email: field("email").unwrap_or_default(),
                    workspace: field("workspace").unwrap_or_default(),
                }),
                _ => Err(Error::new(format!("{} answered the sign-in without a key", api.base))),
            };
        }
        match reply.error_code() {
            Some("authorization_pending") => {}
            Some("slow_down") => interval += slow_down_step,
            other => {
                if tty {
                    let _ = writeln!(out);
                }
                return Err(Error::new(match other {
                    Some("access_denied") => "sign-in was denied in the browser".to_owned(),
                    Some("expired_token") => {
                        "the sign-in code expired before it was approved; run `sky auth login` again".to_owned()
                    }
                    _ => format!("sign-in failed ({})", reply.error_message()),
                }));
            }
        }
    }
}

/// `sky auth status`: which server and key, and whether the server accepts it.
pub fn status(ctx: &Context, opts: &Options, out: &mut dyn Write) -> Result<()> {
    let stored = config::load(ctx)?;
    let server = server(ctx, opts, &stored);
    say(out, &format!("Server: {server}"));
    let Some((key, source)) = key(ctx, opts, &stored, &server) else {
        return Err(Error::new("not signed in: run `sky auth login` (or pass --key / set AGENTSKY_API_KEY)"));
    };
    say(out, &format!("Key: {}… ({})", key_prefix(&key), source.describe()));
    if source == KeySource::Stored {
        if let Some(email) = &stored.email {
            say(out, &format!("Account: {email}"));
        }
    }
    let workspace = check_key(&Api::new(&server), &key)?;
    say(out, &format!("Signed in: the server accepts the key; calls default to workspace {workspace}."));
    Ok(())
}

/// `sky auth logout`: revokes the key device sign-in made (`DELETE /v1/keys/{key_id}`) and forgets it.
pub fn logout(ctx: &Context, out: &mut dyn Write) -> Result<()> {
    let mut stored = config::load(ctx)?;
    let Some(key) = stored.key.clone() else {
        say(out, "Not signed in; nothing to do.");
        return Ok(());
    };
    let server = normalize_server(stored.server.as_deref().unwrap_or(crate::DEFAULT_SERVER));
    let key_id = stored.key_id.clone();
    let revoked = match &key_id {
        Some(key_id) => {
            let reply = Api::new(&server).delete(&format!("/v1/keys/{key_id}"), Some(&key));
            match reply {
                // 401: the key was already revoked (or the account is gone): nothing left to do.
                Ok(r) if r.ok() || r.status == 401 || r.status == 404 => Ok(true),
                Ok(r) => Err(r.error_message()),
                Err(e) => Err(e.0),
            }
        }
        None => Ok(false),
    };
    stored.key = None;
    stored.key_id = None;
    stored.email = None;
    stored.workspace = None;
    stored.device_name = None;
    config::save(ctx, &stored)?;
    match revoked {
        Ok(true) => say(out, &format!("Signed out: key {}… revoked on {server} and forgotten.", key_prefix(&key))),
        Ok(false) => say(
            out,
            &format!(
                "Signed out: key {}… forgotten. It was given with --key, so it was not revoked; revoke it in agentsky if nothing else uses it.",
                key_prefix(&key)
            ),
        ),
        Err(why) => {
            return Err(Error::new(format!(
                "the key {}… was forgotten here, but revoking it on {server} failed ({why}); revoke it with DELETE /v1/keys/{}",
                key_prefix(&key),
                key_id.unwrap_or_default()
            )))
        }
    }
    if ctx.env_key.is_some() {
        say(out, "Note: AGENTSKY_API_KEY is still set in this shell.");
    }
    Ok(())
}

/// `sky console`: opens the console in a browser already signed in, through a one-time link the server
/// makes for this key (usable once, within a minute); without a browser (or with `--no-browser`) it
/// prints the link.
pub fn console(ctx: &Context, opts: &Options, out: &mut dyn Write) -> Result<()> {
    let stored = config::load(ctx)?;
    let server = server(ctx, opts, &stored);
    let Some((key, _)) = key(ctx, opts, &stored, &server) else {
        return Err(Error::new("not signed in: run `sky auth login` (or pass --key / set AGENTSKY_API_KEY)"));
    };
    let reply = Api::new(&server).post_json("/v1/console/link", Some(&key), &serde_json::json!({}))?;
    let body = reply.into_ok("POST /v1/console/link")?;
    let url = body["url"].as_str().ok_or_else(|| Error::new("the server answered without a link"))?;
    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
    if opts.open_browser && tty {
        open_in_browser(url);
        say(out, "Opened the console in your browser. If nothing opened, open this link within a minute:");
    } else {
        say(out, "Open this link within a minute; it signs that browser in once:");
    }
    say(out, url);
    Ok(())
}

/// `sky on <host name>`.
pub fn default_device_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .or_else(|| std::env::var("COMPUTERNAME").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty());
    let name = format!("sky on {}", host.as_deref().unwrap_or("this computer"));
    name.chars().take(100).collect()
}

fn open_in_browser(url: &str) {
    let cmd: &[&str] = if cfg!(target_os = "macos") {
        &["open"]
    } else if cfg!(windows) {
        &["cmd", "/c", "start", ""]
    } else {
        &["xdg-open"]
    };
    let _ = std::process::Command::new(cmd[0])
        .args(&cmd[1..])
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
}

pub fn say(out: &mut dyn Write, line: &str) {
    let _ = writeln!(out, "{line}");
}
