//! `sky approvals`: the workspace's open requests in a plain terminal (over SSH too: line prompts, no
//! screen control). It lists what is open, asks for an answer to each, then waits for the next with
//! `list_requests`' server-side wait (woken by the workspace's feed, not polled). With `--watch` a thread
//! of its own also keeps the desktop told while the person is at a prompt: a notification for each request
//! that opens, and the open count in the terminal's title.

use crate::api::Api;
use crate::auth::{self, Options as AuthOptions};
use crate::context::Context;
use crate::notify::{self, Note};
use crate::{config, Error, Result};
use serde_json::{json, Value};
use std::collections::HashSet;
use std::io::{BufRead, IsTerminal, Write};

/// How long one `list_requests` call waits for a new request (the server's most).
const WAIT_SECONDS: u32 = 50;

pub struct Options {
    pub auth: AuthOptions,
    pub workspace: Option<String>,
    /// Answer what is open now, then stop instead of waiting for more.
    pub once: bool,
    /// Also notify the desktop of each new request and keep the open count in the terminal's title.
    pub watch: bool,
}

/// What a person typed for one request.
#[derive(Debug, PartialEq)]
pub enum Choice {
    Skip,
    /// The body of `answer_request` (without `task_id`/`request_id`).
    Answer(Value),
}

/// The prompt for a kind of request: what can be typed.
pub fn prompt(kind: &str) -> &'static str {
    match kind {
        "access" => "[o]nce [minutes] · [a]lways · [d]eny [reason] · [s]kip > ",
        "plan" => "[a]pprove · [r]eject [note] · [e]dit <note> · [s]kip > ",
        "decision" => "option number or text · [s]kip > ",
        _ => "your answer (empty line skips) > ",
    }
}

