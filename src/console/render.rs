//! How the things people decide on and read look: a request with its answer forms, a transcript's
//! events, a task's or session's state. Everything an agent or tenant wrote is interpolated, so maud
//! escapes it; nothing here builds HTML from strings.

use super::layout::{self, hidden, time, verbatim};
use super::Ctx;
use crate::cx::Role;
use crate::ops::name;
use crate::store::requests::OpenRequest;
use maud::{html, Markup};
use serde_json::Value;

fn s(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

/// A closed set's word as the API writes it (a goal's status, say).
pub fn word(value: &impl serde::Serialize) -> String {
    serde_json::to_value(value).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

/// The state word and its class: `running`, `waiting for you`, `idle`, `done`.
pub fn state(word: &str) -> Markup {
    let class = match word {
        "running" | "provisioning" => "running",
        "waiting for you" => "waiting",
        "terminated" | "done" => "done",
        "failed" => "failed",
        _ => "idle",
    };
    html! { span class=(format!("state {class}")) { (word) } }
}

/// Approve-for options a person may pick for a one-time grant, in minutes.
const EXPIRIES: &[(i64, &str)] = &[(15, "15 minutes"), (60, "1 hour"), (240, "4 hours"), (1440, "24 hours")];

/// One open request, rendered for a person, with the forms that answer it.
pub fn request(p: &Ctx<'_>, r: &OpenRequest) -> Markup {
    let kind = r.request.kind.as_str();
    // What was asked is the request kind's own JSON.
    let payload = &r.request.payload;
    let (task_id, request_id) = (&r.request.task_id, &r.request.request_id);
    let answer = p.action_url(name::answer_request);
    let ids = html! {
        (hidden(p))
        input type="hidden" name="task_id" value=(task_id);
        input type="hidden" name="request_id" value=(request_id);
    };
    let off = !p.can_write();
    let admin = p.ws.role >= Role::Admin;
    html! {
        article.card.request id=(format!("request-{request_id}")) data-request=(request_id) data-kind=(kind) {
            header {
                span.kind { (kind) }
                strong { (r.agent_name) }
                span.muted { "in " a href=(p.link(&format!("/sessions/{}", r.request.session_id))) { (r.session_title) } }
                span.muted.small { "task " a href=(p.link(&format!("/tasks/{task_id}"))) { (r.task_title) } }
                span.spacer {}
                span.muted.small { (time(r.request.created_ms)) }
            }
            @match kind {
                "access" => {
                    dl.kv {
                        dt { "Target" } dd { strong { (s(&payload["target"])) } " " span.muted { (s(&payload["provider"])) } }
                        dt { "Environment" } dd { (s(&payload["env"])) }
                        dt { "Scopes" } dd { @for sc in payload["scope"].as_array().into_iter().flatten() { code { (s(sc)) } " " } }
                        @if let Some(cmd) = payload["command"].as_str() { dt { "Command" } dd { pre { (cmd) } } }
                    }
                    div.quote { span.muted.small { "Reason, as the agent wrote it:" } br; (verbatim(s(&payload["reason"]))) }
                    @if !r.approved_by.is_empty() {
                        p.small.approvals role="status" {
                            "Approved so far by " strong { (r.approved_by.join(", ")) }
                            ": this production target needs more owners or admins to approve."
                        }
                    }
                    div.row {
                        form.inline method="post" action=(answer) {
                            (ids) input type="hidden" name="answer" value="approve";
                            select name="expires_in_minutes" aria-label="for how long" disabled[off] {
                                @for (m, label) in EXPIRIES { option value=(m) selected[*m == 60] { "for " (label) } }
                            }
                            " " button.primary type="submit" disabled[off] { "Approve once" }
                        }
                        form.inline method="post" action=(answer)
                            data-confirm="Approve for every session of this workspace until revoked?" {
                            (ids) input type="hidden" name="answer" value="approve"; input type="hidden" name="always" value="true";
                            button type="submit" disabled[off || !admin] title=[(!admin).then_some("Only owners and admins approve always")] { "Approve always" }
                        }
                    }
                    form.row method="post" action=(answer) {
                        (ids) input type="hidden" name="answer" value="deny";
                        input type="text" name="note" placeholder="Reason (the agent reads it)" maxlength="2000" disabled[off];
                        button.danger type="submit" disabled[off] { "Deny" }
                    }
                }
                "plan" => {
                    div.quote { (verbatim(s(&payload["summary"]))) }
                    @if let Some(files) = payload["files"].as_array().filter(|f| !f.is_empty()) {
                        p.muted.small { "Files:" } ul { @for f in files { li { code { (f.as_str().map_or_else(|| f.to_string(), str::to_owned)) } } } }
                    }
                    form method="post" action=(answer) {
                        (ids)
                        textarea name="note" placeholder="A note for the agent (what to change, if you ask for edits)" maxlength="2000" disabled[off] {}
                        div.row {
                            button.primary type="submit" name="answer" value="approve" disabled[off] { "Approve plan" }
                            button type="submit" name="answer" value="edit" disabled[off] { "Ask for edits" }
                            button.danger type="submit" name="answer" value="reject" disabled[off] { "Reject" }
                        }
                    }
                }
                "decision" => {
                    p { (verbatim(s(&payload["prompt"]))) }
                    @let options: Vec<&str> = payload["options"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
                    form.row method="post" action=(answer) {
                        (ids)
                        @if options.is_empty() {
                            button.primary type="submit" name="answer" value="Yes" disabled[off] { "Yes" }
                            button type="submit" name="answer" value="No" disabled[off] { "No" }
                        } @else {
                            @for o in &options { button type="submit" name="answer" value=(o) disabled[off] { (o) } }
                        }
                    }
                }
                _ => {
                    p { (verbatim(s(&payload["prompt"]))) }
                    form method="post" action=(answer) {
                        (ids)
                        textarea name="answer" required maxlength="4000" placeholder="Your answer" disabled[off] {}
                        div.row { button.primary type="submit" disabled[off] { "Send answer" } }
                    }
                }
            }
        }
    }
}

/// Who wrote a user message, as the console labels it; who it is comes from the one transcript rule.
fn author(from: &Value) -> (&'static str, String) {
    match crate::ops::transcript::author(from) {
        "peer" => ("peer", format!("peer {}", s(&from["peer"]["session_id"]))),
        "visitor" => ("user", "share link".into()),
        "user" => ("user", "you".into()),
        who => ("user", who.into()),
    }
}

/// One transcript event (as `read_session` gives it).
pub fn event(e: &Value) -> Markup {
    let t = s(&e["type"]);
    let at = time(e["at_ms"].as_i64().unwrap_or_default());
    html! {
        @match t {
            "user_message" => {
                @let (class, who) = author(&e["from"]);
                div class=(format!("ev {class}")) { span.who { (who) } (at) div { (verbatim(s(&e["text"]))) } }
            }
            "agent_message" => div.ev.agent { span.who { "agent" } (at) div { (verbatim(s(&e["text"]))) } },
            "tool_call" => div.ev.tool {
                details { summary { span.who { "tool" } code { (s(&e["name"])) } } pre { (e["arguments"].to_string()) } }
            },
            "tool_result" => div.ev.tool {
                details {
                    summary { span.who { "result" } code { (s(&e["name"])) } @if e["is_error"] == true { " " span.state.failed { "error" } } }
                    pre { (s(&e["content"])) }
                }
            },
            "error" => div.ev.error { span.who { "error" } (at) div { (verbatim(s(&e["message"]))) } },
            "turn_end" => div.ev.turn_end { "turn ended: " (s(&e["reason"])) " · " (at) },
            "goal_check" => div.ev.goal_check { "goal check, iteration " (e["iteration"].as_i64().unwrap_or_default()) ": " (s(&e["status"])) },
            _ => div.ev.status { (s(&e["text"])) " · " (at) },
        }
    }
}

/// A money amount against an optional budget.
pub fn spend(spent_cents: i64, budget_cents: Option<i64>) -> Markup {
    html! {
        (layout::money(spent_cents))
        @if let Some(b) = budget_cents {
            " of " (layout::money(b)) " "
            meter min="0" max=(b) value=(spent_cents.min(b)) high=(b * 8 / 10) title="spend against budget" {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_message_is_labelled_by_who_wrote_it() {
        assert_eq!(author(&json!("user")), ("user", "you".into()));
        assert_eq!(author(&json!("share_link")), ("user", "share link".into()));
        assert_eq!(author(&json!("goal")), ("user", "goal".into()));
        assert_eq!(author(&json!({"routine": {"routine_id": "rtn_1"}})), ("user", "routine".into()));
        assert_eq!(author(&json!({"peer": {"session_id": "ses_p"}})), ("peer", "peer ses_p".into()));
    }
}
