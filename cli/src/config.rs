//! sky's own config file, `$XDG_CONFIG_HOME/agentsky/config.json` (else `~/.config/agentsky/…`): the
//! server and the key `sky auth login` stored. Written with owner-only permissions (0600, folder 0700),
//! replaced atomically, and never printed.

use crate::context::Context;
use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Stored {
    /// The server signed in to, without a trailing slash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Set when the key came from device sign-in: `sky auth logout` revokes it by this id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    /// The workspace calls use by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_name: Option<String>,
}

pub fn path(ctx: &Context) -> PathBuf {
    ctx.sky_dir().join("config.json")
}

/// The stored config; empty when there is none yet.
pub fn load(ctx: &Context) -> Result<Stored> {
    let p = path(ctx);
    match std::fs::read_to_string(&p) {
        Ok(text) => serde_json::from_str(&text).map_err(|e| {
            Error::new(format!(
                "{} is not valid sky config ({e}); delete it and sign in again with `sky auth login`",
                ctx.show(&p)
            ))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Stored::default()),
        Err(e) => Err(Error::new(format!("cannot read {}: {e}", ctx.show(&p)))),
    }
}

/// Writes the config, 0600 in a 0700 folder.
pub fn save(ctx: &Context, stored: &Stored) -> Result<()> {
    let p = path(ctx);
    let text = serde_json::to_string_pretty(stored).map_err(|e| Error::new(e.to_string()))? + "\n";
    crate::files::write_private(&p, &text).map_err(|e| Error::new(format!("cannot write {}: {e}", ctx.show(&p))))
}
