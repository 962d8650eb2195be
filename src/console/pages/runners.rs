//! Runners: the machines running `sky runner` for this workspace, when each was last seen, the session
//! it runs now, and revoking one.

use super::{empty, Page};
use crate::console::layout::{action, hidden, time};
use crate::console::Ctx;
use crate::error::ApiError;
use crate::ops::name;
use crate::ops::{call, runners::ListRunners};
use maud::html;

pub async fn page(p: &Ctx<'_>) -> Result<Page, ApiError> {
    let runners = call::list_runners(p.cx, ListRunners { workspace: Some(p.ws.slug.clone()) }).await?.runners;
    let off = !p.can_write();
    Ok(Page {
        title: "Runners".into(),
        nav: "/runners",
        main: html! {
            h1 { "Runners" }
            @if runners.is_empty() {
                (empty("No runners. Run `sky runner` on a machine to let `runner` agents work there."))
            } @else {
                table data-live="runners" {
                    thead { tr { th { "Name" } th { "Last seen" } th { "Running" } th {} } }
                    tbody { @for r in &runners {
                        tr { td { strong { (r.name) } br; span.muted.small { (r.runner_id) } }
                             td { @match r.last_seen_ms { Some(ms) => (time(ms)), None => span.muted { "never" } } }
                             td { @match &r.running_session_id {
                                 Some(sid) => a href=(p.link(&format!("/sessions/{sid}"))) { (sid) },
                                 None => span.muted { "idle" } } }
                             td { (action(p, name::revoke_runner, &[("runner_id", &r.runner_id)], "Revoke", "danger",
                                  Some("Revoke this runner? Its token stops working and its turn goes back to the queue."))) } }
                    } }
                }
            }
            h2 { "Register a runner" }
            form.row method="post" action=(p.action_url(name::register_runner)) {
                (hidden(p))
                input type="hidden" name="workspace" value=(p.ws.slug);
                input type="text" name="name" required maxlength="100" placeholder="machine name" aria-label="machine name" disabled[off];
                button type="submit" disabled[off] { "Register" }
            }
            p.muted.small { "Or simply run " code { "sky runner --server … --key …" } ": it registers itself." }
        },
    })
}
