//! Members: people join a workspace only by accepting an invitation (an email proves nothing: sign-up
//! never checks it), owners and admins manage members and roles, the last owner stays, and every change is
//! in the audit log.

use crate::support::{Account, TestApp};
use agentsky::http::HttpResponse;
use serde_json::{json, Value};

fn invite(app: &TestApp, by: &Account, slug: &str, body: Value) -> HttpResponse {
    app.request("POST", &format!("/v1/workspaces/{slug}/invitations"), Some(&by.key), Some(body))
}

/// An invitation's token, made by `by`.
fn token(app: &TestApp, by: &Account, slug: &str, role: &str) -> String {
    let r = invite(app, by, slug, json!({"role": role}));
    assert_eq!(r.status, 201, "{:?}", r.json_body());
    r.json_body()["token"].as_str().unwrap().to_owned()
}

fn accept(app: &TestApp, who: &Account, token: &str) -> HttpResponse {
    app.request("POST", "/v1/invitations/accept", Some(&who.key), Some(json!({"token": token})))
}

fn members(app: &TestApp, who: &Account, slug: &str) -> Vec<(String, String)> {
    let r = app.request("GET", &format!("/v1/workspaces/{slug}/members"), Some(&who.key), None);
    assert_eq!(r.status, 200, "{:?}", r.json_body());
    r.json_body()["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["email"].as_str().unwrap().to_owned(), m["role"].as_str().unwrap().to_owned()))
        .collect()
}

fn account_id(app: &TestApp, who: &Account) -> String {
    app.db.0.query_row("SELECT account_id FROM account WHERE email = ?1", [&who.email], |r| r.get(0)).unwrap()
}

fn audit(app: &TestApp, who: &Account, slug: &str) -> Vec<Value> {
    let r = app.request("GET", &format!("/v1/audit?workspace={slug}"), Some(&who.key), None);
    assert_eq!(r.status, 200, "{:?}", r.json_body());
    r.json_body()["entries"].as_array().unwrap().clone()
}

#[test]
fn registering_a_colleagues_email_first_gets_an_attacker_nothing() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@acme.example");
    app.shared_workspace(&ada, "acme");
    // Mallory registers Bo's address before Bo does.
    let mallory = app.signup("Bo", "bo@acme.example");
    let by_email = app.request(
        "POST",
        "/v1/workspaces/acme/members",
        Some(&ada.key),
        Some(json!({"email": "bo@acme.example", "role": "admin"})),
    );
    assert_ne!(by_email.status, 200, "adding by email is gone: {:?}", by_email.json_body());
    assert_eq!(members(&app, &ada, "acme"), [("ada@acme.example".to_owned(), "owner".to_owned())]);

    // Ada invites Bo (the email is only a note) and hands the token to the real Bo.
    let made = invite(&app, &ada, "acme", json!({"role": "admin", "email": "bo@acme.example"}));
    assert_eq!(made.status, 201, "{:?}", made.json_body());
    let t = made.json_body()["token"].as_str().unwrap().to_owned();
    let real_bo = app.signup("Bo", "bo.real@acme.example");
    let joined = accept(&app, &real_bo, &t);
    assert_eq!(joined.status, 201, "{:?}", joined.json_body());
    assert_eq!(
        (joined.json_body()["slug"].as_str(), joined.json_body()["role"].as_str()),
        (Some("acme"), Some("admin"))
    );
    // The token worked once: Mallory cannot use it after Bo.
    let again = accept(&app, &mallory, &t);
    assert_eq!(again.status, 404, "{:?}", again.json_body());
    let emails: Vec<String> = members(&app, &ada, "acme").into_iter().map(|(e, _)| e).collect();
    assert_eq!(emails, ["ada@acme.example", "bo.real@acme.example"]);
    assert_eq!(app.request("GET", "/v1/workspaces/acme/members", Some(&mallory.key), None).status, 404);
}

