// Members over REST against wrangler dev (D1, not SQLite): people join a workspace only by accepting an
// invitation, whose one-time token is shown once; roles change and members leave with the last owner
// kept; every change is in the audit log with who made it (written in the same D1 batch as the change).
import { test, describe, before } from 'node:test';
import assert from 'node:assert/strict';
import { rest, createAccount, createWorkspace } from './helpers.mjs';

describe('members and invitations', () => {
  let ada, bo, ws;
  before(async () => {
    ada = await createAccount('Ada');
    bo = await createAccount('Bo');
    ws = await createWorkspace(ada.key);
  });

  test('adding by email is gone; an invitation is accepted once, by whoever holds its token', async () => {
    const byEmail = await rest('POST', `/v1/workspaces/${ws.slug}/members`,
      { key: ada.key, body: { email: bo.account.email, role: 'admin' } });
    assert.notEqual(byEmail.status, 200, JSON.stringify(byEmail.body));

    const made = await rest('POST', `/v1/workspaces/${ws.slug}/invitations`,
      { key: ada.key, body: { role: 'member', email: bo.account.email } });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    const { token, invitation } = made.body;
    assert.match(token, /^asi_[A-Za-z0-9_-]{40,}$/);
    const listed = await rest('GET', `/v1/workspaces/${ws.slug}/invitations`, { key: ada.key });
    assert.deepEqual(listed.body.invitations.map((i) => i.invitation_id), [invitation.invitation_id]);
    assert.ok(!JSON.stringify(listed.body).includes(token), 'the token is shown once');

    const joined = await rest('POST', '/v1/invitations/accept', { key: bo.key, body: { token } });
    assert.equal(joined.status, 201, JSON.stringify(joined.body));
    assert.deepEqual([joined.body.slug, joined.body.role], [ws.slug, 'member']);
    const again = await rest('POST', '/v1/invitations/accept', { key: ada.key, body: { token } });
    assert.equal(again.status, 404, JSON.stringify(again.body));
    const members = await rest('GET', `/v1/workspaces/${ws.slug}/members`, { key: bo.key });
    assert.deepEqual(members.body.members.map((m) => m.role), ['owner', 'member']);
  });

  test('roles change, the last owner stays, a member leaves; the audit log has it all', async () => {
    const members = await rest('GET', `/v1/workspaces/${ws.slug}/members`, { key: ada.key });
    const id = (email) => members.body.members.find((m) => m.email === email).account_id;
    const [adaId, boId] = [id(ada.account.email), id(bo.account.email)];
    const path = (who) => `/v1/workspaces/${ws.slug}/members/${who}`;

    const promoted = await rest('PATCH', path(boId), { key: ada.key, body: { role: 'admin' } });
    assert.equal(promoted.status, 200, JSON.stringify(promoted.body));
    assert.equal(promoted.body.role, 'admin');
    const byAdmin = await rest('PATCH', path(adaId), { key: bo.key, body: { role: 'member' } });
    assert.equal(byAdmin.status, 403, JSON.stringify(byAdmin.body));
    const last = await rest('DELETE', path(adaId), { key: ada.key });
    assert.equal(last.status, 409, JSON.stringify(last.body));
    assert.match(last.body.error.message, /last owner/);
    const left = await rest('DELETE', path(boId), { key: bo.key });
    assert.deepEqual(left.body, { account_id: boId, removed: true });
    assert.equal((await rest('GET', `/v1/workspaces/${ws.slug}/members`, { key: bo.key })).status, 404);

    const audit = await rest('GET', `/v1/audit?workspace=${ws.slug}`, { key: ada.key });
    assert.equal(audit.status, 200, JSON.stringify(audit.body));
    const seen = audit.body.entries.map((e) => [e.action, e.actor_account_id, e.subject]).reverse();
    assert.deepEqual(seen.map((s) => s[0]),
      ['invitation_created', 'invitation_accepted', 'member_role_changed', 'member_removed'],
      'one entry per change, none for the refused ones');
    assert.deepEqual(seen.slice(1).map((s) => s.slice(1)), [[boId, seen[0][2]], [adaId, boId], [boId, boId]]);
  });
});
