//! A `sync` job's second half: server files written into `work/` where the agent left them alone, and
//! files the server no longer has removed from it on the same terms.

use super::{safe_relative, Baseline};
use std::path::Path;

/// A file of `work/` as the refresh sees it.
#[derive(PartialEq)]
enum Local {
    Absent,
    Text(String),
    /// A symlink, a folder, or not UTF-8 text: never overwritten.
    Other,
}

fn local(p: &Path) -> Local {
    match std::fs::symlink_metadata(p) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Local::Absent,
        Ok(m) if m.is_file() => match std::fs::read(p).map(String::from_utf8) {
            Ok(Ok(text)) => Local::Text(text),
            _ => Local::Other,
        },
        _ => Local::Other,
    }
}

/// Writes a server file into `work` when the agent has not changed it since `baseline` (absent in both
/// counts as unchanged, so new server files arrive and files the agent deleted stay deleted), and makes
/// it the baseline. `Ok(true)` when written.
pub(super) fn refresh(work: &Path, baseline: &mut Baseline, path: &str, content: String) -> Result<bool, String> {
    let rel = safe_relative(path).ok_or("an unsafe path")?;
    let p = work.join(&rel);
    let here = local(&p);
    if matches!(&here, Local::Text(t) if *t == content) {
        baseline.wrote(path, content);
        return Ok(false);
    }
    let untouched = match &here {
        Local::Absent => !baseline.contains(path),
        Local::Text(t) => baseline.get(path) == Some(t),
        Local::Other => false,
    };
    if !untouched {
        return Ok(false);
    }
    // Never through a symlinked folder the agent made: that could write outside `work/`.
    let mut at = work.to_owned();
    for part in rel.parent().into_iter().flat_map(Path::components) {
        at.push(part);
        if std::fs::symlink_metadata(&at).is_ok_and(|m| !m.is_dir()) {
            return Err(format!("{} is not a folder here", at.strip_prefix(work).unwrap_or(&at).display()));
        }
    }
    p.parent().map(std::fs::create_dir_all).transpose().map_err(|e| e.to_string())?;
    std::fs::write(&p, &content).map_err(|e| e.to_string())?;
    baseline.wrote(path, content);
    Ok(true)
}

/// Removes a baseline file the server no longer has (the lane took the base's delete) when the agent has
/// not changed it since `baseline`, and forgets it. `Ok(true)` when removed.
pub(super) fn remove(work: &Path, baseline: &mut Baseline, path: &str) -> Result<bool, String> {
    let rel = safe_relative(path).ok_or("an unsafe path")?;
    let p = work.join(&rel);
    match local(&p) {
        Local::Absent => {
            baseline.forget(path);
            Ok(false)
        }
        // Never through a symlinked folder the agent made (the file then reads as another one).
        Local::Text(t) if baseline.get(path) == Some(&t) && !through_symlink(work, &rel) => {
            std::fs::remove_file(&p).map_err(|e| e.to_string())?;
            baseline.forget(path);
            Ok(true)
        }
        _ => Ok(false),
    }
}

/// Whether a folder on the way to `rel` under `work` is not a plain folder.
fn through_symlink(work: &Path, rel: &Path) -> bool {
    let mut at = work.to_owned();
    rel.parent().into_iter().flat_map(Path::components).any(|part| {
        at.push(part);
        std::fs::symlink_metadata(&at).is_ok_and(|m| !m.is_dir())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refresh_writes_only_what_the_agent_left_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_owned();
        std::fs::create_dir_all(&dir).unwrap();
        let w = |p: &str, t: &str| std::fs::write(dir.join(p), t).unwrap();
        w("same.md", "old");
        w("mine.md", "agent's");
        let mut base: Baseline = [("same.md", "old"), ("mine.md", "old"), ("deleted.md", "old")]
            .map(|(a, b)| (a.into(), b.into()))
            .into_iter()
            .collect();
        let mut r = |p: &str, t: &str| refresh(&dir, &mut base, p, t.into());
        assert_eq!(r("same.md", "server's"), Ok(true));
        assert_eq!(r("mine.md", "server's"), Ok(false));
        assert_eq!(r("deleted.md", "server's"), Ok(false));
        assert_eq!(r("new/file.md", "new"), Ok(true));
        assert!(r("../escape.md", "x").is_err());
        assert_eq!(std::fs::read_to_string(dir.join("same.md")).unwrap(), "server's");
        assert_eq!(std::fs::read_to_string(dir.join("mine.md")).unwrap(), "agent's");
        assert!(!dir.join("deleted.md").exists());
        assert_eq!(std::fs::read_to_string(dir.join("new/file.md")).unwrap(), "new");
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink("/tmp", dir.join("out")).unwrap();
            assert!(r("out/x.md", "x").unwrap_err().contains("not a folder"));
        }
        assert_eq!(base.get("same.md").unwrap(), "server's");
        assert_eq!(base.get("mine.md").unwrap(), "old");
    }

    #[test]
    fn a_removal_takes_only_what_the_agent_left_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_owned();
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub/old.md"), "old").unwrap();
        std::fs::write(dir.join("edited.md"), "agent's").unwrap();
        let mut base: Baseline = [("sub/old.md", "old"), ("edited.md", "old"), ("gone.md", "old")]
            .map(|(a, b)| (a.into(), b.into()))
            .into_iter()
            .collect();
        assert_eq!(remove(&dir, &mut base, "sub/old.md"), Ok(true));
        assert_eq!(remove(&dir, &mut base, "edited.md"), Ok(false));
        assert_eq!(remove(&dir, &mut base, "gone.md"), Ok(false));
        assert!(remove(&dir, &mut base, "../x.md").is_err());
        assert!(!dir.join("sub/old.md").exists());
        assert_eq!(std::fs::read_to_string(dir.join("edited.md")).unwrap(), "agent's");
        assert_eq!(base.task_paths().collect::<Vec<_>>(), ["edited.md"]);
    }
}
