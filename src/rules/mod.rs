//! Pure domain rules: no I/O, no clock, no randomness of their own. Each is tested where it is written.

pub mod argv;
pub mod cron;
pub mod cursor;
pub mod fingerprint;
pub mod fulltext;
pub mod git_remote;
pub mod harness;
pub mod hmac;
pub mod html;
pub mod ids;
pub mod limits;
pub mod merge;
pub mod metrics;
pub mod oauth;
pub mod otlp;
pub mod outbound;
pub mod params;
pub mod paths;
pub mod policy;
pub mod prices;
pub mod rate;
pub mod redirect;
pub use agentsky_wire::redact;
pub mod schema;
pub mod seal;
/// The skill name and `SKILL.md` front-matter rule, shared with the CLI.
pub use agentsky_wire::skills;
pub mod slug;
pub mod sql_values;
pub mod stripe;
pub mod targets;
pub mod time;
pub mod title;
pub mod traceparent;
pub mod traces;
pub mod webhooks;
