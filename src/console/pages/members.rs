//! Members: who belongs to the workspace and with which role; inviting people (a one-time token shown
//! once, accepted by the invitee signed in with their own key), changing roles and removing members. The
//! operations decide who may do what (owners and admins; the last owner stays).

use super::{list, Page};
use crate::console::layout::{action, hidden, time};
use crate::console::render::s;
use crate::console::Ctx;
use crate::cx::Role;
use crate::error::ApiError;
use maud::html;
use serde_json::json;

const ROLES: &[&str] = &["member", "admin", "owner"];

pub async fn page(p: &Ctx<'_>) -> Result<Page, ApiError> {
    let members = p.call("list_members", json!({ "workspace": p.ws.slug })).await?;
    let admin = p.ws.role >= Role::Admin && p.can_write();
    let invitations = match admin {
        true => p.call("list_invitations", json!({ "workspace": p.ws.slug })).await?,
        false => json!({ "invitations": [] }),
    };
    let me = &p.who.caller.account_id;
    Ok(Page {
        title: "Members".into(),
        nav: "/members",
        main: html! {
            h1 { "Members" }
            table data-live="members" {
                thead { tr { th { "Name" } th { "Email" } th { "Role" } th { "Since" } th {} } }
                tbody { @for m in list(&members, "members") {
                    @let id = s(&m["account_id"]);
                    tr data-member=(id) {
                        td { (s(&m["name"])) @if id == me { " " span.muted { "(you)" } } }
                        td { (s(&m["email"])) }
                        td {
                            form.inline method="post" action=(p.link("/op/set_member_role")) {
                                (hidden(p))
                                input type="hidden" name="workspace" value=(p.ws.slug);
                                input type="hidden" name="account_id" value=(id);
                                select name="role" aria-label="role" disabled[!admin] {
                                    @for r in ROLES { option value=(r) selected[s(&m["role"]) == *r] { (r) } }
                                }
                                " " button type="submit" disabled[!admin] { "Change" }
                            }
                        }
                        td { (time(m["created_ms"].as_i64().unwrap_or(0))) }
                        td { (action(p, "remove_member", &[("workspace", &p.ws.slug), ("account_id", id)],
                            if id == me { "Leave" } else { "Remove" }, "danger", Some("Remove from this workspace?"))) }
                    }
                } }
            }
            h2 { "Invite someone" }
            @if admin {
                form.row method="post" action=(p.link("/op/create_invitation")) {
                    (hidden(p))
                    input type="hidden" name="workspace" value=(p.ws.slug);
                    input type="email" name="email" placeholder="whom it is for (a note)" aria-label="email";
                    select name="role" aria-label="role" { option value="member" { "member" } option value="admin" { "admin" } }
                    input type="number" name="expires_in_days" min="1" max="30" value="7" aria-label="days it can be accepted";
                    button.primary type="submit" { "Create invitation" }
                }
                p.muted.small { "You get a one-time link to pass on; the invitee opens it signed in to their own account." }
                @if !list(&invitations, "invitations").is_empty() {
                    h2 { "Pending invitations" }
                    table data-live="invitations" {
                        thead { tr { th { "For" } th { "Role" } th { "Until" } th {} } }
                        tbody { @for i in list(&invitations, "invitations") {
                            tr { td { (i["email"].as_str().unwrap_or("anyone with the link")) } td { (s(&i["role"])) }
                                 td { (time(i["expires_ms"].as_i64().unwrap_or(0))) }
                                 td { (action(p, "revoke_invitation", &[("workspace", &p.ws.slug), ("invitation_id", s(&i["invitation_id"]))], "Revoke", "link", None)) } }
                        } }
                    }
                }
            } @else {
                p.muted { "Owners and admins invite people and change roles." }
            }
        },
    })
}
