//! Where things live on this machine and what the environment says, read once. Every other module takes a
//! [`Context`], so tests run the whole CLI against a scratch home without touching the real one.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone)]
pub struct Context {
    pub home: PathBuf,
    /// `$XDG_CONFIG_HOME`, else `~/.config`: sky's own config lives in `agentsky/` under it.
    pub config_home: PathBuf,
    /// Claude Code's user settings file: `~/.claude.json` (or `$CLAUDE_CONFIG_DIR/.claude.json`).
    pub claude_json: PathBuf,
    /// Claude Code's folder, where user skills live: `~/.claude` (or `$CLAUDE_CONFIG_DIR`).
    pub claude_dir: PathBuf,
    /// Codex's folder: `~/.codex` (or `$CODEX_HOME`).
    pub codex_home: PathBuf,
    /// `$PATH`, to find the `claude` and `codex` commands.
    pub path: Option<OsString>,
    /// `$AGENTSKY_API_KEY`: a key for scripts, ahead of the stored one.
    pub env_key: Option<String>,
    /// `$AGENTSKY_URL`: the server, ahead of the stored one.
    pub env_server: Option<String>,
}

impl Context {
    /// Reads the process environment.
    pub fn from_env() -> crate::Result<Self> {
        let home = std::env::var_os("HOME")
            .or_else(|| std::env::var_os("USERPROFILE"))
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .ok_or_else(|| crate::Error::new("cannot tell your home directory: HOME is not set"))?;
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        let text = |name: &str| std::env::var(name).ok().map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
        let mut ctx = Self::new(
            home,
            var("XDG_CONFIG_HOME"),
            var("CLAUDE_CONFIG_DIR"),
            var("CODEX_HOME"),
            std::env::var_os("PATH"),
        );
        ctx.env_key = text("AGENTSKY_API_KEY");
        ctx.env_server = text("AGENTSKY_URL");
        Ok(ctx)
    }

    /// A context for a given home, with the optional overrides the environment may set.
    pub fn new(
        home: PathBuf,
        xdg_config_home: Option<PathBuf>,
        claude_config_dir: Option<PathBuf>,
        codex_home: Option<PathBuf>,
        path: Option<OsString>,
    ) -> Self {
        let (claude_dir, claude_json) = match claude_config_dir {
            Some(dir) => (dir.clone(), dir.join(".claude.json")),
            None => (home.join(".claude"), home.join(".claude.json")),
        };
        Self {
            config_home: xdg_config_home.unwrap_or_else(|| home.join(".config")),
            codex_home: codex_home.unwrap_or_else(|| home.join(".codex")),
            claude_dir,
            claude_json,
            path,
            home,
            env_key: None,
            env_server: None,
        }
    }

    /// A context whose every path is under `home`, with no `PATH` and no agentsky variables (tests).
    pub fn in_home(home: &Path) -> Self {
        Self::new(home.to_owned(), None, None, None, None)
    }

    /// sky's own folder.
    pub fn sky_dir(&self) -> PathBuf {
        self.config_home.join("agentsky")
    }

    /// Is `name` an executable file in one of `PATH`'s folders?
    pub fn on_path(&self, name: &str) -> bool {
        let Some(path) = &self.path else { return false };
        which::which_in(name, Some(path), std::env::current_dir().unwrap_or_default()).is_ok()
    }

    /// A path as output shows it: `~/…` under the home folder.
    pub fn show(&self, path: &Path) -> String {
        match path.strip_prefix(&self.home) {
            Ok(rest) => format!("~/{}", rest.display()),
            Err(_) => path.display().to_string(),
        }
    }
}
