//! The `echo` harness: free, deterministic, and labelled as a test harness. It lets a new user try the
//! whole loop without a model, and lets tests drive every path of a turn:
//! - any text → one reply, `echo: <text>`; these commands count at the start of a message:
//! - `/sleep N` (N ≤ 30) → a status event, then the reply N seconds later (a turn that stays running);
//! - `/tick N` (N ≤ 30) → a status event each second, `tick 1 of N` … `tick N of N`, then the reply (a turn
//!   whose events land over N seconds: live progress);
//! - `/burst N` (N ≤ 5000) → N numbered replies in one step (long logs, paging);
//! - `/fail` → an error event and a failed turn;
//! - `/write <path> <text…>` → writes that file into the task folder through the agents' file tool;
//! - `/delete <path>` → deletes that file through the agents' file tool.

use super::{EventKind, StepOutcome, Turn, TurnEnd};
use serde_json::json;

/// The harness's label, shown in its replies' events.
pub const LABEL: &str = "echo (test harness: deterministic, free, no model)";

/// Commands count only at the start of a message, so quoted text (a hand-off's brief) never runs one.
fn command<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.trim_start().strip_prefix(name)
}

fn arg(text: &str, name: &str, max: u64) -> Option<u64> {
    let rest = command(text, name)?;
    let n: u64 = rest.split_whitespace().next()?.parse().ok()?;
    Some(n.min(max))
}

/// `/write <path> <text…>`: the file the message asks the harness to write, if any.
pub fn write_request(text: &str) -> Option<(String, String)> {
    let rest = command(text, "/write ")?;
    let (path, content) = rest.trim_start().split_once(' ')?;
    Some((path.to_owned(), content.to_owned()))
}

/// `/delete <path>`: the file the message asks the harness to delete, if any.
pub fn delete_request(text: &str) -> Option<String> {
    let path = command(text, "/delete ")?.split_whitespace().next()?;
    Some(path.to_owned())
}

/// The file tool call a message asks for: `(tool, arguments)`.
pub fn file_request(text: &str) -> Option<(&'static str, serde_json::Value)> {
    if let Some((path, content)) = write_request(text) {
        return Some(("write_task_file", json!({ "path": path, "content": content })));
    }
    delete_request(text).map(|path| ("delete_task_file", json!({ "path": path })))
}

/// One step of a turn whose message is `text`.
pub fn step(text: &str, turn: &Turn) -> StepOutcome {
    if turn.step == 0 {
        if let Some(secs) = arg(text, "/sleep", 30).filter(|s| *s > 0) {
            return StepOutcome {
                events: vec![(EventKind::Status, json!({ "text": format!("sleeping {secs} s"), "harness": LABEL }))],
                next_in_ms: Some(secs as i64 * 1000),
                ..StepOutcome::default()
            };
        }
    }
    if let Some(n) = arg(text, "/tick", 30).filter(|n| *n > 0) {
        if u64::from(turn.step) < n {
            let text = format!("tick {} of {n}", turn.step + 1);
            return StepOutcome {
                events: vec![(EventKind::Status, json!({ "text": text, "harness": LABEL }))],
                next_in_ms: Some(1000),
                ..StepOutcome::default()
            };
        }
    }
    if command(text, "/fail").is_some() {
        return StepOutcome {
            events: vec![(EventKind::Error, json!({ "message": "the echo harness was asked to fail (/fail)" }))],
            end: Some(TurnEnd::Failed),
            ..StepOutcome::default()
        };
    }
    let mut events = Vec::new();
    if let Some(n) = arg(text, "/burst", 5000) {
        events.extend(
            (1..=n)
                .map(|i| (EventKind::AgentMessage, json!({ "text": format!("burst {i} of {n}"), "harness": LABEL }))),
        );
    }
    events.push((EventKind::AgentMessage, json!({ "text": format!("echo: {text}"), "harness": LABEL })));
    StepOutcome { events, end: Some(TurnEnd::Completed), ..StepOutcome::default() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_message_is_echoed_and_ends_the_turn() {
        let out = step("hello", &Turn::default());
        assert_eq!(out.end, Some(TurnEnd::Completed));
        assert_eq!(out.events.len(), 1);
        assert_eq!(out.events[0].1["text"], "echo: hello");
    }

    #[test]
    fn tick_reports_each_second_then_replies() {
        let steps: Vec<StepOutcome> = (0..4).map(|step| step_at("/tick 3", step)).collect();
        for (i, out) in steps[..3].iter().enumerate() {
            assert_eq!((out.end, out.next_in_ms), (None, Some(1000)));
            assert_eq!(out.events[0].1["text"], format!("tick {} of 3", i + 1));
        }
        assert_eq!(steps[3].end, Some(TurnEnd::Completed));
        assert_eq!(steps[3].events[0].1["text"], "echo: /tick 3");
    }

    fn step_at(text: &str, step: u32) -> StepOutcome {
        super::step(text, &Turn { step, ..Turn::default() })
    }

    #[test]
    fn sleep_waits_before_replying() {
        let first = step("/sleep 2 then reply", &Turn::default());
        assert_eq!((first.end, first.next_in_ms), (None, Some(2000)));
        let second = step("/sleep 2 then reply", &Turn { step: 1, ..Turn::default() });
        assert_eq!(second.end, Some(TurnEnd::Completed));
    }

    #[test]
    fn burst_and_fail_are_bounded_and_visible() {
        assert_eq!(step("/burst 99999", &Turn::default()).events.len(), 5001);
        assert_eq!(step("/fail", &Turn::default()).end, Some(TurnEnd::Failed));
    }
}
