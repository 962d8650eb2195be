//! The workspace's company skills on this machine, in the Agent Skills layout (`<name>/SKILL.md` and the
//! files beside it), where each CLI reads skills:
//! - in a runner's turn, under the turn's working folder: `.claude/skills/<name>/` (Claude Code's project
//!   skills) and `.codex/skills/<name>/` (Codex's repository skills), from `GET /v1/runner/skills`;
//! - with `sky setup`, beside the `agentsky` skill: `~/.claude/skills/<name>/` and
//!   `$CODEX_HOME/skills/<name>/`, from `GET /v1/skills`.
//!
//! Names and paths are checked again with the server's own rules ([`agentsky_wire`]) before anything is
//! written, so a skill can never reach outside its folder.

use crate::api::Api;
use crate::files::Change;
use crate::runner::{CallError, Client};
use crate::turn::Baseline;
use crate::Result;
use agentsky_wire::skills::{is_name, SKILL_FILE};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Where a turn's agent CLIs read project skills, relative to the turn's working folder.
pub const TURN_FOLDERS: &[&str] = &[".claude/skills", ".codex/skills"];

/// One skill's files, relative to its own folder (`SKILL.md` first), or why it is left out.
pub fn files_of(skill: &Value) -> std::result::Result<(String, Vec<(String, String)>), String> {
    let name = skill["name"].as_str().unwrap_or_default();
    if !is_name(name) || name == crate::skill::NAME {
        return Err(format!("skill {name:?} was left out (not a usable skill name)"));
    }
    let skill_md = skill["skill_md"].as_str().ok_or_else(|| format!("skill `{name}` has no SKILL.md"))?;
    let mut out = vec![(SKILL_FILE.to_owned(), skill_md.to_owned())];
    for (path, text) in skill["files"].as_object().into_iter().flatten() {
        match text.as_str() {
            Some(text) if agentsky_wire::paths::is_normal(path) => out.push((path.clone(), text.to_owned())),
            _ => return Err(format!("skill `{name}` was left out (its file {path:?} is not a safe relative path)")),
        }
    }
    Ok((name.to_owned(), out))
}

/// Writes the skills into a turn's working folder and adds what it wrote to `baseline` (the files the
/// turn compares against when it uploads), so skills the agent left unchanged are not uploaded as its
/// work. A project file of the same path wins. Returns notes for the turn's status.
pub fn install_in_turn(client: &Client, lease_id: &str, work: &Path, baseline: &mut Baseline) -> Vec<String> {
    let skills = match client.skills(lease_id) {
        Ok(s) => s,
        Err(CallError::Refused(_)) => return vec![], // an older server, without skills
        Err(e) => return vec![format!("The workspace's skills were not fetched: {e}.")],
    };
    let mut notes = Vec::new();
    for skill in &skills {
        let (name, files) = match files_of(skill) {
            Ok(f) => f,
            Err(why) => {
                notes.push(why);
                continue;
            }
        };
        for folder in TURN_FOLDERS {
            for (path, text) in &files {
                let rel = format!("{folder}/{name}/{path}");
                if baseline.contains(&rel) {
                    continue;
                }
                let target: PathBuf = work.join(rel.split('/').collect::<PathBuf>());
                let written = target
                    .parent()
                    .map_or(Ok(()), std::fs::create_dir_all)
                    .and_then(|()| std::fs::write(&target, text));
                match written {
                    Ok(()) => {
                        baseline.skill(&rel, text.clone());
                    }
                    Err(e) => notes.push(format!("{rel} was not written ({e})")),
                }
            }
        }
    }
    notes
}

/// The workspace's skills in full, for `sky setup`.
pub fn fetch(api: &Api, key: &str) -> Result<Vec<Value>> {
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
            out.push(api.get(&format!("/v1/skills/{name}"), Some(key))?.into_ok(&format!("reading skill `{name}`"))?);
        }
    }
    Ok(out)
}

/// `sky setup`'s changes for the skills: each skill's files under `skills_dir/<name>/`, for `client`.
pub fn changes(skills_dir: &Path, skills: &[Value], client: &str) -> Result<Vec<Change>> {
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
    use serde_json::json;

    #[test]
    fn a_skill_becomes_its_files_and_unsafe_ones_are_left_out() {
        let ok =
            json!({"name": "release-notes", "skill_md": "---\nname: release-notes\n---\n", "files": {"t/a.md": "x"}});
        let (name, files) = files_of(&ok).unwrap();
        assert_eq!(name, "release-notes");
        assert_eq!(files[0].0, "SKILL.md");
        assert_eq!(files[1], ("t/a.md".to_owned(), "x".to_owned()));
        for bad in [
            json!({"name": "../x", "skill_md": "s"}),
            json!({"name": "agentsky", "skill_md": "s"}),
            json!({"name": "ok", "skill_md": "s", "files": {"../../etc/x": "y"}}),
            json!({"name": "ok", "skill_md": "s", "files": {"/abs": "y"}}),
        ] {
            assert!(files_of(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn setup_plans_each_skill_beside_the_agentsky_skill() {
        let dir = std::env::temp_dir().join(format!("sky-skills-{}", std::process::id()));
        let skills = [json!({"name": "release-notes", "skill_md": "S", "files": {"t/a.md": "x"}})];
        let planned = changes(&dir, &skills, "Codex").unwrap();
        let paths: Vec<PathBuf> = planned.iter().map(|c| c.path.clone()).collect();
        assert_eq!(paths, [dir.join("release-notes/SKILL.md"), dir.join("release-notes/t/a.md")]);
        assert!(planned[0].what.contains("create the Codex company skill `release-notes`"));
    }
}
