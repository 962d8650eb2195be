//! Members: who belongs to the workspace and with which role, and adding people.

use super::{list, Page};
use crate::console::layout::{hidden, time};
use crate::console::render::s;
use crate::console::Ctx;
use crate::cx::Role;
use crate::error::ApiError;
use maud::html;
use serde_json::json;

pub async fn page(p: &Ctx<'_>) -> Result<Page, ApiError> {
    let members = p.call("list_members", json!({ "workspace": p.ws.slug })).await?;
    let admin = p.ws.role >= Role::Admin && p.can_write();
    Ok(Page {
        title: "Members".into(),
        nav: "/members",
        main: html! {
            h1 { "Members" }
            table data-live="members" {
                thead { tr { th { "Name" } th { "Email" } th { "Role" } th { "Since" } } }
                tbody { @for m in list(&members, "members") {
                    tr { td { (s(&m["name"])) } td { (s(&m["email"])) } td { (s(&m["role"])) } td { (time(m["created_ms"].as_i64().unwrap_or(0))) } }
                } }
            }
            h2 { "Add a member" }
            form.row method="post" action=(p.link("/op/add_member")) {
                (hidden(p))
                input type="hidden" name="workspace" value=(p.ws.slug);
                input type="email" name="email" required placeholder="email of their account" aria-label="email" disabled[!admin];
                select name="role" aria-label="role" disabled[!admin] { option value="member" { "member" } option value="admin" { "admin" } }
                button type="submit" disabled[!admin] { "Add" }
            }
            @if !admin { p.muted.small { "Owners and admins add members." } }
        },
    })
}
