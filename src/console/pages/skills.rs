//! Company skills: the workspace's `SKILL.md` documents every session gets, each with its description;
//! one read in full; and, for owners and admins, adding, editing and deleting.

use super::{empty, list, Page};
use crate::console::layout::{action, hidden, time, verbatim};
use crate::console::render::s;
use crate::console::Ctx;
use crate::cx::Role;
use crate::error::ApiError;
use maud::{html, Markup};
use serde_json::{json, Value};

const TEMPLATE: &str = "---\nname: \ndescription: What it does, and when to use it.\n---\n# Instructions\n";

/// The add or edit form: the whole `SKILL.md`, and the files beside it as JSON.
fn editor(p: &Ctx<'_>, skill: Option<&Value>) -> Markup {
    let name = skill.map_or("", |k| s(&k["name"]));
    let skill_md = skill.map_or(TEMPLATE, |k| s(&k["skill_md"]));
    let files = skill.map(|k| &k["files"]).filter(|f| f.as_object().is_some_and(|o| !o.is_empty()));
    html! {
        form.card method="post" action=(p.link("/op/put_skill")) data-skill-form {
            (hidden(p))
            input type="hidden" name="workspace" value=(p.ws.slug);
            @if skill.is_some() { input type="hidden" name="name" value=(name); }
            @else {
                label { "Name (lowercase letters, digits and hyphens; the front matter's name too)"
                    input type="text" name="name" required maxlength="64" pattern="[a-z0-9]+(-[a-z0-9]+)*"; }
            }
            label { "SKILL.md (YAML front matter with name and description, then the instructions)"
                textarea name="skill_md" required rows="14" { (skill_md) } }
            label { "Files beside it (optional JSON: {\"path\": \"text\"})"
                textarea name="files" rows="3" { @if let Some(f) = files { (f.to_string()) } } }
            div.row { button.primary type="submit" { @if skill.is_some() { "Save changes" } @else { "Add skill" } } }
        }
    }
}

pub async fn page(p: &Ctx<'_>, name: Option<&str>) -> Result<Page, ApiError> {
    let manage = p.can_write() && p.ws.role >= Role::Admin;
    if let Some(name) = name {
        let skill = p.call("get_skill", json!({ "name": name, "workspace": p.ws.slug })).await?;
        return Ok(Page {
            title: format!("Skill {name}"),
            nav: "/skills",
            main: html! {
                p { a href=(p.link("/skills")) { "← Skills" } }
                h1 { code { (name) } }
                p { (s(&skill["description"])) }
                p.muted.small { "Updated " (time(skill["updated_ms"].as_i64().unwrap_or(0))) " by " (s(&skill["updated_by"])) }
                h2 { "SKILL.md" }
                pre data-skill-md { (verbatim(s(&skill["skill_md"]))) }
                @for (path, text) in skill["files"].as_object().into_iter().flatten() {
                    h3 { code { (path) } }
                    pre { (verbatim(s(text))) }
                }
                @if manage {
                    h2 { "Edit" }
                    (editor(p, Some(&skill)))
                    (action(p, "delete_skill", &[("name", name), ("workspace", &p.ws.slug)], "Delete skill", "danger", Some("Delete this skill? Sessions no longer get it.")))
                }
            },
        });
    }
    let listed = p.call("list_skills", json!({ "workspace": p.ws.slug })).await?;
    Ok(Page {
        title: "Skills".into(),
        nav: "/skills",
        main: html! {
            h1 { "Skills" }
            p.muted { "Company skills in the Agent Skills layout. Every session of the workspace gets them: the openai "
                "harness lists them and reads one when a task fits; runner turns find them in .claude/skills and .codex/skills." }
            section data-live="skills" {
                @if list(&listed, "skills").is_empty() { (empty("No skills yet. A skill teaches every agent here how your company does one thing.")) }
                @for k in list(&listed, "skills") {
                    @let name = s(&k["name"]);
                    article.card data-skill=(name) {
                        header { h3 { a href=(p.link(&format!("/skills/{name}"))) { code { (name) } } } }
                        p { (s(&k["description"])) }
                        @if manage { div.row {
                            a href=(p.link(&format!("/skills/{name}"))) { "View and edit" }
                            (action(p, "delete_skill", &[("name", name), ("workspace", &p.ws.slug)], "Delete", "danger", Some("Delete this skill? Sessions no longer get it.")))
                        } }
                    }
                }
            }
            @if manage {
                h2 { "Add a skill" }
                (editor(p, None))
            } @else {
                p.muted { "Owners and admins add, edit and delete skills." }
            }
        },
    })
}
