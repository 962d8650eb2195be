//! Pure domain rules: no I/O, no clock, no randomness of their own. Each is tested where it is written.

pub mod argv;
pub mod cron;
pub mod cursor;
pub mod fingerprint;
pub mod fulltext;
pub mod hmac;
pub mod ids;
pub mod limits;
pub mod markdown;
pub mod paths;
pub mod policy;
pub mod rate;
pub mod seal;
pub mod slug;
pub mod targets;
pub mod time;
pub mod traces;
