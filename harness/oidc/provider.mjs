// A real OpenID Connect authorization server for the OAuth grant tests: `oidc-provider` (pinned
// in package.json), on 127.0.0.1 with TLS from the test's CA, started once per test session by
// harness/real_oidc.py.
//
// Usage: node provider.mjs CONFIG.json. The configuration file (0600, written by the harness)
// holds the certificate paths, the clients and their secrets and the harness key: nothing secret
// is ever on the command line. The server listens on a port of its own choosing and writes
// {"port": N} to the ready file once it serves.
//
// Besides the provider's own routes (discovery, /auth, /token, /device, /token/revocation, /me):
// - GET /api/whoami: the protected resource the gateway's declared operations call; it checks
//   the bearer token with the provider's own AccessToken store and that its grant still stands.
//   GET /api/echo: the same, and echoes the token back (a service that would leak it).
// - every request to the token, device, revocation and resource routes is appended to the events
//   file as one JSON line (route, grant type, client, status, error code; never a token), so a
//   test counts token requests exactly.
// - every access token, refresh token, code and device code issued is appended to the issued
//   file (read by the tests only, to grep for them everywhere else).
// - /_harness/* (needs the harness key): set the access-token lifetime, end one access token
//   early, revoke an account's grants the way a user does on the provider's "connected apps"
//   page.
// - the device flow behaves as GitHub's does: the device authorization answer carries an
//   `interval`, a poll sooner than the interval answers `slow_down` (and the interval grows by
//   a step, given back in the answer), an unapproved code answers `authorization_pending`.

import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto';
import { appendFileSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:https';
import * as querystring from 'node:querystring';

import Provider from 'oidc-provider';

const config = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const state = {
  accessTokenTtl: config.access_token_ttl,
  // account id -> grant ids, learned from the provider's events (its memory store is not listable)
  grants: new Map(),
  // sha256(device code) -> { last: ms, interval: s }
  polls: new Map(),
};

function record(entry) {
  appendFileSync(config.events_file, `${JSON.stringify({ t: Date.now() / 1000, ...entry })}\n`);
}

function digest(value) {
  return createHash('sha256').update(String(value)).digest('hex');
}

function rememberGrant(ctx) {
  const grant = ctx.oidc?.entities?.Grant;
  if (grant?.accountId && grant.jti) {
    const ids = state.grants.get(grant.accountId) ?? new Set();
    ids.add(grant.jti);
    state.grants.set(grant.accountId, ids);
  }
}

const server = createServer({
  cert: readFileSync(config.cert_file),
  key: readFileSync(config.key_file),
});

server.listen(0, '127.0.0.1', () => {
  const { port } = server.address();
  const issuer = `https://127.0.0.1:${port}`;
  const provider = new Provider(issuer, {
    clients: config.clients,
    cookies: { keys: [randomBytes(32).toString('base64url')] },
    jwks: { keys: [signingKey()] },
    scopes: ['openid', 'offline_access', 'profile', 'email'],
    claims: { openid: ['sub'], profile: ['name'], email: ['email'] },
    findAccount: async (_ctx, sub) => ({
      accountId: sub,
      claims: async () => ({ sub, name: sub, email: `${sub}@idp.safeport.test` }),
    }),
    features: {
      devInteractions: { enabled: true },
      deviceFlow: { enabled: true },
      revocation: { enabled: true },
      userinfo: { enabled: true },
    },
    pkce: { required: () => true },
    // Every grant gets a refresh token (no offline_access dance), and every refresh rotates it:
    // the provider then treats a second use of a spent one as theft and revokes the whole grant.
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    rotateRefreshToken: () => true,
    ttl: {
      AccessToken: () => state.accessTokenTtl,
      AuthorizationCode: 120,
      DeviceCode: 600,
      Grant: 3600,
      Interaction: 600,
      RefreshToken: 3600,
      Session: 3600,
      IdToken: 600,
    },
    renderError: async (ctx, out) => {
      ctx.type = 'json';
      ctx.body = out;
    },
  });

  provider.on('grant.success', rememberGrant);
  // Every secret value the provider hands out, in a file of its own that only the test reads:
  // the tests grep the gateway's results, journals, logs, cards and `ps` for each of them.
  for (const kind of ['access_token', 'refresh_token', 'authorization_code', 'device_code']) {
    const write = (token) => {
      appendFileSync(config.issued_file, `${JSON.stringify({ kind, value: token.jti })}\n`);
    };
    provider.on(`${kind}.saved`, write); // stored (opaque) values
    provider.on(`${kind}.issued`, write); // values never stored (structured tokens)
  }
  provider.on('server_error', (_ctx, error) => record({ route: 'server_error', error: String(error) }));

  provider.use(async (ctx, next) => {
    if (ctx.path.startsWith('/_harness/')) {
      await harnessRoute(provider, ctx);
      return;
    }
    if (ctx.path === '/api/whoami' || ctx.path === '/api/echo') {
      await whoami(provider, ctx);
      record({ route: 'resource', status: ctx.status });
      return;
    }
    const watched = ['/token', '/device/auth', '/token/revocation'].includes(ctx.path);
    let grantType;
    if (ctx.path === '/token' && ctx.method === 'POST') {
      const form = await readForm(ctx);
      grantType = form.grant_type;
      if (grantType === 'urn:ietf:params:oauth:grant-type:device_code' && tooSoon(ctx, form)) {
        record({ route: 'token', grant_type: grantType, status: 400, error: 'slow_down' });
        return;
      }
    }
    await next();
    if (ctx.path === '/device/auth' && ctx.status === 200 && ctx.body?.device_code) {
      ctx.body = { ...ctx.body, interval: config.device_interval };
      state.polls.set(digest(ctx.body.device_code), { last: 0, interval: config.device_interval });
    }
    if (watched) {
      const error = ctx.status >= 400 ? ctx.body?.error : undefined;
      record({
        route: ctx.path.slice(1).replace('/', '_'),
        grant_type: grantType,
        client_id: ctx.oidc?.client?.clientId,
        status: ctx.status,
        error,
      });
    }
  });

  server.on('request', provider.callback());
  const ready = `${config.ready_file}.tmp`;
  writeFileSync(ready, JSON.stringify({ port }));
  renameSync(ready, config.ready_file);
});

function signingKey() {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...privateKey.export({ format: 'jwk' }), use: 'sig', alg: 'RS256' };
}

