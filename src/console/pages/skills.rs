//! Company skills: the workspace's `SKILL.md` documents every session gets, each with its description;
//! one read in full; and, for owners and admins, adding, editing and deleting.

use super::{empty, Page};
use crate::console::layout::{action, hidden, time, verbatim};
use crate::console::Ctx;
use crate::cx::Role;
use crate::error::ApiError;
use crate::ops::call;
use crate::ops::name;
use crate::ops::skills::{GetSkill, ListSkills};
use crate::store::skills::SkillRow;
use maud::{html, Markup};

const TEMPLATE: &str = "---\nname: \ndescription: What it does, and when to use it.\n---\n# Instructions\n";

/// The add or edit form: the whole `SKILL.md`, and the files beside it as JSON.
fn editor(p: &Ctx<'_>, skill: Option<&SkillRow>) -> Markup {
    let name = skill.map_or("", |k| &k.name);
    let skill_md = skill.map_or(TEMPLATE, |k| &k.skill_md);
    let files = skill.map(|k| &k.files).filter(|f| !f.is_empty());
    html! {
        form.card method="post" action=(p.action_url(name::put_skill)) data-skill-form {
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
                textarea name="files" rows="3" { @if let Some(f) = files { (serde_json::to_string(f).unwrap_or_default()) } } }
            div.row { button.primary type="submit" { @if skill.is_some() { "Save changes" } @else { "Add skill" } } }
        }
    }
}

pub async fn page(p: &Ctx<'_>, name: Option<&str>) -> Result<Page, ApiError> {
    let manage = p.can_write() && p.ws.role >= Role::Admin;
    if let Some(name) = name {
        let skill =
            call::get_skill(p.cx, GetSkill { name: name.to_owned(), workspace: Some(p.ws.slug.clone()) }).await?;
        return Ok(Page {
            title: format!("Skill {name}"),
            nav: "/skills",
            main: html! {
                p { a href=(p.link("/skills")) { "← Skills" } }
                h1 { code { (name) } }
                p { (skill.description) }
                p.muted.small { "Updated " (time(skill.updated_ms)) " by " (skill.updated_by) }
                h2 { "SKILL.md" }
                pre data-skill-md { (verbatim(&skill.skill_md)) }
                @for (path, text) in &skill.files {
                    h3 { code { (path) } }
                    pre { (verbatim(text)) }
                }
                @if manage {
                    h2 { "Edit" }
                    (editor(p, Some(&skill)))
                    (action(p, name::delete_skill, &[("name", name), ("workspace", &p.ws.slug)], "Delete skill", "danger", Some("Delete this skill? Sessions no longer get it.")))
                }
            },
        });
    }
    let skills = call::list_skills(p.cx, ListSkills { workspace: Some(p.ws.slug.clone()) }).await?.skills;
    Ok(Page {
        title: "Skills".into(),
        nav: "/skills",
        main: html! {
            h1 { "Skills" }
            p.muted { "Company skills in the Agent Skills layout. Every session of the workspace gets them: the openai "
                "harness lists them and reads one when a task fits; runner turns find them in .claude/skills and .codex/skills." }
            section data-live="skills" {
                @if skills.is_empty() { (empty("No skills yet. A skill teaches every agent here how your company does one thing.")) }
                @for k in &skills {
                    @let name = k.name.as_str();
                    article.card data-skill=(name) {
                        header { h3 { a href=(p.link(&format!("/skills/{name}"))) { code { (name) } } } }
                        p { (k.description) }
                        @if manage { div.row {
                            a href=(p.link(&format!("/skills/{name}"))) { "View and edit" }
                            (action(p, name::delete_skill, &[("name", name), ("workspace", &p.ws.slug)], "Delete", "danger", Some("Delete this skill? Sessions no longer get it.")))
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