#[test]
fn invitations_are_made_by_owners_and_admins_shown_once_listed_revoked_and_expire() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let bo = app.signup("Bo", "bo@example.com");
    let cy = app.signup("Cy", "cy@example.com");
    app.shared_workspace(&ada, "acme");

    // Bad input names the field.
    for (body, field) in [
        (json!({"role": "owner"}), "`role`"),
        (json!({"role": "member", "expires_in_days": 0}), "`expires_in_days`"),
        (json!({"role": "member", "expires_in_days": 31}), "`expires_in_days`"),
        (json!({"role": "member", "email": "not-an-email"}), "`email`"),
    ] {
        let r = invite(&app, &ada, "acme", body);
        assert_eq!(r.status, 400, "{:?}", r.json_body());
        assert!(r.json_body()["error"]["message"].as_str().unwrap().contains(field), "{:?}", r.json_body());
    }

    let made = invite(&app, &ada, "acme", json!({"role": "member", "email": "bo@example.com"}));
    let body = made.json_body();
    let (t, id) = (body["token"].as_str().unwrap().to_owned(), body["invitation"]["invitation_id"].clone());
    assert!(t.starts_with("asi_") && t.len() > 40, "{t}");
    assert_eq!(body["invitation"]["expires_ms"], app.now_ms.get() + 7 * 86_400_000, "a week by default");
    let stored: String = app.db.0.query_row("SELECT token_hash FROM invitation", [], |r| r.get(0)).unwrap();
    assert_eq!(stored, agentsky::rules::ids::hash_secret(&t), "only the token's hash is kept");
    let listed = app.request("GET", "/v1/workspaces/acme/invitations", Some(&ada.key), None).json_body();
    assert_eq!(listed["invitations"].as_array().unwrap().len(), 1);
    assert_eq!(listed["invitations"][0]["email"], "bo@example.com");
    assert!(!listed.to_string().contains(&t), "the token is shown once");

    // A member neither invites nor lists invitations.
    let bo_joins = accept(&app, &bo, &t);
    assert_eq!(bo_joins.status, 201, "{:?}", bo_joins.json_body());
    assert_eq!(invite(&app, &bo, "acme", json!({"role": "member"})).status, 403);
    assert_eq!(app.request("GET", "/v1/workspaces/acme/invitations", Some(&bo.key), None).status, 403);
    let listed = app.request("GET", "/v1/workspaces/acme/invitations", Some(&ada.key), None).json_body();
    assert_eq!(listed["invitations"], json!([]), "accepted: no longer pending");
    assert_eq!(accept(&app, &bo, &t).status, 404, "once");

    // Revoked: refused.
    let t2 = token(&app, &ada, "acme", "admin");
    let id2 = app.request("GET", "/v1/workspaces/acme/invitations", Some(&ada.key), None).json_body()["invitations"][0]
        ["invitation_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let revoked = app.request("DELETE", &format!("/v1/workspaces/acme/invitations/{id2}"), Some(&ada.key), None);
    assert_eq!(revoked.json_body(), json!({"invitation_id": id2, "revoked": true}));
    assert_eq!(accept(&app, &cy, &t2).status, 404);
    assert_eq!(
        app.request("DELETE", &format!("/v1/workspaces/acme/invitations/{id2}"), Some(&ada.key), None).status,
        404
    );

    // Expired: refused.
    let t3 = invite(&app, &ada, "acme", json!({"role": "member", "expires_in_days": 1})).json_body()["token"]
        .as_str()
        .unwrap()
        .to_owned();
    app.advance(86_400_000);
    assert_eq!(accept(&app, &cy, &t3).status, 404);
    assert_eq!(accept(&app, &cy, "asi_nope").status, 404);
    assert_eq!(members(&app, &ada, "acme").len(), 2);
    assert!(id.is_string());
}

#[test]
fn accepting_needs_your_own_writing_key_and_leaves_a_members_invitation_unused() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let bo = app.signup("Bo", "bo@example.com");
    app.shared_workspace(&ada, "acme");
    let t = token(&app, &ada, "acme", "member");
    // Ada is already in: refused, and the invitation stays for someone else.
    let mine = accept(&app, &ada, &t);
    assert_eq!(mine.status, 409, "{:?}", mine.json_body());
    // A key locked to one workspace cannot join another; a read-only key cannot accept.
    let locked = app.request(
        "POST",
        "/v1/keys",
        Some(&bo.key),
        Some(json!({"name": "ci", "scopes": ["read", "write"], "workspace": bo.slug})),
    );
    let locked = locked.json_body()["key"].as_str().unwrap().to_owned();
    let r = app.request("POST", "/v1/invitations/accept", Some(&locked), Some(json!({"token": t})));
    assert_eq!(r.status, 403, "{:?}", r.json_body());
    let read = app.request("POST", "/v1/keys", Some(&bo.key), Some(json!({"name": "r", "scopes": ["read"]})));
    let read = read.json_body()["key"].as_str().unwrap().to_owned();
    let r = app.request("POST", "/v1/invitations/accept", Some(&read), Some(json!({"token": t})));
    assert_eq!(r.status, 403, "{:?}", r.json_body());
    assert_eq!(accept(&app, &bo, &t).status, 201);
}

