//! Who is calling and what they may do in each workspace: read with the key (or the console's session),
//! below every face and the store, so the store can return it without naming the request context.

use serde::Deserialize;

/// One workspace the caller belongs to, as read with the key.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct Membership {
    pub workspace_id: String,
    pub slug: String,
    pub name: String,
    pub role: Role,
    #[serde(deserialize_with = "crate::rules::sql_values::int_bool")]
    pub is_personal: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Member,
    Admin,
    Owner,
}

impl Role {
    /// The role a name means (`member`, `admin`, `owner`).
    pub fn named(name: &str) -> Option<Role> {
        [Role::Member, Role::Admin, Role::Owner].into_iter().find(|r| r.as_str() == name)
    }

    pub const fn as_str(self) -> &'static str {
        match self {
            Role::Member => "member",
            Role::Admin => "admin",
            Role::Owner => "owner",
        }
    }
}

/// Who is calling: an account through one of its keys.
#[derive(Debug, Clone, PartialEq)]
pub struct Caller {
    pub account_id: String,
    pub key_id: String,
    pub can_write: bool,
    /// The workspace a locked key may touch; every other slug is `universe_mismatch`.
    pub locked_workspace_id: Option<String>,
    pub memberships: Vec<Membership>,
    /// The OAuth grant behind an app's access token; `None` for an API key. An app's token is accepted
    /// only where it was issued for (`/v1/mcp`) and never mints credentials or changes members
    /// (`crate::ops::not_an_app`).
    pub app: Option<String>,
}
