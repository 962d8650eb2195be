//! Runners: the machines running `sky runner` for this workspace, when each was last seen, the session
//! it runs now, and revoking one.

use super::{empty, list, Page};
use crate::console::layout::{action, hidden, time};
use crate::console::render::s;
use crate::console::Ctx;
use crate::error::ApiError;
use maud::html;
use serde_json::json;

pub async fn page(p: &Ctx<'_>) -> Result<Page, ApiError> {
    let runners = p.call("list_runners", json!({ "workspace": p.ws.slug })).await?;
    let off = !p.can_write();
    Ok(Page {
        title: "Runners".into(),
        nav: "/runners",
        main: html! {
            h1 { "Runners" }
            @if list(&runners, "runners").is_empty() {
                (empty("No runners. Run `sky runner` on a machine to let `runner` agents work there."))
            } @else {
                table data-live="runners" {
                    thead { tr { th { "Name" } th { "Last seen" } th { "Running" } th {} } }
                    tbody { @for r in list(&runners, "runners") {
                        tr { td { strong { (s(&r["name"])) } br; span.muted.small { (s(&r["runner_id"])) } }
                             td { @match r["last_seen_ms"].as_i64() { Some(ms) => (time(ms)), None => span.muted { "never" } } }
                             td { @match r["running_session_id"].as_str() {
                                 Some(sid) => a href=(p.link(&format!("/sessions/{sid}"))) { (sid) },
                                 None => span.muted { "idle" } } }
                             td { (action(p, "revoke_runner", &[("runner_id", s(&r["runner_id"]))], "Revoke", "danger",
                                  Some("Revoke this runner? Its token stops working and its turn goes back to the queue."))) } }
                    } }
                }
            }
            h2 { "Register a runner" }
            form.row method="post" action=(p.link("/op/register_runner")) {
                (hidden(p))
                input type="hidden" name="workspace" value=(p.ws.slug);
                input type="text" name="name" required maxlength="100" placeholder="machine name" aria-label="machine name" disabled[off];
                button type="submit" disabled[off] { "Register" }
            }
            p.muted.small { "Or simply run " code { "sky runner --server … --key …" } ": it registers itself." }
        },
    })
}