/// Reads one typed line as an answer to a request of `kind` with `payload`; an error says what to type.
pub fn parse_answer(kind: &str, payload: &Value, line: &str) -> std::result::Result<Choice, String> {
    let line = line.trim();
    let (word, rest) = line.split_once(char::is_whitespace).map_or((line, ""), |(w, r)| (w, r.trim()));
    let word = word.to_ascii_lowercase();
    let note = |body: &mut Value| {
        if !rest.is_empty() {
            body["note"] = json!(rest);
        }
    };
    match kind {
        _ if kind != "question" && matches!(word.as_str(), "s" | "skip" | "") => Ok(Choice::Skip),
        "access" => match word.as_str() {
            "o" | "once" | "approve" => {
                let mut body = json!({ "answer": "approve" });
                if !rest.is_empty() {
                    let minutes: i64 =
                        rest.parse().map_err(|_| format!("`{rest}` is not a number of minutes (1–1440)"))?;
                    body["expires_in_minutes"] = json!(minutes);
                }
                Ok(Choice::Answer(body))
            }
            "a" | "always" => Ok(Choice::Answer(json!({ "answer": "approve", "always": true }))),
            "d" | "deny" => {
                let mut body = json!({ "answer": "deny" });
                note(&mut body);
                Ok(Choice::Answer(body))
            }
            _ => Err("type o (once, optionally minutes), a (always), d (deny, optionally a reason) or s".into()),
        },
        "plan" => {
            let answer = match word.as_str() {
                "a" | "approve" => "approve",
                "r" | "reject" => "reject",
                "e" | "edit" if rest.is_empty() => return Err("edit needs a note saying what to change".into()),
                "e" | "edit" => "edit",
                _ => return Err("type a (approve), r (reject, optionally a note), e <note> (edit) or s".into()),
            };
            let mut body = json!({ "answer": answer });
            note(&mut body);
            Ok(Choice::Answer(body))
        }
        "decision" => {
            let options: Vec<&str> =
                payload["options"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
            let picked = match line.parse::<usize>() {
                Ok(n) if (1..=options.len()).contains(&n) => Some(options[n - 1]),
                _ => options.iter().copied().find(|o| o.eq_ignore_ascii_case(line)),
            };
            picked
                .map(|o| Choice::Answer(json!({ "answer": o })))
                .ok_or_else(|| format!("type an option's number (1–{}) or its text, or s", options.len()))
        }
        _ if line.is_empty() => Ok(Choice::Skip),
        _ => Ok(Choice::Answer(json!({ "answer": line }))),
    }
}

fn list(v: &Value) -> Vec<&str> {
    v.as_array().into_iter().flatten().filter_map(Value::as_str).collect()
}

/// A request as a person reads it: who asks, where, and what.
pub fn render(r: &Value) -> String {
    let s = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let p = &r["payload"];
    let kind = s(&r["kind"]);
    let mut out = format!(
        "── {kind} from {} · session “{}” · task “{}” ({})\n",
        s(&r["agent_name"]),
        s(&r["session_title"]),
        s(&r["task_title"]),
        s(&r["request_id"]),
    );
    match kind.as_str() {
        "access" => {
            out += &format!(
                "   target:  {} ({} {})\n   scopes:  {}\n",
                s(&p["target"]),
                s(&p["provider"]),
                s(&p["env"]),
                list(&p["scope"]).join(", ")
            );
            if let Some(cmd) = p["command"].as_str() {
                out += &format!("   command: {cmd}\n");
            }
            out += &format!("   reason:  {}\n", s(&p["reason"]));
            if let Some(allow) = r["would_allow"].as_str() {
                out += &format!("   allows:  {allow}\n");
            }
            let approved = list(&r["approved_by"]);
            if !approved.is_empty() {
                out += &format!("   approved so far by {} (this production target needs more)\n", approved.join(", "));
            }
        }
        "plan" => {
            out += &format!("   plan:    {}\n", s(&p["summary"]));
            let files = list(&p["files"]);
            if !files.is_empty() {
                out += &format!("   files:   {}\n", files.join(", "));
            }
        }
        "decision" => {
            out += &format!("   {}\n", s(&p["prompt"]));
            for (i, o) in list(&p["options"]).iter().enumerate() {
                out += &format!("   {}. {o}\n", i + 1);
            }
        }
        _ => out += &format!("   {}\n", s(&p["prompt"])),
    }
    out
}

fn query(workspace: Option<&str>, cursor: Option<&str>, wait: u32) -> String {
    // Slugs and cursors are URL-safe (letters, digits, `-`, `_`); anything else is refused by the server.
    let mut q = vec![format!("wait_seconds={wait}")];
    if let Some(w) = workspace {
        q.push(format!("workspace={w}"));
    }
    if let Some(c) = cursor {
        q.push(format!("cursor={c}"));
    }
    format!("/v1/requests?{}", q.join("&"))
}

fn io(e: std::io::Error) -> Error {
    Error::new(format!("terminal: {e}"))
}

/// `sky approvals`.
pub fn run(ctx: &Context, opts: &Options, input: &mut dyn BufRead, out: &mut dyn Write) -> Result<()> {
    let stored = config::load(ctx)?;
    let server = auth::server(ctx, &opts.auth, &stored);
    let Some((key, _)) = auth::key(ctx, &opts.auth, &stored, &server) else {
        return Err(Error::new("not signed in: run `sky auth login` (or pass --key / set AGENTSKY_API_KEY)"));
    };
    let api = Api::with_timeout(&server, std::time::Duration::from_secs(u64::from(WAIT_SECONDS) + 20));
    if opts.watch && !opts.once {
        let (api, key, workspace) = (api.clone(), key.clone(), opts.workspace.clone());
        std::thread::spawn(move || watch(&api, &key, workspace.as_deref()));
    }
    let mut cursor: Option<String> = None;
    loop {
        let first = cursor.is_none();
        let wait = if first || opts.once { 0 } else { WAIT_SECONDS };
        let listed = api
            .get(&query(opts.workspace.as_deref(), cursor.as_deref(), wait), Some(&key))?
            .into_ok("GET /v1/requests")?;
        let requests = listed["requests"].as_array().cloned().unwrap_or_default();
        if first {
            let n = requests.len();
            writeln!(out, "{n} open request{}.", if n == 1 { "" } else { "s" }).map_err(io)?;
        }
        cursor = listed["cursor"].as_str().map(str::to_owned);
        // Oldest first: the order they were asked in.
        for r in requests.iter().rev() {
            if !answer_one(&api, &key, r, input, out)? {
                return Ok(());
            }
        }
        if opts.once {
            return Ok(());
        }
        if first || !requests.is_empty() {
            writeln!(out, "Waiting for new requests (Ctrl-C to stop)…").map_err(io)?;
            out.flush().map_err(io)?;
        }
    }
}

/// The requests of a `list_requests` answer.
fn requests(listed: &Value) -> Vec<Value> {
    listed["requests"].as_array().cloned().unwrap_or_default()
}

/// `--watch`: waits for requests with a cursor of its own, shows a notification for each one opened after
/// it started, and puts the open count in the terminal's title after every change. A failed call is said
/// and retried after a pause; a notification tool that cannot run is said once.
fn watch(api: &Api, key: &str, workspace: Option<&str>) {
    let mut seen: HashSet<String> = HashSet::new();
    let mut cursor: Option<String> = None;
    let mut tool_said = false;
    loop {
        let wait = if cursor.is_some() { WAIT_SECONDS } else { 0 };
        let listed = match api
            .get(&query(workspace, cursor.as_deref(), wait), Some(key))
            .and_then(|r| r.into_ok("GET /v1/requests"))
        {
            Ok(listed) => listed,
            Err(e) => {
                eprintln!("sky approvals --watch: {e}; trying again in 10 s");
                std::thread::sleep(std::time::Duration::from_secs(10));
                continue;
            }
        };
        let first = cursor.is_none();
        cursor = listed["cursor"].as_str().map(str::to_owned);
        for r in requests(&listed).iter().rev() {
            let id = r["request_id"].as_str().unwrap_or_default().to_owned();
            if seen.insert(id) && !first {
                if let Err(e) = notify::show(&note(r)) {
                    if !std::mem::replace(&mut tool_said, true) {
                        eprintln!("sky approvals --watch: no desktop notification: {e}");
                    }
                }
            }
        }
        // The count of every open request, answered here or anywhere else.
        let open = match first {
            true => Ok(listed),
            false => api.get(&query(workspace, None, 0), Some(key)).and_then(|r| r.into_ok("GET /v1/requests")),
        };
        if let (Ok(open), true) = (open, std::io::stdout().is_terminal()) {
            print!("{}", notify::terminal_title(&title(requests(&open).len())));
            let _ = std::io::stdout().flush();
        }
    }
}

/// The terminal's title for `n` open requests.
pub fn title(n: usize) -> String {
    match n {
        0 => "agentsky · no open requests".to_owned(),
        1 => "agentsky · 1 open request".to_owned(),
        n => format!("agentsky · {n} open requests"),
    }
}

/// A request as a notification: who asks, and what, in a line or two.
pub fn note(r: &Value) -> Note {
    let s = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let p = &r["payload"];
    let asked = match s(&r["kind"]).as_str() {
        "access" => format!(
            "{} on {} ({} {}): {}",
            list(&p["scope"]).join(", "),
            s(&p["target"]),
            s(&p["provider"]),
            s(&p["env"]),
            s(&p["reason"])
        ),
        "plan" => format!("approve a plan: {}", s(&p["summary"])),
        _ => s(&p["prompt"]),
    };
    Note {
        title: format!("{} asks · {}", s(&r["agent_name"]), s(&r["task_title"])),
        body: format!("{asked}\nAnswer in `sky approvals` or the console's Approvals."),
    }
}

/// Shows one request and answers it as typed; `false` when input ended.
fn answer_one(api: &Api, key: &str, r: &Value, input: &mut dyn BufRead, out: &mut dyn Write) -> Result<bool> {
    let kind = r["kind"].as_str().unwrap_or_default();
    write!(out, "\n{}", render(r)).map_err(io)?;
    loop {
        write!(out, "{}", prompt(kind)).map_err(io)?;
        out.flush().map_err(io)?;
        let mut line = String::new();
        if input.read_line(&mut line).map_err(io)? == 0 {
            writeln!(out).map_err(io)?;
            return Ok(false);
        }
        let body = match parse_answer(kind, &r["payload"], &line) {
            Ok(Choice::Skip) => {
                writeln!(out, "   skipped").map_err(io)?;
                return Ok(true);
            }
            Ok(Choice::Answer(body)) => body,
            Err(why) => {
                writeln!(out, "   {why}").map_err(io)?;
                continue;
            }
        };
        let path = format!(
            "/v1/tasks/{}/requests/{}/answer",
            r["task_id"].as_str().unwrap_or_default(),
            r["request_id"].as_str().unwrap_or_default()
        );
        let reply = api.post_json(&path, Some(key), &body)?;
        if reply.ok() {
            writeln!(out, "   answered: {}", body["answer"].as_str().unwrap_or_default()).map_err(io)?;
            return Ok(true);
        }
        // A bad value (minutes out of range, `always` as a member) can be typed again; anything else ends it.
        writeln!(out, "   not answered: {}", reply.error_message()).map_err(io)?;
        if reply.error_code() != Some("invalid_params") && reply.error_code() != Some("forbidden") {
            return Ok(true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_lines_become_answers_or_say_what_to_type() {
        let none = Value::Null;
        assert_eq!(
            parse_answer("access", &none, "o 30\n"),
            Ok(Choice::Answer(json!({"answer": "approve", "expires_in_minutes": 30})))
        );
        assert_eq!(parse_answer("access", &none, "once"), Ok(Choice::Answer(json!({"answer": "approve"}))));
        assert_eq!(
            parse_answer("access", &none, "a"),
            Ok(Choice::Answer(json!({"answer": "approve", "always": true})))
        );
        assert_eq!(
            parse_answer("access", &none, "d not on a Friday"),
            Ok(Choice::Answer(json!({"answer": "deny", "note": "not on a Friday"})))
        );
        assert!(parse_answer("access", &none, "o soon").unwrap_err().contains("minutes"));
        assert_eq!(parse_answer("access", &none, "s"), Ok(Choice::Skip));
        assert_eq!(parse_answer("plan", &none, "a"), Ok(Choice::Answer(json!({"answer": "approve"}))));
        assert_eq!(
            parse_answer("plan", &none, "e use a view"),
            Ok(Choice::Answer(json!({"answer": "edit", "note": "use a view"})))
        );
        assert!(parse_answer("plan", &none, "e").is_err());
        let options = json!({"options": ["postgres", "sqlite"]});
        assert_eq!(parse_answer("decision", &options, "2"), Ok(Choice::Answer(json!({"answer": "sqlite"}))));
        assert_eq!(parse_answer("decision", &options, "Postgres"), Ok(Choice::Answer(json!({"answer": "postgres"}))));
        assert!(parse_answer("decision", &options, "3").is_err());
        assert_eq!(parse_answer("question", &none, "s3 bucket"), Ok(Choice::Answer(json!({"answer": "s3 bucket"}))));
        assert_eq!(parse_answer("question", &none, ""), Ok(Choice::Skip));
    }

    #[test]
    fn a_notification_names_who_asks_and_what_and_the_title_counts() {
        let r = json!({"kind": "access", "agent_name": "Dev", "task_title": "site", "request_id": "req_1",
            "payload": {"target": "web", "provider": "vercel", "env": "prod", "scope": ["deploy"], "reason": "ship"}});
        let n = note(&r);
        assert_eq!(n.title, "Dev asks · site");
        assert!(n.body.starts_with("deploy on web (vercel prod): ship\n"), "{}", n.body);
        let q = note(
            &json!({"kind": "question", "agent_name": "Dev", "task_title": "t", "payload": {"prompt": "Which DB?"}}),
        );
        assert!(q.body.starts_with("Which DB?"));
        assert_eq!(
            [title(0), title(1), title(3)],
            ["agentsky · no open requests", "agentsky · 1 open request", "agentsky · 3 open requests"]
        );
    }

    #[test]
    fn a_request_reads_with_who_asks_and_the_whole_command() {
        let r = json!({"kind": "access", "agent_name": "Dev", "session_title": "ship it", "task_title": "site",
            "request_id": "req_1", "would_allow": "deploy on `web`",
            "payload": {"target": "web", "provider": "vercel", "env": "prod", "scope": ["deploy"],
                "command": "vercel deploy --prod --yes", "reason": "ship"}});
        let text = render(&r);
        for part in ["access from Dev", "“ship it”", "vercel deploy --prod --yes", "allows:  deploy on `web`"] {
            assert!(text.contains(part), "{part} in {text}");
        }
    }
}
