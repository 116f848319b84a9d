// Sign-in in the browser with Microsoft's MSAL.js: the authorization code flow with PKCE against Entra
// ID, and silent renewal. The library is vendored as Microsoft publishes it (msal.js: lib/msal-browser.min.js of
// the npm package @azure/msal-browser pinned in package.json; `npm run vendor:msal` copies it), so no
// build step runs anywhere, and it is loaded only when the console signs in (not in development).
//
// MSAL keeps its cache in sessionStorage: this tab only, gone when it closes (never local storage).
// (MSAL.js 5 refuses the redirect flow with its memory cache, in_mem_redirect_unavailable; the
// console's policy allows scripts from its own origin only, docs/adr/0036.) An access token about to
// expire is renewed silently with the refresh token Entra gave this tab, so a person stays signed in
// while the tab is open, a reload included; when Entra asks for the person again (the refresh token
// expired or was revoked), the console redirects once, and Entra's own session usually makes that a
// quick round trip. Renewal never uses a hidden iframe: the console's policy allows no frames.

const BUNDLE = "msal.js";
let client = null; // the PublicClientApplication being initialised (a promise: API calls start at once)
let account = null;
let forceRefresh = false;

function redirectUri() {
  return `${location.origin}${location.pathname}`;
}

function loadBundle() {
  if (globalThis.msal) return Promise.resolve(globalThis.msal);
  return new Promise((resolve, reject) => {
    const script = document.createElement("script");
    script.src = BUNDLE;
    script.onload = () => resolve(globalThis.msal);
    script.onerror = () => reject(new Error(`Sign-in failed: ${BUNDLE} could not be loaded`));
    document.head.append(script);
  });
}

function failure(error) {
  const reason = error && (error.errorMessage || error.message || error.errorCode);
  return new Error(`Sign-in failed: ${reason || "Entra ID refused the sign-in"}`);
}

function signedInClient(auth) {
  if (!client) client = start(auth);
  return client;
}

async function start(auth) {
  const msal = await loadBundle();
  const pca = new msal.PublicClientApplication({
    auth: {
      clientId: auth.clientId,
      authority: `${auth.origin}/${auth.tenantId}`,
      redirectUri: redirectUri(),
      // The answer comes back in the query: the console's own routes live in the hash.
      OIDCOptions: { responseMode: msal.ResponseMode.QUERY },
    },
    cache: { cacheLocation: msal.BrowserCacheLocation.SessionStorage },
  });
  await pca.initialize();
  let result;
  try {
    result = await pca.handleRedirectPromise({ navigateToLoginRequestUrl: false });
  } catch (error) {
    history.replaceState(null, "", redirectUri() + location.hash);
    client = null; // the next call may sign in again
    throw failure(error);
  }
  if (result) {
    account = result.account;
    // Back where the person was: the hash route travelled in the request's state.
    history.replaceState(null, "", redirectUri() + (result.state || ""));
  } else {
    account = pca.getAllAccounts()[0] || null;
  }
  return pca;
}

async function token(auth) {
  const pca = await signedInClient(auth);
  const msal = globalThis.msal;
  const scopes = [auth.scope];
  if (account) {
    try {
      const result = await pca.acquireTokenSilent({
        scopes,
        account,
        forceRefresh,
        // Cached token, else the refresh token; never the hidden iframe the policy would refuse.
        cacheLookupPolicy: msal.CacheLookupPolicy.AccessTokenAndRefreshToken,
      });
      forceRefresh = false;
      return result.accessToken;
    } catch (error) {
      if (!(error instanceof msal.InteractionRequiredAuthError) && !(error instanceof msal.BrowserAuthError)) {
        throw failure(error);
      }
    }
  }
  await pca.acquireTokenRedirect({ scopes, state: location.hash, redirectUri: redirectUri() });
  return new Promise(() => {}); // the page is leaving for Entra ID
}

/** Headers that authenticate an API call: none in development (the host supplies the caller). */
export async function authHeaders(auth) {
  if (!auth || auth.mode !== "entra") return {};
  return { Authorization: `Bearer ${await token(auth)}` };
}

/** A 401 means the token is no longer accepted: the next call gets a new one (silently if it can). */
export function forgetToken() {
  forceRefresh = true;
}
