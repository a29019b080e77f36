// The REST API client: JSON in, JSON out, errors as thrown ApiError.

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

// The REST API's bearer token (security.rest.token-file), asked for once
// when the API answers 401 and kept for the browser tab's session.
const TOKEN_KEY = "weir-rest-token";

export function setToken(token) {
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  else sessionStorage.removeItem(TOKEN_KEY);
}

export function hasToken() {
  return Boolean(sessionStorage.getItem(TOKEN_KEY));
}

async function request(method, path, body) {
  const init = { method, headers: { Accept: "application/json" } };
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) init.headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let resp;
  try {
    resp = await fetch(path, init);
  } catch (e) {
    throw new ApiError(0, `REST API unreachable: ${e.message}`);
  }
  const text = await resp.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!resp.ok) {
    const msg = data && Array.isArray(data.errors) ? data.errors.join("; ") : `${method} ${path}: HTTP ${resp.status}`;
    throw new ApiError(resp.status, msg);
  }
  return data;
}

export const get = (path) => request("GET", path);
export const post = (path, body) => request("POST", path, body ?? {});
export const patch = (path) => request("PATCH", path);

// optional GETs an endpoint that may not exist on this server (newer
// REST endpoints): null on 404 or 405, so the view is left out.
export async function optional(path) {
  try {
    return await get(path);
  } catch (e) {
    if (e.status === 404 || e.status === 405) return null;
    throw e;
  }
}

export const enc = encodeURIComponent;
