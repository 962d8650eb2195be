//! A `sync` job's second half: server files written into `work/` where the agent left them alone.

use super::safe_relative;
use std::collections::BTreeMap;
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
pub(super) fn refresh(
    work: &Path,
    baseline: &mut BTreeMap<String, String>,
    path: &str,
    content: String,
) -> Result<bool, String> {
    let rel = safe_relative(path).ok_or("an unsafe path")?;
    let p = work.join(&rel);
    let here = local(&p);
    if matches!(&here, Local::Text(t) if *t == content) {
        baseline.insert(path.to_owned(), content);
        return Ok(false);
    }
    let untouched = match &here {
        Local::Absent => !baseline.contains_key(path),
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
    baseline.insert(path.to_owned(), content);
    Ok(true)
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
        let mut base: BTreeMap<String, String> =
            [("same.md", "old"), ("mine.md", "old"), ("deleted.md", "old")].map(|(a, b)| (a.into(), b.into())).into();
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
        assert_eq!(base["same.md"], "server's");
        assert_eq!(base["mine.md"], "old");
    }
}