#[test]
fn owners_and_admins_manage_members_and_the_last_owner_stays() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let (bo, cy, di) =
        (app.signup("Bo", "bo@example.com"), app.signup("Cy", "cy@example.com"), app.signup("Di", "di@example.com"));
    app.shared_workspace(&ada, "acme");
    for (who, role) in [(&bo, "member"), (&cy, "admin"), (&di, "member")] {
        assert_eq!(accept(&app, who, &token(&app, &ada, "acme", role)).status, 201);
    }
    let (ada_id, bo_id, cy_id, di_id) =
        (account_id(&app, &ada), account_id(&app, &bo), account_id(&app, &cy), account_id(&app, &di));
    let role = |by: &Account, id: &str, role: &str| {
        app.request("PATCH", &format!("/v1/workspaces/acme/members/{id}"), Some(&by.key), Some(json!({"role": role})))
    };
    let remove = |by: &Account, id: &str| {
        app.request("DELETE", &format!("/v1/workspaces/acme/members/{id}"), Some(&by.key), None)
    };
    let code = |r: HttpResponse| (r.status, r.json_body()["error"]["code"].as_str().unwrap_or("").to_owned());

    // A member manages nobody but themself.
    assert_eq!(code(role(&bo, &di_id, "admin")), (403, "forbidden".into()));
    assert_eq!(code(remove(&bo, &di_id)), (403, "forbidden".into()));
    // An admin manages members and admins, never owners, and makes no owner.
    let promoted = role(&cy, &bo_id, "admin");
    assert_eq!(promoted.status, 200, "{:?}", promoted.json_body());
    assert_eq!(promoted.json_body()["role"], "admin");
    assert_eq!(code(role(&cy, &di_id, "owner")), (403, "forbidden".into()));
    assert_eq!(code(role(&cy, &ada_id, "admin")), (403, "forbidden".into()));
    assert_eq!(code(remove(&cy, &ada_id)), (403, "forbidden".into()));
    assert_eq!(code(role(&cy, &bo_id, "boss")), (400, "invalid_params".into()));
    // The last owner can be neither demoted nor removed, by anyone.
    let last = role(&ada, &ada_id, "admin");
    assert_eq!(last.status, 409, "{:?}", last.json_body());
    assert!(last.json_body()["error"]["message"].as_str().unwrap().contains("last owner"));
    assert_eq!(remove(&ada, &ada_id).status, 409);
    // An owner makes another owner; then either may step down.
    assert_eq!(role(&ada, &bo_id, "owner").status, 200);
    assert_eq!(role(&bo, &ada_id, "member").status, 200, "an owner demotes another owner");
    assert_eq!(code(remove(&bo, &bo_id)), (409, "conflict".into()), "the last owner again");

    // A member leaves on their own; a removed account loses the workspace at once.
    assert_eq!(remove(&di, &di_id).json_body(), json!({"account_id": di_id, "removed": true}));
    assert_eq!(remove(&bo, &cy_id).status, 200);
    assert_eq!(app.request("GET", "/v1/workspaces/acme/members", Some(&cy.key), None).status, 404);
    assert_eq!(remove(&bo, &cy_id).status, 404, "not a member any more");
    assert_eq!(
        members(&app, &bo, "acme"),
        [("ada@example.com".to_owned(), "member".to_owned()), ("bo@example.com".to_owned(), "owner".to_owned())]
    );
}

#[test]
fn the_holder_of_a_personal_workspace_stays_its_owner() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let bo = app.signup("Bo", "bo@example.com");
    let t = token(&app, &ada, &ada.slug, "admin");
    assert_eq!(accept(&app, &bo, &t).status, 201);
    let (ada_id, bo_id) = (account_id(&app, &ada), account_id(&app, &bo));
    let path = |id: &str| format!("/v1/workspaces/{}/members/{id}", ada.slug);
    assert_eq!(app.request("PATCH", &path(&bo_id), Some(&ada.key), Some(json!({"role": "owner"}))).status, 200);
    let demoted = app.request("PATCH", &path(&ada_id), Some(&bo.key), Some(json!({"role": "member"})));
    assert_eq!(demoted.status, 403, "{:?}", demoted.json_body());
    assert!(demoted.json_body()["error"]["message"].as_str().unwrap().contains("personal workspace"));
    assert_eq!(app.request("DELETE", &path(&ada_id), Some(&bo.key), None).status, 403);
}

