// The REST API client: CSRF cookie + header, X-AuthToken, the error envelope, session storage.

const TOKEN_KEY = "airwave.authToken";

export class ApiError extends Error {
  constructor(status, body, retryAfter) {
    super((body && body.message) || `HTTP ${status}`);
    this.status = status;
    this.code = (body && body.errorString) || "SERVER_ERROR";
    this.errorCode = body ? body.errorCode : undefined;
    this.retryAfter = retryAfter;
  }
}

function readCookie(name) {
  for (const part of document.cookie.split(";")) {
    const [k, ...v] = part.trim().split("=");
    if (k === name) return decodeURIComponent(v.join("="));
  }
  return "";
}

let csrfPromise = null;

/** The csrftoken cookie the site root hands out; fetched with HEAD / when missing. */
async function csrfToken() {
  let value = readCookie("csrftoken");
  if (value) return value;
  csrfPromise = csrfPromise || fetch("/", { method: "HEAD", credentials: "same-origin" });
  await csrfPromise;
  csrfPromise = null;
  value = readCookie("csrftoken");
  if (!value) {
    // A client may choose its own value (spec §2); used when cookies of the root were refused.
    value = Array.from(crypto.getRandomValues(new Uint8Array(8)), (b) => b.toString(16).padStart(2, "0")).join("");
    document.cookie = `csrftoken=${value}; Path=/; SameSite=Lax${location.protocol === "https:" ? "; Secure" : ""}`;
  }
  return value;
}

export const session = {
  token: null,
  listener: null,
  onExpired: null,

  stored() {
    return localStorage.getItem(TOKEN_KEY) || sessionStorage.getItem(TOKEN_KEY);
  },
  remember(token, keep) {
    this.token = token;
    localStorage.removeItem(TOKEN_KEY);
    sessionStorage.removeItem(TOKEN_KEY);
    (keep ? localStorage : sessionStorage).setItem(TOKEN_KEY, token);
  },
  forget() {
    this.token = null;
    this.listener = null;
    localStorage.removeItem(TOKEN_KEY);
    sessionStorage.removeItem(TOKEN_KEY);
  },
  get flags() {
    // config.flags is a list of the names of what the tier allows (spec §6.6).
    const names = (this.listener && this.listener.config && this.listener.config.flags) || [];
    return Object.fromEntries(names.map((name) => [name, true]));
  },
};

/** POST /api/v1/{path} (or /api/v4/... when `path` names its version) with a JSON body; resolves
 * to the answer, rejects with ApiError. */
export async function api(path, body = {}, { auth = true } = {}) {
  const headers = { "Content-Type": "application/json", "X-CsrfToken": await csrfToken() };
  if (auth && session.token) headers["X-AuthToken"] = session.token;
  let response;
  try {
    response = await fetch(/^v\d+\//.test(path) ? `/api/${path}` : `/api/v1/${path}`, {
      method: "POST", headers, body: JSON.stringify(body), credentials: "same-origin",
    });
  } catch (err) {
    throw new ApiError(0, { errorString: "NETWORK", message: "The server cannot be reached." });
  }
  let data = null;
  try {
    data = await response.json();
  } catch (err) {
    data = null;
  }
  if (response.ok) return data || {};
  const error = new ApiError(response.status, data, Number(response.headers.get("Retry-After")) || 0);
  if (error.code === "AUTH_INVALID_TOKEN" && auth && session.token && session.onExpired) {
    session.onExpired(error);
  }
  throw error;
}

/** A call made while the page goes away (pagehide): sent at once with `keepalive`, so the
 * browser delivers it after the page is gone; the answer is not read. */
export function farewell(path, body = {}) {
  const csrf = readCookie("csrftoken");
  if (!csrf || !session.token) return;
  fetch(`/api/v1/${path}`, {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-CsrfToken": csrf, "X-AuthToken": session.token },
    body: JSON.stringify(body), credentials: "same-origin", keepalive: true,
  }).catch(() => {});
}

/** Report a finished or skipped spin to its signed receipt URL (no auth, no CSRF). */
export function postReceipt(url, secondsPlayed) {
  if (!url) return;
  const body = JSON.stringify({ secondsPlayed: Math.max(0, Math.round(secondsPlayed || 0)) });
  fetch(url, { method: "POST", headers: { "Content-Type": "application/json" }, body, keepalive: true })
    .catch(() => {});
}
