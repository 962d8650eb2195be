//! Members: who belongs to the workspace and with which role; inviting people (a one-time token shown
//! once, accepted by the invitee signed in with their own key), changing roles and removing members. The
//! operations decide who may do what (owners and admins; the last owner stays).

use super::Page;
use crate::console::layout::{action, hidden, time};
use crate::console::Ctx;
use crate::cx::Role;
use crate::error::ApiError;
use crate::ops::call;
use crate::ops::members::{ListInvitations, ListMembers};
use crate::ops::name;
use maud::html;

const ROLES: &[&str] = &["member", "admin", "owner"];

pub async fn page(p: &Ctx<'_>) -> Result<Page, ApiError> {
    let members = call::list_members(p.cx, ListMembers { workspace: p.ws.slug.clone() }).await?.members;
    let admin = p.ws.role >= Role::Admin && p.can_write();
    let invitations = match admin {
        true => call::list_invitations(p.cx, ListInvitations { workspace: p.ws.slug.clone() }).await?.invitations,
        false => vec![],
    };
    let me = &p.who.caller.account_id;
    let slack = crate::store::slack::get(p.cx.db(), &p.ws.workspace_id).await?;
    Ok(Page {
        title: "Members".into(),
        nav: "/members",
        main: html! {
            h1 { "Members" }
            table data-live="members" {
                thead { tr { th { "Name" } th { "Email" } th { "Role" } th { "Since" } th {} } }
                tbody { @for m in &members {
                    @let id = m.account_id.as_str();
                    tr data-member=(id) {
                        td { (m.name) @if id == me { " " span.muted { "(you)" } } }
                        td { (m.email) }
                        td {
                            form.inline method="post" action=(p.action_url(name::set_member_role)) {
                                (hidden(p))
                                input type="hidden" name="workspace" value=(p.ws.slug);
                                input type="hidden" name="account_id" value=(id);
                                select name="role" aria-label="role" disabled[!admin] {
                                    @for r in ROLES { option value=(r) selected[m.role.as_str() == *r] { (r) } }
                                }
                                " " button type="submit" disabled[!admin] { "Change" }
                            }
                        }
                        td { (time(m.created_ms)) }
                        td { (action(p, name::remove_member, &[("workspace", &p.ws.slug), ("account_id", id)],
                            if id == me { "Leave" } else { "Remove" }, "danger", Some("Remove from this workspace?"))) }
                    }
                } }
            }
            h2 { "Answer from Slack" }
            @if slack.is_some() {
                p.muted.small {
                    "This workspace's Slack app posts requests with buttons. To answer from Slack as yourself, make a code and send "
                    code { "/agentsky link <code>" } " in Slack within 10 minutes (it works once)."
                }
                (action(p, name::link_slack, &[("workspace", &p.ws.slug)], "Make a Slack link code", "", None))
            } @else {
                p.muted.small { "No Slack app is connected (an owner or admin connects one with " code { "connect_slack" } ")." }
            }
            h2 { "Invite someone" }
            @if admin {
                form.row method="post" action=(p.action_url(name::create_invitation)) {
                    (hidden(p))
                    input type="hidden" name="workspace" value=(p.ws.slug);
                    input type="email" name="email" placeholder="whom it is for (a note)" aria-label="email";
                    select name="role" aria-label="role" { option value="member" { "member" } option value="admin" { "admin" } }
                    input type="number" name="expires_in_days" min="1" max="30" value="7" aria-label="days it can be accepted";
                    button.primary type="submit" { "Create invitation" }
                }
                p.muted.small { "You get a one-time link to pass on; the invitee opens it signed in to their own account." }
                @if !invitations.is_empty() {
                    h2 { "Pending invitations" }
                    table data-live="invitations" {
                        thead { tr { th { "For" } th { "Role" } th { "Until" } th {} } }
                        tbody { @for i in &invitations {
                            tr { td { (i.email.as_deref().unwrap_or("anyone with the link")) } td { (i.role) }
                                 td { (time(i.expires_ms)) }
                                 td { (action(p, name::revoke_invitation, &[("workspace", &p.ws.slug), ("invitation_id", &i.invitation_id)], "Revoke", "link", None)) } }
                        } }
                    }
                }
            } @else {
                p.muted { "Owners and admins invite people and change roles." }
            }
        },
    })
}