#[test]
fn every_membership_change_is_in_the_audit_log_with_who_did_it() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let bo = app.signup("Bo", "bo@example.com");
    app.shared_workspace(&ada, "acme");
    let t = token(&app, &ada, "acme", "member");
    accept(&app, &bo, &t);
    let t2 = token(&app, &ada, "acme", "admin");
    let id2 = app.request("GET", "/v1/workspaces/acme/invitations", Some(&ada.key), None).json_body()["invitations"][0]
        ["invitation_id"]
        .as_str()
        .unwrap()
        .to_owned();
    app.request("DELETE", &format!("/v1/workspaces/acme/invitations/{id2}"), Some(&ada.key), None);
    let bo_id = account_id(&app, &bo);
    app.request(
        "PATCH",
        &format!("/v1/workspaces/acme/members/{bo_id}"),
        Some(&ada.key),
        Some(json!({"role": "admin"})),
    );
    app.request("DELETE", &format!("/v1/workspaces/acme/members/{bo_id}"), Some(&ada.key), None);
    let ada_id = account_id(&app, &ada);

    let log = audit(&app, &ada, "acme");
    let seen: Vec<(&str, &str, &str)> = log
        .iter()
        .rev()
        .map(|e| {
            (
                e["action"].as_str().unwrap(),
                e["actor_account_id"].as_str().unwrap_or("-"),
                e["subject"].as_str().unwrap_or("-"),
            )
        })
        .collect();
    let first_invitation = log.last().unwrap()["subject"].as_str().unwrap().to_owned();
    assert!(first_invitation.starts_with("inv_"), "{first_invitation}");
    assert_eq!(
        seen,
        [
            ("invitation_created", ada_id.as_str(), first_invitation.as_str()),
            ("invitation_accepted", bo_id.as_str(), first_invitation.as_str()),
            ("invitation_created", ada_id.as_str(), id2.as_str()),
            ("invitation_revoked", ada_id.as_str(), id2.as_str()),
            ("member_role_changed", ada_id.as_str(), bo_id.as_str()),
            ("member_removed", ada_id.as_str(), bo_id.as_str()),
        ]
    );
    assert!(!log.iter().any(|e| e.to_string().contains(&t) || e.to_string().contains(&t2)), "no token in the log");
    assert!(log[1]["detail"].as_str().unwrap().contains("member → admin"), "{}", log[1]);
}

#[test]
fn approvals_and_policy_changes_are_in_the_audit_log() {
    let app = TestApp::with_secrets();
    let ada = app.signup("Ada", "ada@example.com");
    let agent =
        app.request("POST", "/v1/agents", Some(&ada.key), Some(json!({"name": "D", "harness": "echo", "model": "m"})));
    let s = app.ok(
        &ada.key,
        "start_session",
        json!({"agent_id": agent.json_body()["agent_id"], "message": "x", "idempotency_key": "k"}),
    );
    app.settle();
    let sid = s["session"]["session_id"].as_str().unwrap().to_owned();
    let token = app.session_token(&ada.key, &sid);
    let con = app.request(
        "POST",
        "/v1/connectors",
        Some(&ada.key),
        Some(json!({"name": "web", "provider": "vercel", "env": "prod", "credentials": {"env": {"T": "x"}}})),
    );
    let con = con.json_body()["connector_id"].as_str().unwrap().to_owned();
    app.request(
        "PUT",
        "/v1/policies",
        Some(&ada.key),
        Some(json!({"connector_id": con, "scope": "read", "decision": "ask"})),
    );
    let pending = app.agent_ok(&token, "request_access", json!({"target": "web", "scope": ["deploy"], "reason": "r"}));
    let req = app.ok(&ada.key, "get_task", json!({"task_id": sid}))["open_requests"][0]["request_id"].clone();
    app.ok(&ada.key, "answer_request", json!({"task_id": sid, "request_id": req, "answer": "approve", "always": true}));
    let ada_id = account_id(&app, &ada);
    let log = audit(&app, &ada, &ada.slug);
    let approved = log.iter().find(|e| e["action"] == "access_approved").expect("the approval is logged");
    assert_eq!(
        (approved["actor_account_id"].as_str(), approved["grant_id"].clone(), approved["connector_id"].as_str()),
        (Some(ada_id.as_str()), pending["grantId"].clone(), Some(con.as_str()))
    );
    assert!(approved["detail"].as_str().unwrap().contains("always"), "{approved}");
    let policy = log.iter().find(|e| e["action"] == "policy_set").expect("the policy change is logged");
    assert_eq!((policy["connector_id"].as_str(), policy["detail"].as_str()), (Some(con.as_str()), Some("read: ask")));
}
