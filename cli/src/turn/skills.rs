//! The workspace's company skills in a turn's working folder (`.claude/skills/<name>/` and
//! `.codex/skills/<name>/`), from `GET /v1/runner/skills`, checked as [`crate::company_skills`] checks
//! every skill before it is written.

use super::Baseline;
use crate::company_skills;
use crate::runner_client::{CallError, Client};
use std::path::{Path, PathBuf};

/// Writes the skills into a turn's working folder and adds what it wrote to `baseline` (the files the
/// turn compares against when it uploads), so skills the agent left unchanged are not uploaded as its
/// work. A project file of the same path wins. Returns notes for the turn's status.
pub(super) fn install(client: &Client, lease_id: &str, work: &Path, baseline: &mut Baseline) -> Vec<String> {
    let skills = match client.skills(lease_id) {
        Ok(s) => s,
        Err(CallError::Refused(_)) => return vec![], // an older server, without skills
        Err(e) => return vec![format!("The workspace's skills were not fetched: {e}.")],
    };
    let mut notes = Vec::new();
    for skill in &skills {
        let (name, files) = match company_skills::files_of(skill) {
            Ok(f) => f,
            Err(why) => {
                notes.push(why);
                continue;
            }
        };
        for folder in company_skills::TURN_FOLDERS {
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
