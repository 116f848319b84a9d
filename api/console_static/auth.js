// Sign-in in the browser: OAuth 2.0 authorization code with PKCE against Entra ID, by hand with fetch
// (no library to vendor). The access token lives in this module's memory only: never in local storage
// or sessionStorage. sessionStorage holds the PKCE verifier and state across the one redirect, then
// loses them. A reload signs in again, which Entra's own session makes a quick round trip.

const PENDING = "haste.console.pkce";
let token = null; // { value, expiresAt }

function base64url(bytes) {
  let text = "";
  for (const byte of bytes) text += String.fromCharCode(byte);
  return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function randomString() {
  return base64url(crypto.getRandomValues(new Uint8Array(32)));
}

async function challengeOf(verifier) {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier));
  return base64url(new Uint8Array(digest));
}

function redirectUri() {
  return `${location.origin}${location.pathname}`;
}

async function startSignIn(auth) {
  const verifier = randomString();
  const state = randomString();
  sessionStorage.setItem(PENDING, JSON.stringify({ verifier, state, hash: location.hash }));
  const query = new URLSearchParams({
    client_id: auth.clientId,
    response_type: "code",
    redirect_uri: redirectUri(),
    response_mode: "query",
    scope: `openid ${auth.scope}`,
    state,
    code_challenge: await challengeOf(verifier),
    code_challenge_method: "S256",
  });
  location.assign(`${auth.authority}/authorize?${query}`);
  return new Promise(() => {}); // the page is leaving
}

async function finishSignIn(auth, params) {
  const pending = JSON.parse(sessionStorage.getItem(PENDING) || "null");
  sessionStorage.removeItem(PENDING);
  history.replaceState(null, "", redirectUri() + (pending && pending.hash ? pending.hash : ""));
  if (params.get("error")) throw new Error(`Sign-in failed: ${params.get("error_description") || params.get("error")}`);
  if (!pending || pending.state !== params.get("state")) throw new Error("Sign-in failed: the answer does not match this browser's request");
  const response = await fetch(`${auth.authority}/token`, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      client_id: auth.clientId,
      grant_type: "authorization_code",
      code: params.get("code"),
      redirect_uri: redirectUri(),
      code_verifier: pending.verifier,
      scope: auth.scope,
    }),
  });
  const body = await response.json();
  if (!response.ok) throw new Error(`Sign-in failed: ${body.error_description || body.error || response.status}`);
  token = { value: body.access_token, expiresAt: Date.now() + (Number(body.expires_in) - 60) * 1000 };
}

/** Headers that authenticate an API call: none in development (the host supplies the caller). */
export async function authHeaders(auth) {
  if (!auth || auth.mode !== "entra") return {};
  const params = new URLSearchParams(location.search);
  if (!token && (params.has("code") || params.has("error"))) await finishSignIn(auth, params);
  if (!token || Date.now() >= token.expiresAt) {
    token = null;
    await startSignIn(auth);
  }
  return { Authorization: `Bearer ${token.value}` };
}

/** Forget the token (a 401 means it is no longer accepted); the next call signs in again. */
export function forgetToken() {
  token = null;
}
