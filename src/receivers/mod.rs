//! Receivers: the endpoints other services post to, each verifying its sender its own way before it acts
//! through the operations' own code (Stripe's signed events, a workspace's records webhook, a Slack app's clicks and commands). A face
//! beside REST and MCP, not an operation: no key, no row in the table.

pub mod records;
pub mod slack;
pub mod stripe;
