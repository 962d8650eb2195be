//! A workspace secret's plain value, opened where it is about to be used (and nowhere else): the model
//! endpoint and key of the `openai` harness, and of a hosted sandbox's coding agent CLI
//! ([`crate::runner::model_relay`]).

use crate::cx::Config;
use crate::rules::seal;
use crate::store::{self, Sql};

/// The secret `name` of the workspace, or `None` when it has none.
pub async fn open(db: &dyn Sql, config: &Config, workspace_id: &str, name: &str) -> Result<Option<String>, String> {
    let Some(sealed) = store::secrets::sealed(db, workspace_id, name).await.map_err(|e| e.to_string())? else {
        return Ok(None);
    };
    let master = config.secrets_key.as_deref().ok_or("this deployment has no SECRETS_KEY")?;
    seal::open(master, &seal::secret_aad(workspace_id, name), &sealed)
        .map(Some)
        .ok_or_else(|| format!("the secret {name} cannot be opened (was SECRETS_KEY changed?)"))
}
