//! Exports a turn's spans to the OpenTelemetry endpoint its workspace configured (OTLP/HTTP JSON),
//! through the outbound rule like every tenant URL. Best effort: a failed export is logged (host and
//! status only) and never fails the turn.

use crate::cx::{Env, Net, Outbound};
use crate::egress::Egress;
use crate::rules::otlp::{self, Span};
use crate::rules::seal;
use crate::store::metrics as store;

/// Sends `spans` to the workspace's trace endpoint, if it has one. `Ok(false)` when it has none.
pub async fn export(env: &Env, net: &dyn Net, workspace_id: &str, spans: &[Span]) -> Result<bool, String> {
    if spans.is_empty() {
        return Ok(false);
    }
    let Some(target) = store::trace_export(&env.db, workspace_id).await.map_err(|e| e.to_string())? else {
        return Ok(false);
    };
    let mut headers = vec![("content-type".to_owned(), "application/json".to_owned())];
    if let (Some(name), Some(sealed)) = (target.header_name, target.header_sealed) {
        let master =
            env.config.secrets_key.as_deref().ok_or("SECRETS_KEY is not set: the export's header cannot be opened")?;
        let value = seal::open(master, &seal::trace_export_aad(workspace_id), &sealed)
            .ok_or("the export's header does not open with this deployment's SECRETS_KEY")?;
        headers.push((name, value));
    }
    let body = otlp::export("agentsky", env!("CARGO_PKG_VERSION"), spans);
    let out = Outbound { url: target.url, headers, body: body.to_string().into_bytes() };
    let resp = Egress::new(net, &env.config).post("trace_export.url", out).await?;
    if !(200..300).contains(&resp.status) {
        return Err(format!("the trace endpoint answered HTTP {}", resp.status));
    }
    Ok(true)
}
