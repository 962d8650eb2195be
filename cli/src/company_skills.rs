//! The workspace's company skills on this machine, in the Agent Skills layout (`<name>/SKILL.md` and the
//! files beside it), where each CLI reads skills:
//! - in a runner's turn, under the turn's working folder: `.claude/skills/<name>/` (Claude Code's project
//!   skills) and `.codex/skills/<name>/` (Codex's repository skills), from `GET /v1/runner/skills`;
//! - with `sky setup`, beside the `agentsky` skill: `~/.claude/skills/<name>/` and
//!   `$CODEX_HOME/skills/<name>/`, from `GET /v1/skills`.
//!
//! Names and paths are checked again with the server's own rules ([`agentsky_wire`]) before anything is
//! written, so a skill can never reach outside its folder. A turn writes them with [`files_of`]
//! (`turn/skills.rs`); `sky setup` with [`fetch`] and [`changes`].

use crate::api::Api;
use crate::files::Change;
use crate::Result;
use agentsky_wire::runner::Skill;
use agentsky_wire::skills::{is_name, SKILL_FILE};
use std::path::{Path, PathBuf};

/// Where a turn's agent CLIs read project skills, relative to the turn's working folder.
pub const TURN_FOLDERS: &[&str] = &[".claude/skills", ".codex/skills"];

/// One skill's files, relative to its own folder (`SKILL.md` first), or why it is left out.
pub fn files_of(skill: &Skill) -> std::result::Result<(String, Vec<(String, String)>), String> {
    let name = skill.name.as_str();
    if !is_name(name) || name == crate::skill::NAME {
        return Err(format!("skill {name:?} was left out (not a usable skill name)"));
    }
    let skill_md = skill.skill_md.as_deref().ok_or_else(|| format!("skill `{name}` has no SKILL.md"))?;
    let mut out = vec![(SKILL_FILE.to_owned(), skill_md.to_owned())];
    for (path, text) in &skill.files {
        if !agentsky_wire::paths::is_normal(path) {
            return Err(format!("skill `{name}` was left out (its file {path:?} is not a safe relative path)"));
        }
        out.push((path.clone(), text.clone()));
    }
    Ok((name.to_owned(), out))
}

/// The workspace's skills in full, for `sky setup`.
pub fn fetch(api: &Api, key: &str) -> Result<Vec<Skill>> {
    let listed = api.get("/v1/skills", Some(key))?;
    // An older server has no skills.
    if listed.status == 404 {
        return Ok(vec![]);
    }
    let listed = listed.into_ok("listing the workspace's skills")?;
    let mut out = Vec::new();
    for s in listed["skills"].as_array().into_iter().flatten() {
        let name = s["name"].as_str().unwrap_or_default();
        if is_name(name) {
            let what = format!("reading skill `{name}`");
            let skill = api.get(&format!("/v1/skills/{name}"), Some(key))?.into_ok(&what)?;
            out.push(serde_json::from_value(skill).map_err(|e| crate::Error::new(format!("{what}: {e}")))?);
        }
    }
    Ok(out)
}

/// `sky setup`'s changes for the skills: each skill's files under `skills_dir/<name>/`, for `client`.
pub fn changes(skills_dir: &Path, skills: &[Skill], client: &str) -> Result<Vec<Change>> {
    let mut out = Vec::new();
    for skill in skills {
        let Ok((name, files)) = files_of(skill) else { continue };
        for (path, text) in files {
            let path_buf = skills_dir.join(&name).join(path.split('/').collect::<PathBuf>());
            let before = match std::fs::read_to_string(&path_buf) {
                Ok(t) => Some(t),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => return Err(crate::Error::new(format!("cannot read {}: {e}", path_buf.display()))),
            };
            let verb = if before.is_some() { "update" } else { "create" };
            let what = format!("{verb} the {client} company skill `{name}`: {path}");
            out.push(Change { path: path_buf, what, before, after: text, private: false });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn skill(v: Value) -> Skill {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_skill_becomes_its_files_and_unsafe_ones_are_left_out() {
        let ok =
            json!({"name": "release-notes", "skill_md": "---\nname: release-notes\n---\n", "files": {"t/a.md": "x"}});
        let (name, files) = files_of(&skill(ok)).unwrap();
        assert_eq!(name, "release-notes");
        assert_eq!(files[0].0, "SKILL.md");
        assert_eq!(files[1], ("t/a.md".to_owned(), "x".to_owned()));
        for bad in [
            json!({"name": "../x", "skill_md": "s"}),
            json!({"name": "agentsky", "skill_md": "s"}),
            json!({"name": "ok", "skill_md": "s", "files": {"../../etc/x": "y"}}),
            json!({"name": "ok", "skill_md": "s", "files": {"/abs": "y"}}),
        ] {
            assert!(files_of(&skill(bad.clone())).is_err(), "{bad}");
        }
    }

    #[test]
    fn setup_plans_each_skill_beside_the_agentsky_skill() {
        let dir = std::env::temp_dir().join(format!("sky-skills-{}", std::process::id()));
        let skills = [skill(json!({"name": "release-notes", "skill_md": "S", "files": {"t/a.md": "x"}}))];
        let planned = changes(&dir, &skills, "Codex").unwrap();
        let paths: Vec<PathBuf> = planned.iter().map(|c| c.path.clone()).collect();
        assert_eq!(paths, [dir.join("release-notes/SKILL.md"), dir.join("release-notes/t/a.md")]);
        assert!(planned[0].what.contains("create the Codex company skill `release-notes`"));
    }
}
