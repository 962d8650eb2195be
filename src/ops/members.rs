//! Who belongs to a workspace, and with which role. People join only by accepting an invitation: sign-up
//! never proves an email, so adding "whoever registered this address" handed workspaces to whoever
//! registered a colleague's address first (issue 13). An owner or admin makes an invitation, passes its
//! one-time token on, and the invitee accepts it signed in with their own key.
//!
//! Roles (one rule, [`may_change`]): owners and admins manage members and admins; only an owner changes an
//! owner or makes one; anyone may leave; the last owner, and the holder of a personal workspace, stay
//! owners. Every change is in the audit log, committed with it.

use crate::cx::{Cx, Membership, Role};
use crate::error::{ApiError, Code};
use crate::ops::workspaces::WorkspaceItem;
use crate::rules::ids;
use crate::rules::ids::{AccountId, InvitationId};
use crate::rules::params::{words, Email, Int};
use crate::store::{self, audit::Entry, members::Member};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How long an invitation lasts unless said otherwise, and at most, in days.
const INVITATION_DAYS: i64 = 7;
const INVITATION_MAX_DAYS: i64 = 30;
const DAY_MS: i64 = 86_400_000;
/// Invitation tokens: `asi_` and 32 random bytes.
const TOKEN_PREFIX: &str = "asi_";

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListMembers {
    /// The workspace's slug.
    pub workspace: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct MemberList {
    pub members: Vec<Member>,
}

/// GET /v1/workspaces/{workspace}/members
pub async fn list(cx: &Cx<'_>, p: ListMembers) -> Result<MemberList, ApiError> {
    let m = cx.workspace(Some(&p.workspace))?;
    let members = store::members::members(cx.db(), &m.workspace_id).await?;
    Ok(MemberList { members })
}

words! {
    /// The roles an invitation gives (owners are made from members, by an owner).
    pub enum InvitedRole { Member = "member", Admin = "admin" }
}

words! {
    /// A member's role in a workspace.
    pub enum MemberRole { Member = "member", Admin = "admin", Owner = "owner" }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateInvitation {
    /// The workspace's slug.
    pub workspace: String,
    /// The role it gives: `member` or `admin` (owners are made from members, by an owner).
    pub role: InvitedRole,
    /// How long it can be accepted, 1–30 days (default 7).
    pub expires_in_days: Option<Int<1, INVITATION_MAX_DAYS>>,
    /// Whom it is meant for, as a note in the list of invitations. Accepting never checks it: whoever
    /// holds the token can accept.
    pub email: Option<Email>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct InvitationCreated {
    pub invitation: store::members::Invitation,
    /// The one-time token, shown only now (only its hash is kept). Pass it to the invitee, who accepts it
    /// signed in with their own key: `POST /v1/invitations/accept {"token": …}`.
    pub token: String,
}

/// POST /v1/workspaces/{workspace}/invitations — owners and admins.
pub async fn invite(cx: &Cx<'_>, p: CreateInvitation) -> Result<InvitationCreated, ApiError> {
    let days = p.expires_in_days.map_or(INVITATION_DAYS, Int::get);
    let email = p.email.as_deref();
    let caller = cx.caller()?;
    let m = cx.workspace(Some(&p.workspace))?;
    cx.require_role(m, Role::Admin)?;
    let token = ids::new_secret(TOKEN_PREFIX);
    let invitation = store::members::Invitation {
        invitation_id: ids::new_id("inv"),
        role: p.role.as_str().to_owned(),
        email: email.map(str::to_owned),
        invited_by: caller.account_id.clone(),
        created_ms: cx.now_ms,
        expires_ms: cx.now_ms + days * DAY_MS,
    };
    let i = &invitation;
    let new = store::members::NewInvitation {
        invitation_id: &i.invitation_id,
        workspace_id: &m.workspace_id,
        token_hash: &ids::hash_secret(&token),
        role: &i.role,
        email: i.email.as_deref(),
        invited_by: &i.invited_by,
        now_ms: cx.now_ms,
        expires_ms: i.expires_ms,
    };
    let detail = match &i.email {
        Some(e) => format!("as {} (for {e}), for {days} day(s)", i.role),
        None => format!("as {}, for {days} day(s)", i.role),
    };
    store::members::invite(cx.db(), &new, &detail).await?;
    Ok(InvitationCreated { invitation, token })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListInvitations {
    /// The workspace's slug.
    pub workspace: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct InvitationList {
    /// Those that can still be accepted, newest first (never their tokens).
    pub invitations: Vec<store::members::Invitation>,
}

/// GET /v1/workspaces/{workspace}/invitations — owners and admins.
pub async fn list_invitations(cx: &Cx<'_>, p: ListInvitations) -> Result<InvitationList, ApiError> {
    let m = cx.workspace(Some(&p.workspace))?;
    cx.require_role(m, Role::Admin)?;
    let invitations = store::members::pending(cx.db(), &m.workspace_id, cx.now_ms).await?;
    Ok(InvitationList { invitations })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RevokeInvitation {
    /// The workspace's slug.
    pub workspace: String,
    /// The invitation (`inv_…`), from `GET /v1/workspaces/{workspace}/invitations`.
    pub invitation_id: InvitationId,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct InvitationRevoked {
    pub invitation_id: String,
    pub revoked: bool,
}

/// DELETE /v1/workspaces/{workspace}/invitations/{invitation_id} — owners and admins.
pub async fn revoke_invitation(cx: &Cx<'_>, p: RevokeInvitation) -> Result<InvitationRevoked, ApiError> {
    let caller = cx.caller()?;
    let m = cx.workspace(Some(&p.workspace))?;
    cx.require_role(m, Role::Admin)?;
    let not_found = || ApiError::not_found(&format!("pending invitation `{}`", p.invitation_id));
    let revoked =
        store::members::revoke(cx.db(), &m.workspace_id, &p.invitation_id, &caller.account_id, cx.now_ms).await?;
    if !revoked {
        return Err(not_found());
    }
    Ok(InvitationRevoked { invitation_id: p.invitation_id.into(), revoked })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AcceptInvitation {
    /// The invitation's token (`asi_…`), as its maker passed it on.
    pub token: String,
}

/// POST /v1/invitations/accept — as the signed-in account, with its own (not workspace-locked) key.
pub async fn accept(cx: &Cx<'_>, p: AcceptInvitation) -> Result<WorkspaceItem, ApiError> {
    let caller = cx.caller()?;
    if caller.locked_workspace_id.is_some() {
        return Err(ApiError::new(
            Code::UniverseMismatch,
            "a workspace-locked key cannot join another workspace; accept with your own key",
        ));
    }
    // One answer for unknown, used, revoked and expired: a token is a bearer secret, not a lookup key.
    let gone = || ApiError::not_found("invitation: it is unknown, already used, revoked or expired; ask for a new one");
    let token = p.token.trim();
    if !token.starts_with(TOKEN_PREFIX) || token.len() > 100 {
        return Err(gone());
    }
    let db = cx.db();
    let (invitation_id, workspace_id, role) =
        store::members::by_token(db, &ids::hash_secret(token), cx.now_ms).await?.ok_or_else(gone)?;
    let already = |m: &Membership| {
        ApiError::new(
            Code::Conflict,
            format!("you are already a member of `{}` ({}); the invitation was left unused", m.slug, m.role.as_str()),
        )
    };
    if let Some(m) = caller.memberships.iter().find(|m| m.workspace_id == workspace_id) {
        return Err(already(m));
    }
    match store::members::accept(db, &invitation_id, &workspace_id, &caller.account_id, cx.now_ms).await {
        Ok(true) => {}
        Ok(false) => return Err(gone()),
        Err(e) if e.is_unique_on("membership.workspace_id") => {
            return Err(ApiError::new(Code::Conflict, "you are already a member; the invitation was left unused"))
        }
        Err(e) => return Err(ApiError::cause(e)),
    }
    let joined = store::workspaces::as_owner(db, &workspace_id)
        .await?
        .ok_or_else(|| ApiError::cause("the workspace vanished"))?;
    let role = Role::named(&role).ok_or_else(|| ApiError::cause("an invitation with an unknown role"))?;
    Ok(WorkspaceItem { slug: joined.slug, name: joined.name, role, is_personal: joined.is_personal, is_current: false })
}

/// Whether `actor` may move a member from `from` to `to` (`None`: out of the workspace). `own` when the
/// actor is that member; `owners` is how many owners the workspace has; `holder` when it is the member's
/// personal workspace.
pub fn may_change(
    actor: Role,
    own: bool,
    from: Role,
    to: Option<Role>,
    owners: i64,
    holder: bool,
    slug: &str,
) -> Result<(), ApiError> {
    let forbidden = |why: String| Err(ApiError::new(Code::Forbidden, why));
    if holder && to != Some(Role::Owner) {
        return forbidden(format!("`{slug}` is this member's personal workspace: they stay its owner"));
    }
    let leaving = own && to.is_none();
    if actor < Role::Admin && !leaving {
        return forbidden(format!(
            "managing members needs the admin role in `{slug}`; yours is {} (you may only leave)",
            actor.as_str()
        ));
    }
    if (from == Role::Owner || to == Some(Role::Owner)) && actor < Role::Owner {
        return forbidden(format!("only an owner of `{slug}` changes an owner's role or makes an owner"));
    }
    if from == Role::Owner && to != Some(Role::Owner) && owners <= 1 {
        return Err(ApiError::new(
            Code::Conflict,
            format!("this is the last owner of `{slug}`: make another member owner first"),
        ));
    }
    Ok(())
}

/// Checks and makes one change to a member, with its audit entry.
async fn change(cx: &Cx<'_>, m: &Membership, account_id: &str, to: Option<Role>) -> Result<Role, ApiError> {
    let caller = cx.caller()?;
    let db = cx.db();
    let not_found = || ApiError::not_found(&format!("member `{account_id}` of `{}`", m.slug));
    if !ids::is_id(account_id, "acct") {
        return Err(not_found());
    }
    let s = store::members::standing(db, &m.workspace_id, account_id).await?.ok_or_else(not_found)?;
    if to == Some(s.role) {
        return Ok(s.role);
    }
    may_change(m.role, account_id == caller.account_id, s.role, to, s.owners, s.holder, &m.slug)?;
    let (action, detail) = match to {
        Some(to) => ("member_role_changed", format!("{} → {}", s.role.as_str(), to.as_str())),
        None if account_id == caller.account_id => ("member_removed", format!("left ({})", s.role.as_str())),
        None => ("member_removed", format!("was {}", s.role.as_str())),
    };
    let entry = Entry::change(&m.workspace_id, &caller.account_id, action, Some(account_id), &detail, cx.now_ms);
    let done = store::members::change(db, &entry, account_id, s.role.as_str(), to.map(Role::as_str)).await?;
    if !done {
        return Err(ApiError::new(
            Code::Conflict,
            "the workspace's members changed meanwhile; list them and try again",
        ));
    }
    Ok(to.unwrap_or(s.role))
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetMemberRole {
    /// The workspace's slug.
    pub workspace: String,
    /// The member's account (`acct_…`), from `GET /v1/workspaces/{workspace}/members`.
    pub account_id: AccountId,
    /// `member`, `admin` or `owner`.
    pub role: MemberRole,
}

/// PATCH /v1/workspaces/{workspace}/members/{account_id}
pub async fn set_role(cx: &Cx<'_>, p: SetMemberRole) -> Result<Member, ApiError> {
    let role =
        Role::named(p.role.as_str()).ok_or_else(|| ApiError::invalid("`role` must be member, admin or owner"))?;
    let m = cx.workspace(Some(&p.workspace))?;
    change(cx, m, &p.account_id, Some(role)).await?;
    store::members::member(cx.db(), &m.workspace_id, &p.account_id)
        .await?
        .ok_or_else(|| ApiError::new(Code::Conflict, "the member was removed meanwhile"))
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RemoveMember {
    /// The workspace's slug.
    pub workspace: String,
    /// The member's account (`acct_…`); your own to leave the workspace.
    pub account_id: AccountId,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct MemberRemoved {
    pub account_id: String,
    pub removed: bool,
}

/// DELETE /v1/workspaces/{workspace}/members/{account_id}
pub async fn remove(cx: &Cx<'_>, p: RemoveMember) -> Result<MemberRemoved, ApiError> {
    let m = cx.workspace(Some(&p.workspace))?;
    change(cx, m, &p.account_id, None).await?;
    Ok(MemberRemoved { account_id: p.account_id.into(), removed: true })
}

#[cfg(test)]
mod tests {
    use super::*;
    use Role::*;

    #[test]
    fn who_may_change_whom() {
        // (actor, own, from, to, owners, holder) → HTTP status (200: allowed)
        type Case = (Role, bool, Role, Option<Role>, i64, bool, u16);
        let cases: &[Case] = &[
            (Member, false, Member, Some(Admin), 1, false, 403),
            (Member, false, Member, None, 1, false, 403),
            (Member, true, Member, None, 1, false, 200),
            (Member, true, Member, Some(Admin), 1, false, 403),
            (Admin, false, Member, Some(Admin), 1, false, 200),
            (Admin, false, Admin, None, 1, false, 200),
            (Admin, false, Member, Some(Owner), 1, false, 403),
            (Admin, false, Owner, Some(Admin), 2, false, 403),
            (Admin, false, Owner, None, 2, false, 403),
            (Owner, false, Member, Some(Owner), 1, false, 200),
            (Owner, true, Owner, Some(Admin), 1, false, 409),
            (Owner, true, Owner, None, 1, false, 409),
            (Owner, true, Owner, None, 2, false, 200),
            (Owner, false, Owner, Some(Member), 2, false, 200),
            (Owner, false, Owner, Some(Member), 2, true, 403),
            (Owner, true, Owner, None, 2, true, 403),
        ];
        for (actor, own, from, to, owners, holder, want) in cases {
            let got =
                may_change(*actor, *own, *from, *to, *owners, *holder, "acme").map_or_else(|e| e.code.http(), |()| 200);
            assert_eq!(
                got, *want,
                "{actor:?} (own {own}) moving {from:?} to {to:?}, {owners} owner(s), holder {holder}"
            );
        }
    }
}