// The token request's form, read here so a too-early device poll can be answered before the
// provider looks at it; the provider then reads the same bytes (its parser accepts a body an
// upstream middleware read).
async function readForm(ctx) {
  const raw = await readRaw(ctx);
  return ctx.is('application/x-www-form-urlencoded') ? querystring.parse(raw) : {};
}

async function readRaw(ctx) {
  const chunks = [];
  let size = 0;
  for await (const chunk of ctx.req) {
    size += chunk.length;
    if (size > 64 * 1024) {
      ctx.throw(413, 'request entity too large');
    }
    chunks.push(chunk);
  }
  const raw = Buffer.concat(chunks).toString();
  ctx.req.body = raw;
  return raw;
}

function tooSoon(ctx, form) {
  const key = digest(form.device_code);
  const poll = state.polls.get(key);
  if (poll === undefined) {
    return false;
  }
  const now = Date.now();
  const early = poll.last !== 0 && now - poll.last < poll.interval * 1000;
  poll.last = now;
  if (!early) {
    return false;
  }
  poll.interval += config.slow_down_step;
  ctx.status = 400;
  ctx.set('Cache-Control', 'no-store');
  ctx.body = {
    error: 'slow_down',
    error_description: 'too many requests: wait the interval between polls',
    interval: poll.interval,
  };
  return true;
}

async function whoami(provider, ctx) {
  const header = ctx.get('authorization');
  const match = /^Bearer ([A-Za-z0-9._~+/-]+=*)$/.exec(header);
  const token = match ? await provider.AccessToken.find(match[1]) : undefined;
  const grant = token && !token.isExpired ? await provider.Grant.find(token.grantId) : undefined;
  if (!grant) {
    ctx.status = 401;
    ctx.set('WWW-Authenticate', 'Bearer error="invalid_token"');
    ctx.body = { error: 'invalid_token' };
    return;
  }
  ctx.body = {
    sub: token.accountId,
    client_id: token.clientId,
    scope: token.scope,
    state: 'ok',
  };
  if (ctx.path === '/api/echo') {
    // A service that echoes what it was sent, as a hostile or careless one does: the result
    // filter must withhold the token the gateway sent (in any spelling).
    ctx.body = { ...ctx.body, authorization: header, token: match[1], note: `got ${match[1]}` };
  }
}

async function harnessRoute(provider, ctx) {
  if (ctx.get('x-harness-key') !== config.harness_key || ctx.method !== 'POST') {
    ctx.status = 403;
    ctx.body = { error: 'forbidden' };
    return;
  }
  const form = JSON.parse((await readRaw(ctx)) || '{}');
  if (ctx.path === '/_harness/access-token-ttl') {
    state.accessTokenTtl = Number(form.seconds);
    ctx.body = { seconds: state.accessTokenTtl };
  } else if (ctx.path === '/_harness/drop-access-token') {
    // One access token ends early (as a resource server's key rotation or a provider's own
    // expiry would) while its grant and refresh token live: RFC 7009 revocation of an access
    // token would end the whole grant here.
    const token = await provider.AccessToken.find(String(form.token));
    await token?.destroy();
    ctx.body = { dropped: token !== undefined };
  } else if (ctx.path === '/_harness/revoke-account') {
    const ids = [...(state.grants.get(form.account) ?? [])];
    for (const grantId of ids) {
      await Promise.all([
        provider.AccessToken.revokeByGrantId(grantId),
        provider.RefreshToken.revokeByGrantId(grantId),
        provider.Grant.adapter.destroy(grantId),
      ]);
    }
    state.grants.delete(form.account);
    record({ route: 'harness_revoke', grants: ids.length });
    ctx.body = { revoked: ids.length };
  } else {
    ctx.status = 404;
    ctx.body = { error: 'not found' };
  }
}
