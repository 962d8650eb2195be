//! What a harness step may reach: the platform as the session's object has it, the network, and the wake
//! of its waiting readers. Below the `openai` harness and the wallet, which both take it.

use crate::cx::{Blobs, Config, Env, Net};
use crate::egress::Egress;
use crate::store::Sql;
use futures::future::LocalBoxFuture;

/// What a harness step may reach.
pub struct Ports<'a> {
    /// The platform as the session's object has it (D1, R2, the other objects, the limiter).
    pub env: &'a Env,
    pub net: &'a dyn Net,
    /// Wakes the session's waiting readers and lets them answer before the step goes on. A step awaits it
    /// the moment its events are stored, before the D1 index, webhooks and traces that follow (several
    /// round trips, which would otherwise hold the readers' answers behind them), so a waiting
    /// `read_session` returns at once.
    pub wake: &'a dyn Fn() -> LocalBoxFuture<'static, ()>,
}

impl<'a> Ports<'a> {
    pub fn db(&self) -> &'a dyn Sql {
        &self.env.db
    }
    pub fn blobs(&self) -> &'a dyn Blobs {
        self.env.blobs.as_ref()
    }
    pub fn config(&self) -> &'a Config {
        &self.env.config
    }
    /// The network for tenant URLs, under the outbound rule.
    pub fn egress(&self) -> Egress<'a> {
        Egress::new(self.net, &self.env.config)
    }
}
